"""checkpoint_bench: what a periodic checkpoint costs the training loop.

The ops bench's model (bench/gpt_setup.py: GPT 4 layers, hidden 256, 4
heads, T=128, V=2048, batch 8, AdamW) as an ``nn.Graph`` on one device,
``--steps`` timed steps per run after ``--warmup``, three sides:
- ``none``: no checkpoint;
- ``background``: ``periodic_checkpoint.PeriodicSaver`` every ``--every``
  steps (a copy at the step boundary, written by a background thread);
- ``sync``: the same saves written in the training thread.
``--rounds`` rounds, the sides' order rotated each round (interleaved, so a
load change on the shared machine hits every side); a side's figure is the
median over rounds of its run's mean step time (the saves' cost included).
Also the time of one save (sync) and one load of the checkpoint.

Prints one JSON object. Run:
``PYTHONPATH=python .venv/bin/python bench/checkpoint_bench.py --rounds 3``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oneflow_lite as flow  # noqa: E402
from oneflow_lite import periodic_checkpoint  # noqa: E402
from gpt_setup import batches  # noqa: E402
from gpt_worker import graph_trainer, make_model  # noqa: E402


def run(side: str, steps: int, warmup: int, every: int, threads: int, folder: str) -> dict:
    g, step = graph_trainer(make_model(), threads)
    data = list(batches(warmup + steps))
    for ids, labels in data[:warmup]:
        step(ids, labels).numpy()
    saver = periodic_checkpoint.PeriodicSaver(background=side == "background")
    start = time.perf_counter()
    for i, (ids, labels) in enumerate(data[warmup:], start=1):
        step(ids, labels).numpy()
        if side != "none" and i % every == 0:
            saver.save(g, os.path.join(folder, f"{side}-{i}"))
    saver.wait()
    seconds = time.perf_counter() - start
    return {"mean_step_s": seconds / steps, "copy_s": saver.copy_seconds,
            "write_s": saver.write_seconds, "graph": g}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--every", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    sides = ["none", "background", "sync"]
    means = {s: [] for s in sides}
    copies, writes = [], []
    folder = tempfile.mkdtemp(prefix="ckpt-bench-")
    try:
        for r in range(args.rounds):
            for side in sides[r % 3:] + sides[:r % 3]:
                out = run(side, args.steps, args.warmup, args.every, args.threads, folder)
                means[side].append(out["mean_step_s"])
                if side == "background":
                    copies += out["copy_s"]
                if side == "sync":
                    writes += out["write_s"]
                    graph = out["graph"]
                for name in os.listdir(folder):
                    shutil.rmtree(os.path.join(folder, name))
        path = os.path.join(folder, "one")
        start = time.perf_counter()
        graph.save(path, sharded=True)
        save_s = time.perf_counter() - start
        fresh, step = graph_trainer(make_model(), args.threads)
        start = time.perf_counter()
        fresh.load(path)
        ids, labels = next(batches(1))
        step(ids, labels).numpy()  # the load applies at the first call (compile + load + step)
        load_and_first_step_s = time.perf_counter() - start
        nbytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path)
                     for f in fs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    median = {s: statistics.median(v) for s, v in means.items()}
    print(json.dumps({
        "model": "ops bench GPT (4 layers, D=256, T=128, V=2048, batch 8), one device",
        "steps": args.steps, "every": args.every, "rounds": args.rounds,
        "threads": args.threads, "load_average": os.getloadavg(),
        "mean_step_s": median, "runs": means,
        "background_over_none": median["background"] / median["none"],
        "sync_over_none": median["sync"] / median["none"],
        "copy_s_median": statistics.median(copies) if copies else None,
        "sync_write_s_median": statistics.median(writes) if writes else None,
        "save_s": save_s, "load_and_first_step_s": load_and_first_step_s,
        "checkpoint_bytes": nbytes}, indent=1))


if __name__ == "__main__":
    flow.manual_seed(0)
    main()
