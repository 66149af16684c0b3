"""The emulated cluster of the launcher (--emulate-nodes; distributed/emulate.py)
as a user meets it, in subprocesses: every node's processes run in the node's
namespace with their own address and node 0's as the master; every namespace
(with its links and qdiscs) is gone after success, after a failed rank and
after SIGTERM to the launcher, and the machine's own links never change; two
emulated jobs at once do not meet; a shaped link moves data at its rate
(within 10 %); a 2-node x 1-process job trains bitwise as 2 virtual devices
of one process; without the privilege the launcher says so in one line and
makes nothing.

Tests that make namespaces skip, saying why, where this process lacks
CAP_NET_ADMIN / CAP_SYS_ADMIN or the ip and tc commands. Every loop is
bounded; every process started here is ended by its own pid; the only
addresses used are loopback and those of the namespaces made here.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import test_distributed as td
from multiprocess import worker
from oneflow_lite.distributed import emulate

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROG = "python -m oneflow_lite.distributed.launch"
TIMEOUT_S = 60
MISSING = emulate.missing_privilege()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"no emulation here: {MISSING}")

PRELUDE = """
import json, os, socket, subprocess, sys, time
out = sys.argv[1]
rank = int(os.environ["RANK"])
def put(name, text=""):
    tmp = os.path.join(out, name + ".tmp%d" % os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, name))
def wait_for(names, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(os.path.exists(os.path.join(out, n)) for n in names):
            return True
        time.sleep(0.02)
    return False
"""

# Records where it runs; rank 0 serves its job id on its address, the others
# fetch it from MASTER_ADDR (a second job at the same addresses must not answer).
ENV_SCRIPT = PRELUDE + """
names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
         "OFL_JOB_ID", "OFL_BIND_ADDR"]
env = {k: os.environ.get(k) for k in names}
env["netns"] = subprocess.run(["ip", "netns", "identify"], capture_output=True,
                              text=True).stdout.strip()
world = int(os.environ["WORLD_SIZE"])
if rank == 0:
    server = socket.create_server((os.environ["OFL_BIND_ADDR"], 29600))
    server.settimeout(20)
    for _ in range(world - 1):
        conn, _ = server.accept()
        conn.sendall(os.environ["OFL_JOB_ID"].encode())
        conn.close()
else:
    deadline = time.monotonic() + 20
    while True:
        try:
            conn = socket.create_connection((os.environ["MASTER_ADDR"], 29600), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    env["master_job"] = conn.recv(100).decode()
put("rank_%d.json" % rank, json.dumps(env))
"""

# Rank 1 exits 3 once every rank runs; the others sleep (bounded) until stopped.
FAIL_SCRIPT = PRELUDE + """
put("ready_%d" % rank)
wait_for(["ready_%d" % r for r in range(int(os.environ["WORLD_SIZE"]))])
if rank == 1:
    sys.exit(3)
time.sleep(20)
"""

SLEEP_SCRIPT = PRELUDE + """
put("ready_%d" % rank)
time.sleep(20)
"""

# Rank 1 sends MB megabytes to rank 0 three times; rank 0 times each transfer
# from its first byte to the sender's close and writes the rates (bytes/s).
BANDWIDTH_SCRIPT = PRELUDE + """
MB = int(sys.argv[2])
if rank == 0:
    server = socket.create_server((os.environ["OFL_BIND_ADDR"], 29601))
    server.settimeout(30)
    rates = []
    for _ in range(3):
        conn, _ = server.accept()
        total, start = 0, None
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            start = start or time.monotonic()
            total += len(chunk)
        rates.append(total / (time.monotonic() - start))
        conn.close()
    put("rates.json", json.dumps(rates))
else:
    block = b"x" * (1 << 20)
    for _ in range(3):
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection((os.environ["MASTER_ADDR"], 29601), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        for _ in range(MB):
            conn.sendall(block)
        conn.close()
"""


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python"), HERE])
    for name in ("OFL_BIND_ADDR", "OFL_IFACE", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
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


def start(argv, cwd, prefix=()):
    process = subprocess.Popen(
        [*prefix, sys.executable, "-m", "oneflow_lite.distributed.launch", *argv], cwd=cwd,
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _STARTED.append(process)
    return process


def finish(process, timeout=TIMEOUT_S):
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate(timeout=10)
        pytest.fail(f"launcher overran {timeout} s: {err}")
    return process.returncode, out, err


def script(tmp_path, text, name="child.py"):
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "out").mkdir(exist_ok=True)
    return str(path), str(tmp_path / "out")


def wait_for(paths, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(os.path.exists(p) for p in paths):
            return
        time.sleep(0.02)
    pytest.fail(f"not all of {paths} appeared within {seconds} s")


def links():
    """The machine's own links (names), as `ip link` lists them."""
    done = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=20)
    return sorted(line.split(":")[1].strip() for line in done.stdout.splitlines())


def job_id(tag):
    return f"t{os.getpid()}{tag}"


# ----------------------------------------------------------- no privilege

def test_missing_privilege_names_the_capabilities():
    none = "Name:\tpython\nCapEff:\t0000000000000000\n"
    every = "Name:\tpython\nCapEff:\t000001ffffffffff\n"
    only_net = f"CapEff:\t{1 << 12:016x}\n"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        assert "ip" in emulate.missing_privilege(none)
        return
    assert emulate.missing_privilege(every) is None
    message = emulate.missing_privilege(none)
    assert "CAP_NET_ADMIN and CAP_SYS_ADMIN" in message and "\n" not in message
    assert "CAP_SYS_ADMIN" in emulate.missing_privilege(only_net)
    assert "CAP_NET_ADMIN" not in emulate.missing_privilege(only_net)


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="no setpriv to drop capabilities")
def test_without_the_privilege_one_line_and_nothing_made(tmp_path):
    path, out = script(tmp_path, ENV_SCRIPT)
    job = job_id("priv")
    drop = ["setpriv", "--bounding-set", "-net_admin,-sys_admin", "--inh-caps",
            "-net_admin,-sys_admin", "--"]
    before = links()
    code, _, err = finish(start(["--emulate-nodes", "2", "--job-id", job, path, out], tmp_path,
                                prefix=drop))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "CAP_NET_ADMIN and CAP_SYS_ADMIN" in lines[0], err
    assert emulate.job_namespaces(job) == [] and links() == before
    assert os.listdir(out) == []


@pytest.mark.parametrize("argv, expected", [
    (["--emulate-nodes", "0"], "--emulate-nodes 0 is not in 1..250"),
    (["--emulate-nodes", "2", "--emulate-rate", "1gb"], "--emulate-rate 1gb: not a rate"),
    (["--emulate-rate", "1gbit"], "--emulate-rate needs --emulate-nodes"),
    (["--emulate-nodes", "2", "--nnodes", "3", "--master-port", "29500"],
     "--nnodes 3 and --emulate-nodes 2: the emulation sets it"),
])
def test_usage_errors(tmp_path, argv, expected):
    path, out = script(tmp_path, ENV_SCRIPT)
    code, _, err = finish(start([*argv, path, out], tmp_path))
    assert code == 2 and f"{PROG}: error: {expected}" in err.strip().splitlines()[-1], err


def test_parse_rate_reads_tc_units():
    assert emulate.parse_rate("r", "1gbit") == 1e9
    assert emulate.parse_rate("r", "2.5Gbit") == 2.5e9
    assert emulate.parse_rate("r", "800mbit") == 8e8
    with pytest.raises(ValueError, match="--x 10kbps: not a rate"):
        emulate.parse_rate("--x", "10kbps")


# ------------------------------------------------- made, used and removed

@needs_root
def test_nodes_run_in_their_namespaces_and_two_jobs_do_not_collide(tmp_path):
    """Two jobs of 2 nodes x 2 processes at once, same addresses and ports."""
    before = links()
    jobs = {}
    for tag in ("a", "b"):
        (tmp_path / tag).mkdir()
        path, out = script(tmp_path / tag, ENV_SCRIPT)
        jobs[tag] = (start(["--emulate-nodes", "2", "--nproc-per-node", "2", "--job-id",
                            job_id(tag), path, out], tmp_path), out)
    for tag, (process, out) in jobs.items():
        code, _, err = finish(process)
        assert code == 0, err
        job = job_id(tag)
        for rank in range(4):
            env = json.loads(open(os.path.join(out, f"rank_{rank}.json")).read())
            node = rank // 2
            assert env["netns"] == f"ofl-{job}-n{node}", env
            assert env["OFL_BIND_ADDR"] == emulate.address(node), env
            assert (env["MASTER_ADDR"], env["WORLD_SIZE"], env["GROUP_RANK"]) == (
                emulate.address(0), "4", str(node)), env
            assert env["OFL_JOB_ID"] == job
            if rank:
                assert env["master_job"] == job, env
        assert emulate.job_namespaces(job) == []
    assert links() == before


@needs_root
def test_a_failed_rank_removes_everything(tmp_path):
    path, out = script(tmp_path, FAIL_SCRIPT)
    job = job_id("fail")
    before = links()
    code, _, err = finish(start(["--emulate-nodes", "3", "--job-id", job, "--timeout-s", "0.5",
                                 path, out], tmp_path))
    assert code == 1 and "rank 1 (pid" in err and "exited with code 3" in err, err
    assert emulate.job_namespaces(job) == [] and links() == before


@needs_root
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_launcher_removes_everything(tmp_path, signum):
    path, out = script(tmp_path, SLEEP_SCRIPT)
    job = job_id(f"sig{signum}")
    before = links()
    process = start(["--emulate-nodes", "2", "--nproc-per-node", "2", "--job-id", job,
                     "--emulate-rate", "1gbit", path, out], tmp_path)
    wait_for([os.path.join(out, f"ready_{r}") for r in range(4)])
    assert len(emulate.job_namespaces(job)) == 3  # two nodes and the switch
    process.send_signal(signum)
    code, _, err = finish(process)
    assert code == 128 + signum, err
    assert emulate.job_namespaces(job) == [] and links() == before


@needs_root
def test_a_taken_job_id_is_an_error_that_removes_only_its_own(tmp_path):
    path, out = script(tmp_path, SLEEP_SCRIPT)
    job = job_id("taken")
    first = start(["--emulate-nodes", "2", "--job-id", job, path, out], tmp_path)
    wait_for([os.path.join(out, f"ready_{r}") for r in range(2)])
    code, _, err = finish(start(["--emulate-nodes", "2", "--job-id", job, path, out], tmp_path))
    assert code == 1 and f"ip netns add ofl-{job}-n0 failed" in err, err
    assert f"another job with the id {job}?" in err
    assert len(emulate.job_namespaces(job)) == 3  # the first job's, untouched
    first.send_signal(signal.SIGTERM)
    assert finish(first)[0] == 128 + signal.SIGTERM
    assert emulate.job_namespaces(job) == []


# --------------------------------------------------------- shaped link

@needs_root
@pytest.mark.parametrize("shape", [
    ["--emulate-nodes", "2", "--emulate-rate", "200mbit"],  # between nodes
    ["--emulate-nodes", "1", "--nproc-per-node", "2", "--emulate-intra-rate", "200mbit"],
])
def test_a_shaped_link_moves_data_at_its_rate(tmp_path, shape):
    """200 Mbit/s = 25 MB/s: three 8 MB transfers from rank 1 to rank 0
    (between two nodes; or inside one node, over its shaped loopback); the
    best within 10 % of the rate (a busy machine only slows a transfer, so
    the best is the one the shaping alone decides)."""
    path, out = script(tmp_path, BANDWIDTH_SCRIPT)
    code, _, err = finish(start([*shape, path, out, "8"], tmp_path))
    assert code == 0, err
    rates = json.loads(open(os.path.join(out, "rates.json")).read())
    assert abs(max(rates) / 25e6 - 1) <= 0.10, rates


# ------------------------------------------- same training as one process

@needs_root
def test_two_nodes_train_as_two_virtual_devices_bitwise(tmp_path):
    """GPT under a random 2-device strategy: 2 emulated nodes x 1 process
    (Gloo over the shaped link) against 2 virtual devices of this process
    (in-process communicator); both reduce in one order, so bitwise."""
    model, searcher = "gpt", "5"
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = finish(start(["--emulate-nodes", "2", "--emulate-rate", "1gbit", "-m",
                                 "multiprocess.worker", "model", str(out), model, searcher, "2",
                                 "2"], tmp_path), timeout=240)
    assert code == 0, err
    s, g, params, data = worker.run_model(model, searcher, 2, [2], 2)
    losses = td.train(s, g, data)
    for p in range(2):
        z = np.load(out / f"{model}-{searcher}-2.p{p}.npz")
        assert np.array_equal(z["losses"], np.asarray(losses, np.float64)), (z["losses"], losses)
        for name in params:
            want = s.get_variable(name)
            assert np.array_equal(z[f"param:{name}"], want), name


# ------------------------------------------------- calibration on the emulation

def _calibrate(tmp_path, *args):
    path = tmp_path / "cluster.pbtxt"
    done = subprocess.run(
        [sys.executable, "-m", "oneflow_lite.calibrate", "--out", str(path), "--no-kernels",
         "--allreduce-mb", "4", "--reps", "3", "--matmul-size", "64", "--memcpy-mb", "1",
         *args], env=_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    from oneflow_lite import _C

    text = path.read_text()
    return _C.load_cluster(str(path)).levels(), _collective_rates(text), text


def _collective_rates(text):
    """Level name -> {collective kind: bytes/s} from a Cluster's text."""
    import re

    rates = {}
    for block in text.split("levels {")[1:]:
        name = re.search(r'name: "(\w+)"', block).group(1)
        rates[name] = {kind: float(gbps) * 1e9 for kind, gbps in re.findall(
            r'kind: "(\w+)"\s+bandwidth_gbps: ([0-9.e+-]+)', block)}
    return rates


@needs_root
def test_calibration_measures_the_shaped_link(tmp_path):
    """2 emulated nodes x 1 process over 400 Mbit/s = 0.05 GB/s: the network
    level's fastest collective (per device, through 6 sizes) within 10 % of
    the link's rate; the slower ones are their algorithms' (all-gather sends
    one message each way), never faster than the link."""
    levels, by_level, text = _calibrate(tmp_path, "--nodes", "2", "--processes", "1",
                                        "--emulate-rate", "400mbit")
    (level,) = levels
    assert (level["name"], level["size"]) == ("network", 2)
    rates = by_level["network"]
    assert len(rates) == 4
    assert abs(max(rates.values()) / 0.05e9 - 1) <= 0.10, rates
    assert all(r <= 1.10 * 0.05e9 for r in rates.values()), rates
    assert "# network all_reduce (2 processes): 8 B" in text
    assert "4194304 B" in text


@needs_root
def test_calibration_of_nodes_of_two_processes_has_two_levels(tmp_path):
    """2 nodes x 2 processes: a node level of 2 devices (their loopback) and a
    network level of 4, the slower, no collective faster than the link
    (0.05 GB/s + 10 %). The two groups of the network level start each size
    together but drift apart within it, so a process gets between half the
    link (both groups sending) and all of it (see the report)."""
    levels, by_level, _ = _calibrate(tmp_path, "--nodes", "2", "--processes", "2",
                                     "--emulate-rate", "400mbit")
    node, network = levels
    assert (node["name"], node["size"], network["name"], network["size"]) == (
        "node", 2, "network", 4)
    assert network["bandwidth_bytes_per_s"] < node["bandwidth_bytes_per_s"]
    assert max(by_level["network"].values()) <= 1.10 * 0.05e9, by_level


# ------------------------------------------------------------- the main job

def test_main_job_emulated_needs_a_calibrated_cluster(tmp_path):
    done = subprocess.run([sys.executable, "-m", "oneflow_lite.train", "--nproc", "2",
                           "--emulate-nodes", "2", "--steps", "1"], env=_env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 2, done.stderr
    assert "--emulate-nodes with --cluster local: calibrate the emulation first" in (
        done.stderr.strip().splitlines()[-1])


@needs_root
def test_main_job_runs_on_two_emulated_nodes(tmp_path):
    """python -m oneflow_lite.train --nproc 2 --emulate-nodes 2 launches itself
    on the emulation and trains with the losses of 2 virtual devices of one
    process (same plan: the preset, on the same cluster)."""
    common = [sys.executable, "-m", "oneflow_lite.train", "--model", "vgg", "--steps", "2",
              "--searcher", "data_parallel", "--cluster", "v100_8gpu", "--threads", "2"]
    reports = {}
    for name, extra in (("one", ["--devices", "2"]),
                        ("emulated", ["--nproc", "2", "--emulate-nodes", "2",
                                      "--emulate-rate", "1gbit"])):
        path = tmp_path / f"{name}.json"
        done = subprocess.run([*common, *extra, "--report", str(path)], env=_env(),
                              cwd=tmp_path, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        reports[name] = json.loads(path.read_text())["runs"][0]
    assert reports["one"]["losses"] == reports["emulated"]["losses"]


def test_levels_share_a_process_figures_among_its_devices():
    """2 nodes x 1 process x 2 devices: the network level spans 4 devices and
    each gets half of what its process measured (both send through it)."""
    from oneflow_lite.calibrate import ProcessLayout, levels_of

    measured = [{"level": "network", "processes": 2, "kind": kind, "bandwidth_gbps": gbps,
                 "latency_us": 80.0, "points": []}
                for kind, gbps in (("all_reduce", 0.01), ("all_gather", 0.006))]
    (level,) = levels_of(ProcessLayout(1, 2, 2, "80mbit"), measured)
    assert (level["name"], level["size"]) == ("network", 4)
    assert level["bandwidth_gbps"] == pytest.approx(0.005) and level["latency_us"] == 80.0
    assert [c["bandwidth_gbps"] for c in level["collectives"]] == pytest.approx([0.005, 0.003])
    (one,) = levels_of(ProcessLayout(1, 2, 1, "80mbit"), measured)
    assert (one["size"], one["bandwidth_gbps"]) == (2, pytest.approx(0.01))


@needs_root
def test_a_delay_needs_netem_and_a_failed_setup_leaves_nothing(tmp_path):
    """--emulate-delay-ms: runs where the kernel has netem; elsewhere one line
    says so, and what was made before the failing step is removed."""
    path, out = script(tmp_path, SLEEP_SCRIPT.replace("time.sleep(20)", "pass"))
    job = job_id("delay")
    code, _, err = finish(start(["--emulate-nodes", "2", "--emulate-delay-ms", "1",
                                 "--emulate-rate", "1gbit", "--job-id", job, path, out],
                                tmp_path))
    assert code == 0 or (code == 1 and "this kernel has no netem qdisc" in err), err
    assert emulate.job_namespaces(job) == []
