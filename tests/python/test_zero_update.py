"""The sharded update (the "zero" preset: every trainable variable and its
AdamW state S(0) over the data axis, weights gathered before use, gradients
reduce-scattered) equals the replicated data-parallel update: losses and
final parameters after three AdamW steps of an MLP and a GPT with many
small parameters (zero_cases.py), float64 at rtol 1e-12 and float32 at
rtol 1e-5 / atol 1e-6, on 4 virtual devices of this process and on 2
processes (multiprocess/spawn.py, one rank each), with gradient buckets
off and on (bitwise the same on 2 processes; in-process, see
test_zero_buckets.py). The oracle, data_parallel, is itself held to the single-device
session at the same tolerances. A sharded checkpoint saved under zero
loads under data_parallel and the reverse, and the next steps' losses and
parameters are those of the run that did not stop (dropout included: the
checkpoint carries the random stream's position)."""
from __future__ import annotations

import numpy as np
import pytest

import zero_cases as zc
from multiprocess import spawn
from oneflow_lite import sharded_checkpoint

BUCKETS = (0, 1 << 20)
CASES = [(m, d) for m in ("mlp", "gpt") for d in ("float64", "float32")]
IDS = [f"{m}-{d}" for m, d in CASES]


def run(model: str, dtype: str, preset: str, devices: int, bucket: int):
    g, params = zc.build(model, dtype)
    s = zc.session(g, preset, devices, bucket)
    if preset == "zero":  # really sharded: each rank holds a quarter of W and its AdamW state
        for name in ("fc0.weight" if model == "mlp" else "h.0.mlp.fc.weight",):
            for n in (name, name + "/m", name + "/v"):
                slices = s.variable_layout(n)["slices"]
                rows = [slices[r]["shape"][0] for r in range(devices)]
                assert sum(rows) == s.get_variable(n).shape[0] and max(rows) < sum(rows), n
    losses = zc.train(s, g, zc.batches(model, dtype))
    return losses, {p: s.get_variable(p) for p in params}


def single(model: str, dtype: str):
    g, params = zc.build(model, dtype)
    s = g.builder.session(num_threads=1)
    losses = zc.train(s, g, zc.batches(model, dtype))
    return losses, {p: s.get_variable(p) for p in params}


def assert_close(got, want, dtype: str, where: str) -> None:
    tol = zc.TOL[dtype]
    np.testing.assert_allclose(got[0], want[0], **tol, err_msg=f"losses: {where}")
    assert sorted(got[1]) == sorted(want[1])
    for p, value in want[1].items():
        assert got[1][p].dtype == np.dtype(dtype), (p, got[1][p].dtype)
        np.testing.assert_allclose(got[1][p], value, **tol, err_msg=f"{p}: {where}")


@pytest.fixture(scope="module")
def oracles():
    """Per (model, dtype, devices): data_parallel's run, checked against
    the single-device session first."""
    cache = {}

    def get(model: str, dtype: str, devices: int):
        key = (model, dtype, devices)
        if key not in cache:
            one = single(model, dtype)
            dp = run(model, dtype, "data_parallel", devices, 0)
            assert_close(dp, one, dtype, f"data_parallel {key} vs one device")
            cache[key] = dp
        return cache[key]
    return get


@pytest.mark.parametrize("model,dtype", CASES, ids=IDS)
def test_zero_equals_data_parallel_on_4_virtual_devices(oracles, model, dtype):
    want = oracles(model, dtype, 4)
    for bucket in BUCKETS:
        got = run(model, dtype, "zero", 4, bucket)
        assert_close(got, want, dtype, f"zero {model} {dtype} [4] bucket {bucket}")


@pytest.mark.parametrize("model,dtype", CASES, ids=IDS)
def test_zero_equals_data_parallel_on_2_processes(oracles, tmp_path, model, dtype):
    want = oracles(model, dtype, 2)
    seen = {}
    for bucket in BUCKETS:
        args = ["-m", "multiprocess.worker", "zero", str(tmp_path), model, dtype, "zero",
                str(bucket)]
        r = spawn.run_world(args, 2, 240, extra_env={"OFL_TEST_THREADS": "1"})
        assert not r.timed_out and r.codes == [0, 0], f"codes {r.codes}\n" + "\n".join(
            o[-3000:] for o in r.outputs)
        for p in range(2):
            z = np.load(tmp_path / f"zero-{model}-{dtype}-zero-{bucket}.p{p}.npz")
            got = (list(z["losses"]), {k[6:]: z[k] for k in z.files if k.startswith("param:")})
            assert_close(got, want, dtype, f"zero {model} {dtype} process {p} bucket {bucket}")
            seen[(p, bucket)] = got
    for p in range(2):  # Gloo's reduce-scatter sums as the in-process one: bitwise with buckets
        a, b = seen[(p, BUCKETS[0])], seen[(p, BUCKETS[1])]
        assert a[0] == b[0] and all(np.array_equal(a[1][k], b[1][k]) for k in a[1]), p


@pytest.mark.parametrize("saver,loader", [("zero", "data_parallel"), ("data_parallel", "zero")])
def test_checkpoint_moves_between_zero_and_data_parallel(tmp_path, saver, loader):
    """Train 2 steps under `saver` on [4], save (parameters and AdamW state),
    load into a fresh `loader` session, train 2 more: the losses and
    parameters are the uninterrupted `saver` run's (float64; the GPT with
    dropout, whose position the checkpoint carries)."""
    model, dtype = "gpt", "float64"
    data = zc.batches(model, dtype, steps=4)
    g, params = zc.build(model, dtype)
    names = list(g.program.variables())
    assert any(n.endswith("/m") for n in names) and any(n.endswith("/v") for n in names)
    before = zc.session(g, saver, 4, 1 << 20)
    zc.train(before, g, data[:2])
    state = {n: before.get_variable(n) for n in names}
    sharded_checkpoint.save(tmp_path / "ck", sharded_checkpoint.SessionShards(before, names),
                            model="gpt")
    want = (zc.train(before, g, data[2:]), {p: before.get_variable(p) for p in params})
    g2, _ = zc.build(model, dtype)
    after = zc.session(g2, loader, 4, 1 << 20)
    sharded_checkpoint.load_into(tmp_path / "ck", sharded_checkpoint.SessionShards(after, names),
                                 model="gpt")
    for n in names:  # the loaded state is the saved one, bitwise
        assert np.array_equal(after.get_variable(n), state[n]), n
    got = (zc.train(after, g2, data[2:]), {p: after.get_variable(p) for p in params})
    assert_close(got, want, dtype, f"saved under {saver}, loaded under {loader}")

