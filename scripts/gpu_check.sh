#!/usr/bin/env bash
# scripts/gpu_check.sh: the one command that proves the CUDA backend on a GPU
# machine: brings the build's libraries, configures with CUDA,
# builds with every core, runs the CUDA tests (fails when any of them skips
# with "no CUDA device"), runs `bench/run.sh gpu` and prints a summary.
# Budget: under 5 minutes on one H200 with 16 cores.
#
#   here:  bash scripts/gpu_prepare.sh            # .gpu_debs/, ~25 MiB
#          bash scripts/gpu_check.sh --dry-run    # unpack + configure against the prefix
#   there: bash scripts/gpu_check.sh              # (device tool: carry [".gpu_debs"])
#
# The GPU machine is bare of our Debian libraries (it has CUDA, CMake, ninja,
# a compiler and Python 3.12 with pybind11, numpy, pytest and torch) and
# reaches no registry. Steps:
#   1. unpack .gpu_debs/*.deb (scripts/gpu_prepare.sh) with `dpkg -x` (or
#      ar + tar where dpkg is missing) into OFL_GPU_PREFIX
#      (/tmp/ofl_gpu_deps), add the OpenBLAS links Debian makes with
#      update-alternatives, put its lib folders on LD_LIBRARY_PATH and protoc
#      on PATH. Assumes glibc >= 2.36 there (scripts/gpu_prepare.sh);
#   2. configure OFL_GPU_BUILD_DIR (build-gpu/) with CUDA
#      (CMAKE_CUDA_ARCHITECTURES=OFL_CUDA_ARCH, default 90), every package
#      named by its path in the prefix, pybind11 from the interpreter's pip
#      package (no extension when it has none, or no Python.h: the Python
#      CUDA tests then count as failed);
#   3. build only what the checks run (cuda_runtime_tests: the backend,
#      the communicators and device-native boxing (every step kind on 2-4
#      virtual CUDA devices against the CPU run, one-rank NCCL boxing);
#      cuda_tests: every op's CUDA kernel against its CPU twin, the per-stream
#      handle caches; gpu_matmul; the extension) with OFL_JOBS (all cores);
#   4. run the CUDA tests with OFL_REQUIRE_CUDA=1 (a test that would skip
#      with "no CUDA device" fails instead): cuda_runtime_tests, cuda_tests
#      (OFL_GPU_OPS_FILTER, default all; none matching fails), pytest on
#      tests/python/test_*cuda*.py; a "no CUDA device" skip fails too;
#   5. bench/run.sh gpu -> bench/results/gpu.json, and bench/gpu_calibrate.py
#      -> bench/results/gpu_cluster.pbtxt (a Cluster of this GPU);
#   6. summary; logs in build-gpu/gpu_check_logs. When the device tool set
#      $OUT (8 files come back at most): logs.tgz, summary.txt and the results.
# --dry-run (here, no GPU): steps 1 and 2, then checks that CMake took every
# package from the prefix, builds OFL_GPU_DRY_TARGETS (default core_tests)
# and runs it with the prefix's libraries (ldd must resolve them there).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEBS="${OFL_GPU_DEBS:-$ROOT/.gpu_debs}"
PREFIX="${OFL_GPU_PREFIX:-/tmp/ofl_gpu_deps}"
BUILD="${OFL_GPU_BUILD_DIR:-$ROOT/build-gpu}"
JOBS="${OFL_JOBS:-$(nproc)}"
PY="${OFL_GPU_PYTHON:-python3}"
LOGS="$BUILD/gpu_check_logs"
DRY=0
[[ "${1:-}" == "--dry-run" ]] && DRY=1
LIB="$PREFIX/usr/lib/x86_64-linux-gnu"
SUMMARY=()
FAILED=0
START=$EPOCHREALTIME

say() { printf '[gpu_check] %s\n' "$*" >&2; }
note() { SUMMARY+=("$*"); say "$*"; }
fail() { FAILED=1; note "FAIL: $*"; }
elapsed() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }

unpack() {
  local t0=$EPOCHREALTIME deb tmp
  compgen -G "$DEBS/*.deb" >/dev/null || { fail "no .deb in $DEBS (run scripts/gpu_prepare.sh here, carry .gpu_debs)"; return 1; }
  rm -rf "$PREFIX" && mkdir -p "$PREFIX"
  for deb in "$DEBS"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$PREFIX" || { fail "dpkg-deb -x $deb"; return 1; }
    else
      tmp=$(mktemp -d)
      (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$PREFIX") || { fail "ar/tar $deb"; return 1; }
      rm -rf "$tmp"
    fi
  done
  # Links Debian's postinst makes with update-alternatives.
  ln -sf openblas-pthread/libopenblas.so "$LIB/libopenblas.so"
  ln -sf openblas-pthread/libopenblas.so.0 "$LIB/libopenblas.so.0"
  ln -sf openblas-pthread/libblas.so.3 "$LIB/libblas.so.3"
  export LD_LIBRARY_PATH="$LIB:$LIB/openblas-pthread:$PREFIX/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$PREFIX/usr/bin:$PATH"
  note "deps: $(ls "$DEBS"/*.deb | wc -l) packages unpacked into $PREFIX ($(du -sh "$PREFIX" | cut -f1)) in $(elapsed "$t0") s"
}

configure() {
  local t0=$EPOCHREALTIME include python_args=()
  include=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
  local pybind_dir
  pybind_dir=$("$PY" -m pybind11 --cmakedir 2>/dev/null)
  if [[ -n "$pybind_dir" && -f "$include/Python.h" ]]; then
    python_args=(-DOFL_BUILD_PYTHON=ON "-Dpybind11_DIR=$pybind_dir" "-DPython3_EXECUTABLE=$(command -v "$PY")")
  else
    python_args=(-DOFL_BUILD_PYTHON=OFF)
    fail "python: no extension ($PY: pybind11 cmake dir '${pybind_dir}', Python.h in '$include')"
  fi
  local args=(
    -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DOFL_WERROR=OFF
    "-DCMAKE_CUDA_ARCHITECTURES=${OFL_CUDA_ARCH:-90}" -DOFL_WITH_CUDA=ON
    "-DCMAKE_PREFIX_PATH=$PREFIX/usr" "-DCMAKE_LIBRARY_PATH=$LIB"
    "-Dglog_DIR=$LIB/cmake/glog" "-Dgflags_DIR=$LIB/cmake/gflags" "-DTBB_DIR=$LIB/cmake/TBB"
    "-Ddnnl_DIR=$LIB/cmake/dnnl" "-DGloo_DIR=$PREFIX/usr/share/cmake/Gloo"
    "-DGTest_DIR=$LIB/cmake/GTest" "-Dbenchmark_DIR=$LIB/cmake/benchmark"
    "-DProtobuf_INCLUDE_DIR=$PREFIX/usr/include" "-DProtobuf_LIBRARY=$LIB/libprotobuf.so"
    "-DProtobuf_LITE_LIBRARY=$LIB/libprotobuf-lite.so" "-DProtobuf_PROTOC_LIBRARY=$LIB/libprotoc.so"
    "-DProtobuf_PROTOC_EXECUTABLE=$PREFIX/usr/bin/protoc"
    "-DBLAS_LIBRARIES=$LIB/libopenblas.so"
    "-DOFL_CBLAS_INCLUDE_DIR=$PREFIX/usr/include/x86_64-linux-gnu/openblas-pthread"
    "-DOpenCL_LIBRARY=$LIB/libOpenCL.so" "-DOpenCL_INCLUDE_DIR=$PREFIX/usr/include"
    "${python_args[@]}"
  )
  local extra=()
  read -r -a extra <<<"${OFL_GPU_CMAKE_ARGS:-}"
  args+=("${extra[@]}")
  mkdir -p "$LOGS"
  if ! cmake "${args[@]}" >"$LOGS/configure.log" 2>&1; then
    tail -30 "$LOGS/configure.log" >&2
    fail "configure (log: $LOGS/configure.log)"
    return 1
  fi
  grep -q "CUDA code is compiled" "$LOGS/configure.log" || fail "configure: CUDA was not enabled"
  note "configure: $(elapsed "$t0") s ($(grep -o 'CUDA toolkit [0-9.]*' "$LOGS/configure.log" | head -1))"
}

# Every package CMake found must come from the prefix, not the host.
check_prefix() {
  local key value bad=0
  for key in glog_DIR gflags_DIR TBB_DIR dnnl_DIR Gloo_DIR GTest_DIR Protobuf_LIBRARY \
    Protobuf_PROTOC_EXECUTABLE Protobuf_INCLUDE_DIR OFL_CBLAS_INCLUDE_DIR; do
    value=$(grep -m1 "^$key:" "$BUILD/CMakeCache.txt" | cut -d= -f2-)
    if [[ "$value" != "$PREFIX"* ]]; then
      fail "configure took $key from '$value', not from $PREFIX"
      bad=1
    fi
  done
  ((bad == 0)) && note "configure: every package from $PREFIX"
}

has_target() {  # (grep -q on the pipe would stop ninja early: pipefail)
  local all
  all=$(ninja -C "$BUILD" -t targets all 2>/dev/null | cut -d: -f1)
  grep -qx "$1" <<<"$all"
}

build() {
  local t0=$EPOCHREALTIME wanted=("$@") targets=() t
  for t in "${wanted[@]}"; do
    if has_target "$t"; then targets+=("$t"); else note "build: no target $t in this configuration"; fi
  done
  ((${#targets[@]} > 0)) || { fail "build: nothing to build"; return 1; }
  if ! ninja -C "$BUILD" -j "$JOBS" "${targets[@]}" >"$LOGS/build.log" 2>&1; then
    grep -m20 -B2 -A8 "error" "$LOGS/build.log" >&2
    fail "build ${targets[*]} (log: $LOGS/build.log)"
    return 1
  fi
  note "build: ${targets[*]} in $(elapsed "$t0") s with -j$JOBS"
}

# run_gtest NAME BINARY [FILTER]: fails on a failed test or a "no CUDA device" skip.
run_gtest() {
  local name=$1 binary=$2 filter=${3:-*} log="$LOGS/$1.log" t0=$EPOCHREALTIME
  [[ -x "$binary" ]] || { fail "$name: $binary not built"; return; }
  "$binary" --gtest_filter="$filter" >"$log" 2>&1
  local rc=$? passed failed skipped no_device
  # Per-test lines end in "(N ms)"; the summary's lists repeat the names.
  passed=$(grep -cE '^\[       OK \] .* \([0-9]+ ms\)$' "$log")
  failed=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$log")
  skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$log")
  no_device=$(grep -c '^no CUDA device$' "$log")
  note "$name: $passed passed, $failed failed, $skipped skipped ($no_device for no CUDA device) in $(elapsed "$t0") s"
  ((rc == 0)) || { fail "$name: exit $rc (log: $log)"; grep -E '^\[  FAILED  \]|Failure|error' "$log" | head -30 >&2; }
  ((no_device == 0)) || fail "$name: $no_device tests skipped with 'no CUDA device' on a GPU machine"
  ((passed + failed + skipped > 0)) || fail "$name: no test matched '$filter'"
}

run_pytest() {
  local files=() log="$LOGS/pytest_cuda.log" t0=$EPOCHREALTIME
  mapfile -t files < <(ls "$ROOT"/tests/python/test_*cuda*.py 2>/dev/null)
  ((${#files[@]} > 0)) || { fail "pytest: no tests/python/test_*cuda*.py"; return; }
  PYTHONPATH="$ROOT/python" "$PY" -m pytest -q -rs -p no:cacheprovider "${files[@]}" >"$log" 2>&1
  local rc=$? no_device
  no_device=$(grep -c 'SKIPPED.*no CUDA device' "$log")
  note "pytest cuda: $(tail -1 "$log") in $(elapsed "$t0") s"
  ((rc == 0)) || { fail "pytest cuda: exit $rc (log: $log)"; tail -40 "$log" >&2; }
  ((no_device == 0)) || fail "pytest cuda: $no_device skips with 'no CUDA device' on a GPU machine"
}

dry_run() {
  unpack && configure && check_prefix || return
  local targets=()
  read -r -a targets <<<"${OFL_GPU_DRY_TARGETS:-core_tests}"
  build "${targets[@]}" || return
  local binary="$BUILD/tests/cpp/${targets[0]}" missing
  if [[ -x "$binary" ]]; then
    missing=$(ldd "$binary" | grep -E 'glog|gflags|protobuf|tbb|dnnl|openblas|gloo' | grep -v "$PREFIX" || true)
    [[ -z "$missing" ]] || fail "ldd ${targets[0]}: not from the prefix: $missing"
    "$binary" --gtest_brief=1 >"$LOGS/${targets[0]}.log" 2>&1 || fail "${targets[0]} against the prefix (log: $LOGS/${targets[0]}.log)"
    note "${targets[0]} against the prefix's libraries (ldd): $(grep '^\[  PASSED  \]' "$LOGS/${targets[0]}.log")"
  fi
}

full_run() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2 || fail "nvidia-smi"
  unpack && configure || return
  build cuda_runtime_tests cuda_tests gpu_matmul _C || return
  export OFL_REQUIRE_CUDA=1  # a "no CUDA device" skip becomes a failure
  run_gtest cuda_runtime "$BUILD/tests/cpp/cuda_runtime_tests"
  run_gtest cuda_ops "$BUILD/tests/cpp/cuda_tests" "${OFL_GPU_OPS_FILTER:-*}"
  run_pytest
  local t0=$EPOCHREALTIME
  if OFL_BUILD_DIR="$BUILD" OFL_GPU_PYTHON="$PY" bash "$ROOT/bench/run.sh" gpu >"$LOGS/bench_gpu.log" 2>&1; then
    note "bench gpu: bench/results/gpu.json in $(elapsed "$t0") s"
  else
    fail "bench gpu (log: $LOGS/bench_gpu.log; bench/results/gpu.json has the errors)"
  fi
  t0=$EPOCHREALTIME
  if PYTHONPATH="$ROOT/python" "$PY" "$ROOT/bench/gpu_calibrate.py" \
    --out "$ROOT/bench/results/gpu_cluster.pbtxt" >"$LOGS/calibrate.log" 2>&1; then
    note "calibrate: bench/results/gpu_cluster.pbtxt in $(elapsed "$t0") s"
  else
    fail "calibrate (log: $LOGS/calibrate.log)"
  fi
  return 0
}

mkdir -p "$LOGS"
if ((DRY)); then dry_run; else full_run; fi
{
  echo "== gpu_check summary ($( ((DRY)) && echo dry run || echo GPU run), $(elapsed "$START") s) =="
  printf '  %s\n' "${SUMMARY[@]}"
} | tee "$LOGS/summary.txt"
if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then
  tar -czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null
  cp "$LOGS/summary.txt" "$OUT/"
  for f in gpu.json gpu_cluster.pbtxt; do
    [[ -f "$ROOT/bench/results/$f" ]] && cp "$ROOT/bench/results/$f" "$OUT/"
  done
fi
if ((FAILED)); then echo "gpu_check: FAILED"; exit 1; fi
echo "gpu_check: OK"
