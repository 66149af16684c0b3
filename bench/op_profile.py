"""op_profile: where one training step's time goes, per op type.

Two sources, one shape of result (``Profile``: the step's milliseconds and,
per op type, milliseconds, act count and share of the step):
- ``from_chrome_trace``: our runtime's Chrome trace (``_C.Session(...,
  trace_path=...)``, runtime/trace.h): one "X" event per act, named
  "<op_type> '<op name>'" for a kernel; the op type is the first word.
  Only the acts of one iteration (the last one by default) are counted.
  The step is the span from the first act's start to the last act's end;
  what no act covers on a stream (actor hand-offs, waits) is the row
  ``IDLE``. A single-device plan has one stream, so the op rows plus IDLE
  add up to the span exactly; with several streams acts overlap and the
  rows add up to the busy time of all streams, more than the span.
- ``from_rows``: any list of (name, milliseconds, count) rows with the
  step's wall time, e.g. torch.profiler's self CPU times per aten op
  (bench/torch_gpt.py); what the rows do not cover is ``IDLE``.

``category`` maps an op name of either side (ours "matmul",
"layer_norm_grad"; PyTorch's "aten::addmm", "aten::native_layer_norm_backward")
to a coarse group (matmul, layer_norm, softmax, ...) so that the two
profiles can be read side by side. Pure functions; no torch, no
oneflow_lite import.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

IDLE = "(idle: no op running)"

# First match wins; patterns are searched in the lower-cased name. Order
# matters: "optimizer: aten::mul_" is the optimizer's, "cross_entropy" is
# the loss's before it is a softmax.
_CATEGORIES: List[Tuple[str, str]] = [
    ("boxing", r"boxing|all_reduce|allreduce|all_gather|reduce_scatter|send|recv"),
    ("optimizer", r"adam|sgd|optimizer|_foreach|lerp|addcdiv|addcmul"),
    ("loss", r"cross_entropy|nll_loss|log_softmax"),
    ("matmul", r"matmul|\bmm\b|^mm|addmm|bmm|linear|batch_matmul|dot"),
    ("softmax", r"softmax"),
    ("layer_norm", r"layer_?norm"),
    ("gelu", r"gelu"),
    ("embedding", r"embedding|index_select|gather|scatter|index"),
    ("reduction", r"sum|mean|reduce|bias_add_grad"),
    ("copy/layout", r"copy|clone|contiguous|transpose|permute|reshape|view|cat|stack|split|"
                    r"slice|expand|broadcast|as_strided|unsqueeze|squeeze|_to_copy|\bto\b"),
    ("elementwise", r"add|mul|sub|div|where|mask|scale|neg|exp|sqrt|pow|fill|zero|triu|"
                    r"tanh|relu|dropout|cast|bias"),
]


def category(name: str) -> str:
    """The coarse group of an op name of either framework ("other" if none fits)."""
    if name == IDLE:
        return "idle"
    n = name.lower()
    for group, pattern in _CATEGORIES:
        if re.search(pattern, n):
            return group
    return "other"


@dataclass
class OpRow:
    op: str
    ms: float
    count: int
    share: float  # of the step


@dataclass
class Profile:
    step_ms: float
    rows: List[OpRow] = field(default_factory=list)  # by ms, largest first; IDLE included

    def busy_ms(self) -> float:
        return sum(r.ms for r in self.rows if r.op != IDLE)

    def top(self, n: int) -> List[dict]:
        return [dict(op=r.op, ms=round(r.ms, 3), count=r.count, share=round(r.share, 4))
                for r in self.rows[:n]]

    def by_category(self) -> Dict[str, float]:
        """Milliseconds per coarse group, largest first."""
        out: Dict[str, float] = {}
        for r in self.rows:
            out[category(r.op)] = out.get(category(r.op), 0.0) + r.ms
        return {k: round(v, 3) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}

    def to_json(self, top: int = 12) -> dict:
        return {"step_ms": round(self.step_ms, 3), "busy_ms": round(self.busy_ms(), 3),
                "op_types": len([r for r in self.rows if r.op != IDLE]),
                "top": self.top(top), "by_category_ms": self.by_category()}


def from_rows(rows: Iterable[Tuple[str, float, int]], step_ms: float) -> Profile:
    """Groups (name, ms, count) rows by name; IDLE is step_ms minus their sum
    (kept at 0 when the rows add up to more, e.g. overlapping threads)."""
    if not step_ms > 0:
        raise ValueError(f"op_profile: step_ms={step_ms} must be positive")
    ms: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    for name, t, c in rows:
        ms[name] = ms.get(name, 0.0) + float(t)
        counts[name] = counts.get(name, 0) + int(c)
    idle = step_ms - sum(ms.values())
    if idle > 0:
        ms[IDLE], counts[IDLE] = idle, 0
    out = [OpRow(k, v, counts[k], v / step_ms) for k, v in ms.items()]
    out.sort(key=lambda r: -r.ms)
    return Profile(step_ms, out)


def op_type_of(event_name: str) -> str:
    """"matmul 'h.0.attn.qkv'" -> "matmul"; a name without a quote is kept whole."""
    return event_name.split(" '", 1)[0].strip() if " '" in event_name else event_name.strip()


def from_chrome_trace(trace: dict, iteration: Optional[int] = None) -> Profile:
    """Aggregates one iteration (default: the last) of a runtime Chrome trace."""
    acts = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    if not acts:
        raise ValueError("op_profile: the trace has no acts ('X' events)")
    if iteration is None:
        iteration = max(int(e.get("args", {}).get("iteration", 0)) for e in acts)
    acts = [e for e in acts if int(e.get("args", {}).get("iteration", 0)) == iteration]
    if not acts:
        raise ValueError(f"op_profile: the trace has no act of iteration {iteration}")
    start = min(float(e["ts"]) for e in acts)
    end = max(float(e["ts"]) + float(e["dur"]) for e in acts)
    rows = [(op_type_of(e["name"]), float(e["dur"]) / 1e3, 1) for e in acts]
    return from_rows(rows, (end - start) / 1e3)


def load_chrome_trace(path: str, iteration: Optional[int] = None) -> Profile:
    with open(path, encoding="utf-8") as f:
        return from_chrome_trace(json.load(f), iteration)
