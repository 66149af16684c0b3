"""nn.Graph behaves as OneFlow's: the graph, its module and its optimizer
share parameters and state (eager calls, state_dict, checkpoints, an eval
graph and eager optimizer steps see what the graph trained, and the graph
sees eager changes); ``loss.backward()`` inside ``build`` trains exactly
as returning the loss does; ``add_optimizer(opt, lr_sch=...)``; a new batch
size or dtype compiles a new plan and trains on; inputs are named after
build()'s arguments.

The oracle is numpy: a Linear layer with softmax cross-entropy trained by
SGD with momentum (PyTorch's rule), written out below in float64; the
framework runs float32, compared with rtol 1e-5 and atol 1e-6.
"""
from __future__ import annotations

import copy
import gc
import json
import os
import weakref

import numpy as np
import pytest

import oneflow_lite as flow
from multiprocess import spawn
from oneflow_lite import checkpoint

nn = flow.nn
F = flow.nn.functional
IN, OUT = 5, 3
MESH = flow.placement("cpu", [[0, 1], [2, 3]])
TOL = dict(rtol=1e-5, atol=1e-6)
HERE = os.path.dirname(os.path.abspath(__file__))


# ---- the numpy oracle -----------------------------------------------------------------
def np_loss_and_grads(w, b, x, y):
    z = x.astype(np.float64) @ w.T + b
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    loss = -np.log(p[rows, y]).mean()
    d = p.copy()
    d[rows, y] -= 1
    d /= len(y)
    return loss, d.T @ x, d.sum(axis=0)


class NumpySGD:
    """w -= lr * buf, buf = momentum * buf + grad (zeros at first)."""

    def __init__(self, w, b, lr, momentum):
        self.w, self.b = np.array(w, np.float64), np.array(b, np.float64)
        self.lr, self.momentum = lr, momentum
        self.bw, self.bb = np.zeros_like(self.w), np.zeros_like(self.b)

    def step(self, x, y, lr=None):
        loss, gw, gb = np_loss_and_grads(self.w, self.b, x, y)
        self.bw = self.momentum * self.bw + gw
        self.bb = self.momentum * self.bb + gb
        self.w -= (self.lr if lr is None else lr) * self.bw
        self.b -= (self.lr if lr is None else lr) * self.bb
        return loss

    def loss(self, x, y):
        return np_loss_and_grads(self.w, self.b, x, y)[0]


# ---- the framework side -----------------------------------------------------------------
def setup(lr=0.5, momentum=0.9, seed=0):
    flow.manual_seed(seed)
    model = nn.Linear(IN, OUT)
    opt = flow.optim.SGD(model.named_parameters(), lr=lr, momentum=momentum)
    oracle = NumpySGD(model.weight.numpy(), model.bias.numpy(), lr, momentum)
    return model, opt, oracle


def data(sizes, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((n, IN)).astype(np.float32), rng.integers(0, OUT, n))
            for n in sizes]


class BackwardInBuild(nn.Graph):
    """OneFlow's way: loss.backward() inside build."""

    def __init__(self, model, opt, **kwargs):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, **kwargs)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


class ReturnTheLoss(nn.Graph):
    """The earlier way: the optimizer trains the first output."""

    def __init__(self, model, opt, **kwargs):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, **kwargs)

    def build(self, x, y):
        return F.cross_entropy(self.model(x), y)


class Eval(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def eager_loss(model, x, y):
    return float(F.cross_entropy(model(flow.tensor(x)), flow.tensor(y)))


def on_mesh(graph):
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel", placement=MESH)
    return graph


# ---- sharing ----------------------------------------------------------------------------
@pytest.mark.parametrize("mesh", [False, True], ids=["one_device", "mesh_2x2"])
def test_the_module_has_the_values_the_graph_trained(mesh):
    model, opt, oracle = setup()
    graph = BackwardInBuild(model, opt)
    if mesh:
        on_mesh(graph)
    batches = data([8] * 4)
    for x, y in batches:
        np.testing.assert_allclose(float(graph(x, y)), oracle.step(x, y), **TOL)
    # no copy call: the module, its state_dict and eager calls see the trained values
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)
    np.testing.assert_allclose(model.state_dict()["bias"].numpy(), oracle.b, **TOL)
    x, y = batches[0]
    eager = eager_loss(model, x, y)
    np.testing.assert_allclose(eager, oracle.loss(x, y), **TOL)
    # the graph computes the same loss at the same values (it returns the loss before its update)
    np.testing.assert_allclose(float(graph(x, y)), eager, rtol=1e-6, atol=1e-7)
    graph.copy_to_modules()  # kept for compatibility: nothing left to move
    oracle.step(x, y)
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)


def test_an_eval_graph_built_after_training_sees_the_trained_values():
    model, opt, oracle = setup()
    train = BackwardInBuild(model, opt)
    batches = data([8] * 5)
    for x, y in batches[:3]:
        train(x, y)
        oracle.step(x, y)
    probe = data([6], seed=7)[0][0]
    evaluate = Eval(model)
    np.testing.assert_allclose(evaluate(probe).numpy(), probe @ oracle.w.T + oracle.b, **TOL)
    for x, y in batches[3:]:  # the train graph continues from its values, the eval graph follows
        np.testing.assert_allclose(float(train(x, y)), oracle.step(x, y), **TOL)
    np.testing.assert_allclose(evaluate(probe).numpy(), probe @ oracle.w.T + oracle.b, **TOL)


def test_eager_steps_and_graph_steps_continue_each_other():
    """The optimizer state is shared too: momentum carries across the hand-overs."""
    model, opt, oracle = setup()
    graph = BackwardInBuild(model, opt)
    batches = data([8] * 7)
    for i, (x, y) in enumerate(batches[:6]):
        if i in (2, 3):  # two eager steps between graph steps
            loss = F.cross_entropy(model(flow.tensor(x)), flow.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            got = float(loss)
        else:
            got = float(graph(x, y))
        np.testing.assert_allclose(got, oracle.step(x, y), **TOL, err_msg=f"step {i}")
    np.testing.assert_allclose(opt.state_dict()["weight/momentum"].numpy(), oracle.bw, **TOL)
    # an eager load_state_dict reaches the graph at its next call
    x, y = batches[6]
    fresh, _, start = setup(seed=0)
    model.load_state_dict(fresh.state_dict())
    np.testing.assert_allclose(float(graph(x, y)), start.loss(x, y), **TOL)


def test_a_checkpoint_of_the_module_equals_one_of_the_graph(tmp_path):
    model, opt, oracle = setup()
    graph = BackwardInBuild(model, opt)
    for x, y in data([8] * 3):
        graph(x, y)
        oracle.step(x, y)
    graph.save(str(tmp_path / "graph"))
    checkpoint.save_eager(str(tmp_path / "module"), model, opt)
    from_graph = checkpoint.load(str(tmp_path / "graph")).tensors
    from_module = checkpoint.load(str(tmp_path / "module")).tensors
    assert sorted(from_graph) == sorted(from_module) == [
        "bias", "bias/momentum", "weight", "weight/momentum"]
    for key in from_graph:
        np.testing.assert_array_equal(from_graph[key], from_module[key], err_msg=key)
    np.testing.assert_allclose(from_module["weight"], oracle.w, **TOL)
    np.testing.assert_allclose(from_module["weight/momentum"], oracle.bw, **TOL)


def test_a_deep_copy_after_graph_steps_is_a_plain_snapshot():
    model, opt, oracle = setup()
    graph = BackwardInBuild(model, opt)
    x, y = data([8])[0]
    graph(x, y)
    oracle.step(x, y)
    snapshot = copy.deepcopy(model)
    assert type(snapshot.weight) is nn.Parameter
    graph(x, y)  # trains the original only
    np.testing.assert_allclose(snapshot.weight.numpy(), oracle.w, **TOL)
    oracle.step(x, y)
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)


# ---- backward in build, lr_sch ------------------------------------------------------------
@pytest.mark.parametrize("mesh", [False, True], ids=["one_device", "mesh_2x2"])
def test_backward_in_build_trains_bitwise_as_returning_the_loss(mesh):
    results = []
    for cls in (BackwardInBuild, ReturnTheLoss):
        flow.manual_seed(3)
        model = flow.models.MLP(flow.models.MLPConfig(in_features=IN, hidden=(16,),
                                                      num_classes=OUT))
        opt = flow.optim.AdamW(model.named_parameters(), lr=0.01)
        sched = flow.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
        graph = cls(model, opt, lr_sch=sched, clip_grad_max_norm=0.5)
        if mesh:
            on_mesh(graph)
        losses = [graph(x, y).numpy() for x, y in data([8] * 4)]
        state = {k: v.numpy() for k, v in model.state_dict().items()}
        results.append((np.array(losses), state, opt.param_groups[0]["lr"]))
    (l1, s1, lr1), (l2, s2, lr2) = results
    np.testing.assert_array_equal(l1, l2)
    assert sorted(s1) == sorted(s2)
    for key in s1:
        np.testing.assert_array_equal(s1[key], s2[key], err_msg=key)
    assert lr1 == lr2 == pytest.approx(0.0)  # cosine from 0.01 to 0 over 3 steps, stepped 4 times
    assert not np.allclose(l1[0], l1[-1])    # it trained


def test_lr_sch_steps_per_call_and_feeds_the_graph():
    model, opt, oracle = setup(momentum=0.0)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    graph = BackwardInBuild(model, opt, lr_sch=sched)
    for i, (x, y) in enumerate(data([8] * 3)):
        np.testing.assert_allclose(float(graph(x, y)), oracle.step(x, y, lr=0.5 * 0.5 ** i),
                                   **TOL)
    assert opt.param_groups[0]["lr"] == 0.5 * 0.5 ** 3
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)


def test_add_optimizer_and_backward_errors():
    model, opt, _ = setup()
    other = flow.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(ValueError, match="lr_sch must be a flow.optim.lr_scheduler scheduler "
                                         "of this optimizer"):
        BackwardInBuild(model, opt, lr_sch=flow.optim.lr_scheduler.StepLR(other, 1))
    with pytest.raises(TypeError, match="pass the scheduler once"):
        sched = flow.optim.lr_scheduler.StepLR(opt, 1)
        BackwardInBuild(model, opt, lr_sch=sched, lr_scheduler=sched)

    class NoOptimizer(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x, y):
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    class NotScalar(BackwardInBuild):
        def build(self, x, y):
            out = self.model(x)
            out.backward()
            return out

    x, y = data([4])[0]
    with pytest.raises(ValueError, match=r"loss.backward\(\) needs an optimizer"):
        NoOptimizer()(x, y)
    with pytest.raises(RuntimeError, match=r"has shape \(4, 3\); graph mode minimizes a scalar"):
        NotScalar(model, opt)(x, y)
    np.testing.assert_array_equal(model.weight.numpy(), setup()[0].weight.numpy())  # untouched


# ---- new shapes and dtypes; input names ---------------------------------------------------
def test_a_new_batch_size_or_dtype_compiles_a_plan_and_trains_on(capsys):
    model, opt, oracle = setup()
    graph = BackwardInBuild(model, opt)
    batches = data([8, 8, 5, 8, 5, 8])
    notes = []
    for i, (x, y) in enumerate(batches):
        np.testing.assert_allclose(float(graph(x, y)), oracle.step(x, y), **TOL,
                                   err_msg=f"step {i} (batch {len(y)})")
        notes.append(capsys.readouterr().err.strip())
    assert notes[:2] == ["", ""] and notes[3:] == ["", "", ""]  # cached plans compile nothing
    assert notes[2] == ("nn.Graph BackwardInBuild: compiling a plan for input 'x' (5, 5) "
                        "float32 (was (8, 5) float32), 'y' (5,) int64 (was (8,) int64); "
                        "2 plans kept")
    x, y = batches[0]
    np.testing.assert_allclose(float(graph(x, y.astype(np.int32))), oracle.step(x, y), **TOL)
    assert capsys.readouterr().err == ("nn.Graph BackwardInBuild: compiling a plan for input "
                                       "'y' (8,) int32 (was (8,) int64); 3 plans kept\n")
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)


def test_inputs_are_named_after_builds_arguments():
    model, opt, _ = setup()
    graph = on_mesh(BackwardInBuild(model, opt))
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel", placement=MESH,
                               micro_batches=2)
    x, y = data([5])[0]
    with pytest.raises(ValueError, match="input 'x' of shape \\[5, 5\\] does not split into 2"):
        graph(x, y)
    graph = BackwardInBuild(model, opt)
    with pytest.raises(TypeError, match="build takes 2 inputs \\(x, y\\), got 3"):
        graph(x, y, y)
    with pytest.raises(ValueError, match="hint: input 'x' is float64 while the parameters are "
                                         "float32; pass float32 arrays, e.g. x.astype"):
        graph(x.astype(np.float64), y)
    graph(x, y)
    assert graph.compiled.inputs == ["x", "y"]


def test_a_module_changed_to_another_dtype_is_refused_by_its_graph():
    model, opt, _ = setup()
    graph = BackwardInBuild(model, opt)
    x, y = data([4])[0]
    graph(x, y)
    model.double()
    with pytest.raises(ValueError, match="the module's 'weight' is now float64 \\[3, 5\\], the "
                                         "graph was compiled for float32 \\[3, 5\\]"):
        graph(x, y)


def test_two_processes_read_what_their_graph_trained():
    """A data-parallel graph on a placement spanning two processes: process
    0 alone reads the trained values from its module (its own rank's copy,
    no collective) between steps, then every process does, and an eval
    graph built after training sees them."""
    r = spawn.run_world([os.path.join(HERE, "graph_share_worker.py")], 2, timeout=240)
    assert not r.timed_out and r.codes == [0, 0], "\n".join(o[-3000:] for o in r.outputs)
    _, _, oracle = setup()
    batches = data([8] * 4)
    want = [oracle.step(x, y) for x, y in batches[:3]]
    after_three = oracle.w.copy()
    want.append(oracle.step(*batches[3]))
    probe = data([6], seed=7)[0][0]
    for process, out in enumerate(r.outputs):
        got = json.loads(out.strip().splitlines()[-1])
        if process == 0:
            np.testing.assert_allclose(got["alone"], after_three, **TOL)
        np.testing.assert_allclose(got["losses"], want, **TOL, err_msg=f"process {process}")
        np.testing.assert_allclose(got["weight"], oracle.w, **TOL, err_msg=f"process {process}")
        np.testing.assert_allclose(got["bias"], oracle.b, **TOL, err_msg=f"process {process}")
        np.testing.assert_allclose(got["logits"], probe @ oracle.w.T + oracle.b, **TOL)
        assert got["read_locally"] == ["bias", "bias/momentum", "weight", "weight/momentum"]


def test_the_least_recently_used_plan_goes_and_hands_its_values_back(monkeypatch, capsys):
    monkeypatch.setattr(nn.graph, "MAX_PLANS", 2)
    model, opt, oracle = setup()
    graph = BackwardInBuild(model, opt)
    first = None
    for i, (x, y) in enumerate(data([8, 5, 3, 8, 3, 5])):  # every size but the 5th evicts one
        np.testing.assert_allclose(float(graph(x, y)), oracle.step(x, y), **TOL,
                                   err_msg=f"step {i} (batch {len(y)})")
        first = first or weakref.ref(graph.compiled)
    assert len(graph._plans) == 2
    gc.collect()
    assert first() is None  # the evicted session is freed: nothing refers to it any more
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 4 and all(n.endswith("; 2 plans kept") for n in notes), notes
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)
    np.testing.assert_allclose(opt.state_dict()["bias/momentum"].numpy(), oracle.bb, **TOL)


def test_a_build_that_returns_nothing_trains_on_its_backward():
    class ReturnsNothing(BackwardInBuild):
        def build(self, x, y):
            F.cross_entropy(self.model(x), y).backward()

    model, opt, oracle = setup()
    graph = ReturnsNothing(model, opt)
    for x, y in data([8] * 2):
        assert graph(x, y) is None
        oracle.step(x, y)
    np.testing.assert_allclose(model.weight.numpy(), oracle.w, **TOL)


def test_nesterov_is_refused_in_graph_mode():
    # The graph's sgd_update has plain momentum: nesterov would train silently
    # otherwise (the eager step checked against numpy in test_frontend_optim).
    model = flow.nn.Linear(3, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    graph = flow.nn.Graph()
    with pytest.raises(NotImplementedError, match="nesterov"):
        graph.add_optimizer(opt)
