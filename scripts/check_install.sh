#!/usr/bin/env bash
# scripts/check_install.sh: checks the standard install route, `pip install .`
# (pyproject.toml, scikit-build-core), on this machine: a fresh virtual
# environment under build/install-check/venv, `pip install .` into it (the
# C++ core is compiled by CMake in build/pip-<tag>/, incrementally on later
# calls), then an import and a one-op session run from outside the source
# tree, so the installed package, not python/, is what is imported.
# It is not part of scripts/test.sh because it compiles the C++ a second
# time (other options: no tests, no benchmarks); run it after changing
# pyproject.toml, python/CMakeLists.txt or the package layout.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
ofl_ensure_apt
venv="$OFL_ROOT/build/install-check/venv"
if [[ ! -x "$venv/bin/python" ]]; then
  "${OFL_PYTHON:-python3}" -m venv "$venv"
fi
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL="$OFL_JOBS" "$venv/bin/python" -m pip install -q "$OFL_ROOT"
echo "check_install: pip install . took $((SECONDS - start)) s" >&2
cd /tmp
"$venv/bin/python" - <<'PY'
import numpy as np
import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

assert "site-packages" in flow.__file__, flow.__file__
b = GraphBuilder()
x = b.input("x", [2, 3])
w = b.variable("w", np.arange(12, dtype=np.float32).reshape(3, 4))
y = b.matmul(x, w)
xv = np.ones((2, 3), np.float32)
out = b.session().run({"x": xv}, [y])[0]
assert np.allclose(out, xv @ np.arange(12, dtype=np.float32).reshape(3, 4), rtol=1e-6, atol=1e-6)
print(f"check_install: OK, {flow.__file__}, {len(_C.list_ops())} ops")
PY
