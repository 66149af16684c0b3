"""atheris target: a saved strategy (protobuf JSON written by
nn.Graph.save_strategy / PlannedStrategy.save, or the older {"kind":
"manual", ...} form) as nn.Graph.load_strategy uses it: _C.load_strategy
reads the file into a _C.Strategy, then _C.DistributedSession builds the
plan it describes for a small program (tiny_program.py) on 2 virtual
devices, as the graph's first call does (graph_compile.Compiled.build:
_C.compile with PlanSpec.given). The session is not run. Files of other
kinds (deduce, random: session arguments, _C.PlanSpec) are refused.
Expected: ValueError/TypeError/OSError with a message (fuzz_common.py).

Both readers are C++ (the extension is not instrumented), so libFuzzer sees
little coverage here. An input that is not JSON is therefore decoded as a
recipe for one (``generate``): keys, kinds, tensor and op names and SBP
strings of the program, and values of every JSON type, so most inputs reach
the strategy's checks instead of the JSON parser's.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_common  # noqa: E402
from tiny_program import tiny_program  # noqa: E402


KEYS = ["kind", "seed", "stages", "pinned", "sources", "signatures", "x"]
WORDS = ["manual", "deduce", "random", "x", "w1", "bias", "w2", "fc1", "fc1_bias", "fc2", "loss",
         "loss/out_0", "fc1/out_0", "(B)", "(P)", "(S(0))", "(S(1))", "(S(2))", "(S(-1))",
         "(B, B)", "S(0)", "(S(0)), (B) -> (S(0))", "(B), (S(1)) -> (S(1))",
         "(S(1)), (S(0)) -> (P)", "(B), (B) -> (B)", "(B) -> (B)", "(P) -> (B)", "", "->"]
SCALARS = [0, 1, 2, 3, -1, 2**63, 2**64, -2**63, 1.5, float("inf"), None, True, False]


class Recipe:
    """Reads choices from the input bytes; 0 once they run out."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def pick(self, n: int) -> int:
        b = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return b % n


def generate(r: Recipe, depth: int = 0):
    """A JSON value, mostly dicts of the strategy's keys."""
    kind = r.pick(6) if depth < 3 else 3 + r.pick(3)
    if kind <= 2:
        return {(KEYS + WORDS)[r.pick(len(KEYS) + len(WORDS))] if r.pick(3) else
                KEYS[r.pick(len(KEYS))]: generate(r, depth + 1) for _ in range(r.pick(6))}
    if kind == 3:
        return [generate(r, depth + 1) for _ in range(r.pick(3))] if depth < 3 else []
    if kind == 4:
        return WORDS[r.pick(len(WORDS))]
    return SCALARS[r.pick(len(SCALARS))]


def as_json(data: bytes) -> bytes:
    """``data`` itself when it is JSON text, else the JSON its recipe makes:
    mostly a dict with "kind" and "signatures" (what load_strategy requires)."""
    try:
        json.loads(data.decode("utf-8"))
        return data
    except ValueError:
        r = Recipe(data)
        value = generate(r)
        if isinstance(value, dict) and r.pick(4):
            value.setdefault("kind", WORDS[r.pick(3)])
            value.setdefault("signatures", generate(r, 2) if r.pick(2) else {})
        return json.dumps(value).encode()


def TestOneInput(data: bytes) -> None:
    from oneflow_lite import _C

    program, loss = tiny_program()
    path = fuzz_common.write(os.path.join(fuzz_common.scratch_dir(), "strategy.json"),
                             as_json(data))
    with fuzz_common.expected_errors("load_strategy"):
        strategy = _C.load_strategy(path)
        _C.DistributedSession(program, [0, 1], [2], strategy, [loss], num_threads=1,
                              timeout_ms=10000)


if __name__ == "__main__":
    fuzz_common.main(TestOneInput, ["oneflow_lite", "oneflow_lite.nn.graph_compile"])
