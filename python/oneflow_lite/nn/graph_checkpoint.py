"""An nn.Graph's checkpoints: ``save`` and ``load`` (``GraphCheckpoint``,
mixed into ``Graph``), on top of its state (nn/graph_state.py).

Formats (oneflow_lite.checkpoint's opening says which stay and why): a
graph on a placement writes a sharded checkpoint (each process the slices
of its ranks, oneflow_lite.sharded_checkpoint); a one-device graph, or
``save(sharded=False)``, one logical checkpoint written by process 0
(oneflow_lite.checkpoint). ``load`` reads either under any plan, device or
process count, or keeps it for the first call when the graph is not
compiled yet. The step count (``Compiled.steps``) and the scheduler's state
travel in the checkpoint's meta and a load restores both, so a resumed run
feeds the same learning rate and its next save counts every step since the
first start, not those since the resume (an eager checkpoint has no count:
Adam's step counter gives it when there is one); the session's random stream
position in its index (oneflow_lite._random_stream), so that it draws the
same dropout masks. Not thread-safe.
"""
from __future__ import annotations

from typing import Optional

from oneflow_lite import _random_stream, _world, checkpoint, sharded_checkpoint


class GraphCheckpoint:
    """The checkpoint methods of ``nn.Graph`` (see the module docstring)."""

    def save(self, path: str, model: str = "", meta: Optional[dict] = None,
             sharded: Optional[bool] = None, world=None) -> None:
        """A checkpoint of every variable. ``sharded`` (default: whether the
        graph runs on a placement): each process writes the slices of its
        ranks (sharded_checkpoint); otherwise one logical checkpoint
        (checkpoint), written by process 0. ``world``: the job's processes
        (default: from the launcher's environment; this one alone without)."""
        c = self.compiled
        self._holder.acquire()
        meta = dict(meta or {}, steps=c.steps)
        if self._scheduler is not None:
            meta["lr_scheduler"] = self._scheduler.state_dict()
        if sharded is None:
            sharded = c.parallel is not None
        if not sharded:  # every process reads the state (collective); process 0 writes
            arrays = {k: v._array() for k, v in self.state_dict().items()}
            it = c.session.iteration
            _on_process0(world or _world.World(),
                         lambda: checkpoint.save(path, arrays, model, meta, iteration=it))
            return
        source = (sharded_checkpoint.SessionShards(c.session, self._state_names())
                  if c.parallel is not None else
                  sharded_checkpoint.ArrayShards({k: c.get(k) for k in self._state_names()},
                                                 iteration=c.session.iteration))
        sharded_checkpoint.save(path, source, model, meta, world)

    def load(self, path: str, model: Optional[str] = None) -> checkpoint.Checkpoint:
        """Loads a checkpoint saved by ``save`` (either format, any plan, any
        device or process count) or from an eager model and optimizer
        (``checkpoint.save_eager``). Files (and a sharded checkpoint's index)
        are checked now; names, shapes and dtypes against the graph's
        variables now, or at the first call when the graph is not compiled
        yet. A sharded checkpoint loads into a graph on a placement rank by
        rank, reading only the byte ranges of this process's ranks; the
        returned Checkpoint then has no tensors and its ``stats`` count the
        bytes read."""
        if sharded_checkpoint.is_sharded(path):
            index = sharded_checkpoint.read_index(path)
            _saved_steps(path, index.get("meta", {}))  # refuses a malformed count now
            if model is not None and index["model"] != model:
                raise checkpoint.CheckpointError(f"checkpoint {path} belongs to model "
                                                 f"'{index['model']}', not '{model}'")
            if self._compiled is None:
                self._pending_checkpoint = (path, None, model)
                return checkpoint.Checkpoint({}, index["model"], index["fingerprint"],
                                             index.get("meta", {}))
            return self._apply_sharded(path, model)
        ck = checkpoint.load(path, model=model)
        _saved_steps(path, ck.meta)
        if self._compiled is None:
            self._pending_checkpoint = (path, ck, model)
        else:
            self._apply_checkpoint(path, ck)
        return ck

    def _apply_checkpoint(self, path: str, ck: checkpoint.Checkpoint) -> None:
        index = {"model": ck.model, "tensors": [
            {"name": k, "shape": list(v.shape), "dtype": v.dtype.name}
            for k, v in ck.tensors.items()]}
        checkpoint.check_compatible(path, index, self._state_specs(),
                                    allow_missing_state=self._optimizer is None)
        self.load_state_dict(ck.tensors)
        _random_stream.restore(path, ck.random, self._compiled.session, ck.tensors)
        self._apply_meta(ck)
        if "steps" not in ck.meta:  # an eager checkpoint: Adam's counter, one per step
            steps = _random_stream.derived(ck.tensors, 1)
            if steps is not None:
                self._compiled.steps = steps

    def _apply_sharded(self, path: str, model: Optional[str]) -> checkpoint.Checkpoint:
        c, missing_ok = self._compiled, self._optimizer is None
        if c.parallel is None:
            ck = sharded_checkpoint.load_logical(path, model, self._state_specs(),
                                                 allow_missing_state=missing_ok)
            self._apply_checkpoint(path, ck)
            return ck
        target = sharded_checkpoint.SessionShards(c.session, self._state_names())
        self._holder.acquire()
        ck = sharded_checkpoint.load_into(path, target, model, self._state_specs(),
                                          allow_missing_state=missing_ok)
        self._holder.mark_written(self._state_names())
        self._apply_meta(ck)
        return ck

    def _apply_meta(self, ck: checkpoint.Checkpoint) -> None:
        steps = _saved_steps("", ck.meta)
        if steps is not None:  # absent: an eager checkpoint; the count stays
            self._compiled.steps = steps
        if self._scheduler is not None and "lr_scheduler" in ck.meta:
            self._scheduler.load_state_dict(ck.meta["lr_scheduler"])


def _saved_steps(path: str, meta: dict) -> Optional[int]:
    """The step count ``save`` wrote into ``meta`` (None when absent);
    CheckpointError unless it is a non-negative integer."""
    steps = meta.get("steps")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool)
                              or steps < 0):
        raise checkpoint.CheckpointError(f"checkpoint {path}: meta 'steps' is {steps!r}, "
                                         f"expected a non-negative integer")
    return steps


def _on_process0(world, write) -> None:
    """Runs ``write`` on process 0 only; every process raises if it failed."""
    error, status = None, ""
    if world.process == 0:
        try:
            write()
        except Exception as e:
            error, status = e, f"{type(e).__name__}: {e}"
    status = world.broadcast_str(status)
    if error is not None:
        raise error
    if status:
        raise checkpoint.CheckpointError(f"checkpoint save failed on process 0: {status}")
