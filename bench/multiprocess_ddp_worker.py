"""multiprocess_ddp_worker: the PyTorch peer of bench/multiprocess_dp.py, one
process of PyTorch DistributedDataParallel on CPU (Gloo), as its users run it.

Launched by multiprocess_dp.py (bench/multiprocess_peer.py builds the command
lines) with the peer's own interpreter and an environment that carries none
of oneflow_lite's settings (ops_gpt.clean_env): ``torchrun --standalone
--nproc-per-node N multiprocess_ddp_worker.py ...`` on one node, ``torchrun
--nnodes 2 --node-rank I --master-addr ...`` inside each node of an emulated
cluster, or plain ``python multiprocess_ddp_worker.py`` for one process
(no process group, no DDP: the peer's single-process baseline). It imports
numpy, torch and bench/torch_gpt.py (the same GPT, written with
torch.nn.functional), never oneflow_lite.

The model is torch_gpt.forward over the parameters of ``--weights`` (the
state_dict of ``oneflow_lite.models.GPT`` after ``flow.manual_seed(0)``, in
its order, so DDP's buckets follow the same parameter order as a PyTorch
GPT's), wrapped in ``DistributedDataParallel`` with its defaults (25 MiB
buckets, bucket order the reverse of the parameters', all-reduce of each
bucket started while backward goes on). ``torch.optim.AdamW`` with the
benchmark's hyper-parameters. Rank r of W computes rows [r B / W, (r + 1) B / W)
of each global batch of ``--data`` (B = 16: ids [steps, B, T], labels ids
rolled by one), as a DistributedSampler without shuffling would give it.
``torch.set_num_threads(--threads)``. Each step's reported loss is the mean
of the ranks' losses (one 4-byte all-reduce, as our side fetches the global
loss every step).

Rank 0 writes one JSON object to ``--out``: seconds and CPU seconds of the
``--steps`` timed steps (after ``--warmup`` untimed ones and a barrier),
samples/s, every step's loss, the world size, the thread count, the torch
version and the variables torchrun set.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gpt_setup import HYPER  # noqa: E402
from torch_gpt import forward  # noqa: E402


class GPT(torch.nn.Module):
    """torch_gpt.forward as a Module whose parameters are the state_dict's,
    registered in its order (p0, p1, ...: state_dict names hold dots)."""

    def __init__(self, weights: dict):
        super().__init__()
        self.names = list(weights)
        for i, name in enumerate(self.names):
            self.register_parameter(f"p{i}", torch.nn.Parameter(torch.tensor(weights[name])))

    def forward(self, ids, labels):
        return forward({n: getattr(self, f"p{i}") for i, n in enumerate(self.names)}, ids, labels)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True, help=".npz of the model's state_dict")
    ap.add_argument("--data", required=True, help=".npz with ids [steps, batch, seq]")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    with np.load(args.weights) as w:
        model = GPT({k: w[k] for k in w.files})
    with np.load(args.data) as d:
        ids_all = d["ids"]
    batch = ids_all.shape[1]
    rows = slice(rank * batch // world, (rank + 1) * batch // world)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), **HYPER)
    losses = []
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            if distributed:
                dist.barrier()
            start, cpu = time.perf_counter(), time.process_time()
        ids = torch.from_numpy(ids_all[i, rows])
        labels = torch.from_numpy(np.roll(ids_all[i, rows], -1, axis=1))
        opt.zero_grad()
        loss = model(ids, labels)
        loss.backward()
        opt.step()
        value = loss.detach().clone()
        if distributed:
            dist.all_reduce(value)
        losses.append(value.item() / world)
    seconds = time.perf_counter() - start
    cpu_s = time.process_time() - cpu
    if rank == 0:
        out = {"seconds": seconds, "cpu_s": cpu_s, "samples_per_s": batch * args.steps / seconds,
               "losses": losses, "world_size": world, "ddp": distributed,
               "backend": dist.get_backend() if distributed else None,
               "torch_version": torch.__version__, "torch_threads": torch.get_num_threads(),
               "env": {k: os.environ.get(k) for k in (
                   "OMP_NUM_THREADS", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
                   "GLOO_SOCKET_IFNAME", "PYTHONPATH", "OMP_WAIT_POLICY")}}
        with open(args.out, "w") as f:
            json.dump(out, f)
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
