"""Rows for the optimizer update ops. They write param and state in place,
so run_op returns the mutated inputs (param, then state) after the (no)
outputs; the references below are PyTorch's update rules in numpy."""
import numpy as np

from op_table import ErrorCase, OpCase


def _sgd(xs, a):
    p, g, buf = xs
    d = g + a["weight_decay"] * p
    buf = a["momentum"] * buf + d
    return [p - a["lr"] * buf, buf]


def _adam(xs, a):
    p, g, m, v, step = xs
    t = step + 1
    if a["decoupled_weight_decay"]:
        p = p * (1 - a["lr"] * a["weight_decay"])
    else:
        g = g + a["weight_decay"] * p
    m = a["beta1"] * m + (1 - a["beta1"]) * g
    v = a["beta2"] * v + (1 - a["beta2"]) * g * g
    m_hat = m / (1 - a["beta1"] ** t)
    v_hat = v / (1 - a["beta2"] ** t)
    p = p - a["lr"] * m_hat / (np.sqrt(v_hat) + a["eps"])
    return [p.astype(xs[0].dtype), m.astype(xs[0].dtype), v.astype(xs[0].dtype), t]


def _with_fed_lr(update):
    """The update with the optional last input lr replacing the lr attribute."""
    return lambda xs, a: update(xs[:-1], dict(a, lr=float(xs[-1])))


def _clip_factor(xs, a):
    norm = xs[0]
    return [np.minimum(1.0, a["max_norm"] / (norm + 1e-6)).astype(norm.dtype)]


def _adam_inputs(rng, dt):
    return [rng.standard_normal((3, 5)).astype(dt), rng.standard_normal((3, 5)).astype(dt),
            rng.standard_normal((3, 5)).astype(dt) * 0.1, rng.random((3, 5)).astype(dt) * 0.1,
            np.array(4, dtype=np.int64)]


_ADAM_ATTRS = {"lr": 0.01, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.1}

CASES = [
    OpCase(
        id="sgd_update_momentum",
        op="sgd_update",
        make_inputs=lambda rng, dt: [rng.standard_normal((4, 3)).astype(dt) for _ in range(3)],
        attrs={"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
        forward=_sgd,
        mutates=True,
        no_grad_reason="an update writes parameters in place; nothing flows back through it",
        cost_inputs=[([4, 3], "float32")] * 3,
        flops=6 * 12,       # per element: decay mul+add, momentum mul+add, step mul+sub
        memory_bytes=0,     # in place: no outputs
        errors=[
            ErrorCase([([4, 3], "float32"), ([3, 4], "float32"), ([4, 3], "float32")], {},
                      ["sgd_update", "grad.shape=(3, 4)", "param.shape=(4, 3)"]),
            ErrorCase([([4], "float32"), ([4], "float64"), ([4], "float32")], {},
                      ["sgd_update", "grad.dtype=float64"]),
            ErrorCase([([4], "float32"), ([4], "float32")], {}, ["sgd_update", "expects 3 to 4 inputs, got 2"]),
            ErrorCase([([4], "float32")] * 3, {"lr": -1.0}, ["sgd_update", "lr=-1"]),
            ErrorCase([([4], "float32")] * 3, {"nesterov": True}, ["sgd_update", "unknown attribute 'nesterov'"]),
        ],
    ),
    OpCase(
        id="sgd_update_plain",
        op="sgd_update",
        make_inputs=lambda rng, dt: [rng.standard_normal((5,)).astype(dt) for _ in range(3)],
        attrs={"lr": 0.5, "momentum": 0.0, "weight_decay": 0.0},
        # Without momentum the buffer is left alone.
        forward=lambda xs, a: [xs[0] - 0.5 * xs[1], xs[2]],
        mutates=True,
        no_grad_reason="an update writes parameters in place; nothing flows back through it",
    ),
    OpCase(
        id="adamw_update",
        op="adam_update",
        make_inputs=_adam_inputs,
        attrs=dict(_ADAM_ATTRS, decoupled_weight_decay=True),
        forward=_adam,
        mutates=True,
        no_grad_reason="an update writes parameters in place; nothing flows back through it",
        cost_inputs=[([3, 5], "float64")] * 4 + [([], "int64")],
        flops=16 * 15,      # decay 2, m 3, v 4, corrections 2, sqrt+eps+div 3, step 2
        memory_bytes=0,
        errors=[
            ErrorCase([([3], "float32")] * 4 + [([], "float32")], {},
                      ["adam_update", "step must be an int64 scalar"]),
            ErrorCase([([3], "float32")] * 4 + [([], "int64")], {"beta1": 1.0},
                      ["adam_update", "betas (1, 0.999)"]),
            ErrorCase([([3], "int32")] * 4 + [([], "int64")], {}, ["adam_update", "int32"]),
        ],
    ),
    OpCase(
        id="adam_update_coupled_decay",
        op="adam_update",
        make_inputs=_adam_inputs,
        attrs=dict(_ADAM_ATTRS, decoupled_weight_decay=False),
        forward=_adam,
        mutates=True,
        no_grad_reason="an update writes parameters in place; nothing flows back through it",
    ),
    OpCase(
        id="sgd_update_fed_lr",
        op="sgd_update",
        make_inputs=lambda rng, dt: [rng.standard_normal((4, 3)).astype(dt) for _ in range(3)]
        + [np.array(0.25, np.float32)],
        attrs={"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},  # lr 0.1 is overridden
        forward=_with_fed_lr(_sgd),
        mutates=True,
        no_grad_reason="an update writes parameters in place; nothing flows back through it",
        errors=[
            ErrorCase([([4], "float32")] * 3 + [([2], "float32")], {},
                      ["sgd_update", "lr input must be a float32 or float64 scalar", "(2)"]),
            ErrorCase([([4], "float32")] * 3 + [([], "int64")], {},
                      ["sgd_update", "lr input", "int64"]),
            ErrorCase([([4], "float32")] * 5, {}, ["sgd_update", "expects 3 to 4 inputs, got 5"]),
        ],
    ),
    OpCase(
        id="adamw_update_fed_lr",
        op="adam_update",
        make_inputs=lambda rng, dt: _adam_inputs(rng, dt) + [np.array(0.003, np.float64)],
        attrs=dict(_ADAM_ATTRS, decoupled_weight_decay=True),
        forward=_with_fed_lr(_adam),
        mutates=True,
        no_grad_reason="an update writes parameters in place; nothing flows back through it",
    ),
    OpCase(
        id="clip_factor_scales",
        op="clip_factor",
        make_inputs=lambda rng, dt: [np.array(5.0 + rng.random(), dt)],
        attrs={"max_norm": 2.0},
        forward=_clip_factor,
        no_grad_reason="applied to gradients after the backward; never differentiated",
        cost_inputs=[([], "float32")],
        flops=3,            # add eps, divide, min
        memory_bytes=4,     # one float32 scalar out
        errors=[
            ErrorCase([([], "float32")], {"max_norm": 0.0}, ["clip_factor", "max_norm=0"]),
            ErrorCase([([3], "float32")], {"max_norm": 1.0},
                      ["clip_factor", "norm must be a scalar", "(3)"]),
            ErrorCase([([], "int64")], {"max_norm": 1.0}, ["clip_factor", "int64"]),
        ],
    ),
    OpCase(
        id="clip_factor_keeps",
        op="clip_factor",
        make_inputs=lambda rng, dt: [np.array(0.5 * rng.random(), dt)],
        attrs={"max_norm": 2.0},
        forward=_clip_factor,
        no_grad_reason="applied to gradients after the backward; never differentiated",
    ),
]
