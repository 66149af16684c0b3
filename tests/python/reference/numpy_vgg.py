"""numpy VGG-style classifier: forward and hand-written backward.

Features: an int is a 3x3 conv (stride 1, padding 1) + bias + ReLU, "M" a
2x2 max pool with stride 2; then flatten (C-order, as ``reshape(B, -1)``),
Linear + ReLU per entry of ``config.fc``, and a Linear to the logits; mean
sparse cross-entropy. Parameter names are its own (``conv{i}``, ``fc{j}``
[in, out]); reference/state_dict.py maps a ``flow.models.VGG`` state_dict
onto them.

Config fields used: features, in_channels, image_size, fc, num_classes.
Dropout is not modelled. A batch is ``(images [B, C, H, W], labels [B])``.
Max pool sends the gradient to the first maximum of a window (row-major).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reference.common import cross_entropy, linear, linear_grads, relu, relu_backward


def conv2d_forward(x, w, stride=1, padding=1):
    """x [N, C, H, W], w [O, C, kh, kw] -> [N, O, Ho, Wo]; cross-correlation."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    kh, kw = w.shape[2:]
    windows = sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    y = np.einsum("nchwij,ocij->nohw", windows, w, optimize=True)
    return y, (xp.shape, windows, w, stride, padding)


def conv2d_backward(cache, dy):
    """Returns (dx, dw)."""
    xp_shape, windows, w, stride, padding = cache
    dw = np.einsum("nchwij,nohw->ocij", windows, dy, optimize=True)
    dxp = np.zeros(xp_shape, dy.dtype)
    ho, wo = dy.shape[2:]
    for i in range(w.shape[2]):
        for j in range(w.shape[3]):
            dxp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] += np.einsum(
                "nohw,oc->nchw", dy, w[:, :, i, j], optimize=True)
    h, wd = xp_shape[2] - 2 * padding, xp_shape[3] - 2 * padding
    return dxp[:, :, padding:padding + h, padding:padding + wd], dw


def max_pool_forward(x, kernel=2, stride=2):
    windows = sliding_window_view(x, (kernel, kernel), axis=(2, 3))[:, :, ::stride, ::stride]
    flat = windows.reshape(*windows.shape[:4], kernel * kernel)
    arg = flat.argmax(axis=-1)  # first maximum in row-major window order
    y = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    return y, (x.shape, arg, kernel, stride)


def max_pool_backward(cache, dy):
    x_shape, arg, kernel, stride = cache
    dx = np.zeros(x_shape, dy.dtype)
    ho, wo = dy.shape[2:]
    for i in range(kernel):
        for j in range(kernel):
            dx[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] += dy * (arg == i * kernel + j)
    return dx


def conv_channels(config) -> list:
    out, channels = [], config.in_channels
    for item in config.features:
        if item != "M":
            out.append((channels, item))
            channels = item
    return out


def fc_sizes(config) -> list:
    pools = sum(1 for item in config.features if item == "M")
    side = config.image_size // (2 ** pools)
    convs = conv_channels(config)
    channels = convs[-1][1] if convs else config.in_channels
    dims = [channels * side * side, *config.fc, config.num_classes]
    return list(zip(dims[:-1], dims[1:]))


def param_shapes(config) -> dict:
    shapes = {}
    for i, (cin, cout) in enumerate(conv_channels(config)):
        shapes[f"conv{i}.weight"] = (cout, cin, 3, 3)
        shapes[f"conv{i}.bias"] = (cout,)
    for j, (fan_in, fan_out) in enumerate(fc_sizes(config)):
        shapes[f"fc{j}.weight"] = (fan_in, fan_out)
        shapes[f"fc{j}.bias"] = (fan_out,)
    return shapes


def random_params(config, rng: np.random.Generator, dtype=np.float64) -> dict:
    """Every entry random and non-zero, scaled by 1/sqrt(fan-in)."""
    params = {}
    for name, shape in param_shapes(config).items():
        fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
        params[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(dtype)
    return params


def random_batch(config, batch_size: int, rng: np.random.Generator, dtype=np.float64):
    s = config.image_size
    images = rng.standard_normal((batch_size, config.in_channels, s, s)).astype(dtype)
    labels = rng.integers(0, config.num_classes, batch_size).astype(np.int64)
    return images, labels


def loss_and_grads(params: dict, config, batch) -> tuple:
    """Returns (mean loss, {param name: gradient})."""
    images, labels = batch
    dtype = next(iter(params.values())).dtype
    h = np.asarray(images, dtype=dtype)
    trace = []  # ("conv", index, conv cache, pre-activation) or ("pool", cache)
    conv = 0
    for item in config.features:
        if item == "M":
            h, cache = max_pool_forward(h)
            trace.append(("pool", None, cache, None))
        else:
            z, cache = conv2d_forward(h, params[f"conv{conv}.weight"])
            z = z + params[f"conv{conv}.bias"][None, :, None, None]
            trace.append(("conv", conv, cache, z))
            h = relu(z)
            conv += 1
    feature_shape = h.shape
    h = h.reshape(h.shape[0], -1)
    num_fc = len(fc_sizes(config))
    inputs, pre = [], []
    for j in range(num_fc):
        inputs.append(h)
        z = linear(h, params[f"fc{j}.weight"], params[f"fc{j}.bias"])
        pre.append(z)
        h = relu(z) if j + 1 < num_fc else z
    loss, dh = cross_entropy(h, labels)

    grads = {}
    for j in reversed(range(num_fc)):
        dz = dh if j + 1 == num_fc else relu_backward(pre[j], dh)
        dh, grads[f"fc{j}.weight"], grads[f"fc{j}.bias"] = linear_grads(
            inputs[j], params[f"fc{j}.weight"], dz)
    dh = dh.reshape(feature_shape)
    for kind, index, cache, z in reversed(trace):
        if kind == "pool":
            dh = max_pool_backward(cache, dh)
        else:
            dz = relu_backward(z, dh)
            grads[f"conv{index}.bias"] = dz.sum(axis=(0, 2, 3))
            dh, grads[f"conv{index}.weight"] = conv2d_backward(cache, dz)
    return loss, grads


def loss(params: dict, config, batch) -> float:
    return loss_and_grads(params, config, batch)[0]
