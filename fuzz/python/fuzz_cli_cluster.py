"""atheris target: the training CLI's --cluster FILE (oneflow_lite.train
--cluster FILE, nn.Graph config.auto_parallel(cluster=FILE)):
graph_compile.resolve_cluster loads it (_C.load_cluster, Cluster::Load), then
_C.plan costs and searches a small program (tiny_program.py) on a [2] mesh
with it, as plan-only mode does. Expected: ValueError/TypeError/OSError with
a message (fuzz_common.py).

Parsing and planning are C++ (not instrumented), so an input whose first
byte is a control character (below 0x09, or 0x0e..0x1f) is decoded as a
recipe (``generate``): a well-formed cluster text whose levels, sizes,
bandwidths, latencies, FLOP/s, memory and mesh come from a pool of edge
values (0, negative, subnormal, huge, inf, nan); other inputs are the text.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_common  # noqa: E402
from tiny_program import tiny_program  # noqa: E402


# Three picks in four come from the valid values (so most clusters load and
# get planned), one from the edge values.
VALID = ["1", "2", "4", "8", "16", "0.5", "450.0", "5.0", "1e-300", "4.9e-324", "1e308",
         "9223372036854775807", "3"]
EDGE = ["0", "-1", "inf", "-inf", "nan", "-9223372036854775808", "1e400", "0x10", "-0.0"]
SIZES = ["1", "2", "4", "8", "16", "2", "8", "0", "3", "9223372036854775807", "-1", "2.5"]
DTYPES = ["float32", "float32", "float32", "float64", "bfloat16", "int64", "bogus"]
MESHES = [[2], [4], [2, 2], [8], [3], [1]]


def generate(data: bytes):
    """(cluster text, mesh) from the recipe in ``data``."""
    picks = iter(data)

    def pick(options):
        return options[next(picks, 0) % len(options)]

    def number():
        b = next(picks, 0)
        return VALID[b % len(VALID)] if b < 192 else EDGE[b % len(EDGE)]

    levels = []
    for i in range(1 + next(picks, 0) % 3):
        levels.append(f'levels {{ name: "l{i}" size: {pick(SIZES)} '
                      f'bandwidth_gbps: {number()} latency_us: {number()} }}')
    flops = " ".join(f'flops {{ key: "{pick(DTYPES)}" value: {number()} }}'
                     for _ in range(1 + next(picks, 0) % 2))
    text = (f'name: "fuzz" {" ".join(levels)} device {{ name: "d" {flops} '
            f'memory_bytes: {pick(SIZES[:-1])}{pick(["", "000000000", "000000000000"])} }}')
    return text.encode(), pick(MESHES)


def TestOneInput(data: bytes) -> None:
    from oneflow_lite import _C
    from oneflow_lite.nn.graph_compile import resolve_cluster

    program, _ = tiny_program()
    mesh = [2]
    if data and (data[0] < 0x09 or 0x0e <= data[0] < 0x20):
        data, mesh = generate(data[1:])
    path = fuzz_common.write(os.path.join(fuzz_common.scratch_dir(), "cluster.pbtxt"), data)
    with fuzz_common.expected_errors("--cluster"):
        cluster = resolve_cluster(path, 2)
        _C.plan(program, mesh, cluster, "autoddl").report()


if __name__ == "__main__":
    fuzz_common.main(TestOneInput, ["oneflow_lite", "oneflow_lite.nn.graph_compile"])
