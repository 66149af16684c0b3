"""Measures this machine and writes its Cluster file (text protobuf).

    python -m oneflow_lite.calibrate --out local.pbtxt --devices 4

It times a memcpy, the float32 matmul op through a Session, and the
in-process collectives on ``--devices`` virtual devices (all-reduce,
reduce-scatter, all-gather, all-to-all: each its latency per ring step and
bandwidth; C++: ``oneflow_lite/api/calibrate.h``), or with ``--processes N``
the same collectives between N processes over Gloo on TCP loopback (the
communicator of a multi-process job; ``oneflow_lite.calibrate_world``). Unless ``--no-kernels``,
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
import json
import os
import subprocess
import sys
import tempfile

from oneflow_lite import _C, _progress


def process_collectives(processes: int, nbytes: int = 16 << 20, reps: int = 5,
                        timeout_s: float = 300.0) -> list:
    """Each collective's figures across ``processes`` processes of this machine
    (Gloo over TCP loopback), from ``oneflow_lite.calibrate_world`` run by the
    launcher: a list of {kind, bandwidth_gbps, latency_us}."""
    if processes < 2:
        raise ValueError(f"calibrate: processes={processes} (needs >= 2)")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "figures.json")
        command = [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node",
                   str(processes), "-m", "oneflow_lite.calibrate_world", "--out", out,
                   "--bytes", str(nbytes), "--reps", str(reps)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"calibrate: the {processes}-process collective run failed "
                               f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        with open(out) as handle:
            return json.load(handle)


def calibrate(devices: int = 2, threads: int = 1, kernels: bool = True,
              kernel_scale: float = 1.0, contention_devices: int = 0, reps: int = 5,
              name: str = "local", processes: int = 0, **options):
    """``_C.calibrate`` with the probe programs of ``calibrate_probes`` when
    ``kernels``, and with the collectives measured across ``processes``
    processes (Gloo on loopback) instead of in-process when ``processes`` >= 2.

    Returns ``(Cluster, figures)`` as ``_C.calibrate`` does; ``options`` go
    to it unchanged (memcpy_bytes, matmul_size, allreduce_bytes, per_collective,
    progress). Without a ``progress`` callback of the caller's, each
    measurement is reported on stderr with the time elapsed (``_progress``).
    """
    probes = []
    if kernels:
        from oneflow_lite import calibrate_probes

        probes = calibrate_probes.probes(scale=kernel_scale)
    if processes:
        nbytes = options.get("allreduce_bytes", 16 << 20)
        with _progress.ticking("calibrate", f"collectives across {processes} processes (Gloo)")\
                if _progress.enabled() else contextlib.nullcontext():
            options["collectives"] = process_collectives(processes, nbytes, reps)
        options["collectives_source"] = (
            f"Gloo over TCP loopback between {processes} processes (one device each), "
            f"{nbytes} bytes per process, medians of {reps} runs")
    if "progress" not in options and _progress.enabled():
        options["progress"] = steps = _progress.Steps("calibrate")
    else:
        steps = None
    try:
        return _C.calibrate(devices=devices, num_threads=threads, reps=reps, name=name,
                            kernel_probes=probes, contention_devices=contention_devices,
                            **options)
    finally:
        if steps is not None:
            steps.close()


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
    parser.add_argument("--name", default="local")
    parser.add_argument("--no-kernels", action="store_true",
                        help="no compute table: price every op by the matmul's FLOP/s")
    parser.add_argument("--kernel-scale", type=float, default=1.0,
                        help="batch scale of the probe programs (calibrate_probes)")
    parser.add_argument("--contention-devices", type=int, default=0,
                        help="measure contention for 2..N devices at once (0: --devices)")
    parser.add_argument("--processes", type=int, default=0,
                        help="measure the collectives between N processes over Gloo (TCP "
                             "loopback) instead of in one process (0: in-process)")
    parser.add_argument("--no-per-collective", action="store_true",
                        help="only the all-reduce's latency and bandwidth for every collective")
    args = parser.parse_args(argv)
    try:
        _cluster, figures = calibrate(
            devices=args.devices, threads=args.threads, kernels=not args.no_kernels,
            kernel_scale=args.kernel_scale, contention_devices=args.contention_devices,
            reps=args.reps, name=args.name, memcpy_bytes=int(args.memcpy_mb * 2**20),
            matmul_size=args.matmul_size, allreduce_bytes=int(args.allreduce_mb * 2**20),
            per_collective=not args.no_per_collective, processes=args.processes)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
