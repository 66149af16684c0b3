# shellcheck shell=bash
# scripts/lib/setup.sh: the one setup step shared by scripts/run.sh,
# scripts/test.sh and bench/run.sh. Source it, then call `ofl_setup`.
#
# ofl_setup makes sure, in order, and skips whatever is already done:
#   1. apt packages (ENVIRONMENT.md's list + a stock Debian's venv needs):
#      dpkg-query first; apt-get update + install only if one is missing.
#   2. the project venv .venv (python3 -m venv) with requirements.txt
#      installed; pip runs only when requirements.txt changed (a stamp with
#      its sha256 lives inside .venv); a .pth file there names python/, so
#      `.venv/bin/python script.py` imports oneflow_lite (ofl_link_package).
#   3. CMake configured once into build/ (Release, Ninja, the venv's python
#      and pybind11, ccache when installed), then an incremental ninja build:
#      run.sh builds only the Python extension the main job needs (OFL_TARGETS,
#      default `_C`), test.sh everything; both with the same flags, so
#      test.sh after run.sh reuses every object. ctest and pytest use that
#      one build (the extension lands in python/oneflow_lite/).
#   CUDA code is compiled into build/ only when a GPU is present (nvidia-smi
#   lists one) or OFL_WITH_CUDA=ON asks for it; test.sh compiles it apart,
#   in build-cuda/ (the CUDA libraries only), wherever a toolkit is found.
# Every step prints its time on stderr. Knobs (environment):
#   OFL_JOBS=2              ninja's -j (the dev machine has 2 cores)
#   OFL_PYTHON=python3      the interpreter that creates the venv
#   OFL_SKIP_APT=1          skip step 1 (no root and no sudo, or not Debian)
#   OFL_CMAKE_ARGS="..."    extra arguments for the first configure only
#   OFL_WERROR=ON|OFF       compiler warnings as errors (-DOFL_WERROR); ON
#                           by default in run.sh and test.sh alike, so their
#                           objects are the same. A build configured
#                           otherwise is reconfigured, and its objects rebuilt.
#   OFL_WITH_CUDA=ON|OFF    compile the CUDA backend into build/ (default: ON
#                           when nvidia-smi lists a GPU, else OFF).
#   OFL_TARGETS="..."       the ninja targets ofl_setup builds (empty: all).
# Paths: OFL_ROOT (the repository), OFL_VENV, OFL_BUILD_DIR, OFL_PY.

OFL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OFL_VENV="${OFL_VENV:-$OFL_ROOT/.venv}"
OFL_BUILD_DIR="${OFL_BUILD_DIR:-$OFL_ROOT/build}"
OFL_PY="$OFL_VENV/bin/python"
OFL_JOBS="${OFL_JOBS:-2}"
OFL_REQUIREMENTS="$OFL_ROOT/requirements.txt"
export OFL_WERROR="${OFL_WERROR:-ON}"
# ccache: paths under the repository hash relative to it, so another clone or
# worktree of the project reuses the same cache entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$OFL_ROOT")}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# ENVIRONMENT.md's install line, plus python3 + python3-venv (Debian's
# python3 has no ensurepip without it) and ca-certificates for pip's TLS;
# less libgflags-dev: no target of ours uses gflags (libgoogle-glog-dev
# depends on it, for glog itself).
# clang-14 and libclang-rt-14-dev (libFuzzer) build the C++ fuzz targets
# (scripts/fuzz.sh); clang-format-14 is test.sh's format lint (scripts/format.sh).
OFL_APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libgoogle-glog-dev libtbb-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev libdnnl-dev
  ocl-icd-opencl-dev libgloo-dev
  clang-14 libclang-rt-14-dev clang-format-14
  python3 python3-dev python3-venv ca-certificates
)

ofl_log() { printf '[setup] %s\n' "$*" >&2; }

# ofl_time LABEL CMD...: runs CMD and logs how long it took.
ofl_time() {
  local label=$1 start=$EPOCHREALTIME
  shift
  "$@"
  local rc=$?
  ofl_log "$(printf '%-9s %6.2f s' "$label" "$(ofl_sub "$EPOCHREALTIME" "$start")")"
  return $rc
}
ofl_sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

ofl_ensure_apt() {
  if [[ "${OFL_SKIP_APT:-0}" == 1 ]]; then return 0; fi
  if ! command -v dpkg-query >/dev/null; then
    ofl_log "apt: no dpkg-query (not Debian?); install the packages of README.md yourself"
    return 0
  fi
  local installed missing=() pkg
  # Unknown packages make dpkg-query fail and print nothing for them: both
  # count as missing.
  installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${OFL_APT_PACKAGES[@]}" \
    2>/dev/null || true)
  for pkg in "${OFL_APT_PACKAGES[@]}"; do
    grep -q "^$pkg ii" <<<"$installed" || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  ofl_log "apt: installing ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || {
      ofl_log "apt: missing ${missing[*]}; not root and no sudo: install them, or set OFL_SKIP_APT=1"
      return 1
    }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -q || return 1
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

ofl_ensure_venv() {
  # A venv whose base interpreter went away is rebuilt, not patched.
  if [[ -x "$OFL_PY" ]] && ! "$OFL_PY" -c '' 2>/dev/null; then
    ofl_log "venv: $OFL_VENV is broken; recreating it"
    rm -rf "$OFL_VENV"
  fi
  if [[ ! -x "$OFL_PY" ]]; then
    local base="${OFL_PYTHON:-python3}"
    ofl_log "venv: creating $OFL_VENV with $(command -v "$base") ($("$base" --version 2>&1))"
    "$base" -m venv "$OFL_VENV" || return 1
  fi
  local stamp="$OFL_VENV/.ofl-requirements.sha256" want
  want=$(sha256sum "$OFL_REQUIREMENTS" | cut -d' ' -f1)
  if [[ -f "$stamp" && "$(<"$stamp")" == "$want" ]]; then return 0; fi
  ofl_log "venv: pip install -r requirements.txt"
  "$OFL_PY" -m pip install -q --disable-pip-version-check -r "$OFL_REQUIREMENTS" || return 1
  echo "$want" >"$stamp"
}

# ofl_link_package: a .pth file in the venv's site-packages naming python/,
# so that `.venv/bin/python your_script.py` imports oneflow_lite from this
# tree (the extension is built into python/oneflow_lite/), with no
# PYTHONPATH. Only in the project's own venv ($OFL_ROOT/.venv), or with
# OFL_LINK_VENV=1: a venv shared by several clones keeps the link it has.
ofl_link_package() {
  [[ "$OFL_VENV" == "$OFL_ROOT/.venv" || "${OFL_LINK_VENV:-0}" == 1 ]] || return 0
  local site want="$OFL_ROOT/python"
  site=$("$OFL_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
  [[ -f "$site/oneflow_lite.pth" && "$(<"$site/oneflow_lite.pth")" == "$want" ]] && return 0
  ofl_log "venv: $site/oneflow_lite.pth -> $want"
  echo "$want" >"$site/oneflow_lite.pth"
}

# ofl_werror_args DIR: -DOFL_WERROR=... when OFL_WERROR is set and DIR's
# cache holds another value (or no cache yet); nothing otherwise.
ofl_werror_args() {
  [[ -n "${OFL_WERROR:-}" ]] || return 0
  grep -qxF "OFL_WERROR:BOOL=$OFL_WERROR" "$1/CMakeCache.txt" 2>/dev/null ||
    echo "-DOFL_WERROR=$OFL_WERROR"
}

# ofl_launcher_args: ccache as CMake's compiler launcher when it is installed.
ofl_launcher_args() {
  command -v ccache >/dev/null || return 0
  echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache" \
    "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
}

# ofl_want_cuda: ON when the CUDA backend belongs in build/ (asked for, or a
# GPU is present), OFF otherwise.
ofl_want_cuda() {
  if [[ -n "${OFL_WITH_CUDA:-}" ]]; then
    echo "$OFL_WITH_CUDA"
  elif command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo ON
  else
    echo OFF
  fi
}

ofl_ensure_configured() {
  local cache="$OFL_BUILD_DIR/CMakeCache.txt" werror cuda
  werror=$(ofl_werror_args "$OFL_BUILD_DIR")
  cuda=$(ofl_want_cuda)
  if [[ -f "$OFL_BUILD_DIR/build.ninja" ]] &&
    grep -qxF -e "Python3_EXECUTABLE:UNINITIALIZED=$OFL_PY" \
      -e "Python3_EXECUTABLE:FILEPATH=$OFL_PY" "$cache" 2>/dev/null; then
    local change=($werror)
    grep -qxF "OFL_WITH_CUDA:BOOL=$cuda" "$cache" || change+=("-DOFL_WITH_CUDA=$cuda")
    ((${#change[@]} == 0)) || cmake "${change[@]}" "$OFL_BUILD_DIR" >&2
    return 0
  fi
  if [[ -f "$cache" ]] && ! grep -qxF "CMAKE_GENERATOR:INTERNAL=Ninja" "$cache"; then
    ofl_log "configure: $OFL_BUILD_DIR was configured with another generator; remove it"
    return 1
  fi
  local pybind11_dir
  pybind11_dir=$("$OFL_PY" -m pybind11 --cmakedir) || return 1
  # OFL_CMAKE_ARGS is split on spaces on purpose (several -D flags).
  # shellcheck disable=SC2086
  cmake -S "$OFL_ROOT" -B "$OFL_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$OFL_PY" -Dpybind11_DIR="$pybind11_dir" -DOFL_WITH_CUDA="$cuda" \
    $(ofl_launcher_args) $werror ${OFL_CMAKE_ARGS:-} >&2
}

ofl_build() {
  # OFL_TARGETS is split on spaces on purpose (several targets).
  # shellcheck disable=SC2086
  ninja -C "$OFL_BUILD_DIR" -j "$OFL_JOBS" ${OFL_TARGETS:-} >&2
}

# ofl_cuda_compile_check: where a CUDA toolkit is found but build/ has no
# CUDA (no GPU), compiles the CUDA libraries in build-cuda/ so that CUDA code
# keeps compiling; nothing is run there. Prints why it skips otherwise.
ofl_cuda_compile_check() {
  local dir="$OFL_ROOT/build-cuda"
  if grep -qxF "OFL_WITH_CUDA:BOOL=ON" "$OFL_BUILD_DIR/CMakeCache.txt" 2>/dev/null &&
    grep -q "^CMAKE_CUDA_COMPILER:.*nvcc" "$OFL_BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    ofl_log "cuda: compiled in $OFL_BUILD_DIR already"
    return 0
  fi
  if ! command -v nvcc >/dev/null && [[ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]]; then
    ofl_log "cuda: no toolkit (nvcc) found; CUDA compile check skipped"
    return 0
  fi
  if [[ ! -f "$dir/build.ninja" ]]; then
    local pybind11_dir
    pybind11_dir=$("$OFL_PY" -m pybind11 --cmakedir) || return 1
    cmake -S "$OFL_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOFL_WITH_CUDA=ON \
      -DOFL_BUILD_TESTS=OFF -DOFL_BUILD_BENCH=OFF -DOFL_BUILD_PYTHON=OFF \
      -DOFL_WERROR="$OFL_WERROR" $(ofl_launcher_args) >&2 || return 1
  fi
  ninja -C "$dir" -j "$OFL_JOBS" ofl_runtime >&2
}

# ofl_sanitizer_build KIND: configures build-KIND (KIND = thread or address)
# once, with -DOFL_SANITIZER=KIND and no Python extension or benchmarks, and
# builds just the core and runtime test binaries there.
ofl_sanitizer_build() {
  local kind=$1 dir="$OFL_ROOT/build-$1" werror
  werror=$(ofl_werror_args "$dir")
  if [[ ! -f "$dir/build.ninja" ]]; then
    # shellcheck disable=SC2086
    cmake -S "$OFL_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DOFL_SANITIZER="$kind" -DOFL_BUILD_PYTHON=OFF -DOFL_BUILD_BENCH=OFF $werror \
      $(ofl_launcher_args) >&2 || return 1
  elif [[ -n "$werror" ]]; then
    cmake "$werror" "$dir" >&2 || return 1
  fi
  ninja -C "$dir" -j "$OFL_JOBS" core_tests runtime_tests >&2
}

ofl_setup() {
  local start=$EPOCHREALTIME
  ofl_time apt ofl_ensure_apt || return 1
  ofl_time venv ofl_ensure_venv || return 1
  ofl_link_package || return 1
  ofl_time configure ofl_ensure_configured || return 1
  ofl_time build ofl_build || return 1
  ofl_log "$(printf '%-9s %6.2f s' total "$(ofl_sub "$EPOCHREALTIME" "$start")")"
}
