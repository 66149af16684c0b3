"""The CPU instruction set the kernels run (ops/cpu_isa.h): every vectorised
kernel's AVX-512, AVX2 and scalar paths, each forced in turn with OFL_CPU_ISA
in a fresh process (the choice is made once per process), agree with numpy
and are bitwise the same from run to run; the environment's requests and
oneDNN's cap. A path the CPU lacks is skipped, saying so."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from oneflow_lite import _C

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_isa_worker as worker  # noqa: E402

LEVELS = ["scalar", "avx2", "avx512"]
ISA_VARS = ("OFL_CPU_ISA", "ONEDNN_MAX_CPU_ISA", "ONEDNN_VERBOSE")
F32 = {"rtol": 1e-5, "atol": 1e-6}
F64 = {"rtol": 1e-12, "atol": 1e-14}


def detected() -> str:
    return _C.cpu_isa_info()["detected"]


def skip_unless_cpu_has(isa: str) -> None:
    if LEVELS.index(isa) > LEVELS.index(detected()):
        pytest.skip(f"this CPU has only {detected()}: the {isa} path cannot run here")


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ISA_VARS}
    env.update(extra)
    return env


def run_python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def run_worker(isa: str, path) -> tuple[dict, dict]:
    proc = subprocess.run([sys.executable, os.path.join(HERE, "cpu_isa_worker.py"), str(path)],
                          env=clean_env(OFL_CPU_ISA=isa), capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    with np.load(path) as data:
        return {k: data[k] for k in data.files}, report


# ---- numpy oracles (float64) ----------------------------------------------

erfc = np.vectorize(math.erfc)


def gelu(x):
    return 0.5 * x * erfc(-x / math.sqrt(2))


def gelu_grad(x, dy):
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return dy * (0.5 * erfc(-x / math.sqrt(2)) + x * pdf)


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def adam(p, g, m, v, a):
    p = p * (1 - a["lr"] * a["weight_decay"])
    m = a["beta1"] * m + (1 - a["beta1"]) * g
    v = a["beta2"] * v + (1 - a["beta2"]) * g * g
    m_hat, v_hat = m / (1 - a["beta1"]), v / (1 - a["beta2"])
    return p - a["lr"] * m_hat / (np.sqrt(v_hat) + a["eps"]), m, v


def sgd(p, g, buf, a):
    buf = a["momentum"] * buf + (g + a["weight_decay"] * p)
    return p - a["lr"] * buf, buf


def layer_norm(x, gamma, beta, dy, eps=1e-5):
    """y, and dx, dgamma, dbeta for the upstream gradient dy."""
    mean = x.mean(-1, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mean) * inv_std
    g = dy * gamma
    dx = inv_std * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return xhat * gamma + beta, dx, (dy * xhat).sum(rows), dy.sum(rows)


def softmax_cross_entropy(logits, labels, dy):
    """The loss per row and its gradient for the upstream gradient dy."""
    ls = log_softmax(logits)
    rows = np.arange(len(labels))
    grad = np.exp(ls)
    grad[rows, labels] -= 1
    return -ls[rows, labels], grad * dy[:, None]


def tail_oracles(inp: dict) -> dict:
    """run_tails' outputs, from numpy in float64."""
    want = {}
    for n in worker.TAILS:
        x, dy = (r.astype(np.float64) for r in worker.tail_inputs(inp, n, "float32")[:2])
        want[f"gelu@{n}"], want[f"gelu_grad@{n}"] = gelu(x), gelu_grad(x, dy)
        for dt in ("float32", "float64"):
            rows = [r.astype(np.float64) for r in worker.tail_inputs(inp, n, dt)]
            p, g, m, v = rows[2:]
            a = worker.ADAM_COUPLED
            want[f"adam_p_{dt}@{n}"], want[f"adam_m_{dt}@{n}"], want[f"adam_v_{dt}@{n}"] = adam(
                p, g + a["weight_decay"] * p, m, v, dict(a, weight_decay=0.0))
            want[f"sgd_p_{dt}@{n}"] = sgd(p, g, m, worker.SGD_PLAIN)[0]
            for k in worker.ADDENDS:
                want[f"add_n{k}_{dt}@{n}"] = np.sum(rows[:k], axis=0)
    for c in worker.CLASSES:
        logits, labels, dy = (inp[f"ce_{k}_{c}"] for k in ("logits", "labels", "dy"))
        want[f"ce@{c}"], want[f"ce_grad@{c}"] = softmax_cross_entropy(
            logits.astype(np.float64), labels, dy.astype(np.float64))
    return want


def oracles(inp: dict) -> dict:
    d = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inp.items()}
    y = np.exp(log_softmax(d["logits"]))
    rows = np.arange(len(d["labels"]))
    want = {
        "gelu": gelu(d["x"]),
        "gelu_grad": gelu_grad(d["x"], d["dy"]),
        "softmax": y,
        "softmax_grad": y * (d["dlogits"] - (d["dlogits"] * y).sum(-1, keepdims=True)),
        "log_softmax": log_softmax(d["logits"]),
        "cross_entropy": -log_softmax(d["logits"])[rows, d["labels"]],
    }
    ln = layer_norm(*(d[f"ln_{k}"] for k in ("x", "gamma", "beta", "dy")))
    for dt in ("float32", "float64"):
        for name, value in zip(("y", "dx", "dgamma", "dbeta"), ln):
            want[f"ln_{name}_{dt}"] = value
    a, b = d["r2"], d["r2"][::-1]
    for op, f in zip(worker.BINARY, (np.add, np.subtract, np.multiply, np.divide)):
        want[op], want[op + "_row"] = f(a, b), f(a, b[:1])
    want["bias_add"] = a + d["dy"][:300]
    want["bias_add_mid"] = d["r4"] + d["r4"][0, :, 0, 0][None, :, None, None]
    for name, (key, axes) in worker.REDUCTIONS.items():
        x = d[key]
        want[name] = (x.mean() if name.startswith("mean") else x.sum(axis=tuple(axes))).reshape(-1)
    for dt in ("float32", "float64"):
        p, g, m, v = (inp[f"{k}_{dt}"].astype(np.float64) for k in "pgmv")
        want[f"adam_p_{dt}"], want[f"adam_m_{dt}"], want[f"adam_v_{dt}"] = adam(
            p, g, m, v, worker.ADAM)
        want[f"sgd_p_{dt}"], want[f"sgd_buf_{dt}"] = sgd(p, g, m, worker.SGD)
    return {**want, **tail_oracles(inp)}


@pytest.fixture(scope="module")
def want() -> dict:
    return oracles(worker.inputs())


@pytest.mark.parametrize("isa", LEVELS)
def test_each_path_matches_numpy_and_repeats_bitwise(isa, want, tmp_path):
    skip_unless_cpu_has(isa)
    got, report = run_worker(isa, tmp_path / "a.npz")
    assert report["isa"] == isa, report
    for name, expected in want.items():
        tol = F64 if got[name].dtype == np.float64 else F32
        np.testing.assert_allclose(got[name].reshape(expected.shape), expected,
                                   err_msg=f"{name} on {isa}", **tol)
    # a partial last vector takes the same code as a full one
    np.testing.assert_array_equal(got["gelu_prefix"], got["gelu"][:worker.PREFIX])
    for n in worker.TAILS:
        for name in ("gelu", "gelu_grad", "add_n3_float32", "add_n5_float64"):
            np.testing.assert_array_equal(got[f"{name}@{n}"], got[f"{name}@{worker.BIG}"][:n],
                                          err_msg=f"{name}@{n} on {isa}")
    # float64 gradients against central differences of the forward kernels
    np.testing.assert_allclose(got["fd_gelu_grad"], got["fd_gelu"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got["fd_ce_grad"], got["fd_ce"], rtol=1e-6, atol=1e-7)
    again, _ = run_worker(isa, tmp_path / "b.npz")
    for name, value in got.items():
        assert value.tobytes() == again[name].tobytes(), f"{name} on {isa} differs between runs"


def test_the_default_is_the_best_level_the_cpu_has():
    proc = run_python("from oneflow_lite import _C; print(_C.cpu_isa())", clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [detected()]


@pytest.mark.parametrize("var,value", [("OFL_CPU_ISA", "avx9000"),
                                       ("ONEDNN_MAX_CPU_ISA", "NEON")])
def test_an_unknown_request_fails_the_import_naming_it(var, value):
    proc = run_python("import oneflow_lite", clean_env(**{var: value}))
    assert proc.returncode != 0
    assert f"{var}='{value}'" in proc.stderr, proc.stderr[-2000:]


def test_our_request_caps_onednn_too():
    skip_unless_cpu_has("avx2")
    code = ("import numpy as np; from oneflow_lite import _C\n"
            "a = np.ones((64, 64), np.float32); _C.run_op('matmul', [a, a])\n"
            "print(_C.cpu_isa_info()['onednn_cap'])")
    proc = run_python(code, clean_env(OFL_CPU_ISA="avx2", ONEDNN_VERBOSE="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "AVX2"
    isa_lines = [line for line in proc.stdout.splitlines()
                 if line.startswith("onednn_verbose,info,cpu,isa:")]
    assert isa_lines and "AVX2" in isa_lines[0] and "512" not in isa_lines[0], isa_lines


def test_onednn_request_alone_caps_our_kernels():
    skip_unless_cpu_has("avx2")
    proc = run_python("from oneflow_lite import _C; print(_C.cpu_isa())",
                      clean_env(ONEDNN_MAX_CPU_ISA="AVX2"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["avx2"]


def test_disagreeing_requests_follow_ours_with_a_note():
    skip_unless_cpu_has("avx2")
    code = "from oneflow_lite import _C; import json; print(json.dumps(_C.cpu_isa_info()))"
    proc = run_python(code, clean_env(OFL_CPU_ISA="scalar", ONEDNN_MAX_CPU_ISA="AVX2"))
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (info["active"], info["onednn_cap"]) == ("scalar", "SSE41")
    assert "ONEDNN_MAX_CPU_ISA=AVX2 overridden by OFL_CPU_ISA=scalar" in info["note"]


def test_a_request_above_the_cpu_is_lowered_with_a_note():
    if detected() == "avx512":
        pytest.skip("this CPU has the highest level (avx512): nothing above it to ask for")
    code = "from oneflow_lite import _C; import json; print(json.dumps(_C.cpu_isa_info()))"
    proc = run_python(code, clean_env(OFL_CPU_ISA="avx512"))
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["active"] == detected()
    assert f"this CPU has only {detected()}" in info["note"]


def test_reductions_and_arithmetic_are_bitwise_the_same_at_every_level(tmp_path):
    """The sums run in fixed double lanes and the arithmetic rounds once per
    element: the vector width changes nothing."""
    levels = LEVELS[:LEVELS.index(detected()) + 1]
    if len(levels) < 2:
        pytest.skip(f"this CPU runs only {levels}: nothing to compare")
    runs = {isa: run_worker(isa, tmp_path / f"{isa}.npz")[0] for isa in levels}
    names = list(worker.REDUCTIONS) + [n + s for n in worker.BINARY for s in ("", "_row")]
    names += [n for n in runs[levels[0]] if n.startswith("add_n")]
    for name in names + ["bias_add", "bias_add_mid"]:
        for isa in levels[1:]:
            assert runs[isa][name].tobytes() == runs[levels[0]][name].tobytes(), (name, isa)
