"""Central finite differences for the frontend tests: ``fd_grads`` of a
scalar numpy function, and ``check_grads``, which compares autograd's
gradients of a flow function with them (float64)."""
from __future__ import annotations

import numpy as np

import oneflow_lite as flow


def fd_grads(f, arrays, eps: float = 1e-6) -> list:
    """d f(*arrays) / d arrays[i] by central differences (arrays are float64)."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + eps
            hi = f(*arrays)
            a[i] = old - eps
            lo = f(*arrays)
            a[i] = old
            g[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def check_grads(fn, arrays, rtol: float = 1e-6, atol: float = 1e-8, seed: int = 7) -> None:
    """fn maps flow tensors to a tensor; checks the gradients of
    sum(fn(*xs) * w), w a fixed random weight, against central differences."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    out_shape = np.shape(fn(*[flow.tensor(a) for a in arrays]).numpy())
    w = np.random.default_rng(seed).standard_normal(out_shape)
    tensors = [flow.tensor(a, requires_grad=True) for a in arrays]
    (fn(*tensors) * flow.tensor(w)).sum().backward()
    want = fd_grads(lambda *xs: float(np.sum(fn(*[flow.tensor(x) for x in xs]).numpy() * w)),
                    arrays)
    for k, (t, g) in enumerate(zip(tensors, want)):
        assert t.grad is not None, f"input {k} got no gradient"
        np.testing.assert_allclose(t.grad.numpy(), g, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {k}")
