#!/usr/bin/env bash
# scripts/fuzz.sh TARGET|all SECONDS: builds and runs the fuzz targets of
# fuzz/README.md, each for SECONDS.
#   C++ (libFuzzer): cluster job plan. Built in build-fuzz/ with clang++-14,
#     -fsanitize=fuzzer,address (the libraries: address,fuzzer-no-link);
#     only the fuzz targets and the libraries they link.
#   Python (atheris, from requirements.txt): strategy checkpoint_index
#     sharded_index cli_data cli_cluster, on the extension of the ordinary build/.
# Each run starts from fuzz/corpus/TARGET and fuzz/regressions/TARGET (read
# only; new inputs go to build-fuzz/corpus/TARGET); a crash, leak, timeout
# (-timeout=10 s per input) or out-of-memory input is written to
# build-fuzz/artifacts/TARGET/. Exit status 1 when any target found
# something; copy the input into fuzz/regressions/TARGET/ once it is fixed.
# Knobs: OFL_FUZZ_ARGS (extra libFuzzer flags, e.g. "-jobs=1"; -jobs and
# -workers are dropped for the Python targets), OFL_JOBS.
# Setup (apt, venv, build/) is scripts/lib/setup.sh's ofl_setup, run first.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"

OFL_FUZZ_CPP=(cluster job plan)
OFL_FUZZ_PY=(strategy checkpoint_index sharded_index cli_data cli_cluster)
OFL_FUZZ_DIR="$OFL_ROOT/build-fuzz"

usage() {
  echo "usage: scripts/fuzz.sh TARGET|all SECONDS (targets: ${OFL_FUZZ_CPP[*]} ${OFL_FUZZ_PY[*]})" >&2
}

# Configures build-fuzz/ once and builds the named C++ fuzz targets.
fuzz_build() {
  if [[ ! -f "$OFL_FUZZ_DIR/build.ninja" ]]; then
    local launcher=()
    if command -v ccache >/dev/null; then
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
    cmake -S "$OFL_ROOT" -B "$OFL_FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" \
      "-DCMAKE_CXX_FLAGS=-fsanitize=address,fuzzer-no-link -fno-omit-frame-pointer -gline-tables-only" \
      "-DCMAKE_C_FLAGS=-fsanitize=address,fuzzer-no-link -fno-omit-frame-pointer" \
      -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address -DOFL_BUILD_FUZZ=ON -DOFL_BUILD_TESTS=OFF \
      -DOFL_BUILD_PYTHON=OFF -DOFL_BUILD_BENCH=OFF >&2 || return 1
  fi
  ninja -C "$OFL_FUZZ_DIR" -j "$OFL_JOBS" "${@/#/fuzz_}" >&2
}

# fuzz_run TARGET SECONDS: one target; returns non-zero when it found something.
fuzz_run() {
  local target=$1 seconds=$2 cmd
  local work="$OFL_FUZZ_DIR/corpus/$target" artifacts="$OFL_FUZZ_DIR/artifacts/$target/"
  mkdir -p "$work" "$artifacts" "$OFL_ROOT/fuzz/regressions/$target"
  # shellcheck disable=SC2206  # OFL_FUZZ_ARGS holds several flags
  local args=(${OFL_FUZZ_ARGS:-})
  if [[ " ${OFL_FUZZ_CPP[*]} " == *" $target "* ]]; then
    cmd=("$OFL_FUZZ_DIR/fuzz/fuzz_$target")
  else
    cmd=(env "PYTHONPATH=$OFL_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$OFL_PY"
      "$OFL_ROOT/fuzz/python/fuzz_$target.py")
    # -jobs/-workers re-execute argv[0], which for atheris is the script itself.
    local kept=() arg
    for arg in "${args[@]}"; do [[ $arg == -jobs=* || $arg == -workers=* ]] || kept+=("$arg"); done
    args=("${kept[@]}")
  fi
  echo "fuzz.sh: $target for $seconds s" >&2
  ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}" "${cmd[@]}" -max_total_time="$seconds" \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts" "${args[@]}" \
    "$work" "$OFL_ROOT/fuzz/corpus/$target" "$OFL_ROOT/fuzz/regressions/$target"
}

main() {
  if (($# != 2)) || ! [[ $2 =~ ^[0-9]+$ ]]; then usage; return 2; fi
  local targets=() cpp=() target
  if [[ $1 == all ]]; then
    targets=("${OFL_FUZZ_CPP[@]}" "${OFL_FUZZ_PY[@]}")
  elif [[ " ${OFL_FUZZ_CPP[*]} ${OFL_FUZZ_PY[*]} " == *" $1 "* ]]; then
    targets=("$1")
  else
    usage
    return 2
  fi
  for target in "${targets[@]}"; do
    [[ " ${OFL_FUZZ_CPP[*]} " == *" $target "* ]] && cpp+=("$target")
  done
  ofl_setup || return 1
  if ((${#cpp[@]} > 0)); then ofl_time build-fuzz fuzz_build "${cpp[@]}" || return 1; fi
  if ((${#cpp[@]} < ${#targets[@]})) && ! "$OFL_PY" -c 'import atheris' 2>/dev/null; then
    echo "fuzz.sh: atheris does not import in $OFL_PY (requirements.txt installs it)" >&2
    return 1
  fi
  local failed=()
  for target in "${targets[@]}"; do
    fuzz_run "$target" "$2" || failed+=("$target")
  done
  if ((${#failed[@]} > 0)); then
    echo "fuzz.sh: FOUND something in: ${failed[*]} (inputs in $OFL_FUZZ_DIR/artifacts/)" >&2
    return 1
  fi
  echo "fuzz.sh: ${targets[*]}: nothing found in $2 s each" >&2
}

main "$@"
