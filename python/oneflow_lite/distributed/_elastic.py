"""What the launcher does about a lost child beyond stopping the others:
tell the job's store (``report_loss``), so that a process waiting for it
(one that never joined, or a collective) fails now, naming it, rather than
at its own timeout or under the launcher's SIGTERM.

Bounded: one connection attempt of at most ``REPORT_TIMEOUT_S``; a store
that is gone (its host, process 0, was the one lost) is not an error.
Thread-safe (no state).
"""
from __future__ import annotations

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
