"""One process of test_cpu_isa.py: runs every vectorised CPU kernel on fixed
inputs under the instruction set the parent put in OFL_CPU_ISA and saves the
outputs. The parent compares them with numpy and across runs.

Usage: python cpu_isa_worker.py OUT.npz. Prints one JSON line:
{"isa": ..., "info": {...}}.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")]

from oneflow_lite import _C  # noqa: E402

N = 70001  # more than two ParallelFor chunks of 32768, and an odd tail
PREFIX = 4099  # a range whose last vector is partial at every width
# Lengths around the vector widths (8, 16), add_n's block (2048) and a
# long odd one: every loop's whole vectors, partial last vector and tail.
TAILS = (1, 7, 8, 9, 15, 17, 2047, 2049, 1000003)
BIG = TAILS[-1]
CLASSES = (1, 7, 8, 9, 17, 50257, 1000003)  # cross entropy: rows of these lengths
ADDENDS = (1, 2, 3, 5)  # add_n's input counts


def inputs() -> dict:
    """The fixed inputs, the same in every process (and in the parent)."""
    rng = np.random.default_rng(1234)
    x = (rng.standard_normal(N) * 3).astype(np.float32)
    x[:6] = [0.0, -0.0, 9.5, -9.5, 30.0, -30.0]
    logits = (rng.standard_normal((37, 1001)) * 4).astype(np.float32)
    logits[0, 500:] = -np.inf  # a causal mask's row
    logits[1, 3] = 60.0  # one dominant entry
    inp = {
        "x": x,
        "dy": rng.standard_normal(N).astype(np.float32),
        "logits": logits,
        "dlogits": rng.standard_normal((37, 1001)).astype(np.float32),
        "labels": rng.integers(0, 500, size=37).astype(np.int64),
    }
    inp["r2"] = rng.standard_normal((1000, 300)).astype(np.float32)
    inp["r4"] = rng.standard_normal((3, 70, 5, 40)).astype(np.float32)
    inp["r3"] = rng.standard_normal((130, 4, 50))  # float64
    # layer norm: 300 rows (5 row blocks), 259 columns (a partial lane group)
    inp["ln_x"] = (rng.standard_normal((3, 100, 259)) * 2 + 0.5).astype(np.float32)
    inp["ln_gamma"] = rng.standard_normal(259).astype(np.float32)
    inp["ln_beta"] = rng.standard_normal(259).astype(np.float32)
    inp["ln_dy"] = rng.standard_normal((3, 100, 259)).astype(np.float32)
    for dt in ("float32", "float64"):
        inp[f"big_{dt}"] = (rng.standard_normal((6, BIG)) * 3).astype(dt)
    for c in CLASSES:
        rows = 3 if c < BIG else 1
        inp[f"ce_logits_{c}"] = (rng.standard_normal((rows, c)) * 4).astype(np.float32)
        inp[f"ce_labels_{c}"] = rng.integers(0, c, size=rows).astype(np.int64)
        inp[f"ce_dy_{c}"] = rng.standard_normal(rows).astype(np.float32)
    for dt in ("float32", "float64"):
        inp[f"p_{dt}"] = rng.standard_normal(N).astype(dt)
        inp[f"g_{dt}"] = rng.standard_normal(N).astype(dt)
        inp[f"m_{dt}"] = (rng.standard_normal(N) * 0.1).astype(dt)
        inp[f"v_{dt}"] = rng.random(N).astype(dt) * 0.01
    return inp


BINARY = ("add", "sub", "mul", "div")
# (input, axes) of the reductions: rows of a bias gradient (many row blocks),
# rows summed contiguously, kept axes between reduced ones, few rows, all.
REDUCTIONS = {"sum_rows": ("r2", [0]), "sum_cols": ("r2", [1]), "sum_mixed": ("r4", [0, 2]),
              "sum_r3": ("r3", [0]), "mean_all": ("x", [])}
ADAM = {"lr": 0.01, "beta1": 0.9, "beta2": 0.99, "eps": 1e-8, "weight_decay": 0.1,
        "decoupled_weight_decay": True}
SGD = {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}
# The tail runs add coupled weight decay (Adam, not AdamW) and plain SGD.
ADAM_COUPLED = dict(ADAM, decoupled_weight_decay=False)
SGD_PLAIN = dict(SGD, momentum=0.0)
FD_STEP = 1e-6  # central differences of the float64 forward ops


def tail_inputs(inp: dict, n: int, dt: str) -> list:
    """Rows 0..5 of the big input cut to n: x, dy (gelu); p, g, m, v (optimizers)."""
    big = inp[f"big_{dt}"]
    rows = [big[r, :n].copy() for r in range(6)]
    rows[5] = np.abs(rows[5]) * 0.01  # v >= 0
    return rows


def run_tails(e, inp: dict) -> dict:
    """Every changed loop at every length of TAILS (and CLASSES, ADDENDS)."""
    out = {}
    for n in TAILS:
        x, dy, p, g, m, v = tail_inputs(inp, n, "float32")
        out[f"gelu@{n}"] = _C.run_op("gelu", [x])[0]
        out[f"gelu_grad@{n}"] = _C.run_op("gelu_grad", [x, dy])[0]
        for dt in ("float32", "float64"):
            x, dy, p, g, m, v = tail_inputs(inp, n, dt)
            step = np.zeros(1, np.int64)
            out[f"adam_p_{dt}@{n}"], out[f"adam_m_{dt}@{n}"], out[f"adam_v_{dt}@{n}"], _ = e.run(
                "adam_update", [p, g, m, v, step], ADAM_COUPLED)
            out[f"sgd_p_{dt}@{n}"], _ = e.run("sgd_update", [p, g, m], SGD_PLAIN)
            for k in ADDENDS:
                out[f"add_n{k}_{dt}@{n}"] = _C.run_op("add_n", tail_inputs(inp, n, dt)[:k])[0]
    for c in CLASSES:
        logits, labels, dy = (inp[f"ce_{k}_{c}"] for k in ("logits", "labels", "dy"))
        out[f"ce@{c}"] = _C.run_op("sparse_softmax_cross_entropy", [logits, labels])[0]
        out[f"ce_grad@{c}"] = _C.run_op("sparse_softmax_cross_entropy_grad",
                                        [logits, labels, dy])[0]
    return out


def finite_differences(inp: dict) -> dict:
    """float64 gradients of gelu and cross entropy beside central differences
    of the kernels' own forward ops."""
    out = {}
    x = inp["big_float64"][0, :64].copy()
    out["fd_gelu_grad"] = _C.run_op("gelu_grad", [x, np.ones_like(x)])[0]
    out["fd_gelu"] = (_C.run_op("gelu", [x + FD_STEP])[0] -
                      _C.run_op("gelu", [x - FD_STEP])[0]) / (2 * FD_STEP)
    logits = inp["big_float64"][1, :27].reshape(3, 9).copy()
    labels = np.array([0, 4, 8], np.int64)
    loss = lambda z: _C.run_op("sparse_softmax_cross_entropy", [z, labels])[0].sum()  # noqa: E731
    fd = np.zeros_like(logits)
    for i in np.ndindex(*logits.shape):
        h = np.zeros_like(logits)
        h[i] = FD_STEP
        fd[i] = (loss(logits + h) - loss(logits - h)) / (2 * FD_STEP)
    out["fd_ce"] = fd
    out["fd_ce_grad"] = _C.run_op("sparse_softmax_cross_entropy_grad",
                                  [logits, labels, np.ones(3)])[0]
    return out


def run(e, inp: dict) -> dict:
    out = {}
    out["gelu"] = _C.run_op("gelu", [inp["x"]])[0]
    out["gelu_prefix"] = _C.run_op("gelu", [inp["x"][:PREFIX].copy()])[0]
    out["gelu_grad"] = _C.run_op("gelu_grad", [inp["x"], inp["dy"]])[0]
    out["softmax"] = _C.run_op("softmax", [inp["logits"]])[0]
    out["softmax_grad"] = _C.run_op("softmax_grad", [out["softmax"], inp["dlogits"]])[0]
    out["log_softmax"] = _C.run_op("log_softmax", [inp["logits"]])[0]
    out["cross_entropy"] = _C.run_op("sparse_softmax_cross_entropy",
                                     [inp["logits"], inp["labels"]])[0]
    for dt in ("float32", "float64"):
        x, gamma, beta, dy = (inp[f"ln_{k}"].astype(dt) for k in ("x", "gamma", "beta", "dy"))
        y, mean, inv_std = _C.run_op("layer_norm", [x, gamma, beta], {"epsilon": 1e-5})
        out[f"ln_y_{dt}"] = y
        out[f"ln_dx_{dt}"], out[f"ln_dgamma_{dt}"], out[f"ln_dbeta_{dt}"] = _C.run_op(
            "layer_norm_grad", [x, gamma, mean, inv_std, dy])
    a, b = inp["r2"], inp["r2"][::-1].copy()
    for op in ("add", "sub", "mul", "div"):
        out[op] = _C.run_op(op, [a, b])[0]
        out[op + "_row"] = _C.run_op(op, [a, b[:1]])[0]  # b broadcast along the rows
    out["bias_add"] = _C.run_op("bias_add", [a, inp["dy"][:300].copy()], {"axis": 1})[0]
    out["bias_add_mid"] = _C.run_op("bias_add", [inp["r4"], inp["r4"][0, :, 0, 0].copy()],
                                    {"axis": 1})[0]
    for name, (key, axes) in REDUCTIONS.items():
        op = "reduce_mean" if name.startswith("mean") else "reduce_sum"
        out[name] = _C.run_op(op, [inp[key]], {"axes": axes})[0]
    for dt in ("float32", "float64"):
        p, g, m, v = (inp[f"{k}_{dt}"] for k in "pgmv")
        step = np.zeros(1, np.int64)
        out[f"adam_p_{dt}"], out[f"adam_m_{dt}"], out[f"adam_v_{dt}"], _ = e.run(
            "adam_update", [p, g, m, v, step], ADAM)
        out[f"sgd_p_{dt}"], out[f"sgd_buf_{dt}"] = e.run("sgd_update", [p, g, m], SGD)
    return out


def main() -> None:
    e, inp = _C.EagerExecutor(), inputs()
    out = {**run(e, inp), **run_tails(e, inp), **finite_differences(inp)}
    np.savez(sys.argv[1], **out)
    print(json.dumps({"isa": _C.cpu_isa(), "info": _C.cpu_isa_info()}))


if __name__ == "__main__":
    main()
