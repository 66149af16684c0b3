#!/usr/bin/env bash
# scripts/test.sh: set up and build (scripts/lib/setup.sh) with compiler
# warnings as errors (OFL_WERROR=ON, -Wall -Wextra), then run
#   0. the module-arrow lint (scripts/check_arrows.py: every include, and
#      the Python extension's calls, against DESIGN.md's arrows) and the
#      size lint (scripts/check_sizes.py: files <= 500 lines, functions <= 80,
#      tests apart, against scripts/size_allowlist.txt, which only shrinks)
#      and the format lint (scripts/format.sh --check: .clang-format, applied);
#   1. the C++ tests (ctest) on that build (the `arrows` ones compile a
#      forbidden include on purpose and expect it to fail);
#   2. the core and runtime tests again in ThreadSanitizer and
#      AddressSanitizer builds (build-thread/, build-address/: only those two
#      test binaries are built there; kernels run single-threaded under TSan;
#      tests/tsan.supp names the one uninstrumented library it excuses);
#   3. the Python tests (pytest) on the first build;
#   4. every fuzz target for OFL_FUZZ_SECONDS (default 30) s each
#      (scripts/fuzz.sh all: its own clang build in build-fuzz/, fuzz/README.md);
#      fails when a target finds a crash, leak, timeout or unexpected exception.
# Every part always runs; the script fails if any fails.
# OFL_SANITIZERS="thread address" (the default) picks the sanitizer builds;
# set it empty to skip them.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
ofl_setup
cd "$OFL_ROOT"
cuda_rc=0
ofl_time build-cuda ofl_cuda_compile_check || cuda_rc=$?
export PYTHONPATH="$OFL_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"

lint_rc=0
"$OFL_PY" scripts/check_arrows.py || lint_rc=$?
"$OFL_PY" scripts/check_sizes.py || lint_rc=$?
scripts/format.sh --check || lint_rc=$?

ctest_rc=0
ctest --test-dir "$OFL_BUILD_DIR" --output-on-failure --no-tests=error -j "$OFL_JOBS" || ctest_rc=$?

san_rc=0
for kind in ${OFL_SANITIZERS-thread address}; do
  echo "test.sh: core and runtime tests under -fsanitize=$kind" >&2
  if ! ofl_time "build-$kind" ofl_sanitizer_build "$kind"; then
    san_rc=1
    continue
  fi
  TSAN_OPTIONS="suppressions=$OFL_ROOT/tests/tsan.supp halt_on_error=1 ${TSAN_OPTIONS:-}" \
    ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}" \
    ctest --test-dir "$OFL_ROOT/build-$kind" --output-on-failure --no-tests=error \
    -j "$OFL_JOBS" -L '^(core|runtime)$' || san_rc=1
done

pytest_rc=0
"$OFL_PY" -m pytest -q tests/python || pytest_rc=$?

fuzz_rc=0
"$OFL_ROOT/scripts/fuzz.sh" all "${OFL_FUZZ_SECONDS:-30}" || fuzz_rc=$?

if ((cuda_rc != 0 || lint_rc != 0 || ctest_rc != 0 || san_rc != 0 || pytest_rc != 0 || fuzz_rc != 0)); then
  echo "test.sh: FAILED (CUDA compile $cuda_rc, arrow lint exit $lint_rc, ctest exit $ctest_rc, sanitizers $san_rc," \
    "pytest exit $pytest_rc, fuzz exit $fuzz_rc)" >&2
  exit 1
fi
echo "test.sh: all tests passed" >&2
