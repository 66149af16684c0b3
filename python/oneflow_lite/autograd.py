"""``flow.autograd``: grad mode and anomaly detection, with PyTorch's names.

    >>> import numpy as np
    >>> import oneflow_lite as flow
    >>> with flow.autograd.detect_anomaly():
    ...     flow.autograd.is_anomaly_enabled()
    True
    >>> flow.autograd.is_anomaly_enabled()
    False

The tape itself is ``oneflow_lite._autograd``; ``Tensor.backward`` runs it.
"""
from oneflow_lite._autograd import (detect_anomaly, enable_grad, is_anomaly_enabled,  # noqa: F401
                                    is_grad_enabled, no_grad, set_detect_anomaly)

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "no_grad",
           "enable_grad", "is_grad_enabled"]
