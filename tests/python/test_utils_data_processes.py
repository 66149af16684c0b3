"""DistributedSampler in a real 2-process job (the launcher's variables):
each process, with the defaults, takes its own rows, and together they
read every row once (plus PyTorch's padding)."""
from __future__ import annotations

import json
import os
import sys
import textwrap

import numpy as np

from oneflow_lite.distributed.launch import LaunchOptions, launch

WORKER = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import oneflow_lite as flow
    from oneflow_lite.utils.data import DataLoader, DistributedSampler, TensorDataset

    ds = TensorDataset(np.arange(7), np.arange(7) * 10)
    sampler = DistributedSampler(ds, shuffle=True, seed=4)
    sampler.set_epoch(2)
    rows = [y.numpy().tolist() for _, y in DataLoader(ds, batch_size=2, sampler=sampler)]
    with open(os.path.join(sys.argv[1], os.environ["RANK"] + ".json"), "w") as f:
        json.dump({"replicas": sampler.num_replicas, "rank": sampler.rank, "rows": rows}, f)
""")


def test_two_processes_each_read_their_own_rows(tmp_path, monkeypatch):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [python_dir] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    result = launch([sys.executable, str(script), str(tmp_path)],
                    LaunchOptions(nproc_per_node=2, timeout_s=120))
    assert result.exit_code == 0, result.message
    parts = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    assert [(p["replicas"], p["rank"]) for p in parts] == [(2, 0), (2, 1)]
    order = np.random.Generator(np.random.Philox(4 + 2)).permutation(7).tolist()
    order.append(order[0])  # 7 rows over 2 processes: padded to 8 with the first
    for rank, part in enumerate(parts):
        assert [v // 10 for batch in part["rows"] for v in batch] == order[rank::2]
