"""One process of a collective calibration across processes (run by the launcher).

    python -m oneflow_lite.distributed.launch --nproc-per-node 2 \\
        -m oneflow_lite.calibrate_world --out figures.json --sizes 4096,65536,1048576

Every process times every collective at every size on each level of the
job (the processes of a node; one process per node across nodes: api/
calibrate_processes.h) over the cross-process communicator
(``_C.calibrate_process_levels``); process 0
writes its measurements (a JSON list of {level, processes, kind,
bandwidth_gbps, latency_us, points}) to ``--out``. ``oneflow_lite.calibrate
--processes N [--nodes M]`` runs this and puts the levels in the Cluster.
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
    parser.add_argument("--sizes", required=True,
                        help="comma-separated buffer bytes per process, ascending (>= 2)")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    figures = _C.calibrate_process_levels(sizes=sizes, reps=args.reps)
    if int(os.environ.get("RANK", "0")) == 0:
        with open(args.out, "w") as handle:
            json.dump(figures, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
