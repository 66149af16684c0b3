"""The small trained program the strategy and cluster targets load against:
x[8, 16] @ w1[16, 32] -> relu-free bias add -> @ w2[32, 4] -> mean, with SGD
updates. Built once per process; names are fixed, so committed strategy
inputs stay meaningful."""
from __future__ import annotations

import numpy as np

_program = None


def tiny_program():
    global _program
    if _program is None:
        from oneflow_lite.graph_builder import GraphBuilder

        rng = np.random.default_rng(0)
        b = GraphBuilder()
        x = b.input("x", [8, 16])
        w1 = b.variable("w1", rng.standard_normal((16, 32)).astype(np.float32))
        bias = b.variable("bias", np.zeros(32, np.float32))
        w2 = b.variable("w2", rng.standard_normal((32, 4)).astype(np.float32))
        h = b.bias_add(b.matmul(x, w1, name="fc1"), bias, name="fc1_bias")
        loss = b.reduce_mean(b.matmul(h, w2, name="fc2"), name="loss")
        b.minimize(loss, "sgd", lr=0.1)
        _program = (b.program, loss)
    return _program
