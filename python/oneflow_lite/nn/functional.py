"""``flow.nn.functional``: the functional API.

Every registered op is reachable here by its registry name, through the
wrappers generated in ``_dispatch.ops`` (``F.gelu(x)``, ``F.concat([a, b],
axis=1)``). The functions written below are conveniences that compose
registered ops and take PyTorch-style arguments; none has its own gradient
(autograd sees the composed ops). Stateless; not thread-safe (as the eager
frontend).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

from oneflow_lite import _dispatch
from oneflow_lite._dispatch import apply, ops
from oneflow_lite._tensor import Tensor
from oneflow_lite.nn.functional_loss import (binary_cross_entropy_with_logits,  # noqa: F401
                                             l1_loss, mse_loss, nll_loss, one_hot)

IntPair = Union[int, Sequence[int]]


def __getattr__(name: str):  # PEP 562: registry ops by name
    return getattr(ops, name)


def _pair(v: IntPair, what: str) -> list:
    if isinstance(v, int):
        return [v, v]
    v = [int(x) for x in v]
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {v}")
    return v


def relu(x: Tensor) -> Tensor:
    return apply("relu", [x])


def gelu(x: Tensor) -> Tensor:
    """Exact GELU, x * Phi(x)."""
    return apply("gelu", [x])


def tanh(x: Tensor) -> Tensor:
    return apply("tanh", [x])


def sigmoid(x: Tensor) -> Tensor:
    return apply("sigmoid", [x])


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return apply("softmax", [x], {"axis": dim})


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return apply("log_softmax", [x], {"axis": dim})


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``x @ weight.T + bias`` with weight [out, in] (PyTorch layout): one
    matmul with transpose_b=True. An N-d x is flattened to 2-d and back."""
    lead = list(x.shape[:-1])
    if x.ndim != 2:
        x = x.reshape(-1, x.shape[-1])
    y = apply("matmul", [x, weight], {"transpose_b": True})
    if bias is not None:
        y = apply("bias_add", [y, bias], {"axis": 1})
    if len(lead) != 1:
        y = y.reshape(*lead, y.shape[-1])
    return y


def conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntPair = 1,
           padding: IntPair = 0, dilation: IntPair = 1) -> Tensor:
    """NCHW convolution, weight [O, C, kh, kw]."""
    y = apply("conv2d", [x, weight], {"stride": _pair(stride, "conv2d stride"),
                                      "padding": _pair(padding, "conv2d padding"),
                                      "dilation": _pair(dilation, "conv2d dilation")})
    if bias is not None:
        y = apply("bias_add", [y, bias], {"axis": 1})
    return y


def _pool(op: str, x, kernel_size, stride, padding) -> Tensor:
    k = _pair(kernel_size, f"{op} kernel_size")
    s = k if stride is None else _pair(stride, f"{op} stride")
    return apply(op, [x], {"kernel_size": k, "stride": s, "padding": _pair(padding, f"{op} "
                                                                                  f"padding")})


def max_pool2d(x: Tensor, kernel_size: IntPair, stride: Optional[IntPair] = None,
               padding: IntPair = 0) -> Tensor:
    return _pool("max_pool2d", x, kernel_size, stride, padding)


def avg_pool2d(x: Tensor, kernel_size: IntPair, stride: Optional[IntPair] = None,
               padding: IntPair = 0) -> Tensor:
    return _pool("avg_pool2d", x, kernel_size, stride, padding)


def layer_norm(x: Tensor, normalized_shape: Sequence[int], weight: Tensor, bias: Tensor,
               eps: float = 1e-5) -> Tensor:
    """Normalises over the trailing ``len(normalized_shape)`` axes."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if list(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(f"layer_norm: input shape {list(x.shape)} does not end with "
                         f"normalized_shape {shape}")
    y, _mean, _inv_std = apply("layer_norm", [x, weight, bias],
                               {"begin_norm_axis": x.ndim - len(shape), "epsilon": float(eps)})
    return y


def embedding(ids: Tensor, weight: Tensor) -> Tensor:
    """Rows of ``weight`` [num, dim] picked by integer ``ids``."""
    return apply("embedding", [weight, ids])


def dropout(x: Tensor, p: float = 0.5, training: bool = True, seed: int = 0,
            iteration: int = 0) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by
    1/(1-p). The mask is the C++ dropout kernel's (Philox of ``seed``,
    ``iteration`` and the element's index), so a graph run's step
    ``iteration`` drops the same elements; eager dropout is x * mask."""
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: p={p} is outside [0, 1)")
    attrs = {"rate": float(p), "seed": int(seed)}
    if _dispatch.active_tracer() is not None:
        y, _mask = apply("dropout", [x], attrs)
        return y
    desc = (list(x.shape), x.dtype.name)
    _y, mask = _dispatch.run_random("dropout", [x], attrs, [desc, desc], iteration)
    return x * Tensor._wrap(mask)


def cross_entropy(logits: Tensor, labels: Tensor, reduction: str = "mean") -> Tensor:
    """Softmax cross-entropy of logits [..., C] against integer labels [...]."""
    per_example = apply("sparse_softmax_cross_entropy", [logits, labels])
    if reduction == "mean":
        return apply("reduce_mean", [per_example], {"axes": [], "keepdims": False})
    if reduction == "sum":
        return apply("reduce_sum", [per_example], {"axes": [], "keepdims": False})
    if reduction == "none":
        return per_example
    raise ValueError(f"cross_entropy: unknown reduction '{reduction}' (mean, sum or none)")


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor,
                                 attn_mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0, training: bool = False, seed: int = 0,
                                 iteration: int = 0) -> Tensor:
    """softmax(q k^T / sqrt(d) + attn_mask) v for q, k, v [B, H, T, d]; the
    mask is additive (0 keeps, a large negative number hides)."""
    scores = apply("batch_matmul", [q, k], {"transpose_b": True})
    scores = apply("scalar_mul", [scores], {"value": 1.0 / math.sqrt(q.shape[-1])})
    if attn_mask is not None:
        scores = apply("add", [scores, attn_mask])
    probs = apply("softmax", [scores], {"axis": -1})
    probs = dropout(probs, dropout_p, training, seed, iteration)
    return apply("batch_matmul", [probs, v])
