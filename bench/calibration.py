"""calibration: is the calibrated cluster stable enough to plan on?

Calibrates this machine twice (``oneflow_lite.calibrate.calibrate``: 2
devices, one kernel thread each, the compute table from the probe programs
and the contention of 2 devices at once; collectives between 2 processes
over Gloo on loopback, as the fidelity bench's headline runs), plans autoddl on each for the
fidelity bench's GPT (4 layers, hidden 512, 8 heads, sequence 128,
vocabulary 4096, batch 16, AdamW) and a small VGG (SGD) on a mesh of 2, and
prices each plan under the other calibration's cluster (``PlannedStrategy.
diff``: the plan mapped onto the other's cost model). Per model:
``regret_a`` = cost under A of B's plan / cost under A of A's plan - 1 (and
``regret_b`` the other way round): how much worse one calibration finds the
other's choice; the goal is at most 2 %. Also the two
calibrations' prices of one plan (``cluster_disagreement``), the number of
split ops of each plan (ops with an S on some input or output), and the
machine's load average before and after. With ``--baseline`` the same is
done for two calibrations without the compute table (one FLOP/s figure,
the old cluster) for comparison. Prints one JSON object on stdout; writes
the two cluster files beside ``--out``.

    PYTHONPATH=python .venv/bin/python bench/calibration.py --out bench/results/calibration.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

GPT = dict(n_layer=4, n_embd=512, n_head=8, seq_len=128, vocab_size=4096)
GPT_BATCH, HIERARCHY = 16, [2]
VGG = dict(features=(32, "M", 64, "M", 128, "M"), image_size=32, fc=(256,), num_classes=10)
VGG_BATCH = 32


def programs() -> dict:
    """name -> training Program of the models the plans are made for."""
    import oneflow_lite as flow
    from oneflow_lite.calibrate_probes import ADAMW, with_loss

    flow.manual_seed(0)
    spec = flow.nn.graph_trace.Spec([GPT_BATCH, GPT["seq_len"]], flow.int64)
    gpt = flow.nn.graph_trace.trace(with_loss(flow, flow.models.GPT(flow.models.GPTConfig(**GPT))),
                                    spec, spec, input_names=["ids", "labels"])
    gpt.builder.minimize(gpt.output_names[0], "adamw", **ADAMW)
    flow.manual_seed(0)
    images = flow.nn.graph_trace.Spec([VGG_BATCH, 3, VGG["image_size"], VGG["image_size"]])
    labels = flow.nn.graph_trace.Spec([VGG_BATCH], flow.int64)
    vgg = flow.nn.graph_trace.trace(with_loss(flow, flow.models.VGG(flow.models.VGGConfig(**VGG))),
                                    images, labels, input_names=["images", "labels"])
    vgg.builder.minimize(vgg.output_names[0], "sgd", lr=0.01)
    return {"gpt": gpt.program, "vgg": vgg.program}


def split_ops(planned) -> int:
    """Ops whose signature splits some input or output."""
    return sum(1 for sig in planned.strategy.signatures.values() if "S(" in sig)


def cross_price(prog, cluster_a, cluster_b) -> dict:
    from oneflow_lite import _C

    plan_a = _C.plan(prog, HIERARCHY, cluster_a, "autoddl")
    plan_b = _C.plan(prog, HIERARCHY, cluster_b, "autoddl")
    under_a = plan_a.diff(plan_b)  # before: A's plan under A; after: B's plan under A
    under_b = plan_b.diff(plan_a)  # before: B's plan under B; after: A's plan under B
    return {"plan_a_under_a_s": under_a.before_s, "plan_b_under_a_s": under_a.after_s,
            "plan_b_under_b_s": under_b.before_s, "plan_a_under_b_s": under_b.after_s,
            "regret_a": under_a.after_s / under_a.before_s - 1,
            "regret_b": under_b.after_s / under_b.before_s - 1,
            "cluster_disagreement": under_b.after_s / under_a.before_s - 1,
            "split_ops_a": split_ops(plan_a), "split_ops_b": split_ops(plan_b),
            "same_plan": plan_a.strategy == plan_b.strategy,
            "untabled_op_types": json.loads(plan_a.report_json()).get("untabled_op_types", [])}


def calibrate_pair(out_prefix: str, kernels: bool, reps: int, scale: float,
                   processes: int) -> tuple:
    from oneflow_lite import _C
    from oneflow_lite.calibrate import calibrate

    clusters, figures = [], []
    for tag in ("a", "b"):
        start = time.perf_counter()
        _cluster, f = calibrate(devices=2, threads=1, kernels=kernels, kernel_scale=scale,
                                reps=reps, name=f"local_{tag}", processes=processes)
        path = f"{out_prefix}_{'table' if kernels else 'flops'}_{tag}.pbtxt"
        with open(path, "w") as handle:
            handle.write(f["text"])
        clusters.append(_C.load_cluster(path))
        figures.append({"path": path, "seconds": time.perf_counter() - start,
                        "matmul_gflops": f["matmul_flops"] / 1e9,
                        "latency_us": f["latency_seconds"] * 1e6,
                        "bandwidth_gbps": f["bandwidth_bytes_per_s"] / 1e9,
                        "compute_entries": f["compute_entries"], "contention": f["contention"]})
    return clusters, figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results/calibration.json")
    parser.add_argument("--reps", type=int, default=7, help="runs per measured figure (median)")
    parser.add_argument("--kernel-scale", type=float, default=1.0)
    parser.add_argument("--processes", type=int, default=2,
                        help="collectives measured between this many processes (Gloo); "
                             "0: in one process")
    parser.add_argument("--baseline", action="store_true",
                        help="also two calibrations without the compute table")
    args = parser.parse_args(argv)
    prefix = os.path.splitext(args.out)[0]
    result = {"load_before": os.getloadavg(), "hierarchy": HIERARCHY, "goal_regret": 0.02,
              "processes": args.processes, "reps": args.reps,
              "models": {"gpt": dict(GPT, batch=GPT_BATCH), "vgg": dict(VGG, batch=VGG_BATCH)}}
    progs = programs()
    variants = [True, False] if args.baseline else [True]
    for kernels in variants:
        clusters, figures = calibrate_pair(prefix, kernels, args.reps, args.kernel_scale,
                                           args.processes)
        key = "table" if kernels else "flops_only"
        result[key] = {"calibrations": figures,
                       "models": {name: cross_price(p, *clusters) for name, p in progs.items()}}
    result["load_after"] = os.getloadavg()
    text = json.dumps(result, indent=1)
    with open(args.out, "w") as handle:
        handle.write(text + "\n")
    print(text)
    worst = max(max(abs(m["regret_a"]), abs(m["regret_b"]))
                for m in result["table"]["models"].values())
    print(f"calibration: worst cross-pricing regret {100 * worst:.2f} % (goal 2 %)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
