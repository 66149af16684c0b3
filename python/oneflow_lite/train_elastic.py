"""The main job's periodic checkpoints and its resumption on another world
(the elastic restart of oneflow_lite.distributed.launch --max-restarts).

``Checkpoints(directory, every, keep)`` saves the graph's state as a sharded
checkpoint ``<directory>/step-<8 digits>`` every ``every`` steps (through
``periodic_checkpoint.PeriodicSaver``: a copy of this process's shards taken at
the step boundary, written by a background thread, published atomically),
keeps the newest ``keep`` (0: all), and at start loads the newest complete
one: the job then trains on from the step after it, on whatever world it
now has. Beside the state, each checkpoint's meta records the plan it was
trained with (processes, mesh, searcher, predicted step, each variable's
layout), so a resumed job prints what changed and why.

``adapt_to_world(args)`` fits the trainer's arguments to a restarted world
(fewer processes than --nproc asked for): the devices follow the processes,
and a mesh that no longer fits becomes flat.

Not thread-safe: the training loop's thread calls it.
"""
from __future__ import annotations

import os
import re
import shutil
from typing import Optional

from oneflow_lite import periodic_checkpoint, sharded_checkpoint
from oneflow_lite import train_report as rep

_STEP = re.compile(r"step-(\d{8})")


def step_folder(directory: str, step: int) -> str:
    return os.path.join(directory, f"step-{step:08d}")


def complete_steps(directory: str) -> list:
    """Steps of the complete checkpoints in ``directory`` (an index that
    parses and checks), oldest first."""
    if not os.path.isdir(directory):
        return []
    steps = []
    for name in os.listdir(directory):
        m = _STEP.fullmatch(name)
        if m is None:
            continue
        try:
            sharded_checkpoint.read_index(os.path.join(directory, name))
        except Exception:  # noqa: BLE001 - incomplete or damaged: not a candidate
            continue
        steps.append(int(m.group(1)))
    return sorted(steps)


def adapt_to_world(args, world: dict) -> Optional[str]:
    """A restarted job on fewer processes than --nproc: devices and mesh
    follow the world. Returns a note of what changed (None: nothing)."""
    if world["num_processes"] == args.nproc:  # a first start, or as many as before
        return None
    before = (args.nproc, args.devices, list(args.hierarchy))
    args.nproc = world["num_processes"]
    args.devices = args.nproc * args.devices_per_process
    if int(_prod(args.hierarchy)) != args.devices:
        args.hierarchy = [args.devices]
    return (f"world changed: {before[0]} -> {args.nproc} processes, {before[1]} -> "
            f"{args.devices} devices, mesh {before[2]} -> {args.hierarchy}")


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


class Checkpoints:
    """Periodic sharded checkpoints of one graph in ``directory``."""

    def __init__(self, directory: str, every: int, keep: int = 2, background: bool = True):
        if every < 0 or keep < 0:
            raise ValueError(f"checkpoints: every={every} and keep={keep} must be >= 0")
        self.directory, self.every, self.keep = directory, every, keep
        self.saver = periodic_checkpoint.PeriodicSaver(background=background)
        self.resumed_meta: Optional[dict] = None

    def resume(self, graph) -> int:
        """Loads the newest complete checkpoint into ``graph`` (at its first
        call); the step it was saved after (0: none)."""
        steps = complete_steps(self.directory)
        if not steps:
            return 0
        path = step_folder(self.directory, steps[-1])
        ck = graph.load(path)
        self.resumed_meta = dict(ck.meta)
        print(f"resumed from checkpoint step {steps[-1]} ({path})", flush=True)
        return steps[-1]

    def after_step(self, graph, step: int, plan: dict) -> None:
        """Saves after ``step`` when it is a multiple of ``every``."""
        if not self.every or step % self.every:
            return
        self.saver.save(graph, step_folder(self.directory, step),
                        meta={"step": step, "plan": plan}, on_done=self._prune)

    def close(self, raise_errors: bool = True) -> None:
        """Waits for a save in flight (raises what it raised, if asked)."""
        self.saver.wait(raise_errors)

    def _prune(self) -> None:
        if not self.keep:
            return
        for step in complete_steps(self.directory)[:-self.keep]:
            shutil.rmtree(step_folder(self.directory, step), ignore_errors=True)


def plan_record(graph, args, predicted_step_s: float) -> dict:
    """What a checkpoint records of the plan it was trained with."""
    c = graph.compiled
    layouts = {}
    if c.parallel is not None:
        for name in c.variables:
            layouts[name] = c.session.variable_layout(name)["nd_sbp"]
    return {"processes": args.nproc, "mesh": list(args.hierarchy), "searcher": args.searcher,
            "predicted_step_s": predicted_step_s, "layouts": layouts}


def describe_change(before: dict, after: dict, restart: int = 0) -> list:
    """Lines saying how the plan now differs from the checkpoint's, and why
    (``restart``: this start's number from the launcher, 0 for a first start)."""
    lines = []
    if before.get("processes") != after["processes"] or before.get("mesh") != after["mesh"]:
        why = (f"restart {restart} after a lost process or node runs on what is left"
               if restart else "this run has another world than the checkpoint's")
        lines.append(f"plan changed: {before.get('processes')} -> {after['processes']} "
                     f"processes, mesh {before.get('mesh')} -> {after['mesh']}; why: {why}, so "
                     f"{after['searcher']} searched a plan for the new mesh (within the memory "
                     f"limit)")
    else:
        lines.append(f"plan: same world ({after['processes']} processes, mesh {after['mesh']})")
    old, new = before.get("predicted_step_s"), after["predicted_step_s"]
    if old:
        lines.append(f"  predicted step {rep.human_seconds(old)} -> {rep.human_seconds(new)}")
    changed = [(k, v, after["layouts"][k]) for k, v in sorted(before.get("layouts", {}).items())
               if k in after["layouts"] and after["layouts"][k] != v]
    lines.append(f"  {len(changed)} of {len(after['layouts'])} variables change layout"
                 + (": " + ", ".join(f"{k} {a} -> {b}" for k, a, b in changed[:4])
                    + (", ..." if len(changed) > 4 else "") if changed else ""))
    return lines
