"""flow.optim against the numpy update formulas (tests/python/reference/
numpy_optim.py, PyTorch semantics), the schedules against hand-worked
values, clip_grad_norm_ against numpy's norm, and the optimizer state names
that map onto graph/optimizer_pass.cpp's variables."""
from __future__ import annotations

import math

import numpy as np
import pytest

import oneflow_lite as flow
from reference import numpy_optim

CASES = {
    "sgd": (flow.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01),
            dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    "sgd_plain": (flow.optim.SGD, dict(lr=0.05), dict(lr=0.05)),
    "adam": (flow.optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-7, weight_decay=0.1),
             dict(lr=0.01, beta1=0.8, beta2=0.99, eps=1e-7, weight_decay=0.1)),
    "adamw": (flow.optim.AdamW, dict(lr=0.01, weight_decay=0.05),
              dict(lr=0.01, weight_decay=0.05)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimizer_steps_match_numpy_formulas(name):
    cls, hyper, ref_hyper = CASES[name]
    rng = np.random.default_rng(0)
    start = {"a": rng.standard_normal((3, 4)), "b": rng.standard_normal(5)}
    params = {k: flow.nn.Parameter(flow.tensor(v.copy())) for k, v in start.items()}
    opt = cls(list(params.items()), **hyper)
    ref = numpy_optim.make_optimizer("adam" if name == "adam" else name.split("_")[0],
                                     **ref_hyper)
    want = {k: v.copy() for k, v in start.items()}
    for step in range(4):
        grads = {k: rng.standard_normal(v.shape) for k, v in start.items()}
        for k, p in params.items():
            p.grad = flow.tensor(grads[k])
        opt.step()
        ref.step(want, grads)
        for k in start:
            np.testing.assert_allclose(params[k].numpy(), want[k], rtol=1e-12, atol=1e-14,
                                       err_msg=f"{name} step {step} {k}")


def test_state_dict_names_follow_the_optimizer_pass_and_round_trip():
    model = flow.nn.Linear(3, 2)
    opt = flow.optim.AdamW(model.named_parameters(), lr=0.1)
    for _ in range(2):
        model.zero_grad()
        model(flow.ones(4, 3)).sum().backward()
        opt.step()
    sd = opt.state_dict()
    assert list(sd) == ["weight/m", "weight/v", "weight/step", "bias/m", "bias/v", "bias/step"]
    assert sd["weight/step"].numpy() == 2 and sd["weight/step"].dtype is flow.int64
    sgd = flow.optim.SGD(flow.nn.Linear(3, 2).parameters(), lr=0.1, momentum=0.9)
    sgd.param_groups[0]["params"][0].grad = flow.ones(2, 3)
    sgd.step()
    assert list(sgd.state_dict()) == ["0/momentum"]  # positions without names

    fresh = flow.optim.AdamW(model.named_parameters(), lr=0.1)
    fresh.load_state_dict(sd)
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    with pytest.raises(KeyError, match="unexpected key 'weight/momentum'"):
        fresh.load_state_dict({"weight/momentum": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"'bias/m' has shape \[3\], expected \[2\]"):
        fresh.load_state_dict(dict(sd, **{"bias/m": np.zeros(3)}))
    with pytest.raises(KeyError, match=r"'bias' lacks \['step'\]"):
        fresh.load_state_dict({k: v for k, v in sd.items() if k != "bias/step"})


def test_optimizer_bad_hyper_parameters():
    p = [flow.nn.Parameter(flow.zeros(2))]
    with pytest.raises(ValueError, match="SGD: lr=-1 is negative"):
        flow.optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match=r"Adam: beta1=1.0 is outside \[0, 1\)"):
        flow.optim.Adam(p, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty parameter list"):
        flow.optim.AdamW([])
    with pytest.raises(TypeError, match="parameter '0' is not a floating"):
        flow.optim.SGD([flow.tensor([1, 2])])


def test_step_and_cosine_schedules_match_hand_values():
    p = [flow.nn.Parameter(flow.zeros(1))]
    opt = flow.optim.SGD(p, lr=1.0)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt = flow.optim.SGD(p, lr=0.8)
    sched = flow.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.0)
    lrs = []
    for _ in range(6):
        lrs.append(sched.get_last_lr()[0])
        sched.step()
    # 0.8 * (1 + cos(pi t / 4)) / 2 for t = 0..4, then held at eta_min.
    want = [0.8, 0.4 * (1 + math.sqrt(0.5)), 0.4, 0.4 * (1 - math.sqrt(0.5)), 0.0, 0.0]
    np.testing.assert_allclose(lrs, want, rtol=1e-12, atol=1e-15)


def test_schedule_changes_the_lr_of_the_next_step():
    p = flow.nn.Parameter(flow.tensor([1.0]))
    opt = flow.optim.SGD([p], lr=1.0)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
    for _ in range(2):
        p.grad = flow.tensor([1.0])
        opt.step()
        sched.step()
    np.testing.assert_allclose(p.numpy(), [1.0 - 1.0 - 0.1])


def test_clip_grad_norm_matches_numpy():
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    params = [flow.nn.Parameter(flow.zeros(*g.shape, dtype=flow.float64)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = flow.tensor(g.copy())
    total = np.sqrt(sum((g ** 2).sum() for g in grads))
    got = flow.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    np.testing.assert_allclose(got.item(), total, rtol=1e-12)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * (1.0 / (total + 1e-6)), rtol=1e-12)
    # Below the threshold nothing changes; the inf-norm is the largest |g|.
    for p, g in zip(params, grads):
        p.grad = flow.tensor(g.copy())
    got = flow.nn.utils.clip_grad_norm_(params, max_norm=100.0, norm_type=float("inf"))
    np.testing.assert_allclose(got.item(), max(np.abs(g).max() for g in grads))
    for p, g in zip(params, grads):
        np.testing.assert_array_equal(p.grad.numpy(), g)
    with pytest.raises(ValueError, match="max_norm=-1 is negative"):
        flow.nn.utils.clip_grad_norm_(params, -1)


def test_clip_grad_norm_of_global_gradients_is_the_logical_norm():
    # A global gradient holds the logical value whatever its SBP (S or P),
    # so the norm equals numpy's norm of the full gradients.
    g1, g2 = np.arange(12.0).reshape(3, 4), np.arange(5.0) - 2
    placement = flow.placement("cpu", [[0, 1], [2, 3]])
    p1 = flow.nn.Parameter(flow.zeros(3, 4, dtype=flow.float64))
    p2 = flow.nn.Parameter(flow.zeros(5, dtype=flow.float64))
    p1.grad = flow.tensor(g1).to_global(placement, [flow.sbp.split(0), flow.sbp.partial_sum])
    p2.grad = flow.tensor(g2).to_global(placement, [flow.sbp.partial_sum, flow.sbp.split(0)])
    got = flow.nn.utils.clip_grad_norm_([p1, p2], max_norm=1e9)
    np.testing.assert_allclose(got.item(), np.sqrt((g1 ** 2).sum() + (g2 ** 2).sum()))


def test_update_kernels_refuse_arrays_that_share_memory():
    # The CPU loops take their arrays as restrict: one array passed twice is
    # an error before anything is written, not a silently wrong update.
    from oneflow_lite import _C
    e = _C.EagerExecutor()
    p, g, m = (np.full(9, v, np.float32) for v in (1.0, 0.5, 0.1))
    step = np.zeros(1, np.int64)
    attrs = dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=True)
    with pytest.raises(ValueError, match="adam_update: m and v share memory"):
        e.run_in_place("adam_update", [p, g, m, m, step], attrs)
    with pytest.raises(ValueError, match="sgd_update: param and momentum_buffer share memory"):
        e.run_in_place("sgd_update", [p, g, p[::-1][::-1]], dict(lr=0.1, momentum=0.9,
                                                                 weight_decay=0.0))
    np.testing.assert_array_equal(p, np.full(9, 1.0, np.float32))
    assert step[0] == 0
