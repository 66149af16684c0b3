"""One process of a collective calibration across processes (run by the launcher).

    python -m oneflow_lite.distributed.launch --nproc-per-node 2 \\
        -m oneflow_lite.calibrate_world --out figures.json

Every process times the collectives over Gloo (``_C.calibrate_process_
collectives``); process 0 writes the figures (a JSON list of {kind,
bandwidth_gbps, latency_us}) to ``--out``. ``oneflow_lite.calibrate
--processes N`` runs this and puts the figures in the Cluster.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from oneflow_lite import _C


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--bytes", type=int, default=16 << 20, help="per process, large run")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    figures = _C.calibrate_process_collectives(bytes=args.bytes, reps=args.reps)
    if int(os.environ.get("RANK", "0")) == 0:
        with open(args.out, "w") as handle:
            json.dump(figures, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
