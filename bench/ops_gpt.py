"""ops_gpt: milliseconds per GPT training step, ours next to numpy and PyTorch.

PLACEHOLDER: the lead fills this in once ``oneflow_lite.train`` and the GPT
model exist. Until then it prints the fields below with ``null`` values and
``"status": "placeholder"``, and bench/run.sh merges them into
bench/results/ops.json as they are.

What it is to measure (one JSON object on stdout, the contract with
bench/merge_results.py; keep the field names):

- ``gpt_step_ms``: the median wall time of one training step (forward,
  backward, optimizer update) of the GPT model of ``python -m
  oneflow_lite.train --model gpt``, run by an ``oneflow_lite`` Session with
  ``num_threads=--threads``, after warm-up steps; batch and model sizes as
  the trainer's defaults, written into the JSON (``config``).
- ``numpy_gpt_step_ms``: the same model, step and sizes written in numpy
  (forward and hand-written backward), as the reference a reader can check.
- ``torch_gpt_step_ms``: the same in PyTorch on CPU with
  ``torch.set_num_threads(--threads)``; ``null`` with a ``torch_error``
  when torch is not installed (it is not in requirements.txt).
- ``what``, ``config``, ``warmup``, ``steps``: what was measured, on what.

Rerun: ``bench/run.sh ops`` (builds first), or
``PYTHONPATH=python .venv/bin/python bench/ops_gpt.py --threads 2``.
"""
from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="kernel threads for every part")
    args = parser.parse_args()
    result = {
        "benchmark": "ops_gpt",
        "status": "placeholder",
        "what": "ms per GPT training step (forward+backward+update): oneflow_lite vs numpy "
                "vs PyTorch CPU; not measured yet (bench/ops_gpt.py is a placeholder)",
        "threads": args.threads,
        "gpt_step_ms": None,
        "numpy_gpt_step_ms": None,
        "torch_gpt_step_ms": None,
    }
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
