"""Sizes past int64: element counts and bytes of shapes from user input are
checked, and errors name the op or tensor and the shape. Worked by hand:
4 * (2**62 + 1) = 2**64 + 4 = 18446744073709551620; 2**40 * 2**40 = 2**80 =
1208925819614629174706176; 2**31 * 2**31 float32 = 2**64 bytes =
18446744073709551616; GPT at D = 2**32 has qkv weight [3 * 2**32, 2**32]:
3 * 2**64 = 55340232221128654848 elements."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.graph_builder import GraphBuilder

BIG = 2**62 + 1
RESHAPE_MSG = ("shape (4, 4611686018427387905) has 18446744073709551620 elements, more than "
               "int64 can hold")


def four():
    return flow.tensor(np.arange(4, dtype=np.float32))


def test_reshape_and_view_refuse_a_count_that_wraps():
    for method in ("reshape", "view"):
        with pytest.raises(ValueError) as info:
            getattr(four(), method)(4, BIG)
        assert str(info.value) == "reshape: " + RESHAPE_MSG
    known = ("shape (-1, 4611686018427387905, 4) has known extents whose product is "
             "18446744073709551620, more than int64 can hold")
    with pytest.raises(ValueError) as info:
        four().reshape(-1, BIG, 4)
    assert str(info.value) == "reshape: " + known
    with pytest.raises(ValueError) as info:
        flow.ops.reshape(four(), shape=[-1, BIG, 4])
    assert str(info.value) == "reshape: " + known
    # The C++ op (what graphs and flow.ops use) refuses it on its own.
    with pytest.raises(ValueError) as info:
        flow.ops.reshape(four(), shape=[4, BIG])
    assert str(info.value) == "reshape: " + RESHAPE_MSG
    assert four().reshape(2, 2).numpy().tolist() == [[0, 1], [2, 3]]


@pytest.mark.parametrize("op_type, attrs", [("reduce_sum", {}),
                                            ("transpose", {"perm": [1, 0]})])
def test_sum_and_transpose_never_see_the_wrapped_shape(op_type, attrs):
    # Reported: the wrapped reshape's sum gave 4 and its transpose crashed.
    # A graph refuses the reshape where it is added, naming the op...
    b = GraphBuilder()
    b.input("x", [4])
    with pytest.raises(ValueError) as info:
        b.program.add_op("reshape", ["x"], {"shape": [4, BIG]}, "r")
    assert str(info.value) == "reshape 'r': " + RESHAPE_MSG
    assert b.program.num_ops() == 0
    # ...and the op itself refuses such an input, naming its argument.
    with pytest.raises(ValueError) as info:
        _C.op_info(op_type, [([4, BIG], "float32")], attrs)
    assert str(info.value) == f"{op_type}: input x: " + RESHAPE_MSG


def test_traced_reshape_names_the_op():
    class Net(flow.nn.Module):
        def forward(self, x):
            return x.reshape(4, BIG).transpose(0, 1).sum()

    with pytest.raises(ValueError, match=r"reshape.*" + RESHAPE_MSG.replace("(", r"\(")
                       .replace(")", r"\)")):
        flow.nn.graph_trace.trace(Net(), flow.nn.graph_trace.Spec([4]))


def test_creation_checks_count_bytes_and_sign():
    with pytest.raises(ValueError) as info:
        flow.zeros((2**40, 2**40))
    assert str(info.value) == ("zeros: shape (1099511627776, 1099511627776) has "
                               "1208925819614629174706176 elements, more than int64 can hold")
    with pytest.raises(ValueError) as info:
        flow.randn(2**31, 2**31)
    assert str(info.value) == ("randn: shape (2147483648, 2147483648) of float32 takes "
                               "18446744073709551616 bytes, more than int64 can hold")
    with pytest.raises(ValueError, match=r"ones: shape \(2, -3\) has the negative extent -3 at "
                                         r"axis 1"):
        flow.ones(2, -3)
    # 2**46 + 1 float32 = 2**48 + 4 bytes: past the 256 TiB allocation ceiling.
    with pytest.raises(ValueError, match=r"empty: shape \(70368744177665\) of float32 takes "
                                         r"281474976710660 bytes, more than the largest "
                                         r"allocation"):
        flow.empty(2**46 + 1)
    # Meta tensors allocate nothing, but their shapes must still fit int64.
    with flow.device("meta"):
        assert flow.zeros(2**46 + 1).shape == (2**46 + 1,)
        with pytest.raises(ValueError, match="full: shape .* more than int64 can hold"):
            flow.full((2**40, 2**40), 1.0)
    assert flow.zeros(2, 3).shape == (2, 3)


def test_modules_name_their_overflowing_weight():
    with flow.device("meta"):
        with pytest.raises(ValueError) as info:
            flow.nn.Linear(2**40, 2**40)
        assert str(info.value) == (
            "Linear(in_features=1099511627776, out_features=1099511627776).weight: shape "
            "(1099511627776, 1099511627776) has 1208925819614629174706176 elements, more than "
            "int64 can hold")
        with pytest.raises(ValueError, match=r"Embedding\(num_embeddings=4294967296, "
                                             r"embedding_dim=4294967296\).weight: shape"):
            flow.nn.Embedding(2**32, 2**32)


CLUSTER = """name: "test1d"
levels { name: "link" size: 0 bandwidth_gbps: 1.0 latency_us: 0 }
device { name: "d" flops { key: "float32" value: 1e9 } memory_bytes: 1073741824 }
"""


@pytest.fixture()
def cluster_path(tmp_path):
    path = tmp_path / "test1d.pbtxt"
    path.write_text(CLUSTER)
    return str(path)


def one_linear(width: int) -> GraphBuilder:
    b = GraphBuilder()
    x = b.input("x", [1, width])
    b.program.add_variable_desc("w", [width, width], "float32", True)
    b.matmul(x, "w", name="fc")
    return b


def test_graph_inputs_are_checked_in_python_and_in_cpp():
    # 2**70 = 1180591620717411303424 does not even fit one int64 extent.
    with pytest.raises(ValueError) as info:
        GraphBuilder().input("x", [2**70])
    assert str(info.value) == ("input 'x': shape (1180591620717411303424) has "
                               "1180591620717411303424 elements, more than int64 can hold")
    with pytest.raises(ValueError) as info:
        GraphBuilder().program.add_input("x", [2**40, 2**40], "float32")
    assert str(info.value) == ("input 'x': shape (1099511627776, 1099511627776) has "
                               "1208925819614629174706176 elements, more than int64 can hold")


def test_a_2_pow_80_parameter_layer_is_refused_where_declared():
    with pytest.raises(ValueError) as info:
        one_linear(2**40)
    assert str(info.value) == ("variable 'w': shape (1099511627776, 1099511627776) has "
                               "1208925819614629174706176 elements, more than int64 can hold")


def test_a_layer_past_int64_bytes_is_infeasible_not_free(cluster_path):
    # w [2**30, 2**30] split over 2 ranks: 2**59 parameters x 16 bytes = 2**63
    # bytes per device, more than int64 holds (it used to wrap to INT64_MIN).
    b = one_linear(2**30)
    with pytest.raises(ValueError) as info:
        _C.plan(b.program, [2], cluster_path, "autoddl")
    msg = str(info.value)
    assert "no strategy fits device memory" in msg
    assert "needs is more than int64 can hold (8 EiB), above the limit of 1 GiB" in msg
    assert ("largest: variable 'w' of shape (1073741824, 1073741824) float32 needs more than "
            "int64 can hold") in msg
    # Split over 4 ranks it fits int64: 2**58 x 16 bytes = 2**32 GiB.
    with pytest.raises(ValueError, match=r"variable 'w' of shape \(1073741824, 1073741824\) "
                                         r"float32 needs 4.29497e\+09 GiB"):
        _C.plan(b.program, [4], cluster_path, "autoddl")


def test_train_cli_reports_an_overflowing_width_in_one_line():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "oneflow_lite.train", "--hidden", "4294967296",
                           "--plan-only"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    # The error is one line (the last; argparse-style usage lines may precede it).
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == ("python -m oneflow_lite.train: error: Linear(in_features=4294967296, "
                         "out_features=12884901888).weight: shape (12884901888, 4294967296) has "
                         "55340232221128654848 elements, more than int64 can hold"), proc.stderr
    assert all("error" not in line for line in lines[:-1]), proc.stderr


def op_error(op_type, inputs, attrs) -> str:
    with pytest.raises(ValueError) as info:
        _C.op_info(op_type, inputs, attrs)
    return str(info.value)


def test_ops_that_add_or_multiply_sizes_check_them():
    # concat: 2 * (2**62 - 1) + (2**62 - 1) = 13835058055282163709.
    part = ([2**62 - 1], "float16")
    assert op_error("concat", [part] * 3, {"axis": 0}) == (
        "concat: the extent of axis 0 after inputs[2]: 9223372036854775806 + "
        "4611686018427387903 = 13835058055282163709 is more than int64 can hold")
    # conv2d: Ho = 4 + 2 * 2**62 - 3 + 1 = 2**63 + 2, past int64.
    x, w = ([1, 1, 4, 4], "float32"), ([1, 1, 3, 3], "float32")
    assert op_error("conv2d", [x, w], {"padding": [2**62, 0]}) == (
        "conv2d: x.shape=(1, 1, 4, 4) with padding=[4611686018427387904, 0] has an output "
        "extent more than int64 can hold")
    # max_pool2d: a 2**62 x 2**62 window.
    assert op_error("max_pool2d", [x], {"kernel_size": [2**62, 2**62],
                                        "padding": [2**61, 2**61]}) == (
        "max_pool2d: kernel_size=[4611686018427387904, 4611686018427387904] has "
        "21267647932558653966460912964485513216 elements, more than int64 can hold")
    # slice with a huge step takes one element (start 0 of 4), without overflow.
    info = _C.op_info("slice", [([4], "float32")], {"start": [0], "stop": [4],
                                                     "step": [2**63 - 1]})
    assert info["outputs"] == [([1], "float32")]
    # matmul: [2**31, 2**29] @ [2**29, 2**31] float32 makes 2**64 bytes.
    a, b = ([2**31, 2**29], "float32"), ([2**29, 2**31], "float32")
    assert op_error("matmul", [a, b], {}) == (
        "matmul: output out: shape (2147483648, 2147483648) of float32 takes "
        "18446744073709551616 bytes, more than int64 can hold")
