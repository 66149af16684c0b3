"""Merges the parts of `bench/run.sh runtime` into bench/results/runtime.json.

Parts: build/bench/runtime_actor, build/bench/runtime_allreduce,
build/bench/runtime_pipeline (C++) and bench/runtime_dp.py, each one JSON
object. The output has the headline fields first, then ``fields`` (for each
headline field: what it measured, on what, how to rerun it, and the goal it
is held against), the machine (uname, CPU model, cores, load average before
and after: the development machine is shared and a loaded machine gives
worse figures), the commit, and each part's full output under its own key. A
part that failed or printed no JSON leaves its fields null and its error in
"errors". A part given as "-" is taken, unchanged, from the JSON named by
``--reuse`` (the previous runtime.json: ``OFL_BENCH_RUNTIME_PARTS`` in
bench/run.sh reruns only some parts); ``reused_parts`` then names it with
the commit and date it was measured at. Machine and commit helpers come
from bench/merge_results.py.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from merge_results import cpu_model, git_commit, load_part  # noqa: E402

RUN = "bench/run.sh runtime (sets up and builds first)"

FIELDS = {
    "actor_us_per_act": {
        "what": "microseconds of Runtime::Run per act: a chain of 10,000 no-op COMPUTE tasks on "
                "one actor thread (1-slot 0-byte registers), 20 iterations; median of 7 runs "
                "after a warm-up",
        "rerun": "build/bench/runtime_actor",
        "goal": "<= 2",
    },
    "actor_us_per_hop": {
        "what": "microseconds per message hop between two actor threads (ping-pong: a 1-slot "
                "register written on stream 0, read on stream 1; Ready and Free hops, the two "
                "acts included), threads that block at once (spin_us 0, the default); median "
                "of 7 runs of 20,000 iterations. runtime_actor.actor_us_per_hop_spin: the same "
                "with 50 us of polling",
        "rerun": "build/bench/runtime_actor",
    },
    "memcpy_gbps": {
        "what": "GB/s (1e9 bytes/s) of 2 threads each memcpy-ing half of a 256 MiB buffer into "
                "another; median of the runs before and after the all-reduces",
        "rerun": "build/bench/runtime_allreduce",
    },
    "allreduce_efficiency": {
        "what": "keyed by device count p: p * (64 MiB / memcpy_gbps) (the time a memory-bound "
                "in-process all-reduce cannot beat) / the measured time of InProcessGroup "
                "AllReduce (sum, float32, 64 MiB per rank, p ranks on p std::threads, start to "
                "join; buffers refilled, then evicted from the cache by writing a 128 MiB "
                "scratch buffer, before each run), median of 9 runs after 2 warm-ups, results "
                "checked",
        "rerun": "build/bench/runtime_allreduce --mb 64 --devices 2,4",
        "goal": ">= 0.7",
    },
    "pipeline_ratio": {
        "what": "step time of a loader (stream 0: Philox-drawn 8-bit source decoded and "
                "row-normalised into a [256, 1024] float32 batch, work calibrated to about the "
                "compute's time) feeding a compute (stream 1: 4 matmuls [256,1024]x[1024,1024] "
                "then a residual add) through a 2-slot register, / max(load alone, compute "
                "alone); num_threads 1 (one core per stream) in all three timings; step = "
                "Run(30 iterations) / 30, median of 5 runs (compute alone: of 10). "
                "runtime_pipeline.pipeline_ratio_1slot: the same with 1 slot",
        "rerun": "build/bench/runtime_pipeline",
        "goal": "<= 1.1",
    },
    "pipeline_step_ms": {
        "what": "ms per step of the pipeline plan above: load alone, compute alone, the whole "
                "plan with 1 slot (load and compute serialised: the residual add holds the "
                "batch) and with 2 slots",
        "rerun": "build/bench/runtime_pipeline",
    },
    "dp2_speedup": {
        "what": "samples/s of AdamW training steps of the GPT-style model (4 layers, hidden 256, "
                "4 heads, seq 128, vocab 2048, global batch 16) on a 2-rank DistributedSession "
                "(data parallel: ids/labels pinned to S(0), strategy deduced) / on the plain "
                "single-device Session; num_threads=2 in both (the machine's 2 cores); median "
                "step of 3 rounds x 6 steps after 2 warm-up steps, each run in its own process",
        "rerun": "PYTHONPATH=python .venv/bin/python bench/runtime_dp.py --threads 2",
        "note": "data parallel = ids, labels and every activation (and activation gradient) "
                "whose axis 0 is the batch or batch x sequence pinned to S(0) under "
                "{'kind': 'deduce'}; pinning only ids and labels is not data parallel (reshape "
                "has no S(0) -> S(0) when it merges axis 0, so deduce broadcasts after the "
                "embedding): runtime_dp.dp2_ids_speedup. runtime_dp.dp2_speedup_vs_dist1: over a "
                "1-rank DistributedSession instead",
    },
    "dp4_speedup": {
        "what": "as dp2_speedup with 4 ranks (hierarchy [4], the same pins: each rank "
                "computes 4 samples) on the same 2 kernel threads: at most 2 kernels run at "
                "once (runtime/kernel_slots.h), one thread each; median step of 3 rounds",
        "rerun": "PYTHONPATH=python .venv/bin/python bench/runtime_dp.py --threads 2",
        "goal": ">= 0.9",
    },
    "dp4_cpu_ratio": {
        "what": "CPU seconds (process user + system) per step of the plain Session / of the "
                "4-rank run: the work the 4 ranks add (replicated AdamW update, all-reduce, "
                "all-gathers), independent of how much of the shared machine each run got",
        "rerun": "PYTHONPATH=python .venv/bin/python bench/runtime_dp.py --threads 2",
    },
    "dp_samples_per_s": {
        "what": "samples/s of the runs behind dp2_speedup and dp4_speedup: session (plain "
                "Session), dist1 (1-rank DistributedSession), dist2 (2 ranks, data parallel), "
                "dist2_ids (2 ranks, only ids/labels S(0)), dist4 (4 ranks, data parallel)",
        "rerun": "PYTHONPATH=python .venv/bin/python bench/runtime_dp.py --threads 2",
    },
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--load-before", required=True)
    p.add_argument("--reuse", help='the previous runtime.json, for parts given as "-"')
    for name in ("actor", "allreduce", "pipeline", "dp"):
        p.add_argument(f"--{name}", required=True)
        p.add_argument(f"--{name}-rc", type=int, required=True)
    a = p.parse_args()

    errors: dict = {}
    previous: dict = {}
    if a.reuse:
        with open(a.reuse) as f:
            previous = json.load(f)
    reused: dict = {}

    def part(path: str, rc: int, name: str) -> dict:
        if path != "-":
            return load_part(path, rc, name, errors)
        if name not in previous:
            errors[name] = f"not run, and --reuse has no '{name}'"
            return {}
        reused[name] = previous.get("reused_parts", {}).get(name) or {
            "commit": previous.get("commit"), "date_utc": previous.get("date_utc")}
        return previous[name]

    actor = part(a.actor, a.actor_rc, "runtime_actor")
    allreduce = part(a.allreduce, a.allreduce_rc, "runtime_allreduce")
    pipeline = part(a.pipeline, a.pipeline_rc, "runtime_pipeline")
    dp = part(a.dp, a.dp_rc, "runtime_dp")
    if dp and not dp.get("losses_agree", True):
        errors["runtime_dp"] = "the three configurations' losses differ (see runtime_dp)"
    uname = platform.uname()
    pipeline_steps = None
    if pipeline:
        pipeline_steps = {k: pipeline.get(f) for k, f in
                          (("load", "load_ms"), ("compute", "compute_ms"),
                           ("1slot", "step_ms_1slot"), ("2slots", "step_ms_2slots"))}
    result = {
        "what": "bench/run.sh runtime: the actor runtime's own cost per act and per hop, the "
                "in-process all-reduce against memcpy bandwidth, loader/compute overlap with "
                "2-slot registers, and data-parallel GPT training on 2 virtual devices over 1; "
                "see `fields` for each figure",
        "actor_us_per_act": actor.get("actor_us_per_act"),
        "actor_us_per_hop": actor.get("actor_us_per_hop"),
        "memcpy_gbps": allreduce.get("memcpy_gbps"),
        "allreduce_efficiency": allreduce.get("allreduce_efficiency"),
        "pipeline_ratio": pipeline.get("pipeline_ratio"),
        "pipeline_step_ms": pipeline_steps,
        "dp2_speedup": dp.get("dp2_speedup"),
        "dp4_speedup": dp.get("dp4_speedup"),
        "dp4_cpu_ratio": dp.get("dp4_cpu_ratio"),
        "dp_samples_per_s": dp.get("samples_per_s"),
        "fields": FIELDS,
        "machine": {
            "uname": f"{uname.system} {uname.release} {uname.machine}",
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "loadavg_before": a.load_before,
            "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        },
        "commit": git_commit(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "how_to_rerun": RUN + "; each part alone: see fields.*.rerun",
        "errors": errors,
        "reused_parts": reused,
        "runtime_actor": actor,
        "runtime_allreduce": allreduce,
        "runtime_pipeline": pipeline,
        "runtime_dp": dp,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
