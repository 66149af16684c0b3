"""Reference models over ``GraphBuilder``, each defined once.

Every module offers a config dataclass, ``init_params(config, seed, dtype)``
(a deterministic numpy init, float32 by default) and ``build(builder,
config, params, batch_size, train=True)``, which declares the inputs, the
variables and the forward, and returns the tensor names ``data``,
``labels``, ``logits`` and ``loss`` (the scalar mean loss).

    >>> from oneflow_lite.models import MODELS
    >>> sorted(MODELS)
    ['gpt', 'mlp', 'vgg']
"""
from oneflow_lite.models import gpt, mlp, vgg
from oneflow_lite.models.gpt import GPTConfig
from oneflow_lite.models.mlp import MLPConfig
from oneflow_lite.models.vgg import VGGConfig, vgg16_config

MODELS = {"mlp": mlp, "gpt": gpt, "vgg": vgg}

__all__ = ["MODELS", "gpt", "mlp", "vgg", "GPTConfig", "MLPConfig", "VGGConfig", "vgg16_config"]
