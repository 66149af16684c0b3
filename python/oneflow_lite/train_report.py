"""What the main job (oneflow_lite.train) shows and writes about its runs:
the predicted-beside-measured table, the JSON report and the PNG plot of
loss curves and step times, and a progress bar. Pure formatting and file
writing; no training here.

A *run* is a dict: ``name`` (e.g. "autoddl", "megatron (best expert)"),
``losses`` and ``step_seconds`` (per step), ``predicted`` and ``measured``,
each with ``step_s``, ``bytes_per_rank`` (list, one per rank) and
``peak_bytes_per_rank`` (list; None where unknown), plus free-form extras.
"""
from __future__ import annotations

import json
import os
import sys
from typing import List, Optional, Sequence

import numpy as np

from oneflow_lite import _umask


def human_bytes(n: Optional[float]) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def human_seconds(s: Optional[float]) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _max(values) -> Optional[float]:
    if values is None:
        return None
    values = [v for v in values if v is not None]
    return max(values) if values else None


def steady_median(step_seconds: Sequence[float], warmup: int = 1) -> Optional[float]:
    """Median step time after ``warmup`` steps (all steps if there are no more)."""
    if not step_seconds:
        return None
    tail = list(step_seconds[warmup:]) or list(step_seconds)
    return float(np.median(tail))


def comparison_table(runs: Sequence[dict]) -> str:
    """Predicted beside measured per run: step time, bytes sent per rank
    (busiest rank), peak memory per rank (busiest rank)."""
    rows = [("", [r["name"] for r in runs])]

    def add(label, key, field, fmt, reduce=lambda v: v):
        rows.append((label, [fmt(reduce((r.get(key) or {}).get(field))) for r in runs]))

    add("step time, predicted", "predicted", "step_s", human_seconds)
    add("step time, measured (median)", "measured", "step_s", human_seconds)
    add("bytes sent / rank, predicted", "predicted", "bytes_per_rank", human_bytes, _max)
    add("bytes sent / rank, measured", "measured", "bytes_per_rank", human_bytes, _max)
    add("peak memory / rank, predicted", "predicted", "peak_bytes_per_rank", human_bytes, _max)
    add("peak memory / rank, measured", "measured", "peak_bytes_per_rank", human_bytes, _max)
    if any(r.get("losses") for r in runs):
        rows.append(("final loss", [f"{r['losses'][-1]:.4f}" if r.get("losses") else "-"
                                    for r in runs]))
    width = max(len(label) for label, _ in rows)
    cols = [max(len(row[1][i]) for row in rows) for i in range(len(runs))]
    lines = []
    for label, cells in rows:
        lines.append(f"{label:<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, cols)))
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def write_json(path: str, report: dict) -> None:
    """Writes ``report`` (numpy scalars and arrays allowed) as indented JSON."""
    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        raise TypeError(f"report: {type(o).__name__} is not JSON-serialisable")

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = _umask.mkstemp(prefix=os.path.basename(path) + ".tmp-", dir=directory)
    try:  # a fresh temporary name: never a file of the user's
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, default=default)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def plot_runs(path: str, runs: Sequence[dict], title: str = "") -> None:
    """Loss per step and step time per step of every run, side by side (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_time) = plt.subplots(1, 2, figsize=(11, 4))
    for r in runs:
        if not r.get("losses"):
            continue
        steps = np.arange(1, len(r["losses"]) + 1)
        ax_loss.plot(steps, r["losses"], label=r["name"])
        ax_time.plot(steps, 1e3 * np.asarray(r["step_seconds"]), label=r["name"])
        predicted = (r.get("predicted") or {}).get("step_s")
        if predicted is not None:
            ax_time.axhline(1e3 * predicted, linestyle="--", linewidth=1,
                            color=ax_time.get_lines()[-1].get_color(),
                            label=f"{r['name']} (predicted)")
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("loss")
    ax_loss.set_title("training loss")
    ax_time.set_xlabel("step")
    ax_time.set_ylabel("ms per step")
    ax_time.set_yscale("log")
    ax_time.set_title("step time (dashed: predicted)")
    for ax in (ax_loss, ax_time):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


class Progress:
    """A tqdm bar showing step, loss and throughput on a terminal; plain
    lines (one per ``every`` steps) otherwise."""

    def __init__(self, total: int, name: str, unit: str, every: int = 10) -> None:
        self.total, self.name, self.unit, self.every = total, name, unit, max(1, every)
        self.bar = None
        if sys.stdout.isatty():
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=name, unit="step", dynamic_ncols=True,
                                file=sys.stdout)
            except ImportError:
                self.bar = None

    def update(self, step: int, loss: float, seconds: float, items: int) -> None:
        rate = items / seconds if seconds > 0 else float("inf")
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", **{f"{self.unit}/s": f"{rate:.0f}"})
            self.bar.update(1)
        elif step == 1 or step % self.every == 0 or step == self.total:
            print(f"[{self.name}] step {step:>{len(str(self.total))}}/{self.total}  "
                  f"loss {loss:.4f}  {seconds * 1e3:.1f} ms  {rate:.0f} {self.unit}/s",
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def summary_lines(runs: Sequence[dict]) -> List[str]:
    out = []
    for r in runs:
        if r.get("losses"):
            out.append(f"{r['name']}: loss {r['losses'][0]:.4f} (step 1) -> "
                       f"{r['losses'][-1]:.4f} (step {len(r['losses'])})")
    return out


FIDELITY_LIMIT = 1.5  # predicted and measured step times further apart than this: a warning


def fidelity_lines(runs: Sequence[dict], limit: float = FIDELITY_LIMIT) -> List[str]:
    """Per run: predicted (the full model) and measured step time and their
    ratio; a WARNING line for each run whose two differ by more than `limit`
    times either way. Sets ``run["prediction_off"]`` (True, False, or None
    when either figure is missing)."""
    out = []
    for r in runs:
        predicted = (r.get("predicted") or {}).get("step_s")
        measured = (r.get("measured") or {}).get("step_s")
        if not predicted or not measured:
            r["prediction_off"] = None
            out.append(f"  {r['name']}: predicted {human_seconds(predicted)}, measured "
                       f"{human_seconds(measured)}")
            continue
        ratio = measured / predicted
        r["prediction_off"] = not (1 / limit <= ratio <= limit)
        out.append(f"  {r['name']}: predicted {human_seconds(predicted)}, measured "
                   f"{human_seconds(measured)} (measured/predicted {ratio:.2f})")
    for r in runs:
        if r.get("prediction_off"):
            ratio = r["measured"]["step_s"] / r["predicted"]["step_s"]
            word = "slower" if ratio > 1 else "faster"
            out.append(f"WARNING: {r['name']}: the measured step is {max(ratio, 1 / ratio):.1f}x "
                       f"{word} than predicted (more than {limit:g}x): the cost model does not "
                       f"describe this machine well enough to trust this plan's ranking")
    return out
