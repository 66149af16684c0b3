"""The main job (python -m oneflow_lite.train): a short run on 4 virtual
devices with the expert comparison writes its JSON report and plot, and its
measured bytes per rank equal the planner's prediction; --plan-only plans a
mesh this machine does not have; bad names are refused by name. The losses
themselves are checked against eager in test_graph.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

from oneflow_lite import train

SMALL_GPT = ["--model", "gpt", "--layers", "1", "--hidden", "16", "--heads", "2", "--seq", "8",
             "--vocab", "11", "--batch", "8"]


def test_run_with_expert_comparison_writes_report_and_plot(tmp_path, capsys):
    report_path, plot_path = tmp_path / "r.json", tmp_path / "p.png"
    report = train.main(SMALL_GPT + ["--devices", "4", "--hierarchy", "2,2", "--steps", "3",
                                     "--compare", "expert", "--cluster", "h100_8gpu",
                                     "--threads", "2", "--report", str(report_path),
                                     "--plot", str(plot_path)])
    out = capsys.readouterr().out
    assert "step time, predicted" in out and "best expert" in out and "report: " in out
    saved = json.loads(report_path.read_text())
    assert [r["name"] for r in saved["runs"]][0] == "autoddl" and len(saved["runs"]) == 2
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for run in report["runs"]:
        assert len(run["losses"]) == 3 and np.all(np.isfinite(run["losses"]))
        assert len(run["measured"]["bytes_per_rank"]) == 4
    # same model, same data, same init: the two layouts give the same first loss
    np.testing.assert_allclose(report["runs"][0]["losses"][0], report["runs"][1]["losses"][0],
                               rtol=1e-5)


# Predicted bytes per rank are the boxing planner's, counted once per
# (tensor, placement, wanted layout) as lowering boxes them; the
# communicators count what really moves. Data parallel and 2-D used to
# differ when two consumers wanted the same layout of one tensor.
@pytest.mark.parametrize("searcher", [
    "autoddl", "data_parallel", "megatron", "2d"])
def test_measured_bytes_per_rank_equal_the_prediction(searcher):
    report = train.main(SMALL_GPT + ["--devices", "4", "--hierarchy", "2,2", "--steps", "2",
                                     "--cluster", "h100_8gpu", "--searcher", searcher])
    run = report["runs"][0]
    assert run["measured"]["bytes_per_rank"] == run["predicted"]["bytes_per_rank"]


def test_plan_only_plans_a_mesh_it_does_not_run(capsys):
    report = train.main(SMALL_GPT + ["--plan-only", "--cluster", "h100_8gpu", "--mesh", "2,4"])
    out = capsys.readouterr().out
    assert report["plan_only"] and report["runs"][0]["predicted"]["step_s"] > 0
    assert "expert presets:" in out and "megatron" in out
    # autoddl's answer and the presets by the simulated step, both figures printed
    rows = report["simulated_choice"]
    assert rows[0]["name"] == "autoddl" and sum(r["chosen"] for r in rows) == 1
    assert "simulated step chooses" in out and "autoddl: additive" in out


@pytest.mark.parametrize("argv,message", [
    (["--model", "resnet"], "unknown model 'resnet'"),
    (["--searcher", "fastest"], "unknown searcher 'fastest'"),
    (["--devices", "4", "--hierarchy", "3,2"], "--hierarchy [3, 2] holds 6 devices"),
    (["--hierarchy", "2,x"], "'2,x' is not a comma-separated list"),
])
def test_bad_arguments_name_the_culprit(argv, message, capsys):
    with pytest.raises(SystemExit):
        train.main(argv)
    assert message in capsys.readouterr().err


def test_fidelity_lines_warn_only_beyond_one_and_a_half_times():
    from oneflow_lite import train_report as rep

    def run(name, predicted, measured):
        return {"name": name, "predicted": {"step_s": predicted}, "measured": {"step_s": measured}}

    runs = [run("close", 0.010, 0.014), run("slow", 0.010, 0.016), run("fast", 0.010, 0.006),
            run("edge", 0.010, 0.015), run("unknown", None, 0.01)]
    lines = rep.fidelity_lines(runs)
    # 1.4 and exactly 1.5 are within the limit; 1.6 and 1/0.6 = 1.67 are not (worked by hand)
    assert [r["prediction_off"] for r in runs] == [False, True, True, False, None]
    warnings = [ln for ln in lines if ln.startswith("WARNING")]
    assert len(warnings) == 2
    assert "slow" in warnings[0] and "1.6x slower" in warnings[0]
    assert "fast" in warnings[1] and "1.7x faster" in warnings[1]
    assert "close: predicted 10.00 ms, measured 14.00 ms (measured/predicted 1.40)" in lines[0]


def test_per_strategy_predicted_and_measured_lines(capsys):
    report = train.main(SMALL_GPT + ["--devices", "2", "--hierarchy", "2", "--steps", "3",
                                     "--compare", "expert", "--cluster", "h100_8gpu",
                                     "--threads", "1"])
    out = capsys.readouterr().out
    assert "predicted (full model) against measured step time:" in out
    for run in report["runs"]:
        predicted, measured = run["predicted"]["step_s"], run["measured"]["step_s"]
        ratio = measured / predicted
        assert f"  {run['name']}: predicted " in out
        assert f"(measured/predicted {ratio:.2f})" in out
        off = not (1 / 1.5 <= ratio <= 1.5)
        assert run["prediction_off"] == off
        assert (f"WARNING: {run['name']}:" in out) == off
        # the printed prediction is the full model, not the proxy total
        assert predicted > 0 and run["predicted"]["proxy_step_s"] > 0


def test_two_processes_print_predicted_and_measured_per_strategy(tmp_path):
    """What ./scripts/run.sh runs (2 processes x 1 thread on the calibrated
    local cluster), at a tiny size; the launcher is ended by its pid on a
    timeout."""
    import os
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    report = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "oneflow_lite.train"] + SMALL_GPT + [
        "--nproc", "2", "--devices", "2", "--hierarchy", "2", "--threads", "1", "--steps", "3",
        "--compare", "expert", "--report", str(report)]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.path.join(root, "python"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    try:
        out, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the launcher stops its children
        out, _ = proc.communicate(timeout=60)
        pytest.fail("the 2-process main job did not finish in 300 s:\n" + out[-2000:])
    assert proc.returncode == 0, out[-2000:]
    saved = json.loads(report.read_text())
    assert saved["args"]["nproc"] == 2 and saved["args"]["cluster"] == "local"
    assert len(saved["runs"]) == 2 and "(best expert)" in saved["runs"][1]["name"]
    for run in saved["runs"]:
        ratio = run["measured"]["step_s"] / run["predicted"]["step_s"]
        assert f"  {run['name']}: predicted " in out
        assert f"(measured/predicted {ratio:.2f})" in out
        assert run["prediction_off"] == (not 1 / 1.5 <= ratio <= 1.5)
        assert (f"WARNING: {run['name']}:" in out) == run["prediction_off"]
