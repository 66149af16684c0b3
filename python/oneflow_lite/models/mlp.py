"""MLP classifier as an nn.Module: ``fc0 + ReLU (+ Dropout)``, ...,
then ``fc{n}`` to the logits. Linears use PyTorch's layout ([out, in]) and
default init, U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.

    >>> import oneflow_lite as flow
    >>> model = flow.models.MLP(flow.models.MLPConfig(in_features=8, hidden=(16,), num_classes=4))
    >>> list(model.state_dict())
    ['fc0.weight', 'fc0.bias', 'fc1.weight', 'fc1.bias']
    >>> model(flow.randn(2, 8)).shape
    (2, 4)
"""
from __future__ import annotations

from oneflow_lite import nn
from oneflow_lite.models.config import MLPConfig, layer_sizes


class MLP(nn.Module):
    def __init__(self, config: MLPConfig = MLPConfig(), dtype=None) -> None:
        super().__init__()
        self.config = config
        sizes = layer_sizes(config)
        self.num_layers = len(sizes)
        self.dropouts = []
        for i, (fan_in, fan_out) in enumerate(sizes):
            self.add_module(f"fc{i}", nn.Linear(fan_in, fan_out, dtype=dtype))
        for i in range(len(sizes) - 1):
            if config.dropout > 0:
                self.add_module(f"drop{i}", nn.Dropout(config.dropout, config.dropout_seed + i))

    def forward(self, x):
        for i in range(self.num_layers):
            x = getattr(self, f"fc{i}")(x)
            if i + 1 < self.num_layers:
                x = nn.functional.relu(x)
                if self.config.dropout > 0:
                    x = getattr(self, f"drop{i}")(x)
        return x
