"""What the launcher does about a lost child beyond stopping the others:
tell the job's store (``report_loss``), so that a process waiting for it
(one that never joined, or a collective) fails now, naming it, rather than
at its own timeout or under the launcher's SIGTERM; and, with
--max-restarts, start the job again on the processes left
(``launch_with_restarts``). The job itself resumes from its last complete
checkpoint and plans for the new world (oneflow_lite.train_elastic).

Bounded: one connection attempt of at most ``REPORT_TIMEOUT_S``; a store
that is gone (its host, process 0, was the one lost) is not an error; at
most max_restarts restarts. Thread-safe (no state).
"""
from __future__ import annotations

import dataclasses
import sys

from oneflow_lite.distributed._supervisor import Child, describe

REPORT_TIMEOUT_S = 1.0


def report_loss(options, child: Child) -> bool:
    """Sets the failure key of ``options``' job (a resolved LaunchOptions) to
    "lost process p (ranks ...): it <exited with code c>, seen by the
    launcher", unless a loss is recorded there already. True when the store
    took the report."""
    if options.nnodes * options.nproc_per_node < 2:
        return False
    from oneflow_lite import _C  # the extension: only once a job has lost a process
    k = options.devices_per_process
    first = child.rank * k
    ranks = f"rank {first}" if k == 1 else f"ranks {first}..{first + k - 1}"
    reason = (f"lost process {child.rank} ({ranks}): it {describe(child.process.returncode)} "
              f"(seen by the launcher of node {options.node_rank})")
    try:
        _C.world_report_lost(options.master_addr, options.master_port, options.job_id, reason,
                             int(REPORT_TIMEOUT_S * 1000))
        return True
    except (RuntimeError, ValueError):
        return False


def launch_with_restarts(command, options, launch_once):
    """Runs ``launch_once(command, options)`` and, while it fails (a child
    lost, not a signal to the launcher) and ``options.max_restarts`` allows,
    starts the job again on the processes left: one fewer than before (the
    first one that failed is the one lost), under a new job id (its own store
    keys), with OFL_RESTART_COUNT telling the job it restarts; with
    ``options.restart_same_size`` on as many processes as before (the lost
    one could be started again here). Prints one line per restart naming
    the lost rank. Returns the last LaunchResult."""
    current, restarts = options, 0
    while True:
        result = launch_once(command, current)
        if (result.exit_code == 0 or result.received_signal is not None
                or result.failed_rank is None or restarts >= options.max_restarts):
            return result
        left = current.nproc_per_node - (0 if options.restart_same_size else 1)
        if left < 1:
            return result
        restarts += 1
        where = (f"on {left} processes again" if options.restart_same_size else
                 f"on the {left} processes left (was {current.nproc_per_node})")
        print(f"{result.message}\nlaunch: lost rank {result.failed_rank}; restart {restarts} of "
              f"{options.max_restarts} {where}", file=sys.stderr, flush=True)
        current = dataclasses.replace(current, nproc_per_node=left,
                                      job_id=f"{options.job_id}-r{restarts}",
                                      restart_count=restarts)
