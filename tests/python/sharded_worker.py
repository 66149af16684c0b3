"""One process of test_sharded_checkpoint_processes.py, and the World its
processes share: ``FileWorld``, collectives through files in a shared
folder (each round, every process writes its value atomically and waits,
bounded, for the others'). It stands in for the job's TCP store.

Usage: python sharded_worker.py '<json>' with keys mode ("save" or "load"),
index, count, rendezvous (folder), path (checkpoint), ranks (this process's),
placement ([[...]] or flat list), searcher, chunk_bytes. Prints one JSON line.
Every process builds the same graph: one process holds every virtual rank
today, so each saves and loads only the ranks it is given.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")]

class FileWorld:
    def __init__(self, root: str, index: int, count: int, timeout_s: float = 60.0):
        self.root, self.process, self.num_processes = root, index, count
        self.timeout_s = timeout_s
        self._round = 0

    def _exchange(self, value) -> list:
        r, self._round = self._round, self._round + 1
        name = lambda p: os.path.join(self.root, f"round{r:05d}-process{p:05d}.json")  # noqa
        with open(name(self.process) + ".tmp", "w") as f:
            json.dump(value, f)
        os.replace(name(self.process) + ".tmp", name(self.process))
        deadline = time.monotonic() + self.timeout_s
        while True:
            missing = [p for p in range(self.num_processes) if not os.path.exists(name(p))]
            if not missing:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"FileWorld: processes {missing} did not reach round {r}")
            time.sleep(0.01)
        out = []
        for p in range(self.num_processes):
            with open(name(p)) as f:
                out.append(json.load(f))
        return out

    def barrier(self, name: str) -> None:
        self._exchange(name)

    def broadcast_str(self, value: str) -> str:
        return self._exchange(value if self.process == 0 else None)[0]

    def all_gather_obj(self, obj):
        return self._exchange(obj)

    def _board(self, name: str) -> str:
        return os.path.join(self.root, "published-" + name.replace("/", "_") + ".json")

    def publish_str(self, name: str, value: str) -> None:
        with open(self._board(name) + ".tmp", "w") as f:
            json.dump(value, f)
        os.replace(self._board(name) + ".tmp", self._board(name))

    def await_str(self, name: str) -> str:
        deadline = time.monotonic() + self.timeout_s
        while not os.path.exists(self._board(name)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"FileWorld: '{name}' was not published")
            time.sleep(0.01)
        with open(self._board(name)) as f:
            return json.load(f)


def graph_for(placement, searcher):
    import oneflow_lite as flow
    from test_graph import CLUSTER, TrainGraph, make_model

    model = make_model("gpt", 0)
    graph = TrainGraph(model, flow.optim.AdamW(model.named_parameters(), lr=0.01))
    if placement is not None:
        graph.config.auto_parallel(cluster=CLUSTER, searcher=searcher, num_threads=1,
                                   placement=flow.placement("cpu", placement))
    return graph


def main(args: dict) -> dict:
    from oneflow_lite import sharded_checkpoint as sc
    from test_graph import batches

    world = FileWorld(args["rendezvous"], args["index"], args["count"])
    graph = graph_for(args["placement"], args["searcher"])
    data = batches("gpt", steps=3)
    if args["mode"] == "save":
        for x, y in data:
            graph(x, y)
        source = sc.SessionShards(graph.compiled.session, graph._state_names(), args["ranks"])
        sc.save(args["path"], source, model="gpt", world=world,
                chunk_bytes=args["chunk_bytes"])
        return {"saved": True}
    graph(*batches("gpt", steps=1, seed=9)[0])  # compiles; other values than the saved
    target = sc.SessionShards(graph.compiled.session, graph._state_names(), args["ranks"])
    stats = sc.load_into(args["path"], target, model="gpt").stats
    slices = {n: {str(r): hashlib.sha256(target.get(n, r).tobytes()).hexdigest()
                  for r in args["ranks"] if r in target.layout(n)["slices"]}
              for n in target.names}
    world.barrier("loaded")
    return {"bytes_read": stats.bytes_read, "slices": slices}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
