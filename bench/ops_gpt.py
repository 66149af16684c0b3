"""ops_gpt: milliseconds per GPT training step, ours next to numpy and PyTorch.

What it measures: the wall time of one AdamW training step (forward,
backward, update) of ``oneflow_lite.models.GPT`` with 4 layers, hidden 256,
4 heads, sequence 128, vocabulary 2048, batch 8, float32, median over
``--steps`` steps after ``--warmup`` steps, for
- ``gpt_step_ms``: an oneflow_lite Session (``num_threads=--threads``) of
  the model traced with its loss (``models.trace_loss``);
- ``numpy_gpt_step_ms``: the independent numpy implementation with
  hand-written backward in tests/python/reference (numpy's BLAS limited to
  ``--threads`` with threadpoolctl when it is installed, else through the
  OPENBLAS_NUM_THREADS / OMP_NUM_THREADS set by bench/run.sh), given the
  model's weights under the reference's names (tests/python/reference/
  state_dict.py);
- ``torch_gpt_step_ms``: the same model in PyTorch on CPU with
  ``torch.set_num_threads(--threads)``, run by ``--torch-python`` (default:
  this interpreter); null with ``torch_error`` when torch does not import.
All three start from the same weights (``make_model``: the GPT built after
``flow.manual_seed(SEED)``, its state_dict) and batches; their first losses
are reported so a reader can see they compute the same thing.

Prints one JSON object on stdout (merged by bench/merge_results.py).
Rerun: ``bench/run.sh ops`` (builds first), or
``PYTHONPATH=python .venv/bin/python bench/ops_gpt.py --threads 2``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import oneflow_lite as flow  # noqa: E402
from oneflow_lite.models import GPT, GPTConfig, trace_loss  # noqa: E402
from reference import numpy_gpt, numpy_optim  # noqa: E402
from reference.state_dict import from_state_dict  # noqa: E402

CONFIG = dict(n_layer=4, n_embd=256, n_head=4, seq_len=128, vocab_size=2048)
BATCH = 8
HYPER = dict(lr=1e-3, weight_decay=0.01)
SEED = 0


def make_model() -> GPT:
    """The benchmarked model with its initial weights (every peer starts
    from its state_dict)."""
    flow.manual_seed(SEED)
    return GPT(GPTConfig(**CONFIG))


def batches(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        ids = rng.integers(0, CONFIG["vocab_size"], size=(BATCH, CONFIG["seq_len"]), dtype=np.int64)
        labels = np.roll(ids, -1, axis=1)
        yield ids, labels


def time_ours(model, data, threads):
    g = trace_loss(model, BATCH)
    g.builder.minimize(g.loss, "adamw", **HYPER)
    sess = g.builder.session(threads)
    times, losses = [], []
    for ids, labels in data:
        t0 = time.perf_counter()
        (loss,) = sess.run({g.data: ids, g.labels: labels}, [g.loss])
        times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    return times, losses


def time_numpy(model, data):
    config = GPTConfig(**CONFIG)
    params = from_state_dict("gpt", model.state_dict(), dtype=np.float32, config=config)
    opt = numpy_optim.AdamW(**HYPER)
    times, losses = [], []
    for batch in data:
        t0 = time.perf_counter()
        loss, grads = numpy_gpt.loss_and_grads(params, config, batch)
        opt.step(params, grads)
        times.append(time.perf_counter() - t0)
        losses.append(float(loss))
    return times, losses


def time_torch(python, threads, warmup, steps):
    """Runs bench/torch_gpt.py in `python`; returns its JSON or an error."""
    cmd = [python, os.path.join(HERE, "torch_gpt.py"), "--threads", str(threads),
           "--warmup", str(warmup), "--steps", str(steps)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "tests", "python")]))
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"torch_error": str(e)}
    if out.returncode != 0:
        return {"torch_error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout)


def limit_numpy_threads(threads):
    try:
        from threadpoolctl import threadpool_limits
        return threadpool_limits(threads)
    except ImportError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--torch-python", default=sys.executable)
    args = parser.parse_args()
    model = make_model()
    n = args.warmup + args.steps
    ours, ours_losses = time_ours(model, list(batches(n)), args.threads)
    limiter = limit_numpy_threads(args.threads)
    ref, ref_losses = time_numpy(model, list(batches(n)))
    del limiter
    torch = time_torch(args.torch_python, args.threads, args.warmup, args.steps)
    med = lambda ts: 1e3 * float(np.median(ts[args.warmup:]))  # noqa: E731
    result = {
        "benchmark": "ops_gpt",
        "what": "ms per AdamW training step (forward+backward+update) of the GPT-style model, "
                "median after warm-up; ours (Session) vs independent numpy vs PyTorch CPU",
        "config": dict(CONFIG, batch=BATCH, dtype="float32", optimizer="adamw"),
        "threads": args.threads, "warmup": args.warmup, "steps": args.steps,
        "gpt_step_ms": med(ours),
        "numpy_gpt_step_ms": med(ref),
        "torch_gpt_step_ms": torch.get("torch_gpt_step_ms"),
        "first_losses": {"ours": ours_losses[0], "numpy": ref_losses[0],
                         "torch": torch.get("first_loss")},
        "rerun": "bench/run.sh ops",
    }
    if "torch_error" in torch:
        result["torch_error"] = torch["torch_error"]
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
