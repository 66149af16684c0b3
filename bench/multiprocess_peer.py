"""multiprocess_peer: runs the PyTorch peer of bench/multiprocess_dp.py
(bench/multiprocess_ddp_worker.py) the way its users launch it.

- ``torch1``: one process, ``python multiprocess_ddp_worker.py`` (no DDP);
- ``ddp2``, ``ddp4``: ``python -m torch.distributed.run --standalone
  --nproc-per-node N`` (torchrun) on this machine's loopback;
- ``ddp_emu2``: the emulated 2-node cluster (root only): the network of
  ``oneflow_lite.distributed.emulate`` (one namespace per node, links shaped
  to ``EMULATED_RATE``, the rate bench/fidelity.py's ``emulated2`` uses) is
  made here, one torchrun per node runs inside its namespace (``--nnodes 2
  --node-rank I --master-addr`` node 0's address, ``GLOO_SOCKET_IFNAME=eth0``:
  what a user sets on a multi-node CPU cluster), and the network is removed
  whatever the outcome.

Every peer process gets ops_gpt.clean_env(): none of OUR_SETTINGS or OFL_*
(torchrun itself sets OMP_NUM_THREADS=1 for N > 1); the worker sets
``torch.set_num_threads(THREADS)``, the thread count our processes run with.
Not thread-safe (one launch at a time).
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
from typing import List, Tuple

import numpy as np

from ops_gpt import OUR_SETTINGS, clean_env, write_weights

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "multiprocess_ddp_worker.py")
PEER_KINDS = ("torch1", "ddp2", "ddp4", "ddp_emu2")
EMULATED_RATE = "860mbit"  # bench/fidelity.py EMULATION["emulated2"]
THREADS = 1                # per process, as ours


def write_inputs(directory: str, ids: np.ndarray) -> Tuple[str, str]:
    """The model's initial weights and the batches' ids, as .npz files the
    worker reads; returns their paths."""
    weights, data = os.path.join(directory, "weights.npz"), os.path.join(directory, "data.npz")
    write_weights(weights)
    np.savez(data, ids=ids)
    return weights, data


def _worker_args(inputs: Tuple[str, str], warmup: int, steps: int, out: str) -> List[str]:
    return [WORKER, "--weights", inputs[0], "--data", inputs[1], "--threads", str(THREADS),
            "--warmup", str(warmup), "--steps", str(steps), "--out", out]


def _wait(procs: list, timeout_s: float, kind: str) -> None:
    """Waits for every process (killing those left when one fails or the
    time is up); raises RuntimeError with a failed one's last lines."""
    try:
        outputs = [p.communicate(timeout=timeout_s) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for proc, (stdout, stderr) in zip(procs, outputs):
        if proc.returncode != 0:
            tail = (stdout + stderr).strip().splitlines()[-5:]
            raise RuntimeError(f"{kind} exited {proc.returncode}: " + " | ".join(tail))


def peer_commands(kind: str, torch_python: str, args: List[str]) -> Tuple[List[List[str]], dict]:
    """The command lines (one per node: one here) and the environment of
    `kind` on one machine; `args`: the worker's path and options."""
    env = clean_env()
    if kind == "torch1":
        return [[torch_python, *args]], env
    if kind in ("ddp2", "ddp4"):
        return [[torch_python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                 kind[-1], *args]], env
    raise ValueError(f"multiprocess_peer: {kind!r} is not one of torch1, ddp2, ddp4")


def emulated_commands(torch_python: str, args: List[str], prefixes: List[List[str]],
                      master_addr: str) -> Tuple[List[List[str]], dict]:
    """One torchrun per emulated node (its namespace's command prefix in
    `prefixes`), node 0 the rendezvous host; their environment."""
    cmds = [[*prefix, torch_python, "-m", "torch.distributed.run", "--nnodes",
             str(len(prefixes)), "--node-rank", str(node), "--nproc-per-node", "1",
             "--master-addr", master_addr, "--master-port", "29500", *args]
            for node, prefix in enumerate(prefixes)]
    return cmds, dict(clean_env(), GLOO_SOCKET_IFNAME="eth0")


def run_peer(kind: str, torch_python: str, inputs: Tuple[str, str], warmup: int, steps: int,
             out: str, timeout_s: float) -> dict:
    """Runs the peer `kind` in fresh processes; returns rank 0's result."""
    args = _worker_args(inputs, warmup, steps, out)
    if kind == "ddp_emu2":
        _run_emulated(torch_python, args, timeout_s)
    else:
        cmds, env = peer_commands(kind, torch_python, args)
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env) for c in cmds]
        _wait(procs, timeout_s, kind)
    with open(out) as f:
        return json.load(f)


def _run_emulated(torch_python: str, args: List[str], timeout_s: float) -> None:
    from oneflow_lite.distributed import emulate

    spec = emulate.EmulationSpec(nodes=2, rate_bits=emulate.parse_rate("rate", EMULATED_RATE))
    network = emulate.Network(spec, "pt" + secrets.token_hex(4))
    network.create()
    procs = []
    try:
        cmds, env = emulated_commands(torch_python, args,
                                      [network.prefix(n) for n in range(spec.nodes)],
                                      emulate.address(0))
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env) for c in cmds]
        _wait(procs, timeout_s, "ddp_emu2")
    finally:
        for p in procs:  # a Popen that failed to start leaves the others running
            if p.poll() is None:
                p.kill()
                p.wait()
        problems = network.remove()
        if problems:
            raise RuntimeError("ddp_emu2: " + "; ".join(problems))


def env_removed() -> List[str]:
    return list(OUR_SETTINGS) + ["OFL_*"]
