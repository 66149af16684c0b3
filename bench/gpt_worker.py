"""gpt_worker: one fresh process that trains ops_gpt.py's GPT with oneflow_lite
as a user would, and prints one JSON object. Started by bench/ops_gpt.py,
once per round and side (never run two in one process: the memory figure
needs a fresh process).

Modes:
- ``graph``: an ``nn.Graph`` holding the model, ``F.cross_entropy`` and
  ``flow.optim.AdamW`` (``add_optimizer``), ``config.num_threads`` =
  ``--threads``; the first call traces, compiles and runs step 1.
- ``eager``: the same model, ``loss = F.cross_entropy(model(ids), labels)``,
  ``opt.zero_grad(); loss.backward(); opt.step()``. Eager kernels take the
  process's thread pools: bench/ops_gpt.py bounds them with
  OMP_NUM_THREADS / OPENBLAS_NUM_THREADS (oneTBB uses the machine's cores).

Output: ``step_ms`` (every step, warm-up first), ``losses``, and memory:
``maxrss_before_kb`` (ru_maxrss once the model's parameters and the
optimizer object exist, before any step) and ``maxrss_after_kb`` (after the
last step); their difference is the step's peak memory growth, measured as
bench/torch_gpt.py measures PyTorch's.

``--profile PATH`` (graph mode): after the timed steps, a second Session
of the same compiled program writes the runtime's Chrome trace of each run
to PATH (``_C.Session(..., trace_path=PATH)``); one warm-up run, then one
whose trace is kept; the JSON gets ``profile`` (bench/op_profile.py)
and ``profiled_step_ms`` (that run's wall time seen from Python).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oneflow_lite as flow  # noqa: E402
import oneflow_lite.nn.functional as F  # noqa: E402
from oneflow_lite import _C  # noqa: E402
from oneflow_lite.models import GPT, GPTConfig  # noqa: E402

import op_profile  # noqa: E402
from gpt_setup import BATCH, CONFIG, HYPER, SEED, batches  # noqa: E402


def maxrss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def make_model() -> GPT:
    flow.manual_seed(SEED)
    return GPT(GPTConfig(**CONFIG))


def graph_trainer(model, threads: int):
    opt = flow.optim.AdamW(model.named_parameters(), **HYPER)

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, ids, labels):
            return F.cross_entropy(self.model(ids), labels)

    g = Train()
    g.config.num_threads = threads
    return g, lambda ids, labels: g(ids, labels)


def eager_trainer(model):
    opt = flow.optim.AdamW(model.named_parameters(), **HYPER)

    def step(ids, labels):
        loss = F.cross_entropy(model(flow.tensor(ids)), flow.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return None, step


def profile_graph(g, data, threads: int, path: str) -> dict:
    """Runs the compiled program in a tracing Session; aggregates its last run."""
    c = g.compiled
    sess = _C.Session(c.program, threads, trace_path=path)
    lr = np.array(HYPER["lr"], c.program.dtype(c.lr_input))
    wall = 0.0
    for ids, labels in (data * 2)[:2]:
        feeds = dict(zip(c.inputs, (ids, labels)), **{c.lr_input: lr})
        t0 = time.perf_counter()
        sess.run(feeds, c.outputs)
        wall = time.perf_counter() - t0
    prof = op_profile.load_chrome_trace(path)
    return {"profile": prof.to_json(top=40), "profiled_step_ms": 1e3 * wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["graph", "eager"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile", default="")
    args = ap.parse_args()
    data = list(batches(args.warmup + args.steps))
    model = make_model()
    g, step = graph_trainer(model, args.threads) if args.mode == "graph" else eager_trainer(model)
    before = maxrss_kb()
    times, losses = [], []
    for ids, labels in data:
        t0 = time.perf_counter()
        loss = step(ids, labels)
        times.append(1e3 * (time.perf_counter() - t0))
        losses.append(float(loss.numpy()))
    out = {"side": f"ours_{args.mode}", "step_ms": times, "losses": losses,
           "maxrss_before_kb": before, "maxrss_after_kb": maxrss_kb(),
           "cpu_isa": _C.cpu_isa(),
           "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS",
                                                  "OPENBLAS_NUM_THREADS", "OFL_CPU_ISA")}}
    if args.profile:
        if g is None:
            raise SystemExit("gpt_worker: --profile needs the graph mode")
        out.update(profile_graph(g, data, args.threads, args.profile))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
