"""One process of test_graph_oneflow_semantics's two-process case: trains
the test's Linear under nn.Graph on placement [0, 1] (one rank per process,
the world from the launcher's variables) with data parallelism, then
process 0 alone reads the module after 3 steps (replicated parameters are
read from its own rank: no collective), all take a 4th step, every process
reads the module, and an eval graph built after training runs. Prints one
JSON line: the losses, what process 0 read alone, the module's weight and
bias, the eval logits, the variables read locally."""
from __future__ import annotations

import json

import oneflow_lite as flow
from oneflow_lite import _world
from test_graph_oneflow_semantics import BackwardInBuild, Eval, data, setup


def main() -> None:
    model, opt, _ = setup()
    graph = BackwardInBuild(model, opt)
    graph.config.auto_parallel(cluster="h100_8gpu", searcher="data_parallel",
                               placement=flow.placement("cpu", [0, 1]))
    batches = data([8] * 4)
    losses = [float(graph(x, y)) for x, y in batches[:3]]
    alone = None
    if _world.info()["process"] == 0:  # as a script that logs or saves on process 0 only
        alone = model.weight.numpy().tolist()
    losses.append(float(graph(*batches[3])))  # a collective read above would hang this step
    weight, bias = model.weight.numpy().tolist(), model.bias.numpy().tolist()
    logits = Eval(model)(data([6], seed=7)[0][0]).numpy().tolist()
    print(json.dumps({"losses": losses, "alone": alone, "weight": weight, "bias": bias,
                      "logits": logits,
                      "read_locally": sorted(graph.compiled.whole_on)}))


if __name__ == "__main__":
    main()
