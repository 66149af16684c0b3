"""Measures this machine and writes its Cluster file (text protobuf).

    python -m oneflow_lite.calibrate --out local.pbtxt --devices 4

It times a memcpy, the float32 matmul op through a Session, and the
in-process collectives on ``--devices`` virtual devices (all-reduce,
reduce-scatter, all-gather, all-to-all: each its latency per ring step and
bandwidth; C++: ``oneflow_lite/api/calibrate.h``), or with ``--processes N``
the same collectives between N processes over TCP loopback (the
communicator of a multi-process job; ``oneflow_lite.calibrate_world``), or
with ``--nodes M`` between the processes of M emulated nodes (the launcher's
--emulate-nodes: one level inside a node, one between nodes):

    python -m oneflow_lite.calibrate --out emulated.pbtxt --nodes 2 --processes 2 \
        --emulate-rate 1gbit

With ``--shapes-of CLUSTER --plan FILE ...`` it adds to that Cluster the
kernels of those Plans timed alone at their exact local shapes
(``shape_kernels``), which the simulation prefers to the FLOP curve.

Collectives across processes are timed at several sizes (4 KiB x 4^i up to
``--allreduce-mb``) and fitted as steps x latency + bytes / bandwidth; the
medians themselves go into the file too, as each collective's points (the
table the cost model interpolates at the measured group size).
Unless ``--no-kernels``,
it also times every op kernel of small GPT and VGG training programs
(``oneflow_lite.calibrate_probes``) on one device, and again with 2 ..
``--contention-devices`` devices computing at once: the Cluster then prices
each op from those measured times (interpolated by FLOPs) times the
contention factor, not from the one FLOP/s figure. Everything comes from
microbenchmarks; nothing is fitted to a strategy's measured step, and no
global correction factor is applied. The file's comments say what was
measured, how and when. It loads with ``_C.load_cluster(path)`` and plans
with ``_C.plan(..., cluster=path)``.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from typing import List, Optional, Sequence

from oneflow_lite import _C, _progress


def message_sizes(largest: int, processes: int = 2) -> List[int]:
    """The buffer sizes of a collective calibration: one float32 per process
    (the latency), then 4 KiB x 4^i up to and with ``largest``."""
    sizes = [4 * processes]
    size = max(4096, 8 * processes)
    while size < largest:
        sizes.append(size)
        size *= 4
    sizes.append(max(largest, 8 * processes))
    return sizes


@dataclasses.dataclass(frozen=True)
class ProcessLayout:
    """The processes a calibration measures between: ``nodes`` x ``processes``
    (per node), each with ``devices_per_process`` virtual devices; with
    ``nodes`` >= 2 an emulated cluster (the launcher's --emulate-nodes, links
    shaped to ``rate``, loopback to ``intra_rate``: tc spellings, None
    unshaped)."""

    processes: int
    nodes: int = 1
    devices_per_process: int = 1
    rate: Optional[str] = None
    intra_rate: Optional[str] = None

    def launcher_args(self) -> List[str]:
        args = ["--nproc-per-node", str(self.processes)]
        if self.nodes >= 2:
            args += ["--emulate-nodes", str(self.nodes)]
            args += ["--emulate-rate", self.rate] if self.rate else []
            args += ["--emulate-intra-rate", self.intra_rate] if self.intra_rate else []
        return args

    def describe(self) -> str:
        if self.nodes < 2:
            return f"TCP loopback (the socket mesh) between {self.processes} processes"
        return (f"TCP between {self.nodes} emulated nodes x {self.processes} processes "
                f"(network namespaces, links shaped to {self.rate or 'unshaped'}, loopback "
                f"{self.intra_rate or 'unshaped'})")


def process_levels(layout: ProcessLayout, sizes: Sequence[int], reps: int = 5,
                   timeout_s: float = 600.0) -> list:
    """Every collective at every size on each level of ``layout``'s processes
    (``oneflow_lite.calibrate_world`` run by the launcher): a list of {level,
    processes, kind, bandwidth_gbps, latency_us, points}."""
    if layout.processes * layout.nodes < 2:
        raise ValueError(f"calibrate: processes={layout.processes} x nodes={layout.nodes} "
                         "(needs >= 2 processes)")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "figures.json")
        command = [sys.executable, "-m", "oneflow_lite.distributed.launch",
                   *layout.launcher_args(), "-m", "oneflow_lite.calibrate_world", "--out", out,
                   "--sizes", ",".join(str(s) for s in sizes), "--reps", str(reps)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"calibrate: the collective run ({layout.describe()}) failed "
                               f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        with open(out) as handle:
            return json.load(handle)


def process_collectives(processes: int, nbytes: int = 16 << 20, reps: int = 5,
                        timeout_s: float = 300.0) -> list:
    """Each collective's figures across ``processes`` processes of this machine
    (TCP loopback, the socket mesh), fitted through sizes up to ``nbytes``: a list of
    {kind, bandwidth_gbps, latency_us}."""
    if processes < 2:
        raise ValueError(f"calibrate: processes={processes} (needs >= 2)")
    measured = process_levels(ProcessLayout(processes), message_sizes(nbytes, processes), reps,
                              timeout_s)
    return [{k: m[k] for k in ("kind", "bandwidth_gbps", "latency_us")} for m in measured]


def levels_of(layout: ProcessLayout, measured: list) -> List[dict]:
    """The Cluster levels (innermost first, sizes in devices) of measured
    figures: each level's own figure per collective, the all-reduce's as the
    level's latency and bandwidth. A process's figures are shared by its
    ``devices_per_process`` devices: a level's bandwidth is per device while
    every device of the group sends at once (cluster.proto), and a process's
    devices all send through it, so each gets 1 / devices_per_process.
    Each figure also carries its measured points (``table_points``)."""
    d = layout.devices_per_process
    sizes = {"node": layout.processes * d, "network": layout.nodes * layout.processes * d}
    levels = []
    for name in ("node", "network"):
        figures = [dict(m, bandwidth_gbps=m["bandwidth_gbps"] / d)
                   for m in measured if m["level"] == name]
        if not figures:
            continue
        reduce = next(f for f in figures if f["kind"] == "all_reduce")
        levels.append({"name": name, "size": sizes[name],
                       "bandwidth_gbps": reduce["bandwidth_gbps"],
                       "latency_us": reduce["latency_us"],
                       "collectives": [dict({k: f[k] for k in ("kind", "bandwidth_gbps",
                                                               "latency_us")},
                                            points=table_points(f, d)) for f in figures]})
    return levels


def table_points(measured: dict, devices_per_process: int = 1) -> List[dict]:
    """A measured collective's sizes as Cluster points (cluster.proto
    CollectivePoint: the table CollectiveSeconds interpolates at that group
    size): the bytes the process sent per call, shared by its devices as the
    bandwidth is (levels_of), each size's median seconds, and the group of
    processes it ran on. Empty when fewer than two sizes are usable."""
    points = [{"bytes": sent / devices_per_process, "seconds": seconds,
               "group_size": measured["processes"]}
              for _buffer, sent, seconds in measured["points"] if sent > 0 and seconds > 0]
    return points if len({p["bytes"] for p in points}) == len(points) >= 2 else []


def describe_levels(layout: ProcessLayout, measured: list, reps: int) -> str:
    """The comment lines of measured levels: how, then every point and fit."""
    lines = [f"levels: {layout.describe()}, {layout.devices_per_process} device(s) per "
             f"process; medians of {reps} calls per size after a warm-up call, in rounds that "
             "call every size once in a rotating order; the medians made non-decreasing in the "
             "size (least-squares monotone fit); each collective fitted as steps x latency + bytes sent / bandwidth through every size (least "
             "squares on relative error), and every size's median also written as the "
             "collective's points (bytes sent, seconds, group size): at the measured group "
             "size the cost model interpolates those (log-log), not the fit"]
    for m in measured:
        points = ", ".join(f"{b} B {s * 1e3:.3g} ms" for b, _sent, s in m["points"])
        lines.append(f"{m['level']} {m['kind']} ({m['processes']} processes): {points} -> "
                     f"{m['bandwidth_gbps']:.4g} GB/s, {m['latency_us']:.3g} us per step")
    return "\n".join(lines)


def calibrate(devices: int = 2, threads: int = 1, kernels: bool = True,
              kernel_scale: float = 1.0, contention_devices: int = 0, reps: int = 5,
              collective_reps: int = 9, name: str = "local", processes: int = 0,
              layout: Optional[ProcessLayout] = None, **options):
    """``_C.calibrate`` with the probe programs of ``calibrate_probes`` when
    ``kernels``, and with the levels measured between processes (``layout``;
    ``processes`` >= 2 alone: that many on this machine's loopback) outside
    the in-process level, which stays when a process has several devices.
    ``reps`` runs of each in-process measurement; ``collective_reps`` calls of
    each collective at each size between processes (cheap: milliseconds each).

    Returns ``(Cluster, figures)`` as ``_C.calibrate`` does (figures gains
    "levels": the measured points and fits); ``options`` go to it unchanged
    (memcpy_bytes, matmul_size, allreduce_bytes, per_collective, progress).
    Without a ``progress`` callback of the caller's, each measurement is
    reported on stderr with the time elapsed (``_progress``).
    """
    probes = []
    if kernels:
        from oneflow_lite import calibrate_probes

        probes = calibrate_probes.probes(scale=kernel_scale)
    if layout is None and processes:
        layout = ProcessLayout(processes)
    measured = None
    if layout is not None:
        nbytes = options.get("allreduce_bytes", 16 << 20)
        total = layout.nodes * layout.processes
        with _progress.ticking("calibrate", f"collectives: {layout.describe()}")\
                if _progress.enabled() else contextlib.nullcontext():
            measured = process_levels(layout, message_sizes(nbytes, total), collective_reps)
        options["levels"] = levels_of(layout, measured)
        options["inprocess_level"] = layout.devices_per_process >= 2
        options["levels_source"] = describe_levels(layout, measured, collective_reps)
        if layout.devices_per_process >= 2:
            devices = layout.devices_per_process
        if contention_devices == 0 and total * layout.devices_per_process >= 2:
            contention_devices = total * layout.devices_per_process  # every device shares the cores
    if "progress" not in options and _progress.enabled():
        options["progress"] = steps = _progress.Steps("calibrate")
    else:
        steps = None
    try:
        cluster, figures = _C.calibrate(devices=devices, num_threads=threads, reps=reps,
                                        name=name, kernel_probes=probes,
                                        contention_devices=contention_devices, **options)
    finally:
        if steps is not None:
            steps.close()
    if measured is not None:
        figures["levels"] = measured
    return cluster, figures


def shape_kernels(cluster, plans: Sequence[bytes], threads: int = 1, reps: int = 5):
    """``(Cluster, figures)``: `cluster` with a shape entry per distinct compute
    kernel of `plans` (serialized Plans: ``PlannedStrategy.simulate(...)["plan"]``),
    each timed alone at its exact local shapes and attributes
    (``_C.calibrate_plan_kernels``, oneflow_lite/api/calibrate_shapes.h). The
    simulation then prices those kernels from their own times, not from the
    FLOP curve of whole-tensor probes; figures: ``entries`` (op_type, shape,
    flops, seconds) and ``skipped`` (kernels that do not run alone).
    Repeated runs keep a kernel's inputs in the cache: ``with_cache_model``
    adds what a step's cold inputs cost. Price with
    ``planned.simulate(..., cluster=cluster)``."""
    if threads < 1 or reps < 1:
        raise ValueError(f"calibrate: shape kernels need threads >= 1 and reps >= 1, got "
                         f"threads={threads} reps={reps}")
    return _C.calibrate_plan_kernels(cluster, list(plans), num_threads=threads, reps=reps)


def with_cache_model(cluster, cache_bytes: Optional[int] = None,
                     memory_read_bytes_per_s: Optional[float] = None):
    """`cluster` with a cache model (graph/plan_cache_residency.h): a compute
    task's inputs its rank touched more than ``cache_bytes`` since their last
    use are read from memory, their bytes over ``memory_read_bytes_per_s`` on
    top of the kernel's time (measured in repeated runs, every input cached:
    a step reads weights, optimizer state and saved activations cold). None:
    this host's (a core's L2 and share of L3; one thread reading a buffer
    larger than the L3)."""
    for name, v in (("cache_bytes", cache_bytes),
                    ("memory_read_bytes_per_s", memory_read_bytes_per_s)):
        if v is not None and not v > 0:
            raise ValueError(f"calibrate: a cache model needs {name} > 0 or None, got {v}")
    return cluster.with_cache_model(-1 if cache_bytes is None else cache_bytes,
                                    -1.0 if memory_read_bytes_per_s is None
                                    else memory_read_bytes_per_s)


def _layout(parser: argparse.ArgumentParser, args) -> Optional[ProcessLayout]:
    if args.nodes < 1 or args.processes < 0 or args.devices_per_process < 1:
        parser.error(f"--nodes {args.nodes}, --processes {args.processes}, "
                     f"--devices-per-process {args.devices_per_process}: need >= 1, >= 0, >= 1")
    if args.nodes == 1 and (args.emulate_rate or args.emulate_intra_rate):
        parser.error("--emulate-rate and --emulate-intra-rate need --nodes >= 2")
    processes = max(1, args.processes)
    if args.nodes * processes < 2:
        return None
    return ProcessLayout(processes, args.nodes, args.devices_per_process, args.emulate_rate,
                         args.emulate_intra_rate)


def _shapes_main(parser: argparse.ArgumentParser, args) -> int:
    if not args.plan:
        parser.error("--shapes-of needs at least one --plan")
    plans = []
    for path in args.plan:
        with open(path, "rb") as f:
            plans.append(f.read())
    try:
        cluster, figures = shape_kernels(_C.load_cluster(args.shapes_of), plans,
                                         threads=args.threads, reps=args.reps)
        if args.cache_model:
            cluster = with_cache_model(cluster)
    except (ValueError, RuntimeError) as error:
        print(f"calibrate: {error}", file=sys.stderr)
        return 2
    cluster.save(args.out)
    print(f"wrote {args.out}: {len(figures['entries'])} kernels timed at their plans' shapes, "
          f"{len(figures['skipped'])} skipped")
    for why in figures["skipped"]:
        print(f"  skipped {why}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oneflow_lite.calibrate",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the Cluster text file to write")
    parser.add_argument("--devices", type=int, default=2, help="virtual devices (>= 2)")
    parser.add_argument("--threads", type=int, default=1,
                        help="memcpy threads and matmul kernel threads per device")
    parser.add_argument("--matmul-size", type=int, default=512, help="m = n = k")
    parser.add_argument("--allreduce-mb", type=float, default=16.0,
                        help="MiB per device of the large all-reduce")
    parser.add_argument("--memcpy-mb", type=float, default=64.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--collective-reps", type=int, default=9,
                        help="calls of each collective at each size between processes")
    parser.add_argument("--name", default="local")
    parser.add_argument("--no-kernels", action="store_true",
                        help="no compute table: price every op by the matmul's FLOP/s")
    parser.add_argument("--kernel-scale", type=float, default=1.0,
                        help="batch scale of the probe programs (calibrate_probes)")
    parser.add_argument("--contention-devices", type=int, default=0,
                        help="measure contention for 2..N devices at once (0: --devices)")
    parser.add_argument("--processes", type=int, default=0,
                        help="measure the collectives between N processes over TCP ("
                             "loopback) instead of in one process (0: in-process)")
    parser.add_argument("--nodes", type=int, default=1,
                        help="emulated nodes of --processes processes each (>= 2: the "
                             "launcher's --emulate-nodes, as root)")
    parser.add_argument("--devices-per-process", type=int, default=1,
                        help="virtual devices per process (with --processes or --nodes)")
    parser.add_argument("--emulate-rate", default=None, metavar="RATE",
                        help="each emulated node's link (tc units: 1gbit)")
    parser.add_argument("--emulate-intra-rate", default=None, metavar="RATE",
                        help="each emulated node's loopback (tc units)")
    parser.add_argument("--no-per-collective", action="store_true",
                        help="only the all-reduce's latency and bandwidth for every collective")
    parser.add_argument("--shapes-of", default=None, metavar="CLUSTER",
                        help="time no machine figures: add to this Cluster file the kernels of "
                             "--plan files timed at their exact shapes (shape_kernels)")
    parser.add_argument("--cache-model", action="store_true",
                        help="with --shapes-of: add this host's cache model (with_cache_model): "
                             "a task's inputs its rank touched more than a core's cache since "
                             "their last use are read from memory")
    parser.add_argument("--plan", action="append", default=[],
                        help="a serialized Plan (PlannedStrategy.simulate(...)['plan']); repeat")
    args = parser.parse_args(argv)
    if args.shapes_of is not None:
        return _shapes_main(parser, args)
    try:
        _cluster, figures = calibrate(
            devices=args.devices, threads=args.threads, kernels=not args.no_kernels,
            kernel_scale=args.kernel_scale, contention_devices=args.contention_devices,
            reps=args.reps, collective_reps=args.collective_reps, name=args.name,
            memcpy_bytes=int(args.memcpy_mb * 2**20),
            matmul_size=args.matmul_size, allreduce_bytes=int(args.allreduce_mb * 2**20),
            per_collective=not args.no_per_collective, layout=_layout(parser, args))
    except (ValueError, RuntimeError) as error:
        print(f"calibrate: {error}", file=sys.stderr)
        return 2
    with open(args.out, "w") as f:
        f.write(figures["text"])
    contention = ", ".join(f"{k} devices x{v:.2f}" for k, v in figures["contention"])
    print(f"wrote {args.out}: matmul {figures['matmul_flops'] / 1e9:.1f} GFLOP/s, all-reduce "
          f"{figures['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s per device, "
          f"{figures['latency_seconds'] * 1e6:.1f} us per step, memcpy "
          f"{figures['memcpy_gbps']:.1f} GB/s, {figures['compute_entries']} compute table "
          f"entries{', contention ' + contention if contention else ''}")
    for m in figures.get("levels", []):
        print(f"  {m['level']} {m['kind']}: {m['bandwidth_gbps']:.4g} GB/s per device, "
              f"{m['latency_us']:.3g} us per step ({len(m['points'])} sizes)")
    if not figures["steady"]:
        print(f"calibrate: warning: the reference matmul ran at "
              f"{figures['matmul_flops'] / 1e9:.1f} GFLOP/s at the start and "
              f"{figures['matmul_flops_after'] / 1e9:.1f} at the end "
              f"({figures['matmul_drift'] * 100:+.0f} %): the machine's load changed while "
              "calibrating, so its figures mix both states; calibrate again on a quieter "
              "machine for plans you will time", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
