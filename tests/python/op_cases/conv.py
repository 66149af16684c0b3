"""Rows for conv2d, max/avg pooling and their backward ops.

The numpy references below are written from the definitions, one kernel
offset (i, j) at a time over strided views of the padded input; they share
nothing with the im2col + gemm kernels. They compute in float64 and cast
back, so only the kernel's rounding is measured.
"""
import numpy as np

from op_table import ErrorCase, OpCase

F32 = "float32"


# ---------------------------------------------------------------- convolution

def _conv_geometry(x_shape, w_shape, a):
    (sh, sw), (ph, pw), (dh, dw) = a.get("stride", [1, 1]), a.get("padding", [0, 0]), a.get(
        "dilation", [1, 1])
    h, w = x_shape[2], x_shape[3]
    kh, kw = w_shape[2], w_shape[3]
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return sh, sw, ph, pw, dh, dw, kh, kw, ho, wo


def _tap(i, j, g):
    """The window of the padded input that kernel offset (i, j) reads."""
    sh, sw, _, _, dh, dw, _, _, ho, wo = g
    return (slice(None), slice(None), slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
            slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))


def conv2d_ref(x, w, a):
    g = _conv_geometry(x.shape, w.shape, a)
    _, _, ph, pw, _, _, kh, kw, ho, wo = g
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[_tap(i, j, g)], w[:, :, i, j].astype(np.float64))
    return y.astype(x.dtype)


def conv2d_grad_input_ref(dy, w, x_shape, a):
    g = _conv_geometry(x_shape, w.shape, a)
    _, _, ph, pw, _, _, kh, kw, _, _ = g
    n, c, h, wd = x_shape
    dxp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    for i in range(kh):
        for j in range(kw):
            dxp[_tap(i, j, g)] += np.einsum("nohw,oc->nchw", dy.astype(np.float64),
                                            w[:, :, i, j].astype(np.float64))
    return dxp[:, :, ph:ph + h, pw:pw + wd].astype(dy.dtype)


def conv2d_grad_weight_ref(x, dy, w_shape, a):
    g = _conv_geometry(x.shape, w_shape, a)
    _, _, ph, pw, _, _, kh, kw, _, _ = g
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    dw = np.zeros(w_shape)
    for i in range(kh):
        for j in range(kw):
            dw[:, :, i, j] = np.einsum("nchw,nohw->oc", xp[_tap(i, j, g)], dy.astype(np.float64))
    return dw.astype(x.dtype)


def _conv_attrs(a):
    return {k: a[k] for k in ("stride", "padding", "dilation") if k in a}


def conv_rows(name, x_shape, w_shape, attrs):
    """A conv2d row and one row for each of its backward ops, on one geometry."""
    y_shape = [x_shape[0], w_shape[0]] + list(_conv_geometry(x_shape, w_shape, attrs)[-2:])
    gi_attrs = dict(attrs, input_shape=list(x_shape))
    gw_attrs = dict(attrs, weight_shape=list(w_shape))
    tol = dict(f32_rtol=1e-4, f32_atol=1e-5)
    return [
        OpCase(
            id=f"conv2d_{name}", op="conv2d", attrs=attrs,
            make_inputs=lambda rng, dt: [rng.standard_normal(x_shape).astype(dt),
                                         rng.standard_normal(w_shape).astype(dt)],
            forward=lambda xs, a: [conv2d_ref(xs[0], xs[1], a)],
            backward=lambda xs, a, dys: [conv2d_grad_input_ref(dys[0], xs[1], xs[0].shape, a),
                                         conv2d_grad_weight_ref(xs[0], dys[0], xs[1].shape, a)],
            **tol),
        # dx = grad_input(dy, w) is linear in dy and in w: d dy = conv(gdx, w),
        # d w = grad_weight(gdx, dy).
        OpCase(
            id=f"conv2d_grad_input_{name}", op="conv2d_grad_input", attrs=gi_attrs,
            make_inputs=lambda rng, dt: [rng.standard_normal(y_shape).astype(dt),
                                         rng.standard_normal(w_shape).astype(dt)],
            forward=lambda xs, a: [conv2d_grad_input_ref(xs[0], xs[1], a["input_shape"], a)],
            backward=lambda xs, a, dys: [conv2d_ref(dys[0], xs[1], _conv_attrs(a)),
                                         conv2d_grad_weight_ref(dys[0], xs[0], xs[1].shape, a)],
            **tol),
        # dw = grad_weight(x, dy): d x = grad_input(dy, gdw), d dy = conv(x, gdw).
        OpCase(
            id=f"conv2d_grad_weight_{name}", op="conv2d_grad_weight", attrs=gw_attrs,
            make_inputs=lambda rng, dt: [rng.standard_normal(x_shape).astype(dt),
                                         rng.standard_normal(y_shape).astype(dt)],
            forward=lambda xs, a: [conv2d_grad_weight_ref(xs[0], xs[1], a["weight_shape"], a)],
            backward=lambda xs, a, dys: [conv2d_grad_input_ref(xs[1], dys[0], xs[0].shape, a),
                                         conv2d_ref(xs[0], dys[0], _conv_attrs(a))],
            **tol),
    ]


# x [2, 3, 7, 6], w [4, 3, 3, 3], stride 2, padding 1:
#   Ho = (7 + 2 - 2 - 1) // 2 + 1 = 4, Wo = (6 + 2 - 2 - 1) // 2 + 1 = 3
#   flops = 2 * N * O * Ho * Wo * C * kh * kw = 2 * 2 * 4 * 4 * 3 * 3 * 3 * 3 = 5184
#   conv2d writes y [2, 4, 4, 3] = 96 floats = 384 bytes;
#   conv2d_grad_input writes dx [2, 3, 7, 6] = 252 floats = 1008 bytes;
#   conv2d_grad_weight writes dw [4, 3, 3, 3] = 108 floats = 432 bytes.
S2P1 = {"stride": [2, 2], "padding": [1, 1]}
COST_X, COST_W, COST_Y = [2, 3, 7, 6], [4, 3, 3, 3], [2, 4, 4, 3]

CONV_ERRORS = [
    ErrorCase([([2, 3, 5, 5], F32), ([4, 2, 3, 3], F32)], {},
              ["conv2d", "x.shape[1]=3", "weight.shape[1]=2"]),
    ErrorCase([([3, 5, 5], F32), ([4, 3, 3, 3], F32)], {},
              ["conv2d", "x.shape must be 4-D", "(3, 5, 5)"]),
    ErrorCase([([2, 3, 5, 5], F32), ([4, 3, 3, 3], "float64")], {},
              ["conv2d", "weight.dtype=float64", "x.dtype=float32"]),
    ErrorCase([([2, 3, 5, 5], "int32"), ([4, 3, 3, 3], "int32")], {}, ["conv2d", "x.dtype=int32"]),
    ErrorCase([([2, 3, 5, 5], F32)], {}, ["conv2d", "expects 2 inputs, got 1"]),
    ErrorCase([([2, 3, 5, 5], F32), ([4, 3, 3, 3], F32)], {"stride": [0, 1]},
              ["conv2d", "'stride'=[0, 1]", ">= 1"]),
    ErrorCase([([2, 3, 5, 5], F32), ([4, 3, 3, 3], F32)], {"padding": [1]},
              ["conv2d", "'padding'=[1]", "2 values"]),
    ErrorCase([([2, 3, 5, 5], F32), ([4, 3, 3, 3], F32)], {"dilation": [1, -1]},
              ["conv2d", "'dilation'=[1, -1]"]),
    ErrorCase([([1, 1, 4, 4], F32), ([1, 1, 3, 3], F32)], {"dilation": [2, 2]},
              ["conv2d", "x.shape=(1, 1, 4, 4)", "output would be empty"]),
    ErrorCase([([2, 3, 5, 5], F32), ([4, 3, 3, 3], F32)], {"groups": 2},
              ["conv2d", "unknown attribute 'groups'"]),
]

GRAD_INPUT_ERRORS = [
    ErrorCase([([2, 4, 3, 3], F32), ([4, 3, 3, 3], F32)], {"input_shape": [2, 3, 6, 5]},
              ["conv2d_grad_input", "dy.shape=(2, 4, 3, 3)", "(2, 4, 4, 3)"]),
    ErrorCase([([2, 4, 3, 3], F32), ([4, 3, 3, 3], F32)], {},
              ["conv2d_grad_input", "'input_shape' is required"]),
    ErrorCase([([2, 4, 3, 3], F32), ([4, 3, 3, 3], F32)], {"input_shape": [2, 3, 5]},
              ["conv2d_grad_input", "'input_shape'=[2, 3, 5]", "4 values"]),
    ErrorCase([([2, 4, 3, 3], "float64"), ([4, 3, 3, 3], F32)], {"input_shape": [2, 3, 5, 5]},
              ["conv2d_grad_input", "weight.dtype=float32", "dy.dtype=float64"]),
    ErrorCase([([2, 4, 3, 3], F32)], {"input_shape": [2, 3, 5, 5]},
              ["conv2d_grad_input", "expects 2 inputs, got 1"]),
]

GRAD_WEIGHT_ERRORS = [
    ErrorCase([([2, 3, 5, 5], F32), ([2, 4, 2, 3], F32)], {"weight_shape": [4, 3, 3, 3]},
              ["conv2d_grad_weight", "dy.shape=(2, 4, 2, 3)", "(2, 4, 3, 3)"]),
    ErrorCase([([2, 3, 5, 5], F32), ([2, 4, 3, 3], F32)], {"weight_shape": [4, 2, 3, 3]},
              ["conv2d_grad_weight", "x.shape[1]=3", "weight_shape[1]=2"]),
    ErrorCase([([2, 3, 5, 5], F32), ([2, 4, 3, 3], "float64")], {"weight_shape": [4, 3, 3, 3]},
              ["conv2d_grad_weight", "dy.dtype=float64", "x.dtype=float32"]),
    ErrorCase([([2, 3, 5, 5], F32), ([2, 4, 3, 3], F32), ([1], F32)],
              {"weight_shape": [4, 3, 3, 3]},
              ["conv2d_grad_weight", "expects 2 inputs, got 3"]),
]


def _with_cost_and_errors(rows, errors):
    conv, grad_input, grad_weight = rows
    conv.cost_inputs, conv.cost_attrs = [(COST_X, F32), (COST_W, F32)], S2P1
    conv.flops, conv.memory_bytes, conv.errors = 5184, 384, errors[0]
    grad_input.cost_inputs = [(COST_Y, F32), (COST_W, F32)]
    grad_input.cost_attrs = dict(S2P1, input_shape=COST_X)
    grad_input.flops, grad_input.memory_bytes, grad_input.errors = 5184, 1008, errors[1]
    grad_weight.cost_inputs = [(COST_X, F32), (COST_Y, F32)]
    grad_weight.cost_attrs = dict(S2P1, weight_shape=COST_W)
    grad_weight.flops, grad_weight.memory_bytes, grad_weight.errors = 5184, 432, errors[2]
    return rows


CONV_CASES = (
    _with_cost_and_errors(conv_rows("s2_p1", [2, 3, 7, 6], [4, 3, 3, 3], S2P1),
                          [CONV_ERRORS, GRAD_INPUT_ERRORS, GRAD_WEIGHT_ERRORS])
    + conv_rows("plain", [2, 3, 5, 5], [2, 3, 3, 3], {})
    + conv_rows("dilated", [1, 2, 7, 8], [3, 2, 3, 2],
                {"stride": [1, 2], "padding": [1, 0], "dilation": [2, 2]})
    + conv_rows("mixed", [2, 2, 6, 7], [2, 2, 2, 3],
                {"stride": [2, 1], "padding": [0, 2], "dilation": [1, 3]})
    + conv_rows("pointwise", [2, 4, 3, 5], [3, 4, 1, 1], {})
)


# ---------------------------------------------------------------- pooling

def _pool_geometry(x_shape, a):
    kh, kw = a["kernel_size"]
    sh, sw = a.get("stride") or a["kernel_size"]
    ph, pw = a.get("padding", [0, 0])
    ho = (x_shape[2] + 2 * ph - kh) // sh + 1
    wo = (x_shape[3] + 2 * pw - kw) // sw + 1
    return kh, kw, sh, sw, ph, pw, ho, wo


def _pool_tap(i, j, g):
    _, _, sh, sw, _, _, ho, wo = g
    return (slice(None), slice(None), slice(i, i + sh * (ho - 1) + 1, sh),
            slice(j, j + sw * (wo - 1) + 1, sw))


def max_pool_ref(x, a):
    g = _pool_geometry(x.shape, a)
    kh, kw, _, _, ph, pw, _, _ = g
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    taps = [xp[_pool_tap(i, j, g)] for i in range(kh) for j in range(kw)]
    return np.max(np.stack(taps), axis=0).astype(x.dtype)


def max_pool_grad_ref(x, dy, a):
    """Each dy to the first maximum (row-major) of its window, one window at a time."""
    kh, kw, sh, sw, ph, pw, ho, wo = _pool_geometry(x.shape, a)
    dx = np.zeros(x.shape)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for oh in range(ho):
                for ow in range(wo):
                    best = None
                    for h in range(oh * sh - ph, oh * sh - ph + kh):
                        for w in range(ow * sw - pw, ow * sw - pw + kw):
                            if 0 <= h < x.shape[2] and 0 <= w < x.shape[3]:
                                if best is None or x[n, c, h, w] > x[n, c, best[0], best[1]]:
                                    best = (h, w)
                    dx[n, c, best[0], best[1]] += dy[n, c, oh, ow]
    return dx.astype(x.dtype)


def avg_pool_ref(x, a):
    g = _pool_geometry(x.shape, a)
    kh, kw, _, _, ph, pw, ho, wo = g
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = sum(xp[_pool_tap(i, j, g)] for i in range(kh) for j in range(kw))
    return (y / (kh * kw)).astype(x.dtype)


def avg_pool_grad_ref(x_shape, dy, a):
    g = _pool_geometry(x_shape, a)
    kh, kw, _, _, ph, pw, _, _ = g
    dxp = np.zeros((x_shape[0], x_shape[1], x_shape[2] + 2 * ph, x_shape[3] + 2 * pw))
    for i in range(kh):
        for j in range(kw):
            dxp[_pool_tap(i, j, g)] += dy.astype(np.float64) / (kh * kw)
    return dxp[:, :, ph:ph + x_shape[2], pw:pw + x_shape[3]].astype(dy.dtype)


def distinct(rng, shape, dt):
    """Values 0.05 apart at least, so no window has a tie near its maximum."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * 0.05).reshape(shape).astype(dt)


def _pool_y_shape(x_shape, a):
    return list(x_shape[:2]) + list(_pool_geometry(x_shape, a)[-2:])


def pool_rows(name, x_shape, attrs):
    y_shape = _pool_y_shape(x_shape, attrs)
    return [
        OpCase(
            id=f"max_pool2d_{name}", op="max_pool2d", attrs=attrs,
            make_inputs=lambda rng, dt: [distinct(rng, x_shape, dt)],
            forward=lambda xs, a: [max_pool_ref(xs[0], a)],
            backward=lambda xs, a, dys: [max_pool_grad_ref(xs[0], dys[0], a)],
            fd_eps=1e-4),
        OpCase(
            id=f"avg_pool2d_{name}", op="avg_pool2d", attrs=attrs,
            make_inputs=lambda rng, dt: [rng.standard_normal(x_shape).astype(dt)],
            forward=lambda xs, a: [avg_pool_ref(xs[0], a)],
            backward=lambda xs, a, dys: [avg_pool_grad_ref(xs[0].shape, dys[0], a)]),
        OpCase(
            id=f"max_pool2d_grad_{name}", op="max_pool2d_grad", attrs=attrs,
            make_inputs=lambda rng, dt: _max_grad_inputs(rng, dt, x_shape, y_shape, attrs),
            forward=lambda xs, a: [max_pool_grad_ref(xs[0], xs[2], a)],
            no_grad_reason="second derivative of max pooling is not supported: it needs a "
                           "gather-by-argmax op (the gradient is piecewise constant in x)"),
        # avg_pool2d_grad is the adjoint of avg_pool2d: d dy = avg_pool2d(gdx).
        OpCase(
            id=f"avg_pool2d_grad_{name}", op="avg_pool2d_grad", attrs=attrs,
            make_inputs=lambda rng, dt: [rng.standard_normal(x_shape).astype(dt),
                                         rng.standard_normal(y_shape).astype(dt)],
            forward=lambda xs, a: [avg_pool_grad_ref(xs[0].shape, xs[1], a)],
            backward=lambda xs, a, dys: [None, avg_pool_ref(dys[0], a)]),
    ]


def _max_grad_inputs(rng, dt, x_shape, y_shape, attrs):
    x = distinct(rng, x_shape, dt)
    return [x, max_pool_ref(x, attrs), rng.standard_normal(y_shape).astype(dt)]


# x [2, 3, 4, 6], kernel 2x2 (stride = kernel): Ho = 2, Wo = 3, 2 * 3 * 2 * 3 = 36 windows
#   of 4 elements: flops = 36 * 4 = 144 (compares, or adds with the divide as the last);
#   y = 36 floats = 144 bytes; the backward ops write dx [2, 3, 4, 6] = 144 floats = 576 bytes.
K2 = {"kernel_size": [2, 2]}
POOL_X = [2, 3, 4, 6]


def pool_errors(op):
    return [
        ErrorCase([([1, 2, 6, 6], F32)], {"kernel_size": [2, 3], "padding": [1, 2]},
                  [op, "padding=[1, 2]", "at most half of kernel_size=[2, 3]"]),
        ErrorCase([([1, 2, 6, 6], F32)], {}, [op, "'kernel_size' is required"]),
        ErrorCase([([2, 6, 6], F32)], K2, [op, "x.shape must be 4-D", "(2, 6, 6)"]),
        ErrorCase([([1, 2, 6, 6], "int64")], K2, [op, "x.dtype=int64"]),
        ErrorCase([([1, 2, 6, 6], F32), ([1], F32)], K2, [op, "expects 1 inputs, got 2"]),
        ErrorCase([([1, 2, 6, 6], F32)], {"kernel_size": [2, 2], "stride": [1]},
                  [op, "'stride'=[1]", "2 values"]),
        ErrorCase([([1, 2, 6, 6], F32)], {"kernel_size": [0, 2]}, [op, "'kernel_size'=[0, 2]"]),
        ErrorCase([([1, 2, 2, 6], F32)], {"kernel_size": [3, 3]},
                  [op, "x.shape=(1, 2, 2, 6)", "smaller than kernel_size=[3, 3]"]),
    ]


MAX_GRAD_ERRORS = [
    ErrorCase([([1, 2, 4, 4], F32), ([1, 2, 2, 2], F32), ([1, 2, 3, 2], F32)], K2,
              ["max_pool2d_grad", "dy.shape=(1, 2, 3, 2)", "(1, 2, 2, 2)"]),
    ErrorCase([([1, 2, 4, 4], F32), ([1, 2, 2, 2], "float64"), ([1, 2, 2, 2], F32)], K2,
              ["max_pool2d_grad", "y.dtype=float64", "x.dtype=float32"]),
    ErrorCase([([1, 2, 4, 4], F32), ([1, 2, 2, 2], F32)], K2,
              ["max_pool2d_grad", "expects 3 inputs, got 2"]),
]
AVG_GRAD_ERRORS = [
    ErrorCase([([1, 2, 4, 4], F32), ([1, 2, 4, 4], F32)], K2,
              ["avg_pool2d_grad", "dy.shape=(1, 2, 4, 4)", "(1, 2, 2, 2)"]),
    ErrorCase([([1, 2, 4, 4], F32), ([1, 2, 2, 2], "float64")], K2,
              ["avg_pool2d_grad", "dy.dtype=float64", "x.dtype=float32"]),
    ErrorCase([([1, 2, 4, 4], F32)], K2, ["avg_pool2d_grad", "expects 2 inputs, got 1"]),
]


def _pool_with_cost_and_errors(rows):
    y = _pool_y_shape(POOL_X, K2)
    inputs = {"max_pool2d": [(POOL_X, F32)], "avg_pool2d": [(POOL_X, F32)],
              "max_pool2d_grad": [(POOL_X, F32), (y, F32), (y, F32)],
              "avg_pool2d_grad": [(POOL_X, F32), (y, F32)]}
    errors = {"max_pool2d": pool_errors("max_pool2d"), "avg_pool2d": pool_errors("avg_pool2d"),
              "max_pool2d_grad": MAX_GRAD_ERRORS, "avg_pool2d_grad": AVG_GRAD_ERRORS}
    for row in rows:
        row.cost_inputs, row.cost_attrs, row.flops = inputs[row.op], K2, 144
        row.memory_bytes = 144 if row.op.endswith("pool2d") else 576
        row.errors = errors[row.op]
    return rows


POOL_CASES = (
    _pool_with_cost_and_errors(pool_rows("k2", POOL_X, K2))
    + pool_rows("k3_s2_p1", [1, 2, 7, 6], {"kernel_size": [3, 3], "stride": [2, 2],
                                           "padding": [1, 1]})
    + pool_rows("nonsquare", [2, 2, 5, 7], {"kernel_size": [2, 3], "stride": [1, 2],
                                            "padding": [1, 1]})
)

CASES = CONV_CASES + POOL_CASES
