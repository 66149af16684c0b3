"""bench/ops_gpt.py runs the PyTorch peer as its users run it: the
environment it hands the peer's process carries none of oneflow_lite's
settings (OMP_WAIT_POLICY=PASSIVE once leaked into it and slowed it),
while our sides get the package and their thread bounds. No torch."""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import ops_gpt  # noqa: E402

OURS = {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2",
        "PYTHONPATH": "/x/python", "OFL_SOMETHING": "1", "MKL_NUM_THREADS": "2"}


def _args():
    return argparse.Namespace(threads=2, warmup=2, steps=5, torch_python="/t/bin/python",
                              native_isa="avx512")


def test_the_peer_gets_none_of_our_settings(monkeypatch):
    for k, v in OURS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HOME_LIKE_SETTING", "kept")
    cmd, env = ops_gpt.side_cmd("torch_eager", _args(), "/w.npz", "avx512")
    assert cmd[:2] == ["/t/bin/python", os.path.join(ops_gpt.HERE, "torch_gpt.py")]
    assert not set(OURS) & set(env), sorted(set(OURS) & set(env))
    assert env["HOME_LIKE_SETTING"] == "kept"


def test_our_sides_get_the_package_and_thread_bounds(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # a leftover: our package sets its own
    for side in ("ours_graph", "ours_eager"):
        cmd, env = ops_gpt.side_cmd(side, _args(), "/w.npz", "avx512")
        assert cmd[2] == side.split("_")[1]
        assert env["PYTHONPATH"] == os.path.join(ops_gpt.ROOT, "python")
        assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "2"
        assert "OMP_WAIT_POLICY" not in env
    cmd, _ = ops_gpt.side_cmd("ours_graph", _args(), "/w.npz", "avx512", profile="/t.json")
    assert cmd[-2:] == ["--profile", "/t.json"]
    assert cmd[cmd.index("--steps") + 1] == "1"


def test_a_forced_level_holds_each_side_by_its_own_knobs(monkeypatch):
    monkeypatch.setenv("OFL_CPU_ISA", "scalar")  # a leftover: the level is the bench's choice
    _, torch_env = ops_gpt.side_cmd("torch_eager", _args(), "/w.npz", "avx2")
    assert {k: torch_env[k] for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA",
                                      "MKL_ENABLE_INSTRUCTIONS")} == {
        "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
    assert "OFL_CPU_ISA" not in torch_env
    _, ours = ops_gpt.side_cmd("ours_graph", _args(), "/w.npz", "avx2")
    assert ours["OFL_CPU_ISA"] == "avx2" and "ATEN_CPU_CAPABILITY" not in ours
    for side in ("ours_eager", "torch_eager"):  # the CPU's own level: as users run it
        _, env = ops_gpt.side_cmd(side, _args(), "/w.npz", "avx512")
        assert not {"OFL_CPU_ISA", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA"} & set(env)


def test_default_levels_add_avx2_below_avx512():
    assert ops_gpt.default_isas("avx512") == ["avx512", "avx2"]
    assert ops_gpt.default_isas("avx2") == ["avx2"]
