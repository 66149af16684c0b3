"""oneflow_lite: a compact distributed deep-learning training framework.

``import oneflow_lite as flow``: eager tensors with autograd on one CPU
device, ``flow.nn`` layers, ``flow.optim``, global tensors (``placement``,
``sbp``, ``to_global``, ``to_local``) and the model zoo ``flow.models``.
Every op runs a registered C++ op (``oneflow_lite._C``) through one
dispatcher (``_dispatch.apply``), which nn.Graph's tracer redirects into a
logical graph (``oneflow_lite.graph_builder``). Randomness (``randn``,
initialisers, dropout seeds) comes from a numpy Generator over the Philox
bit generator that ``flow.manual_seed`` resets; dropout masks are the C++
kernel's own Philox draws.

    >>> import numpy as np
    >>> import oneflow_lite as flow
    >>> flow.manual_seed(0)
    >>> model = flow.models.MLP(flow.models.MLPConfig(in_features=8, hidden=(16,),
    ...                                               num_classes=3))
    >>> opt = flow.optim.AdamW(model.named_parameters(), lr=1e-2)
    >>> loss_fn = flow.nn.CrossEntropyLoss()
    >>> x, y = flow.randn(4, 8), flow.tensor([0, 2, 1, 0])
    >>> losses = []
    >>> for step in range(5):
    ...     loss = loss_fn(model(x), y)
    ...     opt.zero_grad()
    ...     loss.backward()
    ...     opt.step()
    ...     losses.append(loss.item())
    >>> losses[-1] < losses[0]
    True
    >>> P = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    >>> g = flow.arange(8).to_global(P, [flow.sbp.split(0), flow.sbp.broadcast])
    >>> g.to_local(2).numpy()
    array([4, 5, 6, 7])

``OFL_EXTENSION_DIR``, when set, names a folder searched first for ``_C``
(a build tree other than the source tree's, e.g. a sanitizer build).
"""
import os as _os

# oneDNN's OpenMP threads spin while idle by default; on a shared or
# oversubscribed machine (several virtual devices per core) that costs up to
# 25x. Sleep instead, unless the user chose otherwise. Must precede the
# extension's import: libgomp reads it when it loads.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"  # pyproject.toml's version (a test keeps them equal)

# A process started by srun or mpirun gets our launcher's variables (RANK,
# WORLD_SIZE, MASTER_ADDR, ...) translated from SLURM's or Open MPI's, before
# anything (the C++ world included) reads them: distributed/_env_world.py.
from oneflow_lite.distributed import _env_world  # noqa: E402

_env_world.apply()

_ext_dir = _os.environ.get("OFL_EXTENSION_DIR")
if _ext_dir:
    __path__.insert(0, _ext_dir)  # noqa: F821 (package __path__)

from oneflow_lite import _C  # noqa: E402,F401
from oneflow_lite._autograd import (enable_grad, is_anomaly_enabled,  # noqa: E402
                                    is_grad_enabled, no_grad, set_detect_anomaly)
from oneflow_lite._dispatch import ops  # noqa: E402
from oneflow_lite._dtype import (bfloat16, bool, double, dtype, float16,  # noqa: E402,A004
                                 float32, float64, int32, int64, long)
from oneflow_lite._global import placement, sbp  # noqa: E402
from oneflow_lite._random import manual_seed  # noqa: E402
from oneflow_lite._creation import (arange, device, empty, from_numpy, full,  # noqa: E402
                                    ones, ones_like, rand, randint, randn, tensor, zeros,
                                    zeros_like)
from oneflow_lite._tensor import Tensor  # noqa: E402
from oneflow_lite._tensor_math import *  # noqa: E402,F401,F403 (eq, max, where, cat, ...)
from oneflow_lite._toplevel import (allclose, eye, inference_mode, is_tensor,  # noqa: E402
                                    linspace, matmul, randperm, set_grad_enabled, sum)
from oneflow_lite.serialization import load, save  # noqa: E402
from oneflow_lite import autograd, nn, optim  # noqa: E402
from oneflow_lite import models  # noqa: E402
from oneflow_lite import utils  # noqa: E402

__all__ = ["_C", "Tensor", "tensor", "from_numpy", "zeros", "ones", "full", "empty", "randn",
           "rand", "randint", "arange", "zeros_like", "ones_like", "manual_seed", "no_grad",
           "enable_grad", "is_grad_enabled", "device", "dtype", "float32", "float64", "int32",
           "int64", "bfloat16", "float16", "double", "long", "placement", "sbp", "save",
           "load", "nn", "optim", "models", "ops", "autograd", "set_detect_anomaly",
           "is_anomaly_enabled", "sum", "matmul", "allclose", "is_tensor", "randperm", "eye",
           "linspace", "set_grad_enabled", "inference_mode", "__version__", "utils"]
