"""Property test of distributed execution (the distributed-execution issue):
a model of flow.models from {MLP, GPT, small VGG} with random small sizes
and dropout on, traced with its loss (models.trace_loss), a device count in
{2, 3, 4, 8} with a hierarchy from {flat, [2, 2], [2, 4], [4, 2]}, and a
random valid strategy (a random N-D signature per op), and gradient
buckets of 0 (none), 16, 256 bytes or 1 MiB, must
give, over three SGD steps, the losses and parameters of the single-device
session (itself checked against numpy in test_models.py): float32, rtol
1e-4, atol 1e-5.

About a third of the cases on an even device count are pipelines instead:
2 stages on disjoint flat placements (ranks [0, n/2) and [n/2, n)) split at
a random forward op, k in {1, 2, 4} micro-batches per step with gradient
accumulation, dropout 0. The model is traced for one micro-batch; the
single-device session gets the k micro-batches concatenated: the mean of
the k micro-batch losses equals its loss, and the parameters after three
steps equal its parameters.

Cases are generated from a base seed (OFL_PROPERTY_SEED, default 20261129)
that is printed; a failing case names its own seed so it can be rerun alone
(OFL_PROPERTY_SEED=<base> pytest -k "case_<i>"). OFL_PROPERTY_CASES sets the
count (default 200).
"""
from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.models import GPTConfig, MLPConfig, VGGConfig, trace_loss

BASE_SEED = int(os.environ.get("OFL_PROPERTY_SEED", "20261129"))
NUM_CASES = int(os.environ.get("OFL_PROPERTY_CASES", "200"))
STEPS = 3
SGD = {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}
HIERARCHIES = {2: [[2]], 3: [[3]], 4: [[4], [2, 2]], 8: [[8], [2, 4], [4, 2]]}


def make_case(index: int) -> dict:
    rng = random.Random(BASE_SEED * 1000 + index)
    model = rng.choice(["mlp", "gpt", "vgg"])
    devices = rng.choice([2, 3, 4, 8])
    case = {"index": index, "model": model, "devices": devices,
            "hierarchy": rng.choice(HIERARCHIES[devices]),
            "strategy_seed": rng.randrange(1 << 30), "data_seed": rng.randrange(1 << 30),
            "dropout": rng.choice([0.1, 0.25])}
    if model == "mlp":
        case["config"] = MLPConfig(in_features=rng.randint(2, 9),
                                   hidden=tuple(rng.randint(1, 9) for _ in range(rng.randint(1, 2))),
                                   num_classes=rng.randint(2, 6), dropout=case["dropout"])
        case["batch"] = rng.randint(1, 9)
    elif model == "gpt":
        heads = rng.choice([1, 2])
        case["config"] = GPTConfig(vocab_size=rng.randint(3, 11), seq_len=rng.randint(2, 5),
                                   n_layer=rng.randint(1, 2), n_head=heads,
                                   n_embd=heads * rng.randint(1, 4), dropout=case["dropout"])
        case["batch"] = rng.randint(1, 4)
    else:
        case["config"] = VGGConfig(features=(rng.randint(1, 4), "M"), in_channels=rng.randint(1, 3),
                                   image_size=rng.choice([2, 4]), fc=(rng.randint(2, 6),),
                                   num_classes=rng.randint(2, 4), dropout=case["dropout"])
        case["batch"] = rng.randint(1, 5)
    pipe = random.Random(BASE_SEED * 1000 + index + 7_000_000)  # keeps the draws above as they were
    case["micro_batches"], case["stages"] = 1, 1
    if devices % 2 == 0 and pipe.random() < 0.35:
        case.update(stages=2, micro_batches=pipe.choice([1, 2, 4]), hierarchy=[devices],
                    dropout=0.0)
        case["config"] = dataclasses.replace(case["config"], dropout=0.0)
    # Gradient buckets (bytes; 0: none): tiny ones fuse a few gradients each.
    case["bucket_bytes"] = random.Random(BASE_SEED * 1000 + index + 9_000_000).choice(
        [0, 16, 256, 1 << 20])
    return case


def batches(case: dict, steps: int = STEPS) -> list:
    """Per step: (data, labels) of the global batch (micro_batches * batch rows)."""
    rng = np.random.default_rng(case["data_seed"])
    cfg, b = case["config"], case["batch"] * case["micro_batches"]
    out = []
    for _ in range(steps):
        if case["model"] == "mlp":
            data = rng.standard_normal((b, cfg.in_features)).astype(np.float32)
            labels = rng.integers(0, cfg.num_classes, size=(b,))
        elif case["model"] == "gpt":
            data = rng.integers(0, cfg.vocab_size, size=(b, cfg.seq_len))
            labels = rng.integers(0, cfg.vocab_size, size=(b, cfg.seq_len))
        else:
            data = rng.standard_normal((b, cfg.in_channels, cfg.image_size, cfg.image_size))
            data = data.astype(np.float32)
            labels = rng.integers(0, cfg.num_classes, size=(b,))
        out.append((data, labels.astype(np.int64)))
    return out


def make_model(case: dict):
    flow.manual_seed(case["data_seed"] % 1000)
    return flow.models.create(case["model"], case["config"])


def build(model, batch: int):
    """The model's loss traced for ``batch`` rows, with SGD appended; its
    variables start at the model's weights, so every build of one model
    starts from the same point."""
    g = trace_loss(model, batch)
    g.builder.minimize(g.loss, "sgd", **SGD)
    return g, sorted(g.trainable)


def train(session, g, data) -> list:
    losses = []
    for x, y in data:
        (loss,) = session.run({g.data: x, g.labels: y}, [g.loss])
        losses.append(float(loss))
    return losses


def test_seed_is_printed(capsys):
    with capsys.disabled():
        print(f"\n[test_distributed] OFL_PROPERTY_SEED={BASE_SEED}, {NUM_CASES} cases")


def train_micro_batches(session, g, data, k: int) -> list:
    """Per step, the mean of its k micro-batch losses."""
    losses = []
    for x, y in data:
        feeds = [{g.data: xs, g.labels: ys} for xs, ys in zip(np.split(x, k), np.split(y, k))]
        per_micro_batch = session.run(feeds, [g.loss])
        assert len(per_micro_batch) == k
        losses.append(float(np.mean([float(loss) for (loss,) in per_micro_batch])))
    return losses


@pytest.mark.parametrize("index", range(NUM_CASES), ids=lambda i: f"case_{i}")
def test_random_strategy_matches_one_device(index):
    case = make_case(index)
    data = batches(case)
    k = case["micro_batches"]
    model = make_model(case)
    g, params = build(model, case["batch"] * k)
    single = g.builder.session(num_threads=1)
    want_losses = train(single, g, data)
    micro, _ = build(model, case["batch"]) if k > 1 else (g, params)
    ranks = list(range(case["devices"]))
    strategy = _C.PlanSpec.random(case["strategy_seed"], case["stages"])
    dist = _C.DistributedSession(micro.program, ranks, case["hierarchy"], strategy,
                                 [micro.loss], num_threads=2, timeout_ms=30000,
                                 micro_batches=k, gradient_bucket_bytes=case["bucket_bytes"])
    if case["stages"] > 1:
        got_losses = train_micro_batches(dist, micro, data, k)
    else:
        got_losses = train(dist, g, data)
    where = (f"seed {BASE_SEED} case {index}: {case['model']} {case['config']} batch "
             f"{case['batch']} x {k} micro-batches, {case['stages']} stages on "
             f"{case['hierarchy']}, strategy seed {case['strategy_seed']}, gradient buckets "
             f"of {case['bucket_bytes']} bytes\n{dist.strategy()}")
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-5, err_msg=where)
    for p in params:
        np.testing.assert_allclose(dist.get_variable(p), single.get_variable(p), rtol=1e-4,
                                   atol=1e-5, err_msg=f"{p}: {where}")
