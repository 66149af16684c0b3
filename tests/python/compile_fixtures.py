"""Records what compiling and running a model gives, to hold later changes
of the compile path to it bit for bit (test_compile_fixtures.py).

For each case (a small float64 GPT and MLP, a searcher or a session spec,
a mesh) it records: the strategy (every source's NdSbp and op's signature
as text; the sha256 of the strategy's one-line-per-op text), the sha256 of the plan
report (text and JSON), the planner's stats without wall-clock times, the predicted
bytes, the sha256 of the lowered Plan's protobuf text (protoc --decode:
maps in key order; the serialized bytes are not canonical, an op's
attributes are a map), and after two SGD
steps of a DistributedSession (one kernel thread) the losses (float.hex),
the sha256 of every trainable variable's float64 bytes and each one's sum
and sum of magnitudes (math.fsum, float.hex). One case runs through
nn.Graph's auto_parallel (the Python compile path). Every case records the
CPU it ran on (`recorded_on`: model name and vector ISA): the kernels pick
their code for the CPU (OpenBLAS's dgemm, the vector paths), so numbers are
bitwise the same only on the same kind of CPU; elsewhere the test compares
losses and sums within a tolerance instead of the variables' bytes.

    PYTHONPATH=python python tests/python/compile_fixtures.py --write

rewrites tests/python/data/compile_fixtures.json (only when the change is
meant to change plans or numbers; say so in the commit).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from typing import Callable, Dict, List

import numpy as np

import oneflow_lite as flow
from oneflow_lite import _C
from oneflow_lite.models import GPTConfig, MLPConfig, trace_loss

PATH = os.path.join(os.path.dirname(__file__), "data", "compile_fixtures.json")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLUSTER = "h100_8gpu"
STEPS = 2
SGD = {"lr": 0.05, "momentum": 0.9}
MODELS = {
    "gpt": (GPTConfig(vocab_size=16, seq_len=4, n_layer=1, n_head=4, n_embd=16, dropout=0.1), 4),
    "mlp": (MLPConfig(in_features=8, hidden=(16,), num_classes=4, dropout=0.1), 8),
}
# (name, model, mesh, how): how is a searcher, "loaded:<searcher>" (its
# saved strategy loaded back), "deduce" (data pinned S(0) on every axis) or
# "random:<seed>:<stages>" (a session spec, no planning).
CASES = [
    ("gpt-autoddl-2x2", "gpt", [2, 2], "autoddl"),
    ("gpt-data_parallel-4", "gpt", [4], "data_parallel"),
    ("gpt-megatron-2x2", "gpt", [2, 2], "megatron"),
    ("gpt-manual-2", "gpt", [2], "manual"),
    ("gpt-loaded-2x2", "gpt", [2, 2], "loaded:autoddl"),
    ("gpt-random-4", "gpt", [4], "random:5:2"),
    ("mlp-autoddl-4", "mlp", [4], "autoddl"),
    ("mlp-exact-2", "mlp", [2], "exact"),
    ("mlp-data_parallel-2x2", "mlp", [2, 2], "data_parallel"),
    ("mlp-megatron-4", "mlp", [4], "megatron"),
    ("mlp-deduce-2x2", "mlp", [2, 2], "deduce"),
]
TIME_KEYS = ("seconds", "build_seconds", "search_seconds")


def batches(name: str) -> list:
    config, batch = MODELS[name]
    rng = np.random.default_rng(7)
    out = []
    for _ in range(STEPS):
        if name == "mlp":
            data = rng.standard_normal((batch, config.in_features))
            labels = rng.integers(0, config.num_classes, size=(batch,))
        else:
            data = rng.integers(0, config.vocab_size, size=(batch, config.seq_len))
            labels = rng.integers(0, config.vocab_size, size=(batch, config.seq_len))
        out.append((data, labels.astype(np.int64)))
    return out


def loss_graph(model: str):
    config, batch = MODELS[model]
    flow.manual_seed(3)
    g = trace_loss(flow.models.create(model, config, dtype=flow.float64), batch)
    g.builder.minimize(g.loss, "sgd", **SGD)
    return g


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plan_digest(plan_bytes: bytes) -> str:
    """sha256 of the Plan as protobuf text (canonical: map entries sorted)."""
    text = subprocess.run(["protoc", "--decode=ofl.proto.Plan", "-I", ROOT,
                           "oneflow_lite/core/proto/plan.proto"], input=plan_bytes,
                          capture_output=True, check=True, cwd=ROOT).stdout
    return sha(text)


def strategy_maps(strategy) -> dict:
    """{sources, signatures} of a planned strategy, whatever its Python form."""
    if isinstance(strategy, dict):
        return {"sources": dict(strategy["sources"]), "signatures": dict(strategy["signatures"])}
    return {"sources": dict(strategy.sources), "signatures": dict(strategy.signatures)}


# exact's wall-clock time in the optimality line ("(exact, elimination; 204.3 us, ...").
_EXACT_TIME = re.compile(r"(optimality: [^\n]*?; )[0-9.e+-]+ [mun]?s(, )")


def untimed(value):
    """`value` without wall-clock times: the optimality measure's "seconds"
    and its text's time (a dict with "proved" is an Optimality)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items()
                if not (k == "seconds" and "proved" in value)}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    if isinstance(value, str):
        return _EXACT_TIME.sub(r"\1<time>\2", value)
    return value


def planned_record(planned) -> dict:
    stats = {k: v for k, v in planned.stats.items() if k not in TIME_KEYS}
    return {"strategy": strategy_maps(planned.strategy),
            "strategy_text_sha256": sha(planned.strategy_text().encode()),
            "report_sha256": sha(untimed(planned.report(full=True)).encode()),
            "report_json_sha256": sha(json.dumps(untimed(json.loads(planned.report_json())),
                                                 sort_keys=True).encode()),
            "stats": untimed(json.loads(json.dumps(stats))),
            "predicted_step_s": planned.predicted_step_s.hex(),
            "predicted_bytes": {str(k): v for k, v in sorted(planned.predicted_bytes.items())}}


def cpu_signature() -> str:
    """The CPU's model name and the vector ISA the kernels run ("avx512",
    "avx2" or "baseline"; OFL_CPU_ISA when it forces one)."""
    model, flags = "", set()
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    isa = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "baseline"
    return f"{model} | {os.environ.get('OFL_CPU_ISA') or isa}"


def param_sums(values: Dict[str, np.ndarray]) -> Dict[str, List[str]]:
    """Per variable: its exactly rounded sum and sum of magnitudes (hex)."""
    out = {}
    for name, v in sorted(values.items()):
        flat = np.asarray(v, np.float64).reshape(-1).tolist()
        out[name] = [math.fsum(flat).hex(), math.fsum(abs(x) for x in flat).hex()]
    return out


def run_record(session, g, model: str) -> dict:
    losses = [float(session.run({g.data: x, g.labels: y}, [g.loss])[0]).hex()
              for x, y in batches(model)]
    values = {p: np.asarray(session.get_variable(p)) for p in sorted(g.trainable)}
    params = {p: sha(np.ascontiguousarray(v, np.float64).tobytes()) for p, v in values.items()}
    return {"plan_sha256": plan_digest(session.plan_bytes()), "losses": losses, "params": params,
            "param_sums": param_sums(values), "recorded_on": cpu_signature(),
            "session_strategy_sha256": sha(session.strategy().encode())}


def session_for(g, mesh: List[int], how: str, record: dict):
    """The case's session; `record` gets the planned strategy's fields."""
    ranks = list(range(int(np.prod(mesh))))
    kw = dict(num_threads=1, timeout_ms=60000)
    if how.startswith("random:"):
        _, seed, stages = how.split(":")
        spec = _spec_random(int(seed), int(stages))
        return _C.DistributedSession(g.program, ranks, mesh, spec, [g.loss], **kw)
    if how == "deduce":
        spec = _spec_deduce({g.data: "(" + ", ".join(["S(0)"] * len(mesh)) + ")"})
        return _C.DistributedSession(g.program, ranks, mesh, spec, [g.loss], **kw)
    searcher = how.split(":")[-1]
    pinned = {g.data: "(" + ", ".join(["S(0)"] * len(mesh)) + ")"} if searcher == "manual" else {}
    planned = _C.plan(g.program, mesh, CLUSTER, searcher, pinned=pinned)
    record.update(planned_record(planned))
    strategy = planned.strategy
    if how.startswith("loaded:"):
        with tempfile.TemporaryDirectory() as d:
            planned.save(os.path.join(d, "s.json"))
            strategy = _C.load_strategy(os.path.join(d, "s.json"))
    return _C.DistributedSession(g.program, ranks, mesh, strategy, [g.loss], **kw)


def _spec_random(seed: int, stages: int):
    if hasattr(_C, "PlanSpec"):
        return _C.PlanSpec.random(seed, stages)
    return {"kind": "random", "seed": seed, "stages": stages}


def _spec_deduce(pinned: Dict[str, str]):
    if hasattr(_C, "PlanSpec"):
        return _C.PlanSpec.deduce(pinned)
    return {"kind": "deduce", "pinned": pinned}


def record_case(name: str) -> dict:
    _, model, mesh, how = next(c for c in CASES if c[0] == name)
    g = loss_graph(model)
    record: dict = {}
    session = session_for(g, mesh, how, record)
    record.update(run_record(session, g, model))
    return record


def record_graph_case() -> dict:
    """nn.Graph: an MLP (float64) under auto_parallel's autoddl on [2, 2]."""
    nn = flow.nn
    config, batch = MODELS["mlp"]
    flow.manual_seed(3)
    model = flow.models.create("mlp", config, dtype=flow.float64)
    opt = flow.optim.SGD(model.named_parameters(), lr=0.05, momentum=0.9)

    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    graph = TrainGraph()
    graph.config.auto_parallel(cluster=CLUSTER, searcher="autoddl",
                               placement=flow.placement("cpu", [[0, 1], [2, 3]]), num_threads=1)
    losses = [float(graph(flow.tensor(x), flow.tensor(y)).numpy()).hex()
              for x, y in batches("mlp")]
    state = graph.state_dict()
    values = {k: np.asarray(v.numpy()) for k, v in sorted(state.items())
              if k in dict(model.named_parameters())}
    params = {k: sha(np.ascontiguousarray(v, np.float64).tobytes()) for k, v in values.items()}
    c = graph.compiled
    record = planned_record(c.planned)
    record.update({"plan_sha256": plan_digest(c.session.plan_bytes()), "losses": losses,
                   "params": params, "param_sums": param_sums(values),
                   "recorded_on": cpu_signature(),
                   "session_strategy_sha256": sha(c.session.strategy().encode())})
    return record


RECORDERS: Dict[str, Callable[[], dict]] = {name: (lambda n=name: record_case(n))
                                            for name, *_ in CASES}
RECORDERS["graph-mlp-autoddl-2x2"] = record_graph_case


def main(argv) -> int:
    if argv[1:] != ["--write"]:
        print(__doc__)
        return 2
    out = {name: recorder() for name, recorder in RECORDERS.items()}
    os.makedirs(os.path.dirname(PATH), exist_ok=True)
    with open(PATH, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(out)} cases to {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
