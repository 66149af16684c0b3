#!/usr/bin/env bash
# scripts/test.sh: set up and build (scripts/lib/setup.sh), then run the C++
# tests (ctest) and the Python tests (pytest) on that one build. Both always
# run; the script fails if either fails.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
ofl_setup
cd "$OFL_ROOT"
export PYTHONPATH="$OFL_ROOT/python${PYTHONPATH:+:$PYTHONPATH}"

ctest_rc=0
ctest --test-dir "$OFL_BUILD_DIR" --output-on-failure --no-tests=error -j "$OFL_JOBS" || ctest_rc=$?
pytest_rc=0
"$OFL_PY" -m pytest -q tests/python || pytest_rc=$?

if ((ctest_rc != 0 || pytest_rc != 0)); then
  echo "test.sh: FAILED (ctest exit $ctest_rc, pytest exit $pytest_rc)" >&2
  exit 1
fi
echo "test.sh: all tests passed" >&2
