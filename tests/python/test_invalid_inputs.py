"""Every registered op, run with invalid values, raises a Python exception
naming the op; none ends the process.

For each op of ``_C.list_ops()`` the cases start from the op's first row in
the op table (``op_cases/``) and break one thing at a time:
- dtypes: floating inputs as int64 and float16, index inputs as float32;
- ranks and shapes: a leading axis added, inputs flattened or made 0-d, the
  last axis shortened, an empty axis 0; no inputs at all, one too many;
- attributes: ints -1, 0, 7, -7; int lists [], [-1], [0], [7], [-7] and one
  entry longer; floats -1, 0, NaN, Inf; a string for a number; a name the op
  does not have;
- values: integer inputs holding -1 and 2**31 - 1 (for embedding and cross
  entropy: ids/labels out of [0, V), which must raise with the index, the
  value and the range, in the forward and through ``_C.op_grad``), NaN in
  floating inputs;
- the row's own ErrorCases (inputs that inference rejects) with real arrays;
- ``_C.op_grad`` given output gradients of a wrong dtype or rank, and
  ``_C.run_kernel`` (whole tensors) told a wrong output dtype or shape.
Some mutations are valid for some ops (int64 reshape, a longer reshape
shape): those may succeed. Every case that raises must raise a standard
exception (ValueError, TypeError, NotImplementedError, RuntimeError) whose
message names the op; the cases marked "must" must raise.

Each op's cases run in one subprocess (``python test_invalid_inputs.py OP``,
a timeout, two at a time), which prints one JSON line per case; a signal
(returncode < 0), a crash or a missing case fails the op. The ops covered
must equal ``_C.list_ops()``, so a new op without a row fails here too.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
TIMEOUT_S = 60
ALLOWED = ("ValueError", "TypeError", "NotImplementedError", "RuntimeError")
# The ops whose integer values index.
# Op -> (index input, what bounds it, the input's name in messages).
INDEX_OPS = {
    "embedding": (1, lambda ins, attrs: ins[0].shape[0], "ids"),
    "embedding_grad": (0, lambda ins, attrs: attrs["num_embeddings"], "ids"),
    "sparse_softmax_cross_entropy": (1, lambda ins, attrs: ins[0].shape[-1], "labels"),
    "sparse_softmax_cross_entropy_grad": (1, lambda ins, attrs: ins[0].shape[-1], "labels"),
    "gather": (1, lambda ins, attrs: ins[0].shape[attrs["axis"]], "index"),
    "gather_grad": (0, lambda ins, attrs: attrs["shape"][attrs["axis"]], "index"),
}


# ---------------------------------------------------------------- the child
def _rows():
    import op_cases

    rows = {}
    for info in pkgutil.iter_modules(op_cases.__path__):
        for case in importlib.import_module(f"op_cases.{info.name}").CASES:
            rows.setdefault(case.op, case)
    return rows


def _attr_kind(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (list, tuple)):
        return "ints"
    return "other"


def _parse_default(text):
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _attr_cases(schema, attrs):
    """(name, attrs, must_raise) per attribute mutation."""
    out = [("attr no_such_attr", dict(attrs, no_such_attr=1), True)]
    for name, default in schema["attrs"].items():
        value = attrs.get(name, _parse_default(default))
        kind = _attr_kind(value)
        bad = []
        if kind == "int":
            bad = [-1, 0, 7, -7]
        elif kind == "float":
            bad = [-1.0, 0.0, math.nan, math.inf]
        elif kind == "ints":
            bad = [[], [-1], [0], [7], [-7], list(value) + [1]]
            bad += [[-1] * len(value), [0] * len(value)] if value else []
        for b in bad:
            out.append((f"attr {name}={b}", dict(attrs, **{name: b}), False))
        if kind in ("int", "float", "ints", "bool"):
            out.append((f"attr {name}='x'", dict(attrs, **{name: "x"}), True))
    return out


def _input_cases(op, inputs, attrs, variadic):
    """(name, inputs, attrs, must_raise) per input mutation."""
    out = [("no inputs", [], attrs, True)]
    if not variadic:
        out.append(("one input too many", inputs + [inputs[0]], attrs, True))
    index_input = INDEX_OPS.get(op, (None,))[0]
    for i, x in enumerate(inputs):
        if x is None:
            continue
        others = lambda y: inputs[:i] + [y] + inputs[i + 1:]  # noqa: E731
        if np.issubdtype(x.dtype, np.floating):
            out.append((f"input {i} as int64", others(x.astype(np.int64)), attrs, False))
            out.append((f"input {i} as float16", others(x.astype(np.float16)), attrs, False))
            if x.size:
                nan = x.copy()
                nan.reshape(-1)[0] = np.nan
                out.append((f"input {i} holding NaN", others(nan), attrs, False))
        else:
            out.append((f"input {i} as float32", others(x.astype(np.float32)), attrs,
                        i == index_input))
            if x.size:
                for v in (-1, 2**31 - 1):
                    y = x.copy()
                    y.reshape(-1)[-1] = v
                    out.append((f"input {i} holding {v}", others(y), attrs, False))
        out.append((f"input {i} with a leading axis", others(x[None]), attrs, False))
        if x.ndim > 1:
            out.append((f"input {i} flattened", others(x.reshape(-1)), attrs, False))
        if x.ndim >= 1 and x.size:
            out.append((f"input {i} as 0-d", others(x.reshape(-1)[0].copy()), attrs, False))
            out.append((f"input {i} with an empty axis 0", others(x[:0]), attrs, False))
        if x.ndim >= 1 and x.shape[-1] > 1:
            out.append((f"input {i} with a shorter last axis", others(x[..., :-1]), attrs,
                        False))
    return out


def _index_cases(op, inputs, attrs):
    """Out-of-range ids/labels: (name, inputs, must_contain)."""
    if op not in INDEX_OPS:
        return []
    i, bound, name = INDEX_OPS[op]
    limit = int(bound(inputs, attrs))
    out = []
    for v, at in ((limit, -1), (-1, 0), (2**31 - 1, -1)):
        x = inputs[i].copy()
        x.reshape(-1)[at] = v
        where = np.unravel_index(at % x.size, x.shape)
        index = ", ".join(str(int(k)) for k in where)
        text = f"{name}[{index}]={v} is out of range [0, {limit})"
        out.append((f"{name} holding {v}", inputs[:i] + [x] + inputs[i + 1:], [op, text]))
    return out


def _error_row_cases(row):
    out = []
    dtypes = {"float32": np.float32, "float64": np.float64, "int32": np.int32,
              "int64": np.int64, "bool": np.bool_}
    for k, e in enumerate(row.errors):
        if not all(d in dtypes and all(s >= 0 for s in shape) for shape, d in e.inputs):
            continue
        arrays = [np.zeros(shape, dtypes[d]) for shape, d in e.inputs]
        out.append((f"error row {k}", arrays, dict(e.attrs),
                    list(e.must_contain)))
    return out


def _run(fn):
    try:
        fn()
        return {"outcome": "ok"}
    except Exception as e:  # noqa: BLE001: the point is to see every kind
        return {"outcome": "error", "type": type(e).__name__, "message": str(e)}


def child(op: str) -> None:
    sys.path[:0] = [HERE, os.path.join(ROOT, "python")]
    from oneflow_lite import _C

    row = _rows()[op]
    schema = _C.op_schema(op)
    rng = np.random.default_rng(0)
    inputs = list(row.make_inputs(rng, np.float32))
    attrs = dict(row.attrs)
    cases = [(n, ins, a, must, [op]) for n, ins, a, must in
             _input_cases(op, inputs, attrs, schema["variadic"])]
    cases += [(n, inputs, a, must, [op]) for n, a, must in _attr_cases(schema, attrs)]
    cases += [(n, ins, attrs, True, texts) for n, ins, texts in _index_cases(op, inputs, attrs)]
    cases += [(n, ins, a, True, texts) for n, ins, a, texts in _error_row_cases(row)]
    calls = [(n, must, texts, lambda ins=ins, a=a: _C.run_op(op, ins, a))
             for n, ins, a, must, texts in cases]
    calls += _grad_calls(_C, op, schema, inputs, attrs)
    calls += _kernel_calls(_C, op, inputs, attrs)
    print(json.dumps({"count": len(calls)}), flush=True)
    for name, must, texts, call in calls:
        print(json.dumps(dict(_run(call), case=name, must=must, contains=texts)), flush=True)


def _grad_calls(_C, op, schema, inputs, attrs):
    """_C.op_grad with out-of-range values (must raise) and with output
    gradients of a wrong dtype or rank."""
    if not schema["has_grad"]:
        return []
    outs = _C.run_op(op, inputs, attrs)[:len(schema["outputs"])]
    dys = [np.ones_like(o) if np.issubdtype(o.dtype, np.floating) else None for o in outs]
    calls = [(f"{n} (op_grad)", True, texts, lambda ins=ins: _C.op_grad(op, ins, attrs, dys))
             for n, ins, texts in _index_cases(op, inputs, attrs)]
    for k, dy in enumerate(dys):
        if dy is None:
            continue
        for what, bad in (("as int64", dy.astype(np.int64)), ("with a leading axis", dy[None])):
            d = dys[:k] + [bad] + dys[k + 1:]
            calls.append((f"op_grad, output grad {k} {what}", False, [op],
                          lambda d=d: _C.op_grad(op, inputs, attrs, d)))
    return calls


def _kernel_calls(_C, op, inputs, attrs):
    """_C.run_kernel told a wrong output dtype or shape (whole tensors: no
    logical_shape): the kernel must not see it."""
    try:
        descs = [(list(o.shape), o.dtype.name) for o in _C.run_op(op, inputs, attrs)]
    except Exception:  # noqa: BLE001: ops whose row needs more than run_op gives
        return []
    descs = descs[:len(_C.op_schema(op)["outputs"])]
    swap = {"float32": "float64", "float64": "float32", "int64": "float32",
            "int32": "float32", "bool": "float32"}
    calls = []
    for k, (shape, dtype) in enumerate(descs):
        d = descs[:k] + [(shape, swap[dtype])] + descs[k + 1:]
        calls.append((f"run_kernel, output {k} as {swap[dtype]}", True, [op],
                      lambda d=d: _C.run_kernel(op, inputs, attrs, d)))
        for what, bad in (("with a leading axis", [1] + shape), ("shortened", shape[:-1]),
                          ("doubled", [2 * e for e in shape])):
            if bad == shape:  # a 0-d output has no axis to shorten or double
                continue
            d = descs[:k] + [(bad, dtype)] + descs[k + 1:]
            calls.append((f"run_kernel, output {k} {what}", True, [op],
                          lambda d=d: _C.run_kernel(op, inputs, attrs, d)))
    return calls


# ---------------------------------------------------------------- the test
def _run_child(op: str):
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), op], cwd=HERE,
                           capture_output=True, text=True, timeout=TIMEOUT_S,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return op, None, [], f"timed out after {TIMEOUT_S} s"
    lines = [json.loads(s) for s in p.stdout.splitlines() if s.startswith("{")]
    return op, p.returncode, lines, p.stderr[-2000:]


def _problems(op, returncode, lines, stderr):
    if returncode is None:
        return [f"{op}: {stderr}"]
    if returncode != 0:
        last = lines[-1]["case"] if len(lines) > 1 else "(before the first case)"
        kind = f"signal {-returncode}" if returncode < 0 else f"exit {returncode}"
        return [f"{op}: the process ended with {kind} after case {last!r}:\n{stderr}"]
    if not lines or len(lines) - 1 != lines[0]["count"]:
        return [f"{op}: {len(lines) - 1} case results for {lines[0]['count'] if lines else '?'} "
                f"cases:\n{stderr}"]
    out = []
    for r in lines[1:]:
        where = f"{op}, {r['case']}"
        if r["outcome"] == "ok":
            if r["must"]:
                out.append(f"{where}: did not raise")
            continue
        if r["type"] not in ALLOWED:
            out.append(f"{where}: raised {r['type']}: {r['message']}")
        missing = [t for t in r["contains"] if t not in r["message"]]
        if missing:
            out.append(f"{where}: {r['type']} message lacks {missing}: {r['message']}")
    return out


def test_every_op_rejects_invalid_values_with_an_exception_naming_it():
    from oneflow_lite import _C

    ops = sorted(_C.list_ops())
    rows = _rows()
    assert set(rows) == set(ops), f"ops without a row: {sorted(set(ops) - set(rows))}"
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_run_child, ops))
    assert sorted(op for op, *_ in results) == ops
    problems = [p for r in results for p in _problems(*r)]
    assert not problems, "\n".join(problems)
    musts = sum(1 for _, _, lines, _ in results for r in lines[1:] if r["must"])
    assert musts >= 3 * len(ops)  # the sweep did run the cases that must raise


if __name__ == "__main__":
    child(sys.argv[1])
