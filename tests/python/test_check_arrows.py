"""scripts/check_arrows.py, the module-arrow lint: it passes on this repository
and flags a forbidden include or call planted in a small tree of its own."""

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_arrows.py"
_spec = importlib.util.spec_from_file_location("check_arrows", SCRIPT)
check_arrows = importlib.util.module_from_spec(_spec)
sys.modules["check_arrows"] = check_arrows  # its dataclasses look themselves up there
_spec.loader.exec_module(check_arrows)


def run_lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree that follows every arrow: one header and one source per module."""
    write(tmp_path, "oneflow_lite/core/shape.h", """\
        #pragma once
        namespace ofl {
        class Shape {
         public:
          static Shape Scalar();
        };
        int NumElements(const Shape& s);
        }  // namespace ofl
        """)
    write(tmp_path, "ops/op.h", '#pragma once\n#include "oneflow_lite/core/shape.h"\n')
    write(tmp_path, "search/cost.h", '#pragma once\n#include "oneflow_lite/core/shape.h"\n')
    write(tmp_path, "graph/strategy.h", """\
        #pragma once
        #include "ops/op.h"
        #include "search/cost.h"
        namespace ofl {
        class Strategy {
         public:
          static Strategy Empty();
          int size() const;
        };
        Strategy DeduceStrategy(int seed);
        }  // namespace ofl
        """)
    write(tmp_path, "runtime/actor.cpp", '#include "ops/op.h"\n#include "runtime/local.h"\n')
    write(tmp_path, "runtime/local.h", "#pragma once\n")
    write(tmp_path, "oneflow_lite/api/session.h", """\
        #pragma once
        #include "graph/strategy.h"
        namespace ofl {
        Strategy MakeStrategy(int seed);
        }  // namespace ofl
        """)
    write(tmp_path, "python/csrc/convert.h", '#pragma once\n#include "oneflow_lite/core/shape.h"\n')
    write(tmp_path, "python/csrc/module.cpp", """\
        #include "convert.h"
        #include "oneflow_lite/api/session.h"
        // DeduceStrategy(1) in a comment is no call.
        int Bind() {
          ofl::Strategy s = ofl::MakeStrategy(1);  // api: allowed
          const char* text = "DeduceStrategy(2)";   // nor is a string
          return s.size() + NumElements(Shape::Scalar()) + (text != nullptr);
        }
        """)
    return tmp_path


def test_repository_follows_the_arrows():
    result = run_lint(ROOT)
    assert result.returncode == 0, result.stderr
    assert "every include and call follows the arrows" in result.stdout


def test_clean_tree_passes(tree):
    result = run_lint(tree)
    assert result.returncode == 0, result.stderr


def test_runtime_including_graph_fails(tree):
    write(tree, "runtime/actor.cpp", '#include "ops/op.h"\n\n#include "graph/strategy.h"\n')
    result = run_lint(tree)
    assert result.returncode == 1
    assert ('runtime/actor.cpp:3: includes "graph/strategy.h": arrow runtime -> graph is not '
            "allowed (runtime may use: core, ops)") in result.stderr


# DESIGN.md section 2's arrows, with README's two changes (api -> ops,
# python -> core), written out here independently of the script's table.
FOLDERS = {"core": "oneflow_lite/core", "ops": "ops", "search": "search", "graph": "graph",
           "runtime": "runtime", "api": "oneflow_lite/api", "python": "python/csrc"}
HEADERS = {"core": "oneflow_lite/core/shape.h", "ops": "ops/op.h", "search": "search/cost.h",
           "graph": "graph/strategy.h", "runtime": "runtime/local.h",
           "api": "oneflow_lite/api/session.h", "python": "python/csrc/convert.h"}
MAY_USE = {"core": "", "ops": "core", "search": "core", "graph": "ops search core",
           "runtime": "ops core", "api": "graph runtime search ops core", "python": "api core"}
PAIRS = [(m, t) for m in FOLDERS for t in FOLDERS if m != t]


@pytest.mark.parametrize("module,target", PAIRS)
def test_every_module_pair(tree, module, target):
    source = f"{FOLDERS[module]}/planted.cpp"
    write(tree, source, f'// planted\n#include "{HEADERS[target]}"\n')
    violations = [str(v) for v in check_arrows.check(tree)[0]]  # in-process: 42 cases
    if target in MAY_USE[module].split():
        assert violations == []
    else:
        assert len(violations) == 1
        assert violations[0].startswith(f'{source}:2: includes "{HEADERS[target]}": arrow '
                                        f"{module} -> {target} is not allowed")


def test_include_of_no_module_fails(tree):
    write(tree, "graph/x.cpp", '#include "tests/cpp/helper.h"\n')
    result = run_lint(tree)
    assert result.returncode == 1
    assert ('graph/x.cpp:1: includes "tests/cpp/helper.h": not a header of any module'
            in result.stderr)


def test_python_calling_graph_through_api_headers_fails(tree):
    write(tree, "python/csrc/planning.cpp", """\
        #include "oneflow_lite/api/session.h"
        int Plan() {
          return ofl::DeduceStrategy(3).size() + Strategy::Empty().size();
        }
        """)
    result = run_lint(tree)
    assert result.returncode == 1
    assert ("python/csrc/planning.cpp:3: calls DeduceStrategy (graph/strategy.h): arrow "
            "python -> graph is not allowed (python may use: api, core)") in result.stderr
    assert "python/csrc/planning.cpp:3: calls Strategy::Empty (graph/strategy.h)" in result.stderr


def test_python_taking_a_graph_function_address_fails(tree):
    write(tree, "python/csrc/bind.cpp", "auto f = &DeduceStrategy;\n")
    result = run_lint(tree)
    assert result.returncode == 1
    assert "python/csrc/bind.cpp:1: calls DeduceStrategy (graph/strategy.h)" in result.stderr
