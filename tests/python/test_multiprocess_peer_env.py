"""bench/multiprocess_peer.py launches the PyTorch DDP peer as its users do
(torchrun, or one plain process) with none of oneflow_lite's settings in its
environment; on an emulated cluster one torchrun per node, inside the node's
namespace, node 0 the rendezvous host. No torch, no processes started."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import multiprocess_peer as peer  # noqa: E402

OURS = {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "PYTHONPATH": "/x/python", "OFL_JOB_ID": "1", "MKL_NUM_THREADS": "1"}
ARGS = [peer.WORKER, "--threads", "1"]


def _set_ours(monkeypatch):
    for k, v in OURS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HOME_LIKE_SETTING", "kept")


def test_torchrun_and_one_process_get_none_of_our_settings(monkeypatch):
    _set_ours(monkeypatch)
    (cmd,), env = peer.peer_commands("ddp4", "/t/bin/python", ARGS)
    assert cmd[:6] == ["/t/bin/python", "-m", "torch.distributed.run", "--standalone",
                       "--nproc-per-node", "4"]
    assert cmd[6:] == ARGS
    assert not set(OURS) & set(env) and env["HOME_LIKE_SETTING"] == "kept"
    (cmd,), env = peer.peer_commands("torch1", "/t/bin/python", ARGS)
    assert cmd == ["/t/bin/python", *ARGS] and not set(OURS) & set(env)


def test_each_emulated_node_runs_its_torchrun_in_its_namespace(monkeypatch):
    _set_ours(monkeypatch)
    prefixes = [["ip", "netns", "exec", f"ofl-x-n{i}"] for i in range(2)]
    cmds, env = peer.emulated_commands("/t/bin/python", ARGS, prefixes, "10.213.0.1")
    for node, cmd in enumerate(cmds):
        assert cmd[:4] == prefixes[node] and cmd[-len(ARGS):] == ARGS
        opts = cmd[4 + 3:-len(ARGS)]
        assert dict(zip(opts[::2], opts[1::2])) == {
            "--nnodes": "2", "--node-rank": str(node), "--nproc-per-node": "1",
            "--master-addr": "10.213.0.1", "--master-port": "29500"}
    assert env["GLOO_SOCKET_IFNAME"] == "eth0" and not set(OURS) & set(env)
