"""scripts/check_arrows.py, the module-arrow lint: it passes on this repository
and flags a forbidden include or call planted in a small tree of its own."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_arrows.py"


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


@pytest.mark.parametrize("module_file,include,arrow", [
    ("oneflow_lite/core/tensor.h", "ops/op.h", "core -> ops"),
    ("ops/matmul.cpp", "search/cost.h", "ops -> search"),
    ("search/exact.cpp", "ops/op.h", "search -> ops"),
    ("graph/lowering.cpp", "runtime/local.h", "graph -> runtime"),
    ("runtime/plan.cpp", "search/cost.h", "runtime -> search"),
    ("oneflow_lite/api/x.cpp", "python/csrc/convert.h", "api -> python"),
    ("python/csrc/x.cpp", "graph/strategy.h", "python -> graph"),
])
def test_every_forbidden_pair_fails(tree, module_file, include, arrow):
    write(tree, module_file, f'#include "{include}"\n')
    result = run_lint(tree)
    assert result.returncode == 1
    assert f'{module_file}:1: includes "{include}": arrow {arrow} is not allowed' in result.stderr


def test_include_of_no_module_fails(tree):
    write(tree, "graph/x.cpp", '#include "tests/cpp/helper.h"\n')
    result = run_lint(tree)
    assert result.returncode == 1
    assert 'graph/x.cpp:1: includes "tests/cpp/helper.h": not a header of any module' in result.stderr


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
