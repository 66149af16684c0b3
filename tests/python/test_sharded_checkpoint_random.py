"""Sharded checkpoints under random layouts: for each case, a model of
test_distributed's draws (MLP, GPT or VGG with random small sizes, so
uneven splits and ranks holding 0 rows occur) trained 2 SGD steps under a
random valid strategy (pipelines of 2 stages included), saved by 1 or 2
simulated processes, then loaded into another random strategy on another
device count (1 to 4 devices; its own stages) and logically (eager): every
variable, parameters and optimizer state, equals bitwise the saving
session's get_variable (itself checked against numpy in test_distributed.py),
and one process reads each saved byte at most once."""
from __future__ import annotations

import random

import numpy as np
import pytest

from oneflow_lite import _C, checkpoint
from oneflow_lite import sharded_checkpoint as sc
from test_distributed import batches, build, make_case, make_model
from test_sharded_checkpoint import in_threads

CASES = 12
LAYOUTS = [(1, [1]), (2, [2]), (3, [3]), (4, [4]), (4, [2, 2])]


def session(program, loss, devices, hierarchy, seed, stages):
    strategy = _C.PlanSpec.random(seed, stages)
    return _C.DistributedSession(program, list(range(devices)), hierarchy, strategy, [loss],
                                 num_threads=1, timeout_ms=30000)


@pytest.mark.parametrize("index", range(CASES), ids=lambda i: f"case_{i}")
def test_random_layouts_round_trip_bitwise(tmp_path, index):
    case = dict(make_case(index), micro_batches=1)
    rng = random.Random(index)
    g, _ = build(make_model(case), case["batch"])
    names = sorted(g.program.variables())
    source = session(g.program, g.loss, case["devices"], case["hierarchy"],
                     case["strategy_seed"], case["stages"])
    for x, y in batches(case)[:2]:
        source.run({g.data: x, g.labels: y}, [g.loss])
    want = {n: np.asarray(source.get_variable(n)) for n in names}
    path = str(tmp_path / "ck")
    count = rng.choice([1, 2])
    ranks = np.array_split(np.arange(case["devices"]), count)
    in_threads(count, lambda w: sc.save(path, sc.SessionShards(
        source, names, [int(r) for r in ranks[w.process]]), world=w))

    devices, hierarchy = rng.choice(LAYOUTS)
    stages = 2 if devices % 2 == 0 and len(hierarchy) == 1 and rng.random() < 0.4 else 1
    target = session(g.program, g.loss, devices, hierarchy, rng.randrange(1 << 30), stages)
    where = (f"case {index}: saved on {case['hierarchy']} ({case['stages']} stages) by {count} "
             f"processes, loaded on {hierarchy} ({stages} stages)\n{source.strategy()}\n"
             f"{target.strategy()}")
    stats = sc.load_into(path, sc.SessionShards(target, names)).stats
    index_json = sc.read_index(path)
    assert stats.bytes_read <= sum(f["nbytes"] for f in index_json["files"]), where
    logical = checkpoint.load(path).tensors
    for n in names:
        got = np.asarray(target.get_variable(n))
        assert got.dtype == want[n].dtype and got.tobytes() == want[n].tobytes(), f"{n}: {where}"
        assert logical[n].tobytes() == want[n].tobytes(), f"{n} (logical): {where}"
