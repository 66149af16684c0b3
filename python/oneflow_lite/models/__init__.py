"""``flow.models``: the model zoo as nn.Modules (one definition each).

    >>> from oneflow_lite.models import MODELS
    >>> sorted(MODELS)
    ['gpt', 'mlp', 'vgg']

``MODELS`` maps a name to the model's module (``gpt``, ``mlp``, ``vgg``),
each with its config class and its Module class. ``trace_loss(model,
batch_size)`` (trace.py) gives a model with its loss as a graph for code
that drives ``_C.Session`` directly.
"""
from oneflow_lite.models import gpt, mlp, vgg
from oneflow_lite.models.config import GPTConfig, MLPConfig, VGGConfig, vgg16_config, vgg19_config
from oneflow_lite.models.gpt import GPT
from oneflow_lite.models.mlp import MLP
from oneflow_lite.models.trace import LossGraph, input_specs, trace_loss
from oneflow_lite.models.vgg import VGG, VGG16, VGG19

MODELS = {"mlp": mlp, "gpt": gpt, "vgg": vgg}
MODEL_CLASSES = {"mlp": MLP, "gpt": GPT, "vgg": VGG}


def create(name: str, config=None, dtype=None):
    """``create("gpt", GPTConfig(...))``: a model by name; unknown names raise."""
    if name not in MODEL_CLASSES:
        raise ValueError(f"unknown model '{name}' (expected one of {sorted(MODEL_CLASSES)})")
    cls = MODEL_CLASSES[name]
    return cls(config, dtype) if config is not None else cls(dtype=dtype)


__all__ = ["MODELS", "MODEL_CLASSES", "create", "gpt", "mlp", "vgg", "GPT", "MLP", "VGG",
           "VGG16", "VGG19", "GPTConfig", "MLPConfig", "VGGConfig", "vgg16_config",
           "vgg19_config", "LossGraph", "input_specs", "trace_loss"]
