"""Running an ``nn.Graph``: a call picks the plan for its inputs, feeds them
and the learning rate, runs one step and steps the scheduler (``GraphRun``,
mixed into ``Graph``).

Inputs are named after ``build``'s arguments. A call whose inputs differ in
shape, dtype or layout from every earlier call's compiles a plan for them
(nn/graph_build.py; one line on stderr says so); up to ``MAX_PLANS``
(nn/graph.py, read at every call) plans are kept, sharing the state through the modules (nn/graph_share.py), so a
smaller last batch trains on.

The learning rate has one source of truth: the optimizer's
``param_groups[0]["lr"]``, read at every call and fed to the program's
learning-rate input (``Compiled.lr_input``); nothing else holds a copy. The
update ops' "lr" attribute is only the rate eager ``optimizer.step()``
uses; a fed input replaces it (graph/optimizer_pass.h). The scheduler given
to ``add_optimizer`` is stepped after every call, so the next call feeds its
new rate.

Threads: calls of one Graph from several threads are serialised (a lock:
one trace or step at a time, the others wait their turn).

Bad values: an id or label out of range raises ValueError naming the op,
the tensor, the index, the value and [0, V), on any device count, and the
variables keep their values. ``config.detect_anomaly`` (None: follow
``flow.set_detect_anomaly``) stops a step at the first op that outputs a
NaN or Inf with a RuntimeError naming it.
"""
from __future__ import annotations

import sys

from oneflow_lite._autograd import is_anomaly_enabled
from oneflow_lite._tensor import Tensor
from oneflow_lite.nn import graph_build
from oneflow_lite.nn.graph_build import Plan
from oneflow_lite.nn.graph_compile import Compiled
from oneflow_lite.nn.graph_share import Holder

class GraphRun:
    """The running methods of ``nn.Graph`` (see the module docstring)."""

    # ---- plans ----------------------------------------------------------------------
    def _use_plan(self, args, arrays) -> Plan:
        """The plan for these inputs' signature, compiled on first use."""
        sig = graph_build.signature(args, arrays)
        plan = self._plans.get(sig)
        if plan is None:
            names = graph_build.argument_names(self, len(args))
            if self._plan is not None:
                print(f"nn.Graph {type(self).__name__}: compiling a plan for input "
                      f"{graph_build.describe_change(names, self._plan.signature, sig)}; "
                      f"{min(len(self._plans) + 1, self._max_plans())} plans kept", file=sys.stderr,
                      flush=True)
            plan = graph_build.compile_plan(self, args, arrays, names, sig)
            if len(self._plans) >= self._max_plans():
                _, evicted = self._plans.popitem(last=False)
                evicted.holder.release_all()
                graph_build.carry_unshared(evicted, plan)
            self._plans[sig] = plan
        else:
            self._plans.move_to_end(sig)
        graph_build.carry_unshared(self._plan, plan)
        first = self._plan is None
        self._plan, self._compiled, self._tracer = plan, plan.compiled, plan.tracer
        if first:
            self._apply_pending()
        return plan

    def _apply_pending(self) -> None:
        if self._pending_state is not None:
            state, self._pending_state = self._pending_state, None
            self.load_state_dict(state)
        if self._pending_checkpoint is not None:
            (path, ck, model), self._pending_checkpoint = self._pending_checkpoint, None
            if ck is None:
                self._apply_sharded(path, model)
            else:
                self._apply_checkpoint(path, ck)

    @property
    def _holder(self) -> Holder:
        self.compiled  # raises when not compiled
        return self._plan.holder

    # ---- running ------------------------------------------------------------------
    def __call__(self, *args):
        with self._call_lock:
            return self._call(args)

    def _call(self, args):
        arrays = graph_build.input_arrays(args)
        plan = self._use_plan(args, arrays)
        plan.holder.acquire()
        lr = self._optimizer.param_groups[0]["lr"] if self._optimizer is not None else None
        anomaly = self.config.detect_anomaly
        plan.compiled.session.set_detect_anomaly(
            is_anomaly_enabled() if anomaly is None else bool(anomaly))
        outs = plan.compiled.run(arrays, lr)
        plan.holder.stepped()
        if self._scheduler is not None:
            self._scheduler.step()
        if plan.tracer._returns_none:
            return None
        tensors = [Tensor._wrap(o) if o is not None else None for o in outs]
        return tensors[0] if plan.tracer._single else tuple(tensors)

    @property
    def compiled(self) -> Compiled:
        """The last call's compiled plan."""
        if self._compiled is None:
            raise RuntimeError(f"{type(self).__name__}: not compiled yet (call it once)")
        return self._compiled

    def copy_to_modules(self) -> None:
        """Moves the trained values into the modules and the optimizer now.
        Not needed (they share them: nn/graph.py's docstring); kept for
        compatibility and as a collective point with several processes."""
        for plan in self._plans.values():
            plan.holder.release_all()
