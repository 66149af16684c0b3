"""The world read from the launchers users already have (distributed/
_env_world.py): torchrun's variables as they are, SLURM's (srun) and Open
MPI's (mpirun) translated, each set checked against values worked out by
hand, and a 2-process job formed under each set (the variables set as that
launcher sets them, the 2 processes started here on loopback and ended by
their own pids). Also our launcher's torchrun spellings."""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys

import pytest

from oneflow_lite.distributed import World, _env_world, free_port
from oneflow_lite.distributed.launch import parse_args

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TIMEOUT_S = 60

# What torchrun sets in each process (torch/distributed/run.py, elastic agent).
TORCHRUN = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "1", "ROLE_RANK": "3", "ROLE_WORLD_SIZE": "4", "ROLE_NAME": "default",
            "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
            "TORCHELASTIC_RUN_ID": "none", "TORCHELASTIC_RESTART_COUNT": "0"}

# srun -N 2 --ntasks-per-node 2: the task with global id 3 (node 1, local 1).
SLURM = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_NPROCS": "4", "SLURM_LOCALID": "1",
         "SLURM_NODEID": "1", "SLURM_JOB_ID": "123456", "SLURM_STEP_ID": "0",
         "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_STEP_NODELIST": "gpu[07-08]",
         "SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
         "SLURM_STEP_NUM_TASKS": "4", "SLURM_JOB_NUM_NODES": "2"}

# mpirun -np 4 on one host: rank 2.
OMPI = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4",
        "OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
        "OMPI_COMM_WORLD_NODE_RANK": "2"}


def test_torchrun_variables_are_read_as_they_are():
    assert _env_world.detect(TORCHRUN) == "standard"
    assert _env_world.standard_variables(TORCHRUN) == {}
    w = World.from_env(TORCHRUN)
    assert (w.rank, w.world_size, w.local_rank, w.local_world_size, w.node_rank) == (3, 4, 1, 2, 1)
    assert (w.master_addr, w.master_port) == ("10.0.0.1", 29500)


def test_slurm_variables_translated():
    assert _env_world.detect(SLURM) == "slurm"
    assert _env_world.standard_variables(SLURM) == {
        "RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": "1", "MASTER_ADDR": "gpu07", "MASTER_PORT": str(15000 + 3456),
        "OFL_JOB_ID": "slurm-123456.0"}
    w = World.from_env(SLURM)
    assert (w.rank, w.world_size, w.local_rank, w.local_world_size, w.node_rank) == (3, 4, 1, 2, 1)
    assert (w.master_addr, w.master_port, w.job_id) == ("gpu07", 18456, "slurm-123456.0")


def test_slurm_user_master_wins_and_job_nodelist_is_the_fallback():
    env = {k: v for k, v in SLURM.items() if not k.startswith("SLURM_STEP_")}
    env.update(SLURM_JOB_NODELIST="node[01-04],other", MASTER_PORT="4242")
    out = _env_world.standard_variables(env)
    assert out["MASTER_ADDR"] == "node01" and "MASTER_PORT" not in out
    assert World.from_env(env).master_port == 4242
    env["MASTER_ADDR"] = "10.1.2.3"
    assert World.from_env(env).master_addr == "10.1.2.3"


@pytest.mark.parametrize("text,hosts", [
    ("node[01-04],other", ["node01", "node02", "node03", "node04", "other"]),
    ("a1,b2", ["a1", "b2"]),
    ("gpu-[001-002,010]", ["gpu-001", "gpu-002", "gpu-010"]),
    ("rack[1-2]-n[8-9]", ["rack1-n8", "rack1-n9", "rack2-n8", "rack2-n9"]),
    ("x[9-11]y", ["x9y", "x10y", "x11y"]),
    ("solo", ["solo"]),
])
def test_nodelist_expansion(text, hosts):
    assert _env_world.expand_nodelist(text) == hosts
    assert _env_world.first_host(text) == hosts[0]


@pytest.mark.parametrize("text", ["node[01-04", "node]1", "n[a-b]", "n[4-2]", "a,,b", ""])
def test_bad_nodelist_names_the_variable(text):
    env = dict(SLURM, SLURM_JOB_NODELIST=text)
    for k in ("SLURM_STEP_NODELIST",):
        env.pop(k)
    if not text:
        env.pop("SLURM_JOB_NODELIST")
    with pytest.raises(ValueError, match="SLURM_JOB_NODELIST" if text else "MASTER_ADDR"):
        _env_world.standard_variables(env)


@pytest.mark.parametrize("text,node,count", [("2(x3),1", 0, 2), ("2(x3),1", 2, 2),
                                             ("2(x3),1", 3, 1), ("4", 0, 4), ("1,3", 1, 3)])
def test_tasks_per_node(text, node, count):
    assert _env_world.tasks_on_node(text, node) == count


def test_slurm_errors_name_the_variable():
    with pytest.raises(ValueError, match="SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4"):
        _env_world.standard_variables(dict(SLURM, SLURM_PROCID="4"))
    with pytest.raises(ValueError, match=r"SLURM_LOCALID='x' is not an integer"):
        _env_world.standard_variables(dict(SLURM, SLURM_LOCALID="x"))
    with pytest.raises(ValueError, match=r"SLURM_NODEID=2 is not among them"):
        _env_world.standard_variables(dict(SLURM, SLURM_NODEID="2"))


def test_openmpi_variables_translated():
    assert _env_world.detect(OMPI) == "openmpi"
    assert _env_world.standard_variables(OMPI) == {
        "RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "4",
        "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    w = World.from_env(OMPI)
    assert (w.rank, w.world_size, w.local_rank, w.node_rank, w.master_port) == (2, 4, 2, 0, 29500)


def test_openmpi_on_several_nodes_needs_master_addr():
    env = dict(OMPI, OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_LOCAL_RANK="1",
               OMPI_COMM_WORLD_LOCAL_SIZE="2")
    with pytest.raises(ValueError, match="mpirun -x MASTER_ADDR"):
        _env_world.standard_variables(env)
    env["MASTER_ADDR"] = "10.0.0.2"
    w = World.from_env(env)
    assert (w.rank, w.node_rank, w.local_rank, w.master_addr) == (3, 1, 1, "10.0.0.2")


def test_set_variables_win_and_apply_fills_only_missing():
    env = dict(SLURM, RANK="0", WORLD_SIZE="1")  # our launcher inside an srun step
    assert _env_world.detect(env) == "standard" and _env_world.standard_variables(env) == {}
    env = dict(OMPI, MASTER_PORT="1234")
    assert _env_world.apply(env) == "openmpi"
    assert env["MASTER_PORT"] == "1234" and env["RANK"] == "2"
    assert _env_world.apply({}) is None
    off = dict(SLURM, OFL_LAUNCHER_ENV="0")  # e.g. a one-process script in an sbatch script
    assert _env_world.apply(off) is None and "RANK" not in off
    assert not World.from_env(off).is_distributed


# --- our launcher, torchrun's spellings -------------------------------------------------


def test_launcher_accepts_torchrun_spellings(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    _, o = parse_args(["--nproc_per_node", "2", "--nnodes", "2", "--node_rank", "1",
                       "--master_addr", "127.0.0.1", "--master_port", "29511", "--rdzv_id",
                       "job7", str(script)])
    assert (o.nproc_per_node, o.nnodes, o.node_rank, o.master_addr, o.master_port,
            o.job_id) == (2, 2, 1, "127.0.0.1", 29511, "job7")
    _, o = parse_args(["--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "0",
                       "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29512",
                       str(script)])
    assert (o.master_addr, o.master_port) == ("localhost", 29512)
    _, o = parse_args(["--standalone", "--nproc_per_node", "2", str(script)])
    assert (o.nnodes, o.master_addr) == (1, "127.0.0.1")


def test_launcher_endpoint_conflict_is_one_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    done = subprocess.run([sys.executable, "-m", "oneflow_lite.distributed.launch",
                           "--rdzv-endpoint", "127.0.0.1:1", "--master-port", "2", str(script)],
                          cwd=REPO, env=_env({}), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 2
    assert "name the store once" in done.stderr.strip().splitlines()[-1]


# --- 2-process jobs under each set of variables -----------------------------------------

WORKER = """
import json, os, sys
import oneflow_lite as flow
from oneflow_lite import _world
from oneflow_lite.distributed import World
w = World.from_env()
got = _world.all_gather({"rank": w.rank, "pid": os.getpid()})
with open(sys.argv[1] + "/rank_%d.json" % w.rank, "w") as f:
    json.dump({"world": [w.rank, w.world_size, w.local_rank, w.master_addr, w.master_port],
               "gathered": got, "job_id": os.environ.get("OFL_JOB_ID"),
               "info": _world.info()["num_processes"]}, f)
"""


def _env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "OMPI_", "TORCHELASTIC_")) and k not in (
               "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "MASTER_ADDR", "MASTER_PORT", "OFL_JOB_ID", "OFL_DEVICES_PER_PROCESS")}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python"),
                                         env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def _run_two(tmp_path, envs):
    """Starts one worker per environment, waits (bounded), ends any left by pid."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path)], env=_env(e),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for e in envs]
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=TIMEOUT_S)
            outputs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=TIMEOUT_S)
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
    return [json.loads((tmp_path / f"rank_{r}.json").read_text()) for r in range(len(envs))]


def _free_slurm_job_id() -> int:
    """A job id whose default port (15000 + id % 10000) is free now."""
    rng = random.Random(os.getpid())
    for _ in range(50):
        job = rng.randrange(1, 10**7)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", _env_world.SLURM_PORT_BASE + job % 10000))
            except OSError:
                continue
        return job
    pytest.skip("no free port among 50 SLURM job ids")


def _check_job(results, port):
    for rank, r in enumerate(results):
        assert r["world"] == [rank, 2, rank, "127.0.0.1", port]
        assert [g["rank"] for g in r["gathered"]] == [0, 1]
        assert r["info"] == 2
    assert results[0]["gathered"] == results[1]["gathered"]


def test_two_processes_under_torchrun_variables(tmp_path):
    port = free_port()
    common = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "0",
              "ROLE_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
              "TORCHELASTIC_RUN_ID": "none"}
    _check_job(_run_two(tmp_path, [dict(common, RANK=str(r), LOCAL_RANK=str(r),
                                        ROLE_RANK=str(r)) for r in range(2)]), port)


def test_two_processes_under_srun_variables(tmp_path):
    job = _free_slurm_job_id()
    common = {"SLURM_NTASKS": "2", "SLURM_NPROCS": "2", "SLURM_STEP_NUM_TASKS": "2",
              "SLURM_NODEID": "0", "SLURM_JOB_ID": str(job), "SLURM_STEP_ID": "0",
              "SLURM_JOB_NODELIST": "localhost", "SLURM_STEP_NODELIST": "localhost",
              "SLURM_TASKS_PER_NODE": "2", "SLURM_STEP_TASKS_PER_NODE": "2"}
    results = _run_two(tmp_path, [dict(common, SLURM_PROCID=str(r), SLURM_LOCALID=str(r))
                                  for r in range(2)])
    port = _env_world.SLURM_PORT_BASE + job % 10000
    for rank, r in enumerate(results):
        assert r["world"] == [rank, 2, rank, "localhost", port]
        assert [g["rank"] for g in r["gathered"]] == [0, 1]
        assert r["job_id"] == f"slurm-{job}.0"


def test_two_processes_under_mpirun_variables(tmp_path):
    port = free_port()  # mpirun -x MASTER_PORT=...: the default 29500 may be taken here
    common = {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
              "MASTER_PORT": str(port)}
    _check_job(_run_two(tmp_path, [dict(common, OMPI_COMM_WORLD_RANK=str(r),
                                        OMPI_COMM_WORLD_LOCAL_RANK=str(r),
                                        OMPI_COMM_WORLD_NODE_RANK=str(r)) for r in range(2)]),
               port)
