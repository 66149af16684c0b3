"""Transactional steps (runtime/step_undo.h): a step that fails on 4 virtual
devices (a label out of range on one rank's slice, or a 1 ms timeout)
leaves every variable (parameters, Adam's m, v and step) bitwise as before,
and says so; the retried good step then gives the loss and the variables of
a session that never failed (the oracle: a second, fresh session on the same
feeds), dropout included (the runtime's iteration did not advance); with the
undo copy in the arena over the spare register slots (two slots) and over
bytes dead at the update (one). Off
(transactional=False, graph.config.transactional_steps(False)) the error says
that state may be partially updated.
"""
from __future__ import annotations

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.models import GPTConfig, trace_loss

GPT = GPTConfig(vocab_size=11, seq_len=8, n_layer=1, n_head=2, n_embd=16, dropout=0.25)
BATCH = 4
# For the timeouts: ops that take about a millisecond (256 x 512 x 128
# matmuls), so that some rank waits past a 1 ms timeout for another's output
# however fast and idle the machine is (the tiny GPT above finished 40 steps
# inside 1 ms waits on a loaded 2-core machine).
SLOW_GPT = GPTConfig(vocab_size=11, seq_len=32, n_layer=2, n_head=2, n_embd=128, dropout=0.25)
SLOW_BATCH = 8
RESTORED = "(variables and optimizer state restored to their values before this run)"
OFF = "(state may be partially updated: transactional steps are off)"


def build(config: GPTConfig = GPT, batch_size: int = BATCH):
    flow.manual_seed(3)
    g = trace_loss(flow.models.create("gpt", config), batch_size)
    g.builder.minimize(g.loss, "adam", lr=0.01)
    return g


def session(g, **options):
    options.setdefault("timeout_ms", 30000)
    return _C.DistributedSession(g.program, [0, 1, 2, 3], [2, 2], _C.PlanSpec.random(5),
                                 [g.loss], num_threads=2, **options)


def batch(seed: int, config: GPTConfig = GPT, batch_size: int = BATCH):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, config.vocab_size, (batch_size, config.seq_len)),
            rng.integers(0, config.vocab_size, (batch_size, config.seq_len)))


def snapshot(s, g) -> dict:
    return {v: np.array(s.get_variable(v), copy=True) for v in g.program.variables()}


def assert_bitwise_equal(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].tobytes() == want[k].tobytes(), k


def step(s, g, x, y) -> float:
    (loss,) = s.run({g.data: x, g.labels: y}, [g.loss])
    return float(loss)


# Two register slots: the undo copy lies over slot 1 of the registers, which
# a run of one iteration never writes; one slot: over the arena's bytes that
# are dead when each update runs. Either way saved by the update's act
# (runtime/step_undo.h, runtime/memory_plan.h).
SLOTS = pytest.mark.parametrize("num_slots", [2, 1], ids=["spare_slots", "dead_bytes"])


@SLOTS
def test_failed_step_leaves_adam_state_bitwise_and_the_retry_matches_a_fresh_session(num_slots):
    g = build()
    assert any("step" in v for v in g.program.variables())  # Adam's counter is a variable
    s, fresh = session(g, num_slots=num_slots), session(g, num_slots=num_slots)
    x, y = batch(0)
    step(s, g, x, y)
    before = snapshot(s, g)
    bad_y = y.copy()
    bad_y[3, 5] = -3  # one element: on the ranks that hold row 3
    with pytest.raises(ValueError) as info:
        step(s, g, x, bad_y)
    assert "labels[3, 5]=-3 is out of range [0, 11)" in str(info.value)
    assert str(info.value).endswith(RESTORED)
    assert_bitwise_equal(snapshot(s, g), before)
    # The session that never failed: the same two good steps.
    x2, y2 = batch(1)
    want = [step(fresh, g, x, y), step(fresh, g, x2, y2)]
    # Another dropout mask (a run counter that advanced on failure) moves
    # these by far more than the tolerance.
    np.testing.assert_allclose(step(s, g, x2, y2), want[1], rtol=1e-6, atol=1e-7)
    got, oracle = snapshot(s, g), snapshot(fresh, g)
    for k in oracle:
        np.testing.assert_allclose(got[k], oracle[k], rtol=1e-6, atol=1e-7, err_msg=k)
    assert want[0] != want[1]  # the steps did train


@SLOTS
def test_timed_out_steps_leave_every_variable_bitwise_unchanged(num_slots):
    g = build(SLOW_GPT, SLOW_BATCH)
    s = session(g, timeout_ms=1, num_slots=num_slots)
    failures = 0
    for seed in range(40):  # each attempt: unchanged when it fails, as Run says
        before = snapshot(s, g)
        x, y = batch(seed, SLOW_GPT, SLOW_BATCH)
        try:
            step(s, g, x, y)
        except (RuntimeError, ValueError) as e:
            failures += 1
            assert " waited 1 ms for " in str(e) or "timed out" in str(e), str(e)
            assert str(e).endswith(RESTORED), str(e)
            assert_bitwise_equal(snapshot(s, g), before)
        if failures == 3:
            break
    assert failures > 0  # some rank waits past 1 ms for a millisecond's op


def test_without_transactions_the_error_says_state_may_be_partial():
    g = build()
    s = session(g, transactional=False)
    on = session(g)
    # The undo copy is allocated once per rank, beside the registers, and counted.
    assert s.undo_bytes() == [0, 0, 0, 0] and min(on.undo_bytes()) > 0
    assert [a - b for a, b in zip(on.peak_bytes(), s.peak_bytes())] == on.undo_bytes()
    x, y = batch(0)
    bad_y = y.copy()
    bad_y[0, 0] = 99
    with pytest.raises(ValueError) as info:
        step(s, g, x, bad_y)
    assert str(info.value).endswith(OFF)


@SLOTS
def test_the_undo_copy_in_the_arena_costs_less_than_the_state(num_slots):
    """The undo copy shares the arena with activations dead at the update (one
    slot) or with the spare slots (two), so it adds less than a whole copy of
    what the updates write (no rank holds more than all of it: the bound
    here; test_memory_estimate.py has the exact one, data parallel); what it
    adds is what the allocators measure between the same session with and
    without transactions."""
    g = build()
    on = session(g, num_slots=num_slots)
    off = session(g, num_slots=num_slots, transactional=False)
    x, y = batch(0)
    for s in (on, off):
        step(s, g, x, y)
    assert [a - b for a, b in zip(on.peak_bytes(), off.peak_bytes())] == on.undo_bytes()
    state = snapshot(on, g)
    updated = [v for v in state if v in g.trainable or "/" in v]
    assert any(v.endswith("/m") for v in updated)  # Adam's state is among them
    whole = sum(state[v].nbytes for v in updated)
    for lean in on.undo_bytes():
        assert 0 < lean < whole


class TrainGraph(flow.nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        return flow.nn.functional.cross_entropy(self.model(x), y)


@pytest.mark.parametrize("transactional", [True, False])
@pytest.mark.parametrize("placed", [True, False], ids=["placement", "one_device"])
def test_graph_config_transactional_steps_reaches_the_session(transactional, placed):
    """On a placement and on one device (a one-rank plan on the actor runtime):
    the same undo copy, switched by the same setting."""
    flow.manual_seed(0)
    model = flow.models.create("gpt", GPTConfig(vocab_size=11, seq_len=8, n_layer=1, n_head=2,
                                                n_embd=16))
    g = TrainGraph(model, flow.optim.Adam(model.parameters(), lr=0.01))
    g.config.transactional_steps(transactional)  # before auto_parallel: kept
    if placed:
        g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
                               placement=flow.placement("cpu", [[0, 1], [2, 3]]),
                               timeout_ms=30000)
    x, y = batch(0)
    g(x, y)
    before = {k: v.numpy().copy() for k, v in g.state_dict().items()}
    bad_y = y.copy()
    bad_y[2, 1] = 50
    with pytest.raises(ValueError) as info:
        g(x, bad_y)
    assert str(info.value).endswith(RESTORED if transactional else OFF), str(info.value)
    if transactional:
        after = {k: v.numpy() for k, v in g.state_dict().items()}
        assert all(before[k].tobytes() == after[k].tobytes() for k in before)
    with pytest.raises(TypeError, match="transactional_steps: expected a bool, got int 1"):
        g.config.transactional_steps(1)
