"""The launcher (python -m oneflow_lite.distributed.launch) as a user meets
it, in subprocesses: the variables every rank gets (one node; two nodes on
loopback; two jobs side by side), a rank that exits 3 or is SIGKILLed (the
one-line verdict names it; the others stop on their own, by SIGTERM or by
SIGKILL), signals forwarded once, output to log files or prefixed, usage
errors (exit 2, one line, nothing started), and World.from_env's checks.

The child scripts are written into tmp_path; their loops are bounded (they
end within 20 s on their own), every process a test starts is ended by its
own pid, and every wait has a timeout."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from oneflow_lite.distributed import World, free_port
from oneflow_lite.distributed.launch import LaunchOptions, launch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROG = "python -m oneflow_lite.distributed.launch"
TIMEOUT_S = 30

# argv[1]: the folder for this rank's files. Common helpers of the scripts.
PRELUDE = """
import json, os, signal, sys, time
out = sys.argv[1]
rank = int(os.environ["RANK"])
def put(name, text=""):
    with open(os.path.join(out, name + ".tmp%d" % os.getpid()), "w") as f:
        f.write(text)
    os.replace(os.path.join(out, name + ".tmp%d" % os.getpid()), os.path.join(out, name))
def wait_for(names, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(os.path.exists(os.path.join(out, n)) for n in names):
            return True
        time.sleep(0.02)
    return False
def sleep_bounded(seconds=20, until=lambda: False):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        time.sleep(0.02)
"""

ENV_SCRIPT = PRELUDE + """
names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
         "MASTER_PORT", "OFL_JOB_ID", "OFL_DEVICES_PER_PROCESS", "OFL_BIND_ADDR", "OFL_IFACE",
         "OFL_TEST_MARK"]
env = {k: os.environ.get(k) for k in names}
env["argv"] = sys.argv[2:]
put("rank_%d.json" % rank, json.dumps(env))
"""

# Rank 1 exits 3 once the others run; ranks 0 and 2 notice that its pid is
# gone (as the runtime notices a lost rank: after the launcher has reaped it)
# and exit 1; rank 3 sleeps on.
EXIT3_SCRIPT = PRELUDE + """
put("ready_%d" % rank, str(os.getpid()))
wait_for(["ready_0", "ready_1", "ready_2", "ready_3"])
if rank == 1:
    sys.exit(3)
def gone(pid=int(open(os.path.join(out, "ready_1")).read())):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
if rank in (0, 2):
    sleep_bounded(until=gone)
    sys.exit(1)
sleep_bounded()
put("done_%d" % rank)
"""

# Rank 2 SIGKILLs itself once the others run; rank 0 ignores SIGTERM.
KILL9_SCRIPT = PRELUDE + """
if rank == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
put("ready_%d" % rank, str(os.getpid()))
if rank == 2:
    wait_for(["ready_0", "ready_1"])
    os.kill(os.getpid(), signal.SIGKILL)
sleep_bounded()
put("done_%d" % rank)
"""

# Records every SIGINT, SIGTERM and SIGUSR1 it gets (one line each); after
# SIGINT or SIGTERM it waits 0.5 s for a duplicate, then exits 0.
SIGNAL_SCRIPT = PRELUDE + """
stop = []
def on_signal(signum, frame):
    with open(os.path.join(out, "signals_%d" % rank), "a") as f:
        f.write(signal.Signals(signum).name + "\\n")
    if signum != signal.SIGUSR1:
        stop.append(time.monotonic())
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
    signal.signal(s, on_signal)
put("ready_%d" % rank, "%d %d" % (os.getpid(), os.getsid(0)))
sleep_bounded(until=lambda: bool(stop))
sleep_bounded(0.5)
sys.exit(0 if stop else 5)
"""

OUTPUT_SCRIPT = """
import os, sys
print("out from", os.environ["RANK"])
print("err from", os.environ["RANK"], file=sys.stderr)
"""


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    for name in ("OFL_BIND_ADDR", "OFL_IFACE", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
    env.update(extra)
    return env


_STARTED = []


@pytest.fixture(autouse=True)
def _end_launchers():
    """Ends, by its pid, every launcher a test started and left running."""
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def start(argv, cwd, session=False, **extra_env):
    process = subprocess.Popen(
        [sys.executable, "-m", "oneflow_lite.distributed.launch", *argv], cwd=cwd,
        env=_env(**extra_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=session)
    _STARTED.append(process)
    return process


def finish(process, timeout=TIMEOUT_S):
    """(returncode, stdout, stderr, seconds); kills the launcher by its pid
    if it overruns."""
    begin = time.monotonic()
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate(timeout=10)
        pytest.fail(f"launcher overran {timeout} s: {err}")
    return process.returncode, out, err, time.monotonic() - begin


def run(argv, cwd, **extra_env):
    return finish(start(argv, cwd, **extra_env))


def script(tmp_path, text, name="child.py"):
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "out").mkdir(exist_ok=True)
    return str(path), str(tmp_path / "out")


def wait_for(paths, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(os.path.exists(p) for p in paths):
            return
        time.sleep(0.02)
    pytest.fail(f"not all of {paths} appeared within {seconds} s")


def ranks_env(out):
    return {int(f[5:-5]): json.loads(open(os.path.join(out, f)).read())
            for f in os.listdir(out) if f.startswith("rank_") and f.endswith(".json")}


def verdict(err):
    lines = err.strip().splitlines()
    assert lines, "the launcher printed nothing on stderr"
    assert "Traceback" not in err, err
    return lines[-1]


def test_every_rank_gets_its_variables_and_two_jobs_do_not_collide(tmp_path):
    path, out = script(tmp_path, ENV_SCRIPT)
    other = tmp_path / "other"
    other.mkdir()
    jobs = [start(["--nproc-per-node", "3", path, out, "x", "--nproc-per-node", "9"], tmp_path,
                  OFL_TEST_MARK="kept"),
            start(["--nproc-per-node", "2", "-m", "child", str(other)], tmp_path)]
    for job in jobs:
        code, _, err, _ = finish(job)
        assert code == 0, err
    env = ranks_env(out)
    assert sorted(env) == [0, 1, 2]
    for rank, e in env.items():
        assert (e["RANK"], e["LOCAL_RANK"]) == (str(rank), str(rank))
        assert (e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"]) == ("3", "3", "0")
        assert (e["MASTER_ADDR"], e["OFL_DEVICES_PER_PROCESS"]) == ("127.0.0.1", "1")
        assert e["OFL_TEST_MARK"] == "kept"  # the rest of the environment is the parent's
        assert e["argv"] == ["x", "--nproc-per-node", "9"]
        world = World.from_env({k: v for k, v in e.items() if isinstance(v, str)})
        assert (world.rank, world.world_size, world.is_distributed) == (rank, 3, True)
    assert len({e["MASTER_PORT"] for e in env.values()}) == 1
    assert 1 <= int(env[0]["MASTER_PORT"]) <= 65535
    assert len({e["OFL_JOB_ID"] for e in env.values()}) == 1 and env[0]["OFL_JOB_ID"]
    second = ranks_env(str(other))  # the -m job, run at the same time
    assert sorted(second) == [0, 1] and second[1]["WORLD_SIZE"] == "2"
    assert second[0]["OFL_JOB_ID"] != env[0]["OFL_JOB_ID"]
    assert second[0]["MASTER_PORT"] != env[0]["MASTER_PORT"]


def test_two_nodes_on_loopback_cover_every_rank_once(tmp_path):
    path, out = script(tmp_path, ENV_SCRIPT)
    port = str(free_port("127.0.0.1"))
    nodes = [start(["--nproc-per-node", "3", "--nnodes", "2", "--node-rank", str(node),
                    "--master-addr", "127.0.0.1", "--master-port", port,
                    "--devices-per-process", "2", "--bind-addr", "127.0.0.1", path, out],
                   tmp_path) for node in (0, 1)]
    for node in nodes:
        code, _, err, _ = finish(node)
        assert code == 0, err
    env = ranks_env(out)
    assert sorted(env) == list(range(6))
    for rank, e in env.items():
        assert e["GROUP_RANK"] == str(rank // 3) and e["LOCAL_RANK"] == str(rank % 3)
        assert (e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"]) == ("6", "3")
        assert (e["MASTER_PORT"], e["OFL_DEVICES_PER_PROCESS"]) == (port, "2")
        assert (e["OFL_BIND_ADDR"], e["OFL_IFACE"]) == ("127.0.0.1", None)
    assert len({e["OFL_JOB_ID"] for e in env.values()}) == 1  # both nodes derive the same id


def test_a_rank_that_exits_3_is_named_and_the_others_stop(tmp_path):
    path, out = script(tmp_path, EXIT3_SCRIPT)
    code, _, err, seconds = run(["--nproc-per-node", "4", "--timeout-s", "3", path, out],
                                tmp_path)
    pid = open(os.path.join(out, "ready_1")).read()
    assert code == 1
    assert verdict(err) == (f"launch: rank 1 (pid {pid}) exited with code 3; ranks 0, 2 exited "
                            "on their own; stopped ranks 3 with SIGTERM after 3 s")
    assert not os.path.exists(os.path.join(out, "done_3"))
    assert seconds < 15


def test_a_rank_killed_by_sigkill_is_named_and_sigterm_is_escalated(tmp_path):
    path, out = script(tmp_path, KILL9_SCRIPT)
    code, _, err, seconds = run(["--nproc-per-node", "3", "--timeout-s", "0.5", path, out],
                                tmp_path)
    pid = open(os.path.join(out, "ready_2")).read()
    assert code == 1
    assert verdict(err) == (f"launch: rank 2 (pid {pid}) was killed by SIGKILL; stopped ranks "
                            "1 with SIGTERM after 0.5 s; stopped ranks 0 with SIGKILL after 3 s "
                            "more")
    assert not any(os.path.exists(os.path.join(out, f"done_{r}")) for r in (0, 1))
    assert seconds < 15


@pytest.mark.parametrize("how", ["sigterm_and_sigusr1", "ctrl_c_to_the_group"])
def test_signals_are_forwarded_once_to_every_rank(tmp_path, how):
    path, out = script(tmp_path, SIGNAL_SCRIPT)
    launcher = start(["--nproc-per-node", "2", "--timeout-s", "5", path, out], tmp_path,
                     session=True)
    wait_for([os.path.join(out, f"ready_{r}") for r in (0, 1)])
    for rank in (0, 1):  # its own session: a terminal's Ctrl-C reaches the launcher alone
        pid, session = open(os.path.join(out, f"ready_{rank}")).read().split()
        assert pid == session
    if how == "ctrl_c_to_the_group":  # as a terminal delivers Ctrl-C
        os.killpg(launcher.pid, signal.SIGINT)
        expected, name = ["SIGINT"], "SIGINT"
    else:
        os.kill(launcher.pid, signal.SIGUSR1)
        wait_for([os.path.join(out, f"signals_{r}") for r in (0, 1)])
        os.kill(launcher.pid, signal.SIGTERM)
        expected, name = ["SIGUSR1", "SIGTERM"], "SIGTERM"
    code, _, err, seconds = finish(launcher)
    assert code == 128 + signal.Signals[name].value
    assert verdict(err) == (f"launch: received {name} and forwarded it to ranks 0, 1; ranks 0, "
                            "1 exited on their own")
    for rank in (0, 1):
        assert open(os.path.join(out, f"signals_{rank}")).read().split() == expected
    assert seconds < 5  # they stopped on their own, well before --timeout-s


def test_log_dir_and_tee_prefix(tmp_path):
    path, _ = script(tmp_path, OUTPUT_SCRIPT)
    logs = tmp_path / "logs" / "deeper"
    code, stdout, err, _ = run(["--nproc-per-node", "2", "--log-dir", str(logs), path], tmp_path)
    assert code == 0, err
    for rank in (0, 1):
        text = (logs / f"rank_{rank}.log").read_text()
        assert sorted(text.splitlines()) == [f"err from {rank}", f"out from {rank}"]
    assert "from" not in stdout + err
    code, stdout, err, _ = run(["--nproc-per-node", "2", "--tee-prefix", path], tmp_path)
    assert code == 0, err
    assert sorted(stdout.splitlines()) == sorted(
        f"[rank {r}] {what} from {r}" for r in (0, 1) for what in ("out", "err"))
    (logs / "rank_1.log").unlink()
    (logs / "rank_1.log").mkdir()  # rank 1's log cannot be opened: nothing runs on
    code, _, err, _ = run(["--nproc-per-node", "2", "--log-dir", str(logs), path], tmp_path)
    assert code == 1
    assert verdict(err) == (f"launch: cannot start the processes: [Errno 21] Is a directory: "
                            f"'{logs / 'rank_1.log'}'")


USAGE = [
    (["--nproc-per-node", "0"], {}, "--nproc-per-node 0 is not positive"),
    (["--nnodes", "2", "--node-rank", "2", "--master-port", "29500"], {},
     "--node-rank 2 is not in 0..1 (--nnodes 2)"),
    (["--nnodes", "2", "--node-rank", "1"], {},
     "--nnodes 2 needs --master-port: every node must name the same port of node 0"),
    (["--iface", "nosuchif0"], {}, "--iface nosuchif0: no such network interface (this machine "
                                   "has: "),
    ([], {"OFL_IFACE": "nosuchif0"}, "OFL_IFACE=nosuchif0: no such network interface"),
    (["--bind-addr", "not-an-ip"], {}, "--bind-addr not-an-ip: not an IPv4 or IPv6 address"),
    (["--bind-addr", "192.0.2.1"], {}, "--bind-addr 192.0.2.1: not an address of this machine"),
    (["--bind-addr", "127.0.0.1", "--iface", "lo"], {},
     "--bind-addr 127.0.0.1 and --iface lo: name an address or an interface, not both"),
    (["--master-port", "70000"], {}, "--master-port 70000 is not a port (1..65535)"),
    (["--timeout-s", "nan"], {}, "--timeout-s nan must be a finite number >= 0"),
    (["--job-id", "a/b"], {}, "--job-id a/b: a job id is 1 to 64 characters"),
    (["--log-dir", "child.py"], {}, "--log-dir child.py: is a file, not a folder"),
]


def test_usage_errors_exit_2_with_one_line_and_start_nothing(tmp_path):
    """All cases in one test: one launcher per case, in parallel."""
    path, out = script(tmp_path, ENV_SCRIPT)
    jobs = [(start([*argv, path, out], tmp_path, **env), expected)
            for argv, env, expected in USAGE]
    jobs.append((start(["missing.py"], tmp_path), "missing.py: no such file (a module needs -m)"))
    for job, expected in jobs:
        code, _, err, _ = finish(job)
        assert code == 2, (expected, err)
        assert verdict(err).startswith(f"{PROG}: error: {expected}"), err
    assert os.listdir(out) == []


def test_launch_from_python(tmp_path):
    code = "import os, sys; sys.exit(int(os.environ['RANK']) * 4)"
    result = launch([sys.executable, "-c", code], LaunchOptions(nproc_per_node=2, timeout_s=2))
    assert (result.exit_code, result.failed_rank, result.returncodes) == (1, 1, {0: 0, 1: 4})
    assert result.message.startswith("launch: rank 1 (pid ")
    assert "exited with code 4" in result.message
    ok = launch([sys.executable, "-c", "pass"], LaunchOptions(nproc_per_node=3))
    assert (ok.exit_code, ok.message, ok.returncodes) == (0, None, {0: 0, 1: 0, 2: 0})
    with pytest.raises(ValueError, match="--nproc-per-node 0 is not positive"):
        launch(["true"], LaunchOptions(nproc_per_node=0))


GOOD = {"RANK": "4", "WORLD_SIZE": "6", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "3",
        "GROUP_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def test_world_from_env_reads_a_launched_process_and_a_lone_one():
    world = World.from_env(dict(GOOD, OFL_JOB_ID="job-1", OFL_DEVICES_PER_PROCESS="2",
                                OFL_IFACE="lo"))
    assert world == World(rank=4, world_size=6, local_rank=1, local_world_size=3, node_rank=1,
                          master_addr="10.0.0.1", master_port=29500, job_id="job-1",
                          devices_per_process=2, bind_addr=None, iface="lo")
    assert World.from_env({}) == World() and not World().is_distributed


@pytest.mark.parametrize("change, message", [
    ({"RANK": "6"}, "RANK=6 is not below WORLD_SIZE=6"),
    ({"RANK": "x"}, "RANK='x' is not an integer"),
    ({"RANK": "-1"}, "RANK=-1 is below 0"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0 is below 1"),
    ({"LOCAL_RANK": "3"}, "LOCAL_RANK=3 is not below LOCAL_WORLD_SIZE=3"),
    ({"LOCAL_WORLD_SIZE": "7"}, "LOCAL_WORLD_SIZE=7 exceeds WORLD_SIZE=6"),
    ({"GROUP_RANK": "6"}, "GROUP_RANK=6 is not below WORLD_SIZE=6"),
    ({"MASTER_ADDR": " "}, "MASTER_ADDR='' is empty"),
    ({"MASTER_PORT": "0"}, "MASTER_PORT=0 is below 1"),
    ({"MASTER_PORT": "65536"}, "MASTER_PORT=65536 is not a port"),
    ({"LOCAL_RANK": None}, "LOCAL_RANK not"),
    ({"OFL_DEVICES_PER_PROCESS": "0"}, "OFL_DEVICES_PER_PROCESS=0 is below 1"),
    ({"OFL_JOB_ID": "a b"}, "OFL_JOB_ID=a b: a job id is"),
    ({"OFL_IFACE": "nosuchif0"}, "OFL_IFACE=nosuchif0: no such network interface"),
    ({"OFL_BIND_ADDR": "300.1.1.1"}, "OFL_BIND_ADDR=300.1.1.1: not an IPv4 or IPv6 address"),
    ({"OFL_BIND_ADDR": "127.0.0.1", "OFL_IFACE": "lo"}, "are both set"),
])
def test_world_from_env_names_the_bad_variable(change, message):
    env = {k: v for k, v in dict(GOOD, **change).items() if v is not None}
    with pytest.raises(ValueError) as info:
        World.from_env(env)
    assert message in str(info.value)


def test_free_port_is_bindable():
    import socket
    port = free_port("127.0.0.1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
