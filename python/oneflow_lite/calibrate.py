"""Measures this machine and writes its Cluster file (text protobuf).

    python -m oneflow_lite.calibrate --out local.pbtxt --devices 4

It times a memcpy, the float32 matmul op through a Session, and the
in-process all-reduce on ``--devices`` virtual devices (C++:
``oneflow_lite/api/calibrate.h``), and writes a one-level Cluster whose
comments say what was measured, how and when. The file loads with
``_C.load_cluster(path)`` and plans with ``_C.plan(..., cluster=path)``.
"""
from __future__ import annotations

import argparse
import sys

from oneflow_lite import _C


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
    args = parser.parse_args(argv)
    try:
        _cluster, figures = _C.calibrate(
            devices=args.devices, num_threads=args.threads,
            memcpy_bytes=int(args.memcpy_mb * 2**20), matmul_size=args.matmul_size,
            allreduce_bytes=int(args.allreduce_mb * 2**20), reps=args.reps, name=args.name)
    except ValueError as error:
        print(f"calibrate: {error}", file=sys.stderr)
        return 2
    with open(args.out, "w") as f:
        f.write(figures["text"])
    print(f"wrote {args.out}: matmul {figures['matmul_flops'] / 1e9:.1f} GFLOP/s, all-reduce "
          f"{figures['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s per device, "
          f"{figures['latency_seconds'] * 1e6:.1f} us per step, memcpy "
          f"{figures['memcpy_gbps']:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
