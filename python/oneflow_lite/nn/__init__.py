"""``flow.nn``: Module, Parameter, the layers, ``functional``, ``init``,
``utils`` and the tracing core (``graph_trace``) that nn.Graph builds on.
"""
from oneflow_lite.nn import functional, graph_trace, init, utils  # noqa: F401
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.modules.activation import GELU, Dropout, ReLU, Sigmoid, Softmax, Tanh
from oneflow_lite.nn.modules.attention import CausalSelfAttention
from oneflow_lite.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d
from oneflow_lite.nn.modules.container import ModuleDict, ModuleList, ParameterList, Sequential
from oneflow_lite.nn.modules.conv import AvgPool2d, Conv2d, Flatten, MaxPool2d
from oneflow_lite.nn.modules.linear import Identity, Linear
from oneflow_lite.nn.modules.loss import (BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss,
                                          NLLLoss)
from oneflow_lite.nn.modules.normalization import Embedding, LayerNorm
from oneflow_lite.nn.parameter import Parameter
from oneflow_lite.nn.graph import Graph  # noqa: E402 (after graph_trace and module)

__all__ = ["Module", "Parameter", "Linear", "Identity", "Conv2d", "MaxPool2d", "AvgPool2d",
           "Flatten", "ReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "Dropout", "LayerNorm",
           "Embedding", "CrossEntropyLoss", "CausalSelfAttention", "Sequential", "ModuleList",
           "functional", "graph_trace", "init", "utils", "Graph", "MSELoss", "L1Loss",
           "NLLLoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "ModuleDict",
           "ParameterList"]
