"""Merges the parts of `bench/run.sh multiprocess` into
bench/results/multiprocess.json: the all-reduce across 2 and 4 processes
(bench/multiprocess_allreduce.cpp's JSON lines, one file per process count)
and data-parallel GPT training on 2 and 4 processes over 1, ours beside
PyTorch DDP (bench/multiprocess_dp.py's JSON object).

Headline fields first, with the goals they are held to and whether they
are met; then `fields` (what each figure measured and how to rerun it
alone), the machine (CPU, cores, load average before and after: the
machine is shared; 4 processes on 2 cores are oversubscribed), the commit,
and every part's full output (per-round figures included). A part that
failed leaves its figures null and its error under `errors`.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

from merge_results import cpu_model, git_commit

GOALS = {"allreduce_over_socket_ring": 0.9, "allreduce_over_gloo_ring": 1.0, "dp2_speedup": 1.8,
         "ours_over_ddp": 1.0}
HOW_TO_RERUN = ("bench/run.sh multiprocess  (builds first). Parts alone: "
                "build/bench/multiprocess_allreduce --procs 2 --mb 64 --rounds 15; "
                "the same with --procs 4; "
                "PYTHONPATH=python .venv/bin/python bench/multiprocess_dp.py --rounds 5 "
                "--torch-python .venv-torch/bin/python")


def read_allreduce(path: str, rc: int, name: str, errors: dict) -> dict:
    rounds, summary = [], None
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                obj = json.loads(line)
                if obj.get("kind") == "round":
                    rounds.append(obj)
                elif obj.get("kind") == "summary":
                    summary = obj
    except (OSError, json.JSONDecodeError) as e:
        errors[name] = f"exit {rc}; unreadable output ({e})"
        return {}
    if rc != 0 or summary is None:
        errors[name] = f"exit {rc}" + ("" if summary else "; no summary line")
        return {}
    summary["rounds_detail"] = rounds
    return summary


def read_dp(path: str, rc: int, errors: dict) -> dict:
    try:
        with open(path) as f:
            part = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        errors["multiprocess_dp"] = f"exit {rc}; no JSON output ({e})"
        return {}
    if rc != 0:
        errors["multiprocess_dp"] = f"exit {rc}: {part.get('error', 'losses disagree')}"
    return part


def small_table(small: dict) -> dict:
    """Per process count: milliseconds of one small all-reduce (median), ours on
    each transport beside the socket ring."""
    table = {}
    for p, s in sorted(small.items()):
        if s:
            med, gb = s["median_gbps"], s["bus_gb"]
            table[p] = {k: gb / med[k] * 1e3 for k in ("ofl", "ofl_gloo", "socket_ring")}
            table[p]["ofl_over_socket_ring"] = s["ofl_over_socket_ring"]
            table[p]["ofl_gloo_over_socket_ring"] = s["ofl_gloo_over_socket_ring"]
    return table


def headline(ar: dict, dp: dict) -> dict:
    table, checks = {}, {}
    for p, s in sorted(ar.items()):
        if not s:
            continue
        med = s["median_gbps"]
        table[p] = {"ofl_bus_gbps": med["ofl"], "socket_ring_bus_gbps": med["socket_ring"],
                    "gloo_ring_bus_gbps": med["gloo_ring"],
                    "gloo_ring_chunked_bus_gbps": med["gloo_ring_chunked"],
                    "loopback_one_stream_gbps": med["loopback"],
                    "ofl_gloo_bus_gbps": med.get("ofl_gloo"),
                    "ofl_over_socket_ring": s["ofl_over_socket_ring"],
                    "ofl_gloo_over_socket_ring": s.get("ofl_gloo_over_socket_ring"),
                    "ofl_over_best_gloo_ring": s["ofl_over_best_gloo"],
                    "cores_busy": s["median_cores_busy"], "rounds": s["rounds"],
                    "oversubscribed": s["oversubscribed"]}
        checks[f"allreduce_{p}p_over_socket_ring >= 0.9"] = (
            s["ofl_over_socket_ring"] >= GOALS["allreduce_over_socket_ring"])
        checks[f"allreduce_{p}p_over_best_gloo_ring >= 1.0"] = (
            s["ofl_over_best_gloo"] >= GOALS["allreduce_over_gloo_ring"])
    for k in ("dp2_speedup", "dp2_pinned_speedup"):
        if dp.get(k) is not None:
            checks[f"{k} >= 1.8"] = dp[k] >= GOALS["dp2_speedup"]
    for setting, ratio in (dp.get("ours_over_peer") or {}).items():
        if ratio is not None and setting != "1":
            checks[f"ours_over_ddp_{setting} >= 1.0"] = ratio >= GOALS["ours_over_ddp"]
    return {"allreduce_by_processes": table, "dp2_speedup": dp.get("dp2_speedup"),
            "dp4_speedup": dp.get("dp4_speedup"),
            "ours_over_ddp": dp.get("ours_over_peer"),
            "ddp_speedup": {"2": dp.get("ddp2_speedup"), "4": dp.get("ddp4_speedup")},
            "ddp_losses_agree": dp.get("peer_losses_agree"),
            "dp_samples_per_s": dp.get("median_samples_per_s"),
            "dp2_pinned_speedup": dp.get("dp2_pinned_speedup"),
            "dp_compute_ceiling": dp.get("compute_ceiling"),
            "dp_cpu_over_wall": dp.get("cpu_over_wall"),
            "dp_losses_agree": dp.get("losses_agree"), "goals": GOALS, "goals_met": checks}


FIELDS = {
    "allreduce_by_processes": "per process count P: bus GB/s (2 (P-1)/P x 64 MiB / seconds, "
    "1e9 B per GB) of a 64 MiB float32 sum all-reduce among P processes on 127.0.0.1, median "
    "of `rounds` interleaved rounds after one warm-up round (each round runs every method once, "
    "the order rotating); a run's time is its slowest rank's. ofl: runtime/gloo_communicator.h "
    "on its default transport, the socket mesh (runtime/socket_mesh.h); ofl_gloo: the same "
    "algorithm on Gloo's pairs (OFL_CPU_TRANSPORT=gloo); "
    "socket_ring: bench/socket_ring.cpp's ring over plain TCP (the transport's limit here); "
    "gloo_ring / gloo_ring_chunked: gloo::AllreduceRing / AllreduceRingChunked; "
    "loopback_one_stream_gbps: one TCP connection rank 0 -> 1 moving 64 MiB (payload GB/s, "
    "no bus factor). Ratios are of the medians; every result is checked. cores_busy: CPU "
    "seconds of all P processes during a run / its wall seconds (the machine has 2 cores)",
    "allreduce_64KiB_ms_by_processes": "per process count P: milliseconds of one 64 KiB "
    "float32 all-reduce (median of interleaved rounds, slowest rank), ours on the socket mesh "
    "(ofl) and on Gloo's pairs (ofl_gloo) beside the socket ring: latency, where Gloo's loop "
    "thread stalled calls for whole scheduler ticks",
    "dp2_speedup": "median over 5 rounds of (samples/s on 2 processes x 1 kernel thread, "
    "data_parallel plan, Gloo gradients all-reduce) / (samples/s of the plain Session, 1 "
    "process x 1 thread) of the same round; GPT of bench/ops_gpt.py, global batch 16, AdamW, "
    "2 warm-up + 6 timed steps per run; processes not pinned",
    "dp2_pinned_speedup": "the same with every batch-major activation pinned to S(0) "
    "(bench/runtime_dp.py's strategy) instead of the data_parallel searcher's plan, which "
    "all-gathers the residual stream (32.5 MB sent per step and process against 17.0 MB)",
    "ours_over_ddp": "per setting (\"1\": 1 process, no DDP; \"2\", \"4\": processes on "
    "this machine's loopback; \"emulated2\": 2 emulated nodes of 1 process, links 860 Mbit/s, "
    "as root), the median over rounds of our samples/s over PyTorch's in the same round: "
    "DistributedDataParallel (Gloo, default 25 MiB buckets overlapped with backward) launched "
    "by torchrun from .venv-torch, the same GPT, weights, batches, AdamW and 1 thread per "
    "process, none of our environment variables (bench/multiprocess_peer.py)",
    "ddp_speedup": "PyTorch's own: DDP samples/s on 2 (4) processes / 1 process without DDP",
    "dp4_speedup": "as dp2_speedup on 4 processes (2 per core)",
    "dp_cpu_over_wall": "CPU seconds / wall seconds of each run's timed steps (process 0 in "
    "dp2): well below 1, the process waited for a core (the machine's load) or its peer",
    "dp_compute_ceiling": "median over rounds of 2 x (samples/s of the plain Session on 8 "
    "samples, 1 thread) / (its samples/s on 16): the speedup with free communication and "
    "2 idle cores (every rank still runs the whole AdamW update)",
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--load-before", required=True)
    p.add_argument("--allreduce", nargs="+", required=True, help="P:PATH:RC for each count")
    p.add_argument("--allreduce-small", nargs="*", default=[],
                   help="P:PATH:RC of the 64 KiB runs")
    p.add_argument("--dp", required=True)
    p.add_argument("--dp-rc", type=int, required=True)
    a = p.parse_args()
    errors: dict = {}
    ar = {}
    for item in a.allreduce:
        procs, path, rc = item.split(":")
        ar[procs] = read_allreduce(path, int(rc), f"multiprocess_allreduce_{procs}p", errors)
    small = {}
    for item in a.allreduce_small:
        procs, path, rc = item.split(":")
        small[procs] = read_allreduce(path, int(rc), f"multiprocess_allreduce_64KiB_{procs}p",
                                      errors)
    dp = read_dp(a.dp, a.dp_rc, errors)
    result = {
        "what": "bench/run.sh multiprocess: all-reduce across 2 and 4 processes over TCP "
                "loopback beside a plain-socket ring, one TCP stream and Gloo's rings; "
                "data-parallel GPT training on 2 and 4 processes (and 2 emulated nodes) over 1, "
                "ours and PyTorch DDP",
        **headline(ar, dp),
        "allreduce_64KiB_ms_by_processes": small_table(small),
        "fields": FIELDS,
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "note": "shared development VM; 4 processes on 2 cores are oversubscribed "
                            "(2 processes per core)",
                    "loadavg_before": a.load_before,
                    "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg())},
        "commit": git_commit(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "how_to_rerun": HOW_TO_RERUN,
        "errors": errors,
        "multiprocess_allreduce": ar,
        "multiprocess_allreduce_64KiB": small,
        "multiprocess_dp": dp,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
