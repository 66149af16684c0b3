"""bench/fidelity.py in its headline mode at a tiny size: 2 processes of one
world (the launcher), one thread each, 1 round of 2 strategies of a 1-layer
GPT. Asserts what must hold exactly, never timing: bytes predicted equal
bytes measured on every rank, both ranks' figures present, the JSON fields
the README and plot_fidelity.py read, and the Spearman correlation against
a value worked out by hand. The bench itself bounds every round by its
timeout and ends the launcher by its pid."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fidelity_runner  # noqa: E402

ROW_FIELDS = ("model", "strategy", "predicted_step_s", "proxy_step_s", "measured_step_s",
              "predicted_over_measured", "predicted_memory_bytes", "peak_bytes",
              "memory_predicted_over_measured", "predicted_bytes", "measured_bytes", "step_s",
              "bytes_equal", "plans_identical", "curve_step_s")


def test_spearman_by_hand():
    # ranks (1, 2, 3, 4) against (1, 3, 2, 4): d^2 = 0+1+1+0 = 2, rho = 1 - 6*2/(4*15) = 0.8
    assert fidelity_runner.spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(0.8)
    # ties share the average rank: (1.5, 1.5, 3) against (1, 2, 3): rho = 0.866...
    assert fidelity_runner.spearman([5, 5, 7], [1, 2, 3]) == pytest.approx(3 ** 0.5 / 2)


def test_same_plans_groups_equal_strategy_dicts():
    # "autoddl" equals "dp" (keys in another order); "mp" differs in one value.
    strategies = {"dp": {"w": "S(0)", "x": "S(0)"}, "mp": {"w": "S(1)", "x": "S(0)"},
                  "autoddl": {"x": "S(0)", "w": "S(0)"}}
    assert fidelity_runner.same_plans(strategies) == {
        "dp": ["dp", "autoddl"], "mp": ["mp"], "autoddl": ["dp", "autoddl"]}


def test_relative_spread_by_hand():
    # quartiles of 1..5 are 2 and 4 around 3: (4 - 2) / 2 / 3
    assert fidelity_runner.relative_spread([5, 1, 4, 2, 3]) == pytest.approx(1 / 3)
    assert fidelity_runner.relative_spread([2.0]) == 0


def test_two_processes_one_round_bytes_equal_per_rank(tmp_path):
    out = tmp_path / "fidelity.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    cmd = [sys.executable, os.path.join(ROOT, "bench", "fidelity.py"), "--modes", "procs2",
           "--models", "gpt_tiny", "--strategies", "data_parallel,megatron,autoddl", "--rounds", "1",
           "--warmup", "1", "--steps", "1", "--timeout-s", "240", "--cluster-dir",
           str(tmp_path), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=420, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["headline"] == "procs2" and set(result["modes"]) == {"procs2"}
    mode = result["modes"]["procs2"]
    assert mode["processes"] == 2 and mode["threads_per_process"] == 1
    assert mode["hierarchy"] == [2] and not mode["errors"]
    assert [r["strategy"] for r in mode["rows"]] == ["data_parallel", "megatron", "autoddl"]
    for row in mode["rows"]:
        for field in ROW_FIELDS:
            assert field in row, field
        assert len(row["predicted_bytes"]) == len(row["measured_bytes"]) == 2
        assert row["predicted_bytes"] == row["measured_bytes"]
        assert row["plans_identical"]  # both processes ran the same strategy text
        assert all(b > 0 for b in row["measured_bytes"])  # both ranks sent something
        assert len(row["peak_bytes"]) == 2 and all(p > 0 for p in row["peak_bytes"])
        # the liveness model (api/memory_estimate.h) against the allocators' own count
        assert row["predicted_memory_bytes"] == row["peak_bytes"]
        assert len(row["step_s"]) == 1  # 1 round x 1 timed step
        # pooled over the strategies that are the same plan (one sample each here)
        pooled = [row["step_s"][0]] + [o["step_s"][0] for o in mode["rows"]
                                       if o["strategy"] in row["same_plan_as"]]
        assert row["measured_step_s"] == pytest.approx(float(np.median(pooled)), rel=1e-4,
                                                       abs=1e-6)
        assert row["own_step_s"] == pytest.approx(row["step_s"][0], rel=1e-4, abs=1e-6)
        # the trace of both processes joined with the simulation: every task found
        ex = row["explain"]
        assert "error" not in ex, ex
        assert ex["missing_tasks"] == 0 and ex["extra_events"] == 0
        assert 0 < row["trace_step_s"] and ex["categories"] and ex["critical_path_predicted"]
    # autoddl: the simulated choice among its answer and the presets, both figures kept
    cands = mode["rows"][2]["candidates"]
    assert cands[0]["name"] == "autoddl" and sum(c["chosen"] for c in cands) == 1
    chosen = [c for c in cands if c["chosen"]][0]
    assert chosen["simulated_s"] == min(c["simulated_s"] for c in cands if not c["skipped"])
    # chosen on the curve's prices; predicted_step_s is priced from the kernels
    # timed at the plans' own shapes
    assert mode["rows"][2]["curve_step_s"] == pytest.approx(chosen["simulated_s"], rel=1e-9)
    assert mode["summary"]["all"]["strategies"] == 3
    assert 0 <= mode["summary"]["all"]["median_error"] <= mode["summary"]["all"]["worst_error"]
    assert mode["goals"]["bytes_equal"] and "spearman" in mode
    assert result["rows"] == mode["rows"] and "load_before" in mode
