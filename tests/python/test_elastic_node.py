"""Elastic restarts on an emulated cluster (launcher --emulate-nodes with
--max-restarts): a node whose every process is killed with SIGKILL counts as
one lost node, and the job starts again on the nodes left (a new network
under a new job id), names the lost node and its ranks, resumes from the
newest complete checkpoint, plans for the new world and trains to the end
with the losses of a fresh run on that world from a copy of the same
checkpoint; a lost process whose node still runs starts again there (the
same nodes, the same size). No namespace of the job is left afterwards.

Tests that make namespaces skip, saying why, without CAP_NET_ADMIN /
CAP_SYS_ADMIN or the ip and tc commands (the decision itself is checked
everywhere). Every process is ended by its own pid (the launcher's session);
every wait is bounded.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from multiprocess import spawn
from oneflow_lite.distributed import emulate
from oneflow_lite.distributed._elastic import _emulated_restart
from oneflow_lite.distributed.launch import LaunchOptions, LaunchResult

MISSING = emulate.missing_privilege()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"no emulation here: {MISSING}")

STEPS, EVERY = 12, 3
TRAIN = ["--model", "gpt", "--steps", str(STEPS), "--cluster", "v100_8gpu", "--threads", "1",
         "--checkpoint-keep", "0"]

# Start 0: the processes of node 1 (ranks 2, 3) are killed by SIGKILL, or
# (LOSE=one) rank 1 exits 3 while its node's other process runs on; the
# others see the loss and exit 1. Every start records its world and job id.
SCRIPT = """
import os, signal, sys, time
out, lose = sys.argv[1], sys.argv[2]
count, rank = os.environ["OFL_RESTART_COUNT"], int(os.environ["RANK"])
open(os.path.join(out, "start%s_rank%d" % (count, rank)), "w").write(
    os.environ["WORLD_SIZE"] + " " + os.environ["OFL_JOB_ID"] + " " + os.environ["OFL_BIND_ADDR"])
if count == "0":
    if lose == "node" and rank >= 2:
        os.kill(os.getpid(), signal.SIGKILL)
    if lose == "one" and rank == 1:
        sys.exit(3)
    time.sleep(1.0)
    sys.exit(1)
"""


def test_which_nodes_are_lost_is_decided_from_the_ranks_killed_outside_the_launcher():
    options = LaunchOptions(nproc_per_node=2, nnodes=3, job_id="j",
                            emulate=emulate.EmulationSpec(3, rate_bits=1e9))

    def after(failed, lost):
        return _emulated_restart(LaunchResult(1, "m", {}, failed_rank=failed, lost_ranks=lost),
                                 options)

    following, lost, where = after(0, [0, 2, 3])  # node 1 whole; rank 0 alone on node 0
    assert lost == "lost node 1 (ranks 2, 3: every process of the node)"
    assert where == "on the 2 nodes left (was 3) x 2 processes, 4 in all, renumbered from node 0"
    assert (following.emulate.nodes, following.nnodes, following.nproc_per_node) == (2, 2, 2)
    assert following.emulate.rate_bits == 1e9  # the links stay as they were
    following, lost, where = after(3, [3])  # node 1 still runs: the same nodes, the same size
    assert following is options and lost == "lost rank 3 of node 1, which still runs"
    assert where == "on the same 3 nodes x 2 processes (the lost process starts again on node 1)"
    following, lost, _ = after(0, [0, 1, 4, 5])
    assert lost == "lost nodes 0, 2 (ranks 0, 1, 4, 5: every process of the nodes)"
    assert (following.emulate.nodes, following.nnodes) == (1, 1)
    following, lost, _ = after(0, list(range(6)))  # nothing left: no restart
    assert following is None and lost.startswith("lost nodes 0, 1, 2 ")


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.path.join(spawn.REPO, "python"), OFL_THREADS="1")


def _job_id(tag: str) -> str:
    return f"e{os.getpid()}{tag}"


def _launch(job: str, per_node: int, args, cwd):
    """The launcher on 2 emulated nodes of ``per_node`` processes, one restart."""
    return _run(["-m", "oneflow_lite.distributed.launch", "--emulate-nodes", "2",
                 "--nproc-per-node", str(per_node), "--job-id", job, "--max-restarts", "1",
                 *args], cwd)


def _run(args, cwd):
    return subprocess.Popen([sys.executable, *args], env=_env(), cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _finish(p, timeout):
    try:
        return p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the job's session: launcher and children
        return p.communicate(timeout=10)[0] + "\n(killed at the timeout)"


@needs_root
@pytest.mark.parametrize("lose", ["node", "one"])
def test_the_launcher_restarts_an_emulated_job_on_what_is_left(tmp_path, lose):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    job = _job_id(lose)
    p = _launch(job, 2, ["--timeout-s", "5", str(script), str(tmp_path), lose], tmp_path)
    out = _finish(p, 120)
    assert p.returncode == 0, out
    assert emulate.job_namespaces(job) == [], out
    first = sorted((tmp_path / f"start0_rank{r}").read_text() for r in range(4))
    assert {f.split()[:2] == ["4", job] for f in first} == {True}, first
    if lose == "node":
        assert "launch: lost node 1 (ranks 2, 3: every process of the node); restart 1 of 1 on " \
               "the 1 node left (was 2) x 2 processes, 2 in all" in out, out
        # Both of node 1's processes die at once; the launcher names the first it sees.
        assert re.search(r"launch: rank [23] \(pid \d+\) was killed by SIGKILL", out), out
        size, addresses = 2, {emulate.address(0)}
    else:
        assert "launch: lost rank 1 of node 0, which still runs; restart 1 of 1 on the same 2 " \
               "nodes x 2 processes (the lost process starts again on node 0)" in out, out
        size, addresses = 4, {emulate.address(0), emulate.address(1)}
    second = [(tmp_path / f"start1_rank{r}").read_text().split() for r in range(size)]
    assert not (tmp_path / f"start1_rank{size}").exists()
    assert {(w, j) for w, j, _ in second} == {(str(size), job + "-r1")}, second
    assert {a for _, _, a in second} == addresses, second


def _kill_after_first_checkpoint(job, ck, ranks) -> list:
    """SIGKILLs ``ranks`` (node 1's processes) once step EVERY's checkpoint
    is complete; the pids killed."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and job.poll() is None:
        if (ck / f"step-{EVERY:08d}" / "index.json").exists():
            victims = spawn.children_by_rank(job.pid)
            if all(r in victims for r in ranks):
                for rank in ranks:
                    os.kill(victims[rank], signal.SIGKILL)
                return [victims[r] for r in ranks]
        time.sleep(0.05)
    return []


@needs_root
@pytest.mark.parametrize("per_node", [1, 2], ids=["2x1", "2x2"])
def test_a_lost_node_restarts_training_on_the_node_left_and_matches_a_fresh_run(
        tmp_path, per_node):
    ck, job_name, world = tmp_path / "ck", _job_id(f"train{per_node}"), 2 * per_node
    node1 = list(range(per_node, world))
    job = _launch(job_name, per_node, [
        "--checkpoint-dir", str(ck), "--checkpoint-every", str(EVERY), "-m", "oneflow_lite.train",
        *TRAIN, "--nproc", str(world), "--report", str(tmp_path / "elastic.json")], tmp_path)
    try:
        killed = _kill_after_first_checkpoint(job, ck, node1)
        out = _finish(job, 300)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
    assert killed, out
    assert job.returncode == 0, out
    assert emulate.job_namespaces(job_name) == [], out
    ranks = f"rank{'s' if per_node > 1 else ''} {', '.join(map(str, node1))}"
    assert (f"launch: lost node 1 ({ranks}: every process of the node); restart 1 of 1 on the "
            f"1 node left (was 2) x {per_node} processes") in out, out
    resumed = re.findall(r"resumed from checkpoint step (\d+)", out)
    assert resumed, out
    step = int(resumed[-1])
    assert EVERY <= step < STEPS and step % EVERY == 0, out
    assert (f"plan changed: {world} -> {per_node} processes, mesh [{world}] -> [{per_node}]; "
            "why: restart 1") in out, out
    elastic = json.loads((tmp_path / "elastic.json").read_text())["runs"][0]
    assert elastic["first_step"] == step + 1

    fresh_ck = tmp_path / "fresh"
    fresh_ck.mkdir()
    shutil.copytree(ck / f"step-{step:08d}", fresh_ck / f"step-{step:08d}")
    fresh = _run(["-m", "oneflow_lite.train", *TRAIN, "--nproc", str(per_node),
                  "--checkpoint-dir", str(fresh_ck), "--report", str(tmp_path / "fresh.json")],
                 tmp_path)
    out_fresh = _finish(fresh, 300)
    assert fresh.returncode == 0, out_fresh
    fresh_run = json.loads((tmp_path / "fresh.json").read_text())["runs"][0]
    assert fresh_run["first_step"] == step + 1
    assert len(elastic["losses"]) == STEPS - step
    if fresh_run["strategy"] == elastic["strategy"]:  # the same plan: bitwise
        assert np.array_equal(elastic["losses"], fresh_run["losses"]), (elastic["losses"],
                                                                        fresh_run["losses"])
    else:
        np.testing.assert_allclose(elastic["losses"], fresh_run["losses"], rtol=1e-5, atol=1e-6)
