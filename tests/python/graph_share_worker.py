"""One process of test_graph_oneflow_semantics's two-process case: trains
the test's Linear under nn.Graph on placement [0, 1] (one rank per process,
the world from the launcher's variables), then reads the module (on every
process alike: the read of a graph on a placement is collective) and runs
an eval graph built after training. Prints one JSON line: the losses, the
module's weight and bias, the eval logits."""
from __future__ import annotations

import json

import oneflow_lite as flow
from test_graph_oneflow_semantics import BackwardInBuild, Eval, data, setup


def main() -> None:
    model, opt, _ = setup()
    graph = BackwardInBuild(model, opt)
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
                               placement=flow.placement("cpu", [0, 1]))
    losses = [float(graph(x, y)) for x, y in data([8] * 3)]
    weight, bias = model.weight.numpy().tolist(), model.bias.numpy().tolist()
    logits = Eval(model)(data([6], seed=7)[0][0]).numpy().tolist()
    print(json.dumps({"losses": losses, "weight": weight, "bias": bias, "logits": logits}))


if __name__ == "__main__":
    main()
