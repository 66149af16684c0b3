"""One plan across processes: the same model and strategy on
several processes (Gloo between them, in-process collectives inside each)
gives bitwise the losses and parameters of the same ranks as virtual devices
of one process (the oracle, itself checked against one device and numpy in
test_distributed.py): the Gloo and in-process communicators share their
algorithms and summation order, and every rank runs one kernel thread in
both. Also: a process killed by SIGKILL mid-step stops every other within
10 s with an error naming its rank, and the launcher exits non-zero; a
process given another strategy is a plan-mismatch error on every process;
two "hosts" (network namespaces joined by a veth pair, made here) run one
job over their own addresses.

Worlds are started by multiprocess/spawn.py (loopback, a free port and a job
id each; every process ended by its pid; every wait bounded); each process
runs multiprocess/worker.py and writes what it saw to an .npz file.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

import test_distributed as td
from multiprocess import spawn, worker
from oneflow_lite import _C, sharded_checkpoint

PROPERTY_CASES = int(os.environ.get("OFL_MP_CASES", "40"))


def world_of(case: dict, index: int):
    """(processes, devices per process) for a case's device count."""
    d = case["devices"]
    if d == 8:
        return 4, 2
    if d == 4 and index % 2:
        return 2, 2
    return d, 1


def oracle_case(index: int):
    """Case `index` on virtual devices of this process: (losses, parameters)."""
    return worker.run_case(index, threads=td.make_case(index)["devices"])


def assert_same(where: str, result: str, losses, values: dict) -> None:
    z = np.load(result)
    assert np.array_equal(z["losses"], np.asarray(losses, np.float64)), \
        f"{where}: losses {z['losses']} vs one process {losses}"
    for name, want in values.items():
        got = z[f"param:{name}"]
        assert got.dtype == want.dtype and np.array_equal(got, want), \
            f"{where}: parameter {name} differs (max abs {np.max(np.abs(got - want))})"


def run_ok(args, nproc: int, devices_per_process: int, timeout: float, **kw) -> spawn.Result:
    r = spawn.run_world(args, nproc, timeout, devices_per_process=devices_per_process,
                        extra_env={"OFL_TEST_THREADS": str(devices_per_process)}, **kw)
    assert not r.timed_out and r.codes == [0] * nproc, \
        f"exit codes {r.codes} after {r.seconds:.1f} s\n" + "\n".join(
            f"--- process {p}:\n{o[-3000:]}" for p, o in enumerate(r.outputs))
    return r


def test_property_cases_match_one_process(tmp_path, capsys):
    """test_distributed's first OFL_MP_CASES seeded cases (random strategies,
    MLP/GPT/VGG, pipelines with micro-batches included), each on a world of
    processes: 2 or 3 processes of one device, 4 of one, 2 of two, 4 of two."""
    worlds: dict = {}
    for i in range(PROPERTY_CASES):
        worlds.setdefault(world_of(td.make_case(i), i), []).append(i)
    with capsys.disabled():
        print(f"\n[test_multiprocess] seed {td.BASE_SEED}: {PROPERTY_CASES} cases on worlds "
              + ", ".join(f"{p}x{k}: {len(c)}" for (p, k), c in sorted(worlds.items())))
    for (nproc, k), cases in sorted(worlds.items()):
        run_ok(["-m", "multiprocess.worker", "cases", str(tmp_path),
                ",".join(map(str, cases))], nproc, k, timeout=300)
        for i in cases:
            losses, values = oracle_case(i)
            case = td.make_case(i)
            for p in range(nproc):
                where = (f"case {i} ({case['model']}, {case['devices']} devices "
                         f"{case['hierarchy']}, {case['stages']} stages x "
                         f"{case['micro_batches']} micro-batches) on {nproc} processes x {k}, "
                         f"process {p}")
                assert_same(where, str(tmp_path / f"case{i}.p{p}.npz"), losses, values)


@pytest.mark.parametrize("model,searcher,hierarchy,nproc,k", [
    ("gpt", "autoddl", [4], 4, 1),
    ("gpt", "5", [2, 2], 4, 1),
    ("vgg", "autoddl", [4], 4, 1),
    ("vgg", "9", [2, 2], 4, 1),
    ("gpt", "7", [2, 2], 2, 2),   # axis-0 groups span the processes, axis-1 groups stay inside
    ("gpt", "3", [4], 2, 2),
])
def test_models_match_one_process(tmp_path, model, searcher, hierarchy, nproc, k):
    spec = ",".join(map(str, hierarchy))
    run_ok(["-m", "multiprocess.worker", "model", str(tmp_path), model, searcher,
            str(nproc * k), spec], nproc, k, timeout=240)
    s, g, params, data = worker.run_model(model, searcher, nproc * k, hierarchy, nproc * k)
    losses = td.train(s, g, data)
    values = {p: s.get_variable(p) for p in params}
    for p in range(nproc):
        where = f"{model} {searcher} on {hierarchy}, {nproc} processes x {k}, process {p}"
        z = np.load(tmp_path / f"{model}-{searcher}-{spec}.p{p}.npz")
        assert str(z["strategy"]) == s.strategy(), f"{where}: another strategy"
        assert_same(where, str(tmp_path / f"{model}-{searcher}-{spec}.p{p}.npz"), losses, values)


def test_killed_process_stops_every_other_within_10_s(tmp_path):
    """SIGKILL of process 2 a moment into a step, under the launcher: the
    other three stop with an error naming rank 2 within 10 s of its death,
    and the launcher exits 1 naming rank 2 and SIGKILL."""
    env = spawn.world_env(0, 1, 0, "x")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "OFL_JOB_ID", "OFL_DEVICES_PER_PROCESS"):
        env.pop(key, None)
    cmd = [sys.executable, "-m", "oneflow_lite.distributed.launch", "--nproc-per-node", "4",
           "--timeout-s", "20", "-m", "multiprocess.worker", "kill", str(tmp_path), "2"]
    launcher = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
    try:
        out, err = launcher.communicate(timeout=180)
    finally:
        spawn.kill([launcher])
    assert launcher.returncode == 1, f"launcher exit {launcher.returncode}\n{out}\n{err}"
    assert "rank 2" in err and "SIGKILL" in err, err
    stops = []
    for p in (0, 1, 3):
        z = np.load(tmp_path / f"kill.p{p}.npz")
        error = str(z["error"])
        assert "lost process 2 (rank 2)" in error or "lost rank" in error, \
            f"process {p}: {error}"
        stops.append(float(z["stopped"]))
    died = float(open(tmp_path / "kill.died").read())
    print(f"killed at {died:.3f}; the others stopped after "
          + ", ".join(f"{s - died:.2f} s" for s in stops))
    assert max(stops) - died < 10.0, (died, stops)


def test_plan_mismatch_is_an_error_on_every_process(tmp_path):
    r = spawn.run_world(["-m", "multiprocess.worker", "mismatch", str(tmp_path)], 4, 120)
    assert not r.timed_out and r.codes == [1, 1, 1, 1], (r.codes, r.outputs)
    for p in range(4):
        error = str(np.load(tmp_path / f"mismatch.p{p}.npz")["error"])
        assert error.startswith("plan mismatch: process 1's plan differs from process 0's at "
                                "task "), f"process {p}: {error}"


# ---------------------------------------------------------------- two hosts

def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


@pytest.fixture
def two_hosts(capsys):
    """Two network namespaces joined by a veth pair, 10.x.y.1 and .2 (made
    here, removed after); None when they cannot be made (not root, no ip)."""
    tag = uuid.uuid4().hex[:6]
    hosts = [f"ofl{tag}h0", f"ofl{tag}h1"]
    links = [f"v{tag}a", f"v{tag}b"]
    subnet = f"10.{int(tag[:2], 16) % 200 + 20}.{int(tag[2:4], 16)}"
    addrs = [f"{subnet}.1", f"{subnet}.2"]
    made = []
    try:
        if shutil.which("ip") is None:
            raise OSError("no ip command")
        steps = [("netns", "add", hosts[0]), ("netns", "add", hosts[1]),
                 ("link", "add", links[0], "type", "veth", "peer", "name", links[1]),
                 ("link", "set", links[0], "netns", hosts[0]),
                 ("link", "set", links[1], "netns", hosts[1])]
        for h, link, a in zip(hosts, links, addrs):
            steps += [("-n", h, "addr", "add", f"{a}/24", "dev", link),
                      ("-n", h, "link", "set", link, "up"), ("-n", h, "link", "set", "lo", "up")]
        for step in steps:
            r = _ip(*step)
            if r.returncode != 0:
                raise OSError(f"ip {' '.join(step)}: {r.stderr.strip()}")
            if step[:2] == ("netns", "add"):
                made.append(step[2])
        yield {"hosts": hosts, "addrs": addrs}
    except OSError as e:
        with capsys.disabled():  # in every log: which path this run took
            print(f"\n[two hosts] network namespaces cannot be made here ({e}): loopback "
                  f"addresses 127.0.0.1 and 127.0.0.2 instead")
        yield None
    finally:
        for h in made:
            _ip("netns", "del", h)


def test_two_hosts_with_two_processes_each(tmp_path, two_hosts, capsys):
    """4 processes as 2 hosts x 2 (their own addresses when namespaces can be
    made, else loopback addresses) match 4 virtual devices of one process."""
    model, searcher, hierarchy = "gpt", "5", [2, 2]
    spec = "2,2"
    args = ["-m", "multiprocess.worker", "model", str(tmp_path), model, searcher, "4", spec]
    if two_hosts is not None:
        hosts, addrs = two_hosts["hosts"], two_hosts["addrs"]
        host_of = [0, 0, 1, 1]
        prefix = [["ip", "netns", "exec", hosts[h]] for h in host_of]
        rank_env = [{"OFL_BIND_ADDR": addrs[h]} for h in host_of]
        with capsys.disabled():  # in every log: which path this run took
            print(f"\n[two hosts] network namespaces {hosts} joined by a veth pair, at {addrs}")
        run_ok(args, 4, 1, timeout=240, prefix=prefix, rank_env=rank_env, master=addrs[0],
               port=29500)
    else:
        rank_env = [{"OFL_BIND_ADDR": "127.0.0.1"}, {"OFL_BIND_ADDR": "127.0.0.1"},
                    {"OFL_BIND_ADDR": "127.0.0.2"}, {"OFL_BIND_ADDR": "127.0.0.2"}]
        run_ok(args, 4, 1, timeout=240, rank_env=rank_env)
    s, g, params, data = worker.run_model(model, searcher, 4, hierarchy, 4)
    losses = td.train(s, g, data)
    values = {p: s.get_variable(p) for p in params}
    for p in range(4):
        assert_same(f"process {p} of 2 hosts", str(tmp_path / f"{model}-{searcher}-{spec}.p{p}.npz"),
                    losses, values)


def test_main_job_on_two_processes_matches_virtual_devices(tmp_path):
    """The main job with --nproc 2 --devices-per-process 2 (it launches
    itself) trains with the losses of --devices 4 in one process."""
    env = spawn.world_env(0, 1, 0, "x")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "OFL_JOB_ID", "OFL_DEVICES_PER_PROCESS"):
        env.pop(key, None)
    common = ["-m", "oneflow_lite.train", "--model", "gpt", "--hierarchy", "2,2", "--steps", "3",
              "--searcher", "megatron", "--cluster", "v100_8gpu", "--optimality-cap", "0",
              "--threads", "2"]
    reports = {}
    for name, extra in (("one", ["--devices", "4"]),
                        ("two", ["--nproc", "2", "--devices-per-process", "2"])):
        path = tmp_path / f"{name}.json"
        p = subprocess.Popen([sys.executable, *common, *extra, "--report", str(path)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=240)
        finally:
            spawn.kill([p])
        assert p.returncode == 0, out[-3000:]
        reports[name] = json.loads(path.read_text())
    one, two = (reports[n]["runs"][0] for n in ("one", "two"))
    assert one["losses"] == two["losses"], (one["losses"], two["losses"])
    assert two["measured"]["bytes_per_rank"][:2] == one["measured"]["bytes_per_rank"][:2]


def test_sharded_checkpoint_across_process_counts(tmp_path):
    """4 processes train 3 steps and save a sharded checkpoint; 2 processes
    (same plan on 2 x 2 devices, and another random plan on 2 x 1), one
    process with 4 virtual devices (another plan) and an eager load get the
    parameters and optimizer state bitwise; the next 2 losses equal those of
    the run that did not stop (bitwise under the same plan, else within
    float32 tolerance: another plan sums in another order); each process of
    the 2 x 1 load reads exactly the bytes its rank's slices overlap."""
    ckpt = tmp_path / "ckpt"
    run_ok(["-m", "multiprocess.worker", "ckpt_save", str(tmp_path), str(ckpt)], 4, 1,
           timeout=240)
    saved = np.load(tmp_path / "ckpt_save.p0.npz")
    names = [k[len("param:"):] for k in saved.files if k.startswith("param:")]
    assert any("/momentum" in n for n in names)  # optimizer state is in it
    loads = [("same2x2", 2, 2, "4", worker.CKPT_MODEL[1], True),
             ("other2x1", 2, 1, "2", "17", False)]
    for tag, nproc, k, spec, seed, exact in loads:
        run_ok(["-m", "multiprocess.worker", "ckpt_load", str(tmp_path), str(ckpt), tag,
                str(nproc * k), spec, seed], nproc, k, timeout=240)
        for p in range(nproc):
            z = np.load(tmp_path / f"{tag}.p{p}.npz")
            for n in names:
                assert np.array_equal(z[f"param:{n}"], saved[f"param:{n}"]), (tag, p, n)
            if exact:
                assert np.array_equal(z["losses"], saved["losses"]), (tag, z["losses"])
            else:
                np.testing.assert_allclose(z["losses"], saved["losses"], rtol=1e-4, atol=1e-5)
            if tag == "other2x1":  # one rank per process: exactly its overlaps
                assert int(z["bytes_read"]) == int(z["bytes_wanted"]), (p, z["bytes_read"])
                assert int(z["bytes_read"]) < int(z["bytes_total"])
    # One process, 4 virtual devices, another plan; and eagerly.
    s, g, params, data = worker.run_model("gpt", "23", 4, [2, 2], 4, steps=5)
    shards = sharded_checkpoint.SessionShards(s, list(g.program.variables()))
    sharded_checkpoint.load_into(str(ckpt), shards, model="gpt")
    for n in names:
        assert np.array_equal(s.get_variable(n), saved[f"param:{n}"]), n
    np.testing.assert_allclose(td.train(s, g, data[3:5]), saved["losses"], rtol=1e-4, atol=1e-5)
    eager = sharded_checkpoint.load_logical(str(ckpt), model="gpt")
    for n in names:
        assert np.array_equal(eager.tensors[n], saved[f"param:{n}"]), n


@pytest.mark.parametrize("nproc,k", [(4, 1), (2, 2)])
def test_failed_step_across_processes_leaves_every_variable_bitwise(tmp_path, nproc, k):
    """A label out of range on the ranks of row 3: every process's step
    fails (the failing one with the kernel's error, the others naming it),
    all variables (Adam's m, v, step included) are bitwise as before on every
    process, and the next good step gives the loss of a session that never
    failed (one process, 4 virtual devices)."""
    import test_transactional_steps as tt
    run_ok(["-m", "multiprocess.worker", "fail", str(tmp_path)], nproc, k, timeout=240)
    g = tt.build()
    fresh = tt.session(g)
    x, y = tt.batch(0)
    x2, y2 = tt.batch(1)
    want = [tt.step(fresh, g, x, y), tt.step(fresh, g, x2, y2)]
    for p in range(nproc):
        z = np.load(tmp_path / f"fail.p{p}.npz")
        error = str(z["error"])
        assert "labels[3, 5]=-3 is out of range [0, 11)" in error, (p, error)
        assert error.endswith(tt.RESTORED), (p, error)
        for key in z.files:
            if key.startswith("param:"):
                name = key[len("param:"):]
                assert z[key].tobytes() == z[f"before:{name}"].tobytes(), (p, name)
        assert z["losses"].tolist() == want, (p, z["losses"], want)


def test_timed_out_step_across_processes_leaves_every_variable_bitwise(tmp_path):
    run_ok(["-m", "multiprocess.worker", "timeout", str(tmp_path)], 4, 1, timeout=240)
    import test_transactional_steps as tt
    for p in range(4):
        z = np.load(tmp_path / f"timeout.p{p}.npz")
        error = str(z["error"])
        assert error, f"process {p}: no step timed out in 40 tries with 1 ms waits"
        assert error.endswith(tt.RESTORED), (p, error)
        for key in z.files:
            if key.startswith("param:"):
                name = key[len("param:"):]
                assert z[key].tobytes() == z[f"before:{name}"].tobytes(), (p, name)


@pytest.mark.parametrize("nproc,k", [(4, 1), (2, 2)])
def test_each_process_feeding_only_its_rows_matches_the_global_batch(tmp_path, nproc, k):
    """local_feeds: a data-parallel layout on 4 ranks, each process feeding
    only its rows of the batch (np.array_split's parts, as the balanced
    parts), gives bitwise the losses and parameters of one process fed the
    global batch."""
    run_ok(["-m", "multiprocess.worker", "local", str(tmp_path)], nproc, k, timeout=240)
    case = worker.model_case("gpt")
    data = td.batches(case)[:3]
    g, params = td.build(td.make_model(case), case["batch"])
    strategy = _C.plan(g.program, [4], "v100_8gpu", "data_parallel").strategy
    s = _C.DistributedSession(g.program, [0, 1, 2, 3], [4], strategy, [g.loss], num_threads=4,
                              timeout_ms=30000)
    losses = td.train(s, g, data)
    values = {p: s.get_variable(p) for p in params}
    for p in range(nproc):
        assert_same(f"local feeds, process {p} of {nproc} x {k}",
                    str(tmp_path / f"local.p{p}.npz"), losses, values)
