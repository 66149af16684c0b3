"""Dropout resumes from a checkpoint: zero_cases.py's GPT (dropout 0.1,
AdamW, float64) trained N + M steps in one session equals, bitwise (losses
and parameters), one trained N steps, saved, loaded into a fresh session
and trained M more, because the checkpoint carries the random stream's
position (oneflow_lite._random_stream). Under one device, a random strategy
on 4 virtual devices [2, 2], the zero preset on [4], 2 micro-batches, and 2
processes (multiprocess/spawn.py); saved under one plan and loaded under
another, within zero_cases' float64 tolerance (the masks are the same, the
sums run in another order). The oracle is always the uninterrupted session.
A failed (rolled back) step does not move the saved position. A checkpoint
without the position (older versions) derives it from AdamW's step
counter, or, without one (SGD), loads with a RuntimeWarning and continues
from the session's own position; a malformed one is refused. nn.Graph's
save and load (logical and sharded formats) and the background
PeriodicSaver (data parallel on 2 devices) carry it too."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
import zero_cases as zc
from multiprocess import spawn
from oneflow_lite import _C, checkpoint, sharded_checkpoint as sc
from oneflow_lite.models import trace_loss
from oneflow_lite.periodic_checkpoint import PeriodicSaver
from test_graph import TrainGraph
from test_zero_update import assert_close

N, M = 2, 2
MODEL, DTYPE = "gpt", "float64"


def session(g, plan: str):
    """A fresh session of the built graph `g` under `plan`."""
    if plan == "one":
        return g.builder.session(num_threads=1)
    if plan == "random22":  # a random valid strategy on the mesh [2, 2]
        return _C.DistributedSession(g.program, [0, 1, 2, 3], [2, 2], _C.PlanSpec.random(5, 1),
                                     [g.loss], num_threads=2, timeout_ms=30000)
    if plan == "zero4":
        return zc.session(g, "zero", 4, 1 << 20)
    assert plan == "dp4_k2"
    return zc.session(g, "data_parallel", 4, 0, micro_batches=2)


def train(s, g, data) -> list:
    """Losses of steps over `data`, k = s.micro_batches batches per step."""
    k = s.micro_batches
    if k == 1:
        return zc.train(s, g, data)
    steps = [data[i:i + k] for i in range(0, len(data), k)]
    return [float(m[0]) for part in steps
            for m in s.run([{g.data: x, g.labels: y} for x, y in part], [g.loss])]


def state(s, names) -> dict:
    return {n: np.asarray(s.get_variable(n)) for n in names}


def saved_run(tmp_path, plan: str, fail_before_save: bool = False):
    """N steps under `plan`, saved to tmp_path/ck, then M more: (data, names,
    (losses, parameters) of the M steps, iteration at the save)."""
    k = 2 if plan == "dp4_k2" else 1
    data = zc.batches(MODEL, DTYPE, steps=(N + M) * k)
    g, params = zc.build(MODEL, DTYPE)
    names = list(g.program.variables())
    s = session(g, plan)
    train(s, g, data[:N * k])
    if fail_before_save:  # a label out of range: the step fails and is rolled back
        x, y = data[N * k]
        with pytest.raises(Exception, match="out of range"):
            train(s, g, [(x, np.full_like(y, zc.CONFIGS[MODEL].vocab_size))] * k)
    at = s.iteration
    sc.save(tmp_path / "ck", sc.SessionShards(s, names), model=MODEL)
    want = (train(s, g, data[N * k:]), state(s, params))
    return data, names, want, at


def resumed(tmp_path, plan: str, data, names):
    """A fresh session under `plan` loads tmp_path/ck and trains the last M steps."""
    k = 2 if plan == "dp4_k2" else 1
    g, params = zc.build(MODEL, DTYPE)
    s = session(g, plan)
    sc.load_into(tmp_path / "ck", sc.SessionShards(s, names), model=MODEL)
    return (train(s, g, data[N * k:]), state(s, params)), s


def assert_bitwise(got, want, where: str) -> None:
    assert got[0] == want[0], f"losses {where}: {got[0]} vs {want[0]}"
    for p, value in want[1].items():
        assert got[1][p].tobytes() == value.tobytes(), f"{p}: {where}"


@pytest.mark.parametrize("plan", ["one", "random22", "zero4", "dp4_k2"])
def test_resumed_run_equals_the_uninterrupted_one_bitwise(tmp_path, plan):
    data, names, want, at = saved_run(tmp_path, plan)
    k = 2 if plan == "dp4_k2" else 1
    assert at == N * k and sc.read_index(tmp_path / "ck")["random"] == {"iteration": N * k}
    got, s = resumed(tmp_path, plan, data, names)
    assert_bitwise(got, want, plan)
    assert s.iteration == (N + M) * k
    if plan == "random22":  # masks drawn per shard: dropout split on both mesh axes
        assert "dropout: (S(2), S(1))" in s.strategy()


def test_resumed_under_another_plan_draws_the_same_masks(tmp_path):
    data, names, want, _ = saved_run(tmp_path, "random22")
    got, _ = resumed(tmp_path, "one", data, names)
    assert_close(got, want, DTYPE, "saved under a random [2, 2] strategy, loaded on one device")


def test_a_rolled_back_step_does_not_move_the_saved_position(tmp_path):
    data, names, want, at = saved_run(tmp_path, "zero4", fail_before_save=True)
    assert at == N
    got, _ = resumed(tmp_path, "zero4", data, names)
    assert_bitwise(got, want, "zero4 after a failed step")


def test_a_negative_position_is_refused_and_changes_nothing():
    g, _ = zc.build(MODEL, DTYPE)
    s = session(g, "one")
    s.iteration = 5
    with pytest.raises(ValueError, match="set_iteration: iteration -1 must be >= 0"):
        s.iteration = -1
    assert s.iteration == 5


def strip_position(path) -> None:
    """Makes the checkpoint at `path` look written by an older version."""
    file = path / "index.json"
    index = json.loads(file.read_text())
    del index["random"]
    file.write_text(json.dumps(index))


def test_an_older_checkpoint_takes_the_position_from_the_step_counter(tmp_path):
    data, names, want, _ = saved_run(tmp_path, "zero4")
    strip_position(tmp_path / "ck")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, _ = resumed(tmp_path, "zero4", data, names)
    assert_bitwise(got, want, "AdamW's step counter")


def test_an_older_checkpoint_without_a_step_counter_loads_and_warns(tmp_path):
    flow.manual_seed(3)
    g = trace_loss(flow.models.create(MODEL, zc.CONFIGS[MODEL]).double(), zc.BATCH)
    g.builder.minimize(g.loss, "sgd", lr=0.05, momentum=0.9)
    names = list(g.program.variables())
    data = zc.batches(MODEL, DTYPE, steps=N)
    s = g.builder.session(num_threads=1)
    zc.train(s, g, data)
    sc.save(tmp_path / "ck", sc.SessionShards(s, names), model=MODEL)
    strip_position(tmp_path / "ck")
    fresh = g.builder.session(num_threads=1)
    with pytest.warns(RuntimeWarning, match="no random stream position .* iteration 0"):
        sc.load_into(tmp_path / "ck", sc.SessionShards(fresh, names), model=MODEL)
    assert fresh.iteration == 0
    for n in names:
        assert np.asarray(fresh.get_variable(n)).tobytes() == np.asarray(
            s.get_variable(n)).tobytes(), n


@pytest.mark.parametrize("field", [{"iteration": -1}, {"iteration": 1.5}, {"iteration": 2 ** 62},
                                   {"iteration": True}, {}, 3, None])
def test_a_malformed_position_is_refused_naming_it(tmp_path, field):
    sc.save(tmp_path / "ck", sc.ArrayShards({"w": np.ones(3)}, iteration=4))
    assert sc.load_logical(tmp_path / "ck").random == {"iteration": 4}
    index = json.loads((tmp_path / "ck" / "index.json").read_text())
    index["random"] = field
    (tmp_path / "ck" / "index.json").write_text(json.dumps(index))
    with pytest.raises(checkpoint.CheckpointError, match="index.json 'random' is"):
        sc.read_index(tmp_path / "ck")


def graph_run(path, data, load: bool, how: str):
    """nn.Graph (one device, or data parallel on 2 devices for "periodic"):
    N steps and a save (`how`: "logical", "sharded" or "periodic", the
    background saver), or a load; then M steps."""
    flow.manual_seed(3)
    model = flow.models.create(MODEL, zc.CONFIGS[MODEL]).double()
    graph = TrainGraph(model, flow.optim.AdamW(model.named_parameters(), **zc.ADAMW))
    if how == "periodic":
        graph.config.auto_parallel(cluster=zc.CLUSTER, searcher="data_parallel",
                                   placement=flow.placement("cpu", [0, 1]))
    if load:
        graph.load(str(path))
    else:
        for x, y in data[:N]:
            graph(flow.tensor(x), flow.tensor(y))
        if how == "periodic":
            saver = PeriodicSaver()
            saver.save(graph, str(path), model=MODEL)
            saver.wait()
        else:
            graph.save(str(path), model=MODEL, sharded=how == "sharded")
    losses = [graph(flow.tensor(x), flow.tensor(y)).numpy().tobytes() for x, y in data[N:]]
    return losses, {k: v.numpy().tobytes() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("how", ["logical", "sharded", "periodic"])
def test_nn_graph_save_and_load_carry_the_position(tmp_path, how):
    data = zc.batches(MODEL, DTYPE, steps=N + M)
    want = graph_run(tmp_path / "ck", data, load=False, how=how)
    assert checkpoint.read_index(str(tmp_path / "ck"))["random"] == {"iteration": N}
    assert graph_run(tmp_path / "ck", data, load=True, how=how) == want


def test_two_processes_resume_bitwise(tmp_path):
    """multiprocess.worker's dropout_resume mode: 2 processes, one rank each,
    zero preset; the saving run against the one that loads."""
    env = {"OFL_TEST_THREADS": "1"}
    for phase in ("save", "load"):
        r = spawn.run_world(["-m", "multiprocess.worker", "dropout_resume", str(tmp_path),
                             phase, str(tmp_path / "ck")], 2, 240, extra_env=env)
        assert not r.timed_out and r.codes == [0, 0], f"{phase}: codes {r.codes}\n" + "\n".join(
            o[-3000:] for o in r.outputs)
    for p in range(2):
        saved, loaded = (np.load(tmp_path / f"dropout-{ph}.p{p}.npz") for ph in ("save", "load"))
        assert saved["losses"].tobytes() == loaded["losses"].tobytes(), p
        for k in saved.files:
            assert saved[k].tobytes() == loaded[k].tobytes(), (p, k)
