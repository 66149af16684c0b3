"""Bad values reaching kernels raise, on every route, and change nothing.

An id out of range in embedding or a label out of range in cross entropy
raises ValueError naming the op (type and name), the tensor, the logical
index, the value and the range [0, V): in eager mode, in nn.Graph on one
device, and on 4 virtual devices, where one rank's failing kernel stops all
ranks at once (no wait for a collective's timeout) and the next step runs.
The variables keep their values. Bad DistributedSession options raise.
Calls of one nn.Graph from two threads are serialised: each gets the result
of a serial run. The oracle is the same model run serially with good data.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C

nn = flow.nn
F = flow.nn.functional
GPT = flow.models.GPTConfig(vocab_size=17, seq_len=8, n_layer=1, n_head=2, n_embd=16)
MESH = flow.placement("cpu", [[0, 1], [2, 3]])


class TrainGraph(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        return F.cross_entropy(self.model(x), y)


def make_graph(devices: int) -> TrainGraph:
    flow.manual_seed(0)
    model = flow.models.create("gpt", GPT)
    g = TrainGraph(model, flow.optim.SGD(model.named_parameters(), lr=0.1))
    if devices > 1:
        g.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel", placement=MESH,
                               timeout_ms=30000)
    return g


def batch(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 17, (4, 8)), rng.integers(0, 17, (4, 8))


def test_eager_embedding_and_cross_entropy_name_the_bad_value():
    weight = flow.randn(5, 3)
    with pytest.raises(ValueError) as info:
        F.embedding(flow.tensor(np.array([[0, 1], [7, 2]])), weight)
    assert str(info.value) == ("embedding: ids[1, 0]=7 is out of range [0, 5) "
                               "(weight.shape[0]=5)")
    logits = flow.randn(3, 4)
    with pytest.raises(ValueError) as info:
        F.cross_entropy(logits, flow.tensor(np.array([0, -2, 1])))
    assert ("sparse_softmax_cross_entropy: labels[1]=-2 is out of range [0, 4) "
            "(logits.shape[-1]=4)") in str(info.value)
    # The same call with good values still works (nothing was left broken).
    assert F.embedding(flow.tensor(np.array([4])), weight).shape == (1, 3)


@pytest.mark.parametrize("devices", [1, 4])
def test_graph_rejects_bad_ids_and_labels_on_any_rank_and_changes_nothing(devices):
    g, serial = make_graph(devices), make_graph(1)
    x, y = batch()
    want = [float(serial(x, y).numpy()), float(serial(x, y).numpy())]
    assert float(g(x, y).numpy()) == pytest.approx(want[0], rel=1e-4, abs=1e-5)
    before = {k: v.numpy().copy() for k, v in g.state_dict().items()}
    bad_x = x.copy()
    bad_x[3, 5] = 99  # row 3: on rank 3 (or 1) of the data-parallel split
    start = time.monotonic()
    with pytest.raises(ValueError) as info:
        g(bad_x, y)
    assert time.monotonic() - start < 10  # not the collectives' 30 s timeout
    message = str(info.value)
    assert "embedding 'wte/embedding'" in message
    assert "ids[3, 5]=99 is out of range [0, 17) (weight.shape[0]=17)" in message
    bad_y = y.copy()
    bad_y[2, 1] = -3
    with pytest.raises(ValueError) as info:
        g(x, bad_y)
    assert "sparse_softmax_cross_entropy" in str(info.value)
    assert "labels[2, 1]=-3 is out of range [0, 17) (logits.shape[-1]=17)" in str(info.value)
    after = {k: v.numpy() for k, v in g.state_dict().items()}
    assert all(np.array_equal(before[k], after[k]) for k in before)
    # The next good step is the serial run's second step.
    assert float(g(x, y).numpy()) == pytest.approx(want[1], rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("option, message", [
    (dict(num_slots=0), "num_slots=0 must be >= 1"),
    (dict(micro_batches=0), "micro_batches=0 must be >= 1"),
    (dict(num_threads=-1), "num_threads=-1 must be >= 0"),
    (dict(timeout_ms=0), "timeout=0 ms must be > 0"),
])
def test_distributed_session_rejects_bad_options(option, message):
    p = _C.Program()
    p.add_input("x", [4, 3])
    (y,) = p.add_op("relu", ["x"])
    with pytest.raises(ValueError, match=message):
        _C.DistributedSession(p, [0, 1], [2], None, [y], **option)


class ForwardGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def test_graph_calls_from_two_threads_are_serialised():
    flow.manual_seed(0)
    g = ForwardGraph(flow.models.create("gpt", GPT))
    data = [batch(seed)[0] for seed in range(8)]
    want = [g(x).numpy() for x in data]  # serial: the oracle (compiled on the first)
    results, errors = {}, []

    def worker(indices):
        for _ in range(3):
            for i in indices:
                try:
                    out = g(data[i]).numpy()
                except Exception as e:  # noqa: BLE001: reported below
                    errors.append(e)
                    return
                results.setdefault(i, []).append(out)

    threads = [threading.Thread(target=worker, args=(range(k, 8, 2),)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    for i, outs in results.items():
        assert len(outs) == 3
        for out in outs:  # a race on the shared registers would mix batches
            np.testing.assert_array_equal(out, want[i])
