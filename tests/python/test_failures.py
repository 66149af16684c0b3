"""Failures across processes, tried as a user meets them: two jobs on one
MASTER_PORT, a peer that never joins (alone and under the launcher), a save
whose last process dies after its shard was gathered, processes that start
from different weights, a launcher killed by SIGKILL, and a master that
cannot be reached. Each ends in a clear error or a correct result, fast,
with nothing left running. A process that stops answering (SIGSTOP) is
named within 5 s by the store's heartbeat.

Every process a test starts is ended by its own pid (multiprocess/spawn.py
or ``_end``); every wait is bounded.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from multiprocess import spawn
from oneflow_lite import sharded_checkpoint

# Joins the world, then holds it until the file argv[1] exists (bounded).
HOLD = """
import os, sys, time
from oneflow_lite import _world
start = time.monotonic()
try:
    _world.info()
    _world.barrier()
except Exception as e:
    print(f"FAILED after {time.monotonic() - start:.2f} s: {e}", flush=True)
    sys.exit(1)
print("joined", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
_world.barrier()
print("done", flush=True)
"""


def _env(rank: int, nproc: int, port: int, **extra) -> dict:
    env = spawn.world_env(rank, nproc, port, "unused")
    del env["OFL_JOB_ID"]  # started by hand: no job id
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _start(code: str, env: dict, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _finish(p: subprocess.Popen, timeout: float):
    """(exit code, output); SIGKILL by pid at the timeout (code None)."""
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        _end([p])
        out, _ = p.communicate(timeout=10)
        return None, out


def _end(procs) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(10)


def test_a_second_job_on_the_same_port_fails_fast_and_the_first_runs_on(tmp_path):
    port = spawn.free_port()
    go = str(tmp_path / "go")
    first = [_start(HOLD, _env(r, 2, port), go) for r in range(2)]
    second = []
    try:
        # (readline is bounded: the process prints or exits within its 60 s world timeout)
        assert "joined" in first[0].stdout.readline()
        start = time.monotonic()
        second = [_start(HOLD, _env(r, 2, port), go) for r in range(2)]
        results = [_finish(p, 30) for p in second]
        seconds = time.monotonic() - start
        open(go, "w").close()
        firsts = [_finish(p, 30) for p in first]
    finally:
        _end(first + second)
    (code0, out0), (code1, out1) = results
    assert code0 == 1 and "cannot listen" in out0 and f"MASTER_PORT={port}" in out0, out0
    assert code1 == 1 and "two processes claim to be process 1" in out1, out1
    assert "give each job its own MASTER_PORT or OFL_JOB_ID" in out1, out1
    assert seconds < 20, f"the second job took {seconds:.1f} s to fail"
    assert [c for c, _ in firsts] == [0, 0], firsts
    assert all("done" in o for _, o in firsts), firsts


def test_a_process_of_another_job_is_refused_at_once(tmp_path):
    """A launched job (its own OFL_JOB_ID) meeting another job's store."""
    port = spawn.free_port()
    go = str(tmp_path / "go")
    first = [_start(HOLD, _env(r, 2, port, OFL_JOB_ID="jobA"), go) for r in range(2)]
    try:
        assert "joined" in first[0].stdout.readline()
        code, out = _finish(_start(HOLD, _env(1, 2, port, OFL_JOB_ID="jobB"), go), 30)
        open(go, "w").close()
        firsts = [_finish(p, 30)[0] for p in first]
    finally:
        _end(first)
    assert code == 1 and "belongs to job 'jobA'" in out and "of job 'jobB'" in out, out
    assert firsts == [0, 0]


def test_a_peer_that_never_joins_is_named_once_at_the_timeout(tmp_path):
    """Process 0 alone, with a 3 s timeout: one error naming process 1 after
    about 3 s, not a second wait while shutting down."""
    port = spawn.free_port()
    code, out = _finish(_start(HOLD, _env(0, 2, port, OFL_WORLD_TIMEOUT_S=3),
                               str(tmp_path / "go")), 60)
    assert code == 1, out
    assert "process(es) 1 of 2 did not join the store" in out, out
    seconds = float(out.split("FAILED after ")[1].split(" s")[0])
    assert 2.5 < seconds < 5.5, out
    assert out.count("did not join") == 1, out


DIES_BEFORE_JOINING = """
import os, sys
if os.environ["RANK"] == "1":
    sys.exit(4)   # dies before it reaches the store
""" + HOLD


def test_under_the_launcher_a_peer_lost_before_joining_is_named_at_once(tmp_path):
    """The launcher tells the store; process 0 names the lost process and
    exits on its own, long before its 60 s timeout and the launcher's SIGTERM."""
    script = tmp_path / "job.py"
    script.write_text(DIES_BEFORE_JOINING)
    logs = tmp_path / "logs"
    env = dict(os.environ, PYTHONPATH=os.path.join(spawn.REPO, "python"))
    start = time.monotonic()
    code, out = _finish(subprocess.Popen(
        [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node", "2",
         "--timeout-s", "10", "--log-dir", str(logs), str(script), str(tmp_path / "go")],
        env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True), 60)
    seconds = time.monotonic() - start
    log0 = (logs / "rank_0.log").read_text()
    assert code == 1, out
    assert "lost process 1 (rank 1): it exited with code 4 (seen by the launcher" in log0, log0
    assert "ranks 0 exited on their own" in out, out
    assert seconds < 25, f"{seconds:.1f} s"


def test_a_save_whose_last_process_dies_after_the_gather_reports_what_is_on_disk(tmp_path):
    """Process 2 dies once its shard is gathered: process 0 publishes the
    checkpoint complete, and every survivor's save returns (no false error).
    The checkpoint on disk holds exactly the survivors' state."""
    directory = str(tmp_path / "ck")
    out = str(tmp_path)
    r = spawn.run_world(["-m", "multiprocess.worker", "save_end", out, directory], 3, 180,
                        extra_env={"OFL_TEST_THREADS": "1"})
    assert not r.timed_out and r.codes[2] == 9, r.outputs
    assert r.codes[:2] == [0, 0], r.outputs
    for p in (0, 1):
        z = np.load(os.path.join(out, f"save_end.p{p}.npz"))
        assert str(z["error"]) == "", f"process {p}: {z['error']}"
    index = sharded_checkpoint.read_index(directory)
    assert index["meta"] == {"step": 3}
    arrays = sharded_checkpoint.load_logical(directory, model="gpt").tensors
    z = np.load(os.path.join(out, "save_end.p0.npz"))
    for name, value in arrays.items():  # variables read back in process 0 (all ranks)
        assert np.array_equal(value, z[f"param:{name}"]), name
    leftovers = [n for n in os.listdir(tmp_path) if n.startswith("ck.")]
    assert leftovers == [], leftovers


def test_processes_that_start_from_different_weights_are_refused_on_every_process(tmp_path):
    r = spawn.run_world(["-m", "multiprocess.worker", "seeds", str(tmp_path)], 2, 180,
                        extra_env={"OFL_TEST_THREADS": "1"}, devices_per_process=2)
    assert not r.timed_out and r.codes == [1, 1], r.outputs
    for p in (0, 1):
        error = str(np.load(os.path.join(str(tmp_path), f"seeds.p{p}.npz"))["error"])
        assert "initial values differ: process 1's variable" in error, error


SLEEPER = """
import os, sys, time
open(os.path.join(sys.argv[1], "pid_%s" % os.environ["RANK"]), "w").write(str(os.getpid()))
time.sleep(60)
"""


def test_children_end_when_the_launcher_is_killed_by_sigkill(tmp_path):
    script = tmp_path / "sleep.py"
    script.write_text(SLEEPER)
    env = dict(os.environ, PYTHONPATH=os.path.join(spawn.REPO, "python"))
    launcher = subprocess.Popen(
        [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node", "2",
         str(script), str(tmp_path)], env=env, start_new_session=True)
    pids = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(pids) < 2:
            pids = [int((tmp_path / f"pid_{r}").read_text()) for r in range(2)
                    if (tmp_path / f"pid_{r}").exists() and (tmp_path / f"pid_{r}").read_text()]
            time.sleep(0.05)
        assert len(pids) == 2
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_running(p) for p in pids):
            time.sleep(0.05)
        alive = [p for p in pids if _running(p)]
    finally:
        for p in pids:
            if _running(p):
                os.kill(p, signal.SIGKILL)
        _end([launcher])
    assert alive == [], f"children still running after the launcher died: {alive}"


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is no zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("addr, words", [
    ("127.0.0.1", "connection refused: nothing listens on that port"),
    ("192.0.2.1", "check MASTER_ADDR"),  # TEST-NET-1: never routed
])
def test_an_unreachable_master_gets_an_honest_message(addr, words):
    port = spawn.free_port()
    env = _env(1, 2, port, OFL_WORLD_TIMEOUT_S=2, MASTER_ADDR=addr)
    code, out = _finish(_start(HOLD, env, "/nonexistent"), 60)
    assert code == 1, out
    assert f"cannot connect to {addr}:{port} within 2000 ms" in out, out
    assert words in out and "in progress" not in out, out


def _hang_job(tmp_path, **extra):
    env = dict(os.environ, OFL_TEST_THREADS="1", PYTHONPATH=os.pathsep.join(
        [os.path.join(spawn.REPO, "python"), os.path.join(spawn.REPO, "tests", "python")]))
    env.pop("OFL_HEARTBEAT_TIMEOUT_S", None)
    env.update({k: str(v) for k, v in extra.items()})
    return subprocess.Popen(
        [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node", "3",
         "--timeout-s", "2", "-m", "multiprocess.worker", "hang", str(tmp_path)],
        env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True)


def _stop_process_1(tmp_path, launcher, finish_s: float = 90):
    """SIGSTOP to process 1 once all train; (its time, exit code, output,
    pids still running), the launcher given ``finish_s`` to end."""
    pids = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(pids) < 3 and launcher.poll() is None:
            for p in range(3):
                f = tmp_path / f"running.{p}"
                if f.exists() and f.read_text():
                    pids[p] = int(f.read_text())
            time.sleep(0.05)
        assert len(pids) == 3, "the job did not start training"
        stopped_at = time.time()
        os.kill(pids[1], signal.SIGSTOP)
        code, out = _finish(launcher, finish_s)
        alive = [p for p in pids.values() if _running(p)]
    finally:
        for p in pids.values():
            if _running(p):
                os.kill(p, signal.SIGKILL)
        _end([launcher])
    return stopped_at, code, out, alive


def test_without_heartbeats_a_hung_peer_is_named_at_the_step_timeout(tmp_path):
    launcher = _hang_job(tmp_path, OFL_HEARTBEAT_TIMEOUT_S=0, OFL_WORLD_TIMEOUT_S=3,
                         OFL_TEST_STEP_TIMEOUT_MS=3000)
    _, code, out, alive = _stop_process_1(tmp_path, launcher)
    assert code == 1 and alive == [], out
    for p in (0, 2):
        error = str(np.load(str(tmp_path / f"hang.p{p}.npz"))["error"])
        assert "process(es) 1 did not vote within 5000 ms (hung or stopped?)" in error, error


def test_a_stopped_process_is_named_within_5_s_and_nothing_is_left_running(tmp_path):
    """SIGSTOP of process 1 mid-training: the others fail within 5 s naming
    it (the store's heartbeat; default timeout), the launcher ends the
    stopped one, and no process of the job is left."""
    launcher = _hang_job(tmp_path)
    stopped_at, code, out, alive = _stop_process_1(tmp_path, launcher, finish_s=60)
    assert code == 1, out
    for p in (0, 2):
        z = np.load(str(tmp_path / f"hang.p{p}.npz"))
        error, seconds = str(z["error"]), float(z["failed_at"]) - stopped_at
        assert "lost process 1 (rank 1): no heartbeat for 4000 ms" in error, error
        assert seconds < 5.0, f"process {p} named it after {seconds:.2f} s"
    assert alive == [], f"still running: {alive}"
    assert "ranks 1 with SIGKILL" in out, out
