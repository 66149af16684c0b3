"""Rows for the neural-network ops of ops/nn/: activations, softmax, sparse
softmax cross entropy, layer norm, dropout, embedding, and their backward ops.

References are numpy, computed in float64 and cast to the input dtype; every
backward is written out here independently of the C++ code. Dropout's mask
comes from ``philox4x32`` below, a numpy Philox4x32-10 written from the
Random123 paper (Salmon et al., SC'11); test_random.py checks it against
the Random123 known-answer vectors.
"""
import math

import numpy as np

from op_table import ErrorCase, OpCase

F32, F64, I32, I64 = "float32", "float64", "int32", "int64"
NOT_DIFFERENTIATED = "backward op: autodiff does not differentiate it a second time"

# ---------------------------------------------------------------- Philox4x32-10
_MASK32 = np.uint64(0xFFFFFFFF)
_MUL = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))    # round multipliers
_WEYL = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))   # key schedule increments


def philox4x32(counter, key):
    """Philox4x32-10 on counters [..., 4] under keys [..., 2] (uint32 words)."""
    c = [np.asarray(counter, np.uint64)[..., i] for i in range(4)]
    k = [np.asarray(key, np.uint64)[..., i] for i in range(2)]
    for _ in range(10):
        p0, p1 = _MUL[0] * c[0], _MUL[1] * c[2]            # 64-bit products, no overflow
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k[0], p1 & _MASK32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k[1], p0 & _MASK32]
        k = [(k[0] + _WEYL[0]) & _MASK32, (k[1] + _WEYL[1]) & _MASK32]
    return np.stack(c, axis=-1).astype(np.uint32)


def uniform_float(seed: int, stream: int, index) -> np.ndarray:
    """Uniform [0, 1): counter (index lo, index hi, stream lo, stream hi),
    key (seed lo, seed hi); the top 24 bits of word 0 times 2^-24."""
    index = np.asarray(index, np.uint64)
    words = [index & _MASK32, index >> np.uint64(32)]
    words += [np.full_like(index, (stream >> s) & 0xFFFFFFFF) for s in (0, 32)]
    seed &= (1 << 64) - 1
    key = np.array([seed & 0xFFFFFFFF, seed >> 32], np.uint64)
    bits = philox4x32(np.stack(words, axis=-1), key)[..., 0]
    return (bits >> np.uint32(8)).astype(np.float64) * 2.0 ** -24


def dropout_mask(shape, dtype, rate: float, seed: int, iteration: int = 0) -> np.ndarray:
    u = uniform_float(seed, iteration, np.arange(int(np.prod(shape))).reshape(shape))
    return np.where(u >= rate, 1.0 / (1.0 - rate), 0.0).astype(dtype)


# ---------------------------------------------------------------- helpers
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _away_from_zero(x, margin=0.1):
    return np.where(x >= 0, x + margin, x - margin)


def _cast(values, dtype):
    return [np.asarray(v).astype(dtype) for v in values]


def _f64(x):
    return np.asarray(x, np.float64)


def _arity(op, n_given, n_expected, dtype=F32):
    return ErrorCase([([2, 3], dtype)] * n_given, {},
                     [op, f"expects {n_expected} inputs, got {n_given}"])


# ---------------------------------------------------------------- activations
def _gelu(x):
    x = _f64(x)
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _gelu_dx(x, dy):
    x = _f64(x)
    cdf = 0.5 * (1 + _erf(x / math.sqrt(2)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return dy * (cdf + x * pdf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-_f64(x)))


# name: (forward, backward-from-(x, y, dy), the grad op's first input "x" or "y",
#        flops per element of the forward and of the grad op)
_ACTIVATIONS = {
    "relu": (lambda x: np.maximum(_f64(x), 0), lambda x, y, dy: dy * (y > 0), "y", 1, 1),
    "gelu": (_gelu, lambda x, y, dy: _gelu_dx(x, dy), "x", 4, 10),
    "tanh": (lambda x: np.tanh(_f64(x)), lambda x, y, dy: dy * (1 - y * y), "y", 1, 3),
    "sigmoid": (_sigmoid, lambda x, y, dy: dy * y * (1 - y), "y", 3, 3),
}


def _activation_rows(name):
    fwd, bwd, value, flops, grad_flops = _ACTIVATIONS[name]

    def x_of(rng, shape):
        return _away_from_zero(rng.standard_normal(shape))  # relu's kink stays 0.1 away

    def grad_inputs(rng, dt, shape=(3, 4)):
        x = x_of(rng, shape)
        return _cast([x if value == "x" else fwd(x), rng.standard_normal(shape)], dt)

    def grad_ref(xs):  # xs[0] is x for gelu, y otherwise; each backward reads only its own
        v, dy = _f64(xs[0]), _f64(xs[1])
        return bwd(v, v, dy).astype(xs[0].dtype)

    def forward_row(shape, suffix=""):
        return OpCase(
            id=name + suffix, op=name,
            make_inputs=lambda rng, dt: [x_of(rng, shape).astype(dt)],
            forward=lambda xs, a: [fwd(xs[0]).astype(xs[0].dtype)],
            backward=lambda xs, a, dys: [
                bwd(_f64(xs[0]), fwd(xs[0]), _f64(dys[0])).astype(xs[0].dtype)],
            cost_inputs=[([3, 4], F32)],
            flops=flops * 12,          # flops per element x 3*4 elements
            memory_bytes=12 * 4,       # y: 12 float32
            errors=[ErrorCase([([3], I64)], {}, [name, "x.dtype=int64 is not float32 or float64"]),
                    _arity(name, 2, 1)],
        )

    grad_op = name + "_grad"
    return [
        forward_row((3, 4)),
        forward_row((200, 200), "_large"),   # 40000 elements: several ParallelFor chunks
        OpCase(
            id=grad_op, op=grad_op,
            make_inputs=grad_inputs,
            forward=lambda xs, a: [grad_ref(xs)],
            no_grad_reason=NOT_DIFFERENTIATED,
            cost_inputs=[([3, 4], F64)] * 2,
            flops=grad_flops * 12,     # flops per element x 12 elements
            memory_bytes=12 * 8,       # dx: 12 float64
            errors=[
                ErrorCase([([3, 4], F32), ([4, 3], F32)], {},
                          [grad_op, "dy.shape=(4, 3) != " + value + ".shape=(3, 4)"]),
                ErrorCase([([3, 4], F32), ([3, 4], F64)], {},
                          [grad_op, "dy.dtype=float64 != " + value + ".dtype=float32"]),
                _arity(grad_op, 1, 2),
            ],
        ),
    ]


# ---------------------------------------------------------------- softmax
def _log_softmax(x, axis):
    x = _f64(x)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _softmax(x, axis):
    return np.exp(_log_softmax(x, axis))


def _softmax_dx(y, dy, axis):
    return y * (dy - (dy * y).sum(axis=axis, keepdims=True))


def _log_softmax_dx(y, dy, axis):
    return dy - np.exp(y) * dy.sum(axis=axis, keepdims=True)


_SOFTMAX = {"softmax": (_softmax, _softmax_dx), "log_softmax": (_log_softmax, _log_softmax_dx)}


def _softmax_rows(name, shape, axis, suffix):
    fwd, bwd = _SOFTMAX[name]
    grad_op = name + "_grad"
    attrs = {"axis": axis}
    n = int(np.prod(shape))
    errors = [
        ErrorCase([([2, 3], F32)], {"axis": 2},
                  [name, "axis=2 is out of range for x.shape=(2, 3)"]),
        ErrorCase([([2, 3], F32)], {"axis": -3}, [name, "axis=-3"]),
        ErrorCase([([2, 3], I32)], {}, [name, "x.dtype=int32 is not float32 or float64"]),
        _arity(name, 2, 1),
    ]
    grad_errors = [
        ErrorCase([([2, 3], F32), ([3, 2], F32)], {},
                  [grad_op, "dy.shape=(3, 2) != y.shape=(2, 3)"]),
        ErrorCase([([2, 3], F64), ([2, 3], F32)], {},
                  [grad_op, "dy.dtype=float32 != y.dtype=float64"]),
        ErrorCase([([2, 3], F32)] * 2, {"axis": 5},
                  [grad_op, "axis=5 is out of range for y.shape"]),
        _arity(grad_op, 3, 2),
    ]

    def grad_inputs(rng, dt):
        return _cast([fwd(rng.standard_normal(shape), axis), rng.standard_normal(shape)], dt)

    return [
        OpCase(
            id=f"{name}_{suffix}", op=name, attrs=attrs,
            make_inputs=lambda rng, dt: [rng.standard_normal(shape).astype(dt)],
            forward=lambda xs, a: [fwd(xs[0], a["axis"]).astype(xs[0].dtype)],
            backward=lambda xs, a, dys: [
                bwd(fwd(xs[0], a["axis"]), _f64(dys[0]), a["axis"]).astype(xs[0].dtype)],
            cost_inputs=[(list(shape), F32)],
            flops=5 * n,               # 5 flops per element (see softmax.cpp)
            memory_bytes=4 * n,        # y: n float32
            errors=errors,
        ),
        OpCase(
            id=f"{grad_op}_{suffix}", op=grad_op, attrs=attrs,
            make_inputs=grad_inputs,
            forward=lambda xs, a: [
                bwd(_f64(xs[0]), _f64(xs[1]), a["axis"]).astype(xs[0].dtype)],
            no_grad_reason=NOT_DIFFERENTIATED,
            cost_inputs=[(list(shape), F64)] * 2,
            flops=4 * n,               # 4 flops per element
            memory_bytes=8 * n,        # dx: n float64
            errors=grad_errors,
        ),
    ]


# ---------------------------------------------------------------- cross entropy
def _xent(logits, labels):
    lp = _log_softmax(logits, -1)
    return -np.take_along_axis(lp, labels[..., None].astype(np.int64), axis=-1)[..., 0]


def _xent_dlogits(logits, labels, dy):
    onehot = np.eye(logits.shape[-1])[labels]
    return _f64(dy)[..., None] * (_softmax(logits, -1) - onehot)


def _xent_rows(batch, classes, label_dtype, suffix):
    def make(rng, dt):
        return [rng.standard_normal(batch + (classes,)).astype(dt),
                rng.integers(0, classes, size=batch).astype(label_dtype)]

    def make_grad(rng, dt):
        return make(rng, dt) + [rng.standard_normal(batch).astype(dt)]

    op, grad_op = "sparse_softmax_cross_entropy", "sparse_softmax_cross_entropy_grad"
    rows = int(np.prod(batch))
    return [
        OpCase(
            id=f"xent_{suffix}", op=op, make_inputs=make,
            forward=lambda xs, a: [_xent(xs[0], xs[1]).astype(xs[0].dtype)],
            backward=lambda xs, a, dys: [
                _xent_dlogits(xs[0], xs[1], dys[0]).astype(xs[0].dtype), None],
            cost_inputs=[(list(batch) + [classes], F32), (list(batch), label_dtype)],
            flops=4 * rows * classes,  # 4 flops per logits element
            memory_bytes=4 * rows,     # loss: one float32 per example
            errors=[
                ErrorCase([([4, 5], F32), ([3], I64)], {},
                          [op, "labels.shape=(3) != logits.shape[:-1]=(4)"]),
                ErrorCase([([4, 5], F32), ([4], F32)], {},
                          [op, "labels.dtype=float32 is not int32 or int64"]),
                ErrorCase([([4, 5], I64), ([4], I64)], {},
                          [op, "logits.dtype=int64 is not float32 or float64"]),
                ErrorCase([([], F32), ([], I64)], {}, [op, "logits.shape=()", "class axis"]),
                _arity(op, 1, 2),
            ],
        ),
        OpCase(
            id=f"xent_grad_{suffix}", op=grad_op, make_inputs=make_grad,
            forward=lambda xs, a: [_xent_dlogits(xs[0], xs[1], xs[2]).astype(xs[0].dtype)],
            no_grad_reason=NOT_DIFFERENTIATED,
            cost_inputs=[(list(batch) + [classes], F32), (list(batch), label_dtype),
                         (list(batch), F32)],
            flops=7 * rows * classes,  # 7 flops per logits element
            memory_bytes=4 * rows * classes,  # dlogits: float32 like logits
            errors=[
                ErrorCase([([4, 5], F32), ([4], I32), ([3], F32)], {},
                          [grad_op, "dy.shape=(3) != loss.shape=(4)"]),
                ErrorCase([([4, 5], F32), ([4], I32), ([4], F64)], {},
                          [grad_op, "dy.dtype=float64 != loss.dtype=float32"]),
                _arity(grad_op, 2, 3),
            ],
        ),
    ]


# ---------------------------------------------------------------- layer norm
def _layer_norm(x, gamma, beta, begin, eps):
    x = _f64(x)
    axes = tuple(range(begin, x.ndim))
    mean = x.mean(axis=axes)
    var = ((x - mean.reshape(mean.shape + (1,) * len(axes))) ** 2).mean(axis=axes)  # biased
    inv_std = 1 / np.sqrt(var + eps)
    expand = (1,) * len(axes)
    xhat = (x - mean.reshape(mean.shape + expand)) * inv_std.reshape(inv_std.shape + expand)
    return [xhat * _f64(gamma) + _f64(beta), mean, inv_std]


def _layer_norm_grads(x, gamma, mean, inv_std, dy, begin):
    """dx, dgamma, dbeta of y = xhat * gamma + beta, written from the chain rule."""
    x, gamma, dy = _f64(x), _f64(gamma), _f64(dy)
    axes = tuple(range(begin, x.ndim))
    expand = (1,) * len(axes)
    m, s = _f64(mean).reshape(mean.shape + expand), _f64(inv_std).reshape(inv_std.shape + expand)
    xhat = (x - m) * s
    g = dy * gamma
    n = int(np.prod(x.shape[begin:]))
    dx = s / n * (n * g - g.sum(axis=axes, keepdims=True)
                  - xhat * (g * xhat).sum(axis=axes, keepdims=True))
    lead = tuple(range(begin))
    return [dx, (dy * xhat).sum(axis=lead), dy.sum(axis=lead)]


def _layer_norm_rows(shape, begin, suffix):
    attrs = {"begin_norm_axis": begin, "epsilon": 1e-5}
    b = begin % len(shape)
    pshape, sshape = shape[b:], shape[:b]

    def make(rng, dt):
        return _cast([rng.standard_normal(shape) * 2 + 0.5, 1 + 0.3 * rng.standard_normal(pshape),
                      0.3 * rng.standard_normal(pshape)], dt)

    def make_grad(rng, dt):
        x, gamma, _ = make(rng, dt)
        _, mean, inv_std = _layer_norm(x, gamma, 0, b, 1e-5)
        return _cast([x, gamma, mean, inv_std, rng.standard_normal(shape)], dt)

    n, rows = int(np.prod(shape)), int(np.prod(sshape))
    ok = ([2, 3, 4], F32)
    return [
        OpCase(
            id=f"layer_norm_{suffix}", op="layer_norm", attrs=attrs, make_inputs=make,
            forward=lambda xs, a: _cast(_layer_norm(*xs, b, a["epsilon"]), xs[0].dtype),
            backward=lambda xs, a, dys: _cast(_layer_norm_grads(
                xs[0], xs[1], *_layer_norm(*xs, b, a["epsilon"])[1:], dys[0], b), xs[0].dtype),
            grad_outputs=[0],
            cost_inputs=[(list(shape), F32), (list(pshape), F32), (list(pshape), F32)],
            flops=7 * n,                      # 7 flops per element of x
            memory_bytes=4 * (n + 2 * rows),  # y, then mean and inv_std: one float32 per row
            errors=[
                ErrorCase([ok, ([4], F32), ([4], F32)], {"begin_norm_axis": 1},
                          ["layer_norm", "gamma.shape=(4) != x.shape[begin_norm_axis:]=(3, 4)"]),
                ErrorCase([ok, ([4], F32), ([3], F32)], {},
                          ["layer_norm", "beta.shape=(3) != x.shape[begin_norm_axis:]=(4)"]),
                ErrorCase([ok, ([4], F64), ([4], F32)], {},
                          ["layer_norm", "gamma.dtype=float64 != x.dtype=float32"]),
                ErrorCase([ok, ([4], F32), ([4], F32)], {"begin_norm_axis": 3},
                          ["layer_norm",
                           "begin_norm_axis=3 is out of range for x.shape=(2, 3, 4)"]),
                ErrorCase([ok, ([4], F32), ([4], F32)], {"epsilon": -1.0},
                          ["layer_norm", "epsilon=-1 must be > 0"]),
                ErrorCase([([2, 0], F32), ([0], F32), ([0], F32)], {},
                          ["layer_norm", "x.shape[begin_norm_axis:]=(0) has no elements"]),
                _arity("layer_norm", 2, 3),
            ],
        ),
        OpCase(
            id=f"layer_norm_grad_{suffix}", op="layer_norm_grad", attrs={"begin_norm_axis": begin},
            make_inputs=make_grad,
            forward=lambda xs, a: _cast(_layer_norm_grads(*xs, b), xs[0].dtype),
            no_grad_reason=NOT_DIFFERENTIATED,
            cost_inputs=[(list(shape), F64), (list(pshape), F64), (list(sshape), F64),
                         (list(sshape), F64), (list(shape), F64)],
            flops=13 * n,                     # 13 flops per element of x
            memory_bytes=8 * (n + 2 * int(np.prod(pshape))),  # dx, dgamma, dbeta in float64
            errors=[
                ErrorCase([ok, ([4], F32), ([3], F32), ([2, 3], F32), ok], {},
                          ["layer_norm_grad",
                           "mean.shape=(3) != x.shape[:begin_norm_axis]=(2, 3)"]),
                ErrorCase([ok, ([4], F32), ([2, 3], F32), ([2, 3], F64), ok], {},
                          ["layer_norm_grad", "inv_std.dtype=float64 != x.dtype=float32"]),
                ErrorCase([ok, ([4], F32), ([2, 3], F32), ([2, 3], F32), ([2, 4], F32)], {},
                          ["layer_norm_grad", "dy.shape=(2, 4) != x.shape=(2, 3, 4)"]),
                _arity("layer_norm_grad", 3, 5),
            ],
        ),
    ]


# ---------------------------------------------------------------- dropout
def _dropout_rows(shape, rate, seed, suffix):
    attrs = {"rate": rate, "seed": seed}
    n = int(np.prod(shape))

    def forward(xs, a):
        mask = dropout_mask(xs[0].shape, xs[0].dtype, a["rate"], a["seed"])
        return [xs[0] * mask, mask]

    def backward(xs, a, dys):
        return [dys[0] * dropout_mask(xs[0].shape, xs[0].dtype, a["rate"], a["seed"])]

    return [OpCase(
        id=f"dropout_{suffix}", op="dropout", attrs=attrs,
        make_inputs=lambda rng, dt: [rng.standard_normal(shape).astype(dt)],
        forward=forward, backward=backward,
        grad_outputs=[0],              # mask depends on no input
        cost_inputs=[(list(shape), F32)],
        flops=2 * n,                   # compare and multiply per element
        memory_bytes=2 * 4 * n,        # y and mask, float32
        errors=[
            ErrorCase([([2, 3], F32)], {"rate": 1.0}, ["dropout", "rate=1 must be in [0, 1)"]),
            ErrorCase([([2, 3], F32)], {"rate": -0.5}, ["dropout", "rate=-0.5 must be in [0, 1)"]),
            ErrorCase([([2, 3], I32)], {}, ["dropout", "x.dtype=int32 is not float32 or float64"]),
            ErrorCase([([2, 3], F32)], {"seed": 1.5}, ["dropout", "attribute 'seed' must be"]),
            _arity("dropout", 2, 1),
        ],
    )]


# ---------------------------------------------------------------- embedding
def _scatter_add(ids, dy, vocab):
    out = np.zeros((vocab, dy.shape[-1]), np.float64)
    np.add.at(out, ids.reshape(-1).astype(np.int64), _f64(dy).reshape(-1, dy.shape[-1]))
    return out


def _embedding_rows(vocab, dim, ids_shape, id_dtype, suffix):
    def make(rng, dt):
        ids = rng.integers(0, vocab, size=ids_shape).astype(id_dtype)
        ids.reshape(-1)[:2] = 1                # at least one repeated id
        return [rng.standard_normal((vocab, dim)).astype(dt), ids]

    def make_grad(rng, dt):
        w, ids = make(rng, dt)
        return [ids, rng.standard_normal(ids_shape + (dim,)).astype(dt)]

    n = int(np.prod(ids_shape))
    grad_attrs = {"num_embeddings": vocab}
    return [
        OpCase(
            id=f"embedding_{suffix}", op="embedding", make_inputs=make,
            forward=lambda xs, a: [xs[0][xs[1]]],
            backward=lambda xs, a, dys: [
                _scatter_add(xs[1], dys[0], vocab).astype(xs[0].dtype), None],
            cost_inputs=[([vocab, dim], F32), (list(ids_shape), id_dtype)],
            flops=0,                   # a gather
            memory_bytes=4 * n * dim,  # out: n rows of dim float32
            errors=[
                ErrorCase([([6], F32), ([2], I64)], {},
                          ["embedding", "weight.shape=(6) must be 2-D"]),
                ErrorCase([([6, 3], F32), ([2], F32)], {},
                          ["embedding", "ids.dtype=float32 is not int32 or int64"]),
                ErrorCase([([6, 3], I64), ([2], I64)], {},
                          ["embedding", "weight.dtype=int64 is not float32 or float64"]),
                _arity("embedding", 1, 2),
            ],
        ),
        OpCase(
            id=f"embedding_grad_{suffix}", op="embedding_grad", attrs=grad_attrs,
            make_inputs=make_grad,
            forward=lambda xs, a: [_scatter_add(xs[0], xs[1], vocab).astype(xs[1].dtype)],
            backward=lambda xs, a, dys: [None, _f64(dys[0])[xs[0]].astype(xs[1].dtype)],
            cost_inputs=[(list(ids_shape), id_dtype), (list(ids_shape) + [dim], F32)],
            flops=n * dim,               # one add per element of dy
            memory_bytes=4 * vocab * dim,  # dweight float32
            errors=[
                ErrorCase([([2], I64), ([2, 3], F32)], {},
                          ["embedding_grad", "attribute 'num_embeddings' is required"]),
                ErrorCase([([2], I64), ([3, 3], F32)], {"num_embeddings": 6},
                          ["embedding_grad",
                           "dy.shape=(3, 3) != ids.shape + [embedding_dim]=(2, 3)"]),
                ErrorCase([([2], I64), ([3], F32)], {"num_embeddings": 6},
                          ["embedding_grad", "dy.shape=(3) must be ids.shape + [embedding_dim]"]),
                ErrorCase([([2], I64), ([2, 3], F32)], {"num_embeddings": 0},
                          ["embedding_grad", "num_embeddings=0 must be > 0"]),
                ErrorCase([([2], F32), ([2, 3], F32)], {"num_embeddings": 6},
                          ["embedding_grad", "ids.dtype=float32 is not int32 or int64"]),
                _arity("embedding_grad", 1, 2),
            ],
        ),
    ]


CASES = (
    [row for name in _ACTIVATIONS for row in _activation_rows(name)]
    + _softmax_rows("softmax", (3, 5), -1, "last")
    + _softmax_rows("softmax", (4, 3, 2), 1, "middle")
    + _softmax_rows("softmax", (300, 130), 0, "large")     # 3 blocks of inner positions
    # rows of 8 full 16-lane vectors and a masked tail, in 2 chunks of rows
    + _softmax_rows("softmax", (300, 130), -1, "large_last")
    + _softmax_rows("log_softmax", (3, 5), -1, "last")
    + _softmax_rows("log_softmax", (2, 3, 4), 0, "first")
    + _softmax_rows("log_softmax", (400, 90), 1, "large")  # 400 rows in parallel
    + _xent_rows((4,), 5, I64, "i64")
    + _xent_rows((2, 3), 4, I32, "i32")
    + _xent_rows((300,), 120, I64, "large")
    + _layer_norm_rows((3, 4), -1, "last")
    + _layer_norm_rows((2, 3, 4), 1, "two_axes")
    + _layer_norm_rows((128, 300), 1, "large")
    + _dropout_rows((4, 5), 0.3, 7, "small")
    + _dropout_rows((3,), 0.0, 1, "rate0")
    + _dropout_rows((200, 200), 0.5, 123456789012, "large")
    + _embedding_rows(6, 3, (2, 4), I64, "i64")
    + _embedding_rows(5, 2, (5,), I32, "i32")
    + _embedding_rows(50, 40, (2000,), I64, "large")
)
