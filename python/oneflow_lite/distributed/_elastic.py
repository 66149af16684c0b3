"""What the launcher does about a lost child beyond stopping the others:
tell the job's store (``report_loss``), so that a process waiting for it
(one that never joined, or a collective) fails now, naming it, rather than
at its own timeout or under the launcher's SIGTERM; and, with
--max-restarts, start the job again on the processes left
(``launch_with_restarts``). On an emulated cluster a node whose every
process was lost counts as one lost node, and the job starts again on the
nodes left (a new network, renumbered from 0); a lost process whose node
still runs is started again there (the same nodes, the same size). The job
itself resumes from its last complete checkpoint and plans for the new
world (oneflow_lite.train_elastic).

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
    one could be started again here); on an emulated cluster as
    ``_emulated_restart`` says. Prints one line per restart naming the lost
    rank (or node and its ranks). Returns the last LaunchResult."""
    current, restarts = options, 0
    while True:
        result = launch_once(command, current)
        if (result.exit_code == 0 or result.received_signal is not None
                or result.failed_rank is None or restarts >= options.max_restarts):
            return result
        if current.emulate is not None:
            following, lost, where = _emulated_restart(result, current)
        else:
            left = current.nproc_per_node - (0 if options.restart_same_size else 1)
            following = dataclasses.replace(current, nproc_per_node=left) if left else None
            lost = f"lost rank {result.failed_rank}"
            where = (f"on {left} processes again" if options.restart_same_size else
                     f"on the {left} processes left (was {current.nproc_per_node})")
        if following is None:
            return result
        restarts += 1
        print(f"{result.message}\nlaunch: {lost}; restart {restarts} of "
              f"{options.max_restarts} {where}", file=sys.stderr, flush=True)
        current = dataclasses.replace(following, job_id=f"{options.job_id}-r{restarts}",
                                      restart_count=restarts)


def _emulated_restart(result, current):
    """(the options of the next start or None: no node left, the words for
    what was lost, the words for where the job restarts) after ``result``
    of an emulated job: the nodes whose every process was lost are gone."""
    per_node, nodes = current.nproc_per_node, current.emulate.nodes
    lost_ranks = set(result.lost_ranks or [result.failed_rank])
    gone = [n for n in range(nodes)
            if all(n * per_node + r in lost_ranks for r in range(per_node))]
    if not gone:
        node = result.failed_rank // per_node
        return current, f"lost rank {result.failed_rank} of node {node}, which still runs", (
            f"on the same {nodes} nodes x {per_node} processes (the lost process starts again "
            f"on node {node})")
    left = nodes - len(gone)
    ranks = [str(n * per_node + r) for n in gone for r in range(per_node)]
    lost = (f"lost node{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} "
            f"(rank{'s' if len(ranks) > 1 else ''} {', '.join(ranks)}: every process of the "
            f"node{'s' if len(gone) > 1 else ''})")
    if left < 1:
        return None, lost, ""
    spec = dataclasses.replace(current.emulate, nodes=left)
    where = (f"on the {left} node{'s' if left > 1 else ''} left (was {nodes}) x {per_node} "
             f"processes, {left * per_node} in all, renumbered from node 0")
    return dataclasses.replace(current, emulate=spec, nnodes=left), lost, where
