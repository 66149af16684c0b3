"""One process of a multi-process test (tests/python/test_multiprocess.py).

    python -m multiprocess.worker cases OUT 0,5,17      # property cases of test_distributed
    python -m multiprocess.worker model OUT gpt autoddl 4 2,2
    python -m multiprocess.worker kill OUT VICTIM        # VICTIM kills itself mid-step 3
    python -m multiprocess.worker mismatch OUT           # process 1 plans another strategy
    python -m multiprocess.worker fail OUT               # a bad label on one rank's slice
    python -m multiprocess.worker timeout OUT            # 1 ms waits: steps time out
    python -m multiprocess.worker ckpt_save OUT DIR      # 3 steps, sharded save, 2 more steps
    python -m multiprocess.worker ckpt_load OUT DIR TAG DEVICES HIERARCHY SEED
    python -m multiprocess.worker seeds OUT              # process 1 starts from other weights
    python -m multiprocess.worker save_end OUT DIR       # process 2 dies at the end of a save
    python -m multiprocess.worker hang OUT               # trains until a peer stops answering
    python -m multiprocess.worker zero OUT MODEL DTYPE PRESET BUCKET  # zero_cases on [2]
    python -m multiprocess.worker dropout_resume OUT PHASE DIR  # save or load, dropout on

Each process trains as told and writes what it saw to OUT/<tag>.p<process>.npz
(losses, parameters after training, errors as text), so the test compares
every process with the one-process oracle. The world comes from the
launcher's variables (multiprocess/spawn.py sets them).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np

import test_distributed as td
from oneflow_lite import _C, sharded_checkpoint
from oneflow_lite.models import GPTConfig, VGGConfig

PROCESS = int(os.environ.get("RANK", "0"))


def save(out: str, tag: str, losses, values: dict, **extra) -> None:
    arrays = {f"param:{k}": v for k, v in values.items()}
    np.savez(os.path.join(out, f"{tag}.p{PROCESS}.npz"), losses=np.asarray(losses, np.float64),
             **arrays, **{k: np.asarray(v) for k, v in extra.items()})


def session(g, devices: int, hierarchy, strategy, micro_batches: int = 1, threads: int = 1,
            timeout_ms: int = 30000, bucket_bytes: int = 0):
    return _C.DistributedSession(g.program, list(range(devices)), list(hierarchy), strategy,
                                 [g.loss], num_threads=threads, timeout_ms=timeout_ms,
                                 micro_batches=micro_batches, gradient_bucket_bytes=bucket_bytes)


def run_case(index: int, threads: int):
    """test_distributed's case `index`: (losses, parameters) on this world."""
    case = td.make_case(index)
    data = td.batches(case)
    k = case["micro_batches"]
    model = td.make_model(case)
    g, params = td.build(model, case["batch"])
    strategy = _C.PlanSpec.random(case["strategy_seed"], case["stages"])
    s = session(g, case["devices"], case["hierarchy"], strategy, k, threads,
                bucket_bytes=case["bucket_bytes"])
    losses = td.train_micro_batches(s, g, data, k) if k > 1 else td.train(s, g, data)
    return losses, {p: s.get_variable(p) for p in params}


MODELS = {
    "gpt": lambda: ("gpt", GPTConfig(vocab_size=32, seq_len=8, n_layer=2, n_head=2, n_embd=16,
                                     dropout=0.1), 16),
    "vgg": lambda: ("vgg", VGGConfig(features=(4, "M", 8, "M"), in_channels=3, image_size=8,
                                     fc=(16,), num_classes=5, dropout=0.1), 16),
}


def model_case(name: str):
    kind, cfg, batch = MODELS[name]()
    return {"model": kind, "config": cfg, "batch": batch, "micro_batches": 1, "data_seed": 7}


def run_model(name: str, searcher: str, devices: int, hierarchy, threads: int, steps: int = 3,
              timeout_ms: int = 30000):
    case = model_case(name)
    data = td.batches(case, steps)
    g, params = td.build(td.make_model(case), case["batch"])
    if searcher == "autoddl":
        strategy = _C.plan(g.program, list(hierarchy), "v100_8gpu", "autoddl").strategy
    else:
        strategy = _C.PlanSpec.random(int(searcher), 1)
    s = session(g, devices, hierarchy, strategy, 1, threads, timeout_ms=timeout_ms)
    return s, g, params, data


def main(argv) -> int:
    mode, out = argv[0], argv[1]
    threads = int(os.environ.get("OFL_TEST_THREADS", "1"))
    if mode == "cases":
        for index in [int(i) for i in argv[2].split(",")]:
            losses, values = run_case(index, threads)
            save(out, f"case{index}", losses, values)
    elif mode == "model":
        name, searcher, devices = argv[2], argv[3], int(argv[4])
        hierarchy = [int(h) for h in argv[5].split(",")]
        s, g, params, data = run_model(name, searcher, devices, hierarchy, threads)
        losses = td.train(s, g, data)
        save(out, f"{name}-{searcher}-{argv[5]}", losses, {p: s.get_variable(p) for p in params},
             strategy=s.strategy())
    elif mode == "kill":
        victim = int(argv[2])
        s, g, params, data = run_model("gpt", "autoddl", 4, [4], threads, steps=1)
        x, y = data[0]
        started = threading.Event()
        if PROCESS == victim:  # dies (SIGKILL) a moment into step 3
            def die():
                started.wait(60)
                time.sleep(0.002)
                with open(os.path.join(out, "kill.died"), "w") as f:
                    f.write(f"{time.time():.6f}")
                os.kill(os.getpid(), signal.SIGKILL)
            threading.Thread(target=die, daemon=True).start()
        for step in range(1000):
            if step == 3:
                started.set()
            try:
                s.run({g.data: x, g.labels: y}, [g.loss])
            except Exception as e:  # noqa: BLE001 - the error is what the test reads
                print(f"ERROR at step {step} after {time.time():.3f}: {e}", flush=True)
                save(out, "kill", [], {}, error=str(e), stopped=time.time())
                return 1
        return 0
    elif mode == "mismatch":
        case = model_case("gpt")
        g, _ = td.build(td.make_model(case), case["batch"])
        strategy = _C.PlanSpec.random(11 if PROCESS != 1 else 12, 1)
        try:
            session(g, 4, [4], strategy, 1, threads)
        except Exception as e:  # noqa: BLE001
            save(out, "mismatch", [], {}, error=str(e))
            return 1
        return 0
    elif mode == "local":  # each process feeds only its rows of the global batch
        case = model_case("gpt")
        data = td.batches(case)[:3]
        g, params = td.build(td.make_model(case), case["batch"])
        strategy = _C.plan(g.program, [4], "v100_8gpu", "data_parallel").strategy
        s = _C.DistributedSession(g.program, [0, 1, 2, 3], [4], strategy, [g.loss],
                                  num_threads=threads, timeout_ms=30000, local_feeds=True)
        nproc = int(os.environ["WORLD_SIZE"])
        losses = []
        for x, y in data:
            rows = np.array_split(np.arange(len(x)), nproc)[PROCESS]
            (loss,) = s.run({g.data: x[rows], g.labels: y[rows]}, [g.loss])
            losses.append(float(loss))
        save(out, "local", losses, {p: s.get_variable(p) for p in params})
    elif mode in ("fail", "timeout"):
        return failure_mode(mode, out, threads)
    elif mode in ("ckpt_save", "ckpt_load"):
        return checkpoint_mode(mode, out, argv[2:], threads)
    elif mode == "seeds":  # process 1 builds its weights from another seed
        case = model_case("gpt")
        if PROCESS == 1:
            case = dict(case, data_seed=case["data_seed"] + 1)
        g, params = td.build(td.make_model(case), case["batch"])
        try:
            session(g, 4, [4], _C.PlanSpec.random(3, 1), 1, threads)
        except ValueError as e:
            save(out, "seeds", [], {}, error=str(e))
            return 1
        save(out, "seeds", [], {}, error="")
        return 0
    elif mode == "hang":  # trains until stopped; says when it started and when it failed
        s, g, params, data = run_model("gpt", "3", 3, [3], threads, steps=1, timeout_ms=int(
            os.environ.get("OFL_TEST_STEP_TIMEOUT_MS", "30000")))
        x, y = data[0]
        for step in range(5000):
            try:
                s.run({g.data: x, g.labels: y}, [g.loss])
            except Exception as e:  # noqa: BLE001 - the error is what the test reads
                save(out, "hang", [], {}, error=str(e), failed_at=time.time())
                return 1
            if step == 2:
                with open(os.path.join(out, f"running.{PROCESS}"), "w") as f:
                    f.write(str(os.getpid()))
        return 0
    elif mode == "zero":  # zero_cases' model under a preset on 2 ranks, AdamW
        return zero_mode(out, argv[2:], threads)
    elif mode == "dropout_resume":  # PHASE DIR: save or load a GPT with dropout
        return dropout_resume_mode(out, argv[2], argv[3], threads)
    elif mode == "save_end":  # the last process dies right after the save's gather
        return save_end_mode(out, argv[2], threads)
    else:
        raise SystemExit(f"worker: unknown mode {mode}")
    return 0


def txn_session(threads: int, timeout_ms: int = 30000):
    """test_transactional_steps's GPT (Adam, dropout) on 4 ranks [2, 2]."""
    import test_transactional_steps as tt
    g = tt.build()
    s = _C.DistributedSession(g.program, [0, 1, 2, 3], [2, 2], _C.PlanSpec.random(5),
                              [g.loss], num_threads=threads, timeout_ms=timeout_ms)
    return tt, g, s


def failure_mode(mode: str, out: str, threads: int) -> int:
    """fail: a good step, a step with a label out of range on the ranks of
    row 3, a good step. timeout: a good step under a 30 s timeout cannot be
    had with 1 ms waits, so the session has 1 ms and steps until one fails
    (every process sees the same outcome: the vote). Saves the variables
    before and after the failed step, its error, and the losses."""
    tt, g, s = txn_session(threads, 30000 if mode == "fail" else 1)
    x, y = tt.batch(0)
    x2, y2 = tt.batch(1)
    errors, losses = [], []
    if mode == "fail":
        losses.append(tt.step(s, g, x, y))
        before = tt.snapshot(s, g)
        bad_y = y.copy()
        bad_y[3, 5] = -3
        try:
            tt.step(s, g, x, bad_y)
        except ValueError as e:
            errors.append(str(e))
        after = tt.snapshot(s, g)
        losses.append(tt.step(s, g, x2, y2))
    else:
        before = tt.snapshot(s, g)
        for _ in range(40):
            try:
                losses.append(tt.step(s, g, x, y))
                before = tt.snapshot(s, g)
            except RuntimeError as e:  # a timeout
                errors.append(str(e))
                break
        after = tt.snapshot(s, g)
    save(out, mode, losses, after, error="\n".join(errors),
         **{f"before:{k}": v for k, v in before.items()})
    return 0


CKPT_MODEL = ("gpt", "3")  # a random strategy on 4 ranks for the saving run


def overlap_bytes(box_a, box_b, itemsize: int) -> int:
    n = 1
    for (a0, an), (b0, bn) in zip(zip(*box_a), zip(*box_b)):
        n *= max(0, min(a0 + an, b0 + bn) - max(a0, b0))
    return n * itemsize


def checkpoint_mode(mode: str, out: str, args, threads: int) -> int:
    """ckpt_save: 3 steps on 4 ranks, a sharded save into DIR, then 2 more
    steps (the run that did not stop). ckpt_load: a fresh session on
    DEVICES ranks under random strategy SEED loads DIR (reading exact byte
    ranges, verify=False, so the bytes read are countable), then trains the
    2 steps; it also reports the bytes its ranks' slices overlap."""
    directory = args[0]
    if mode == "ckpt_save":
        s, g, params, data = run_model(CKPT_MODEL[0], CKPT_MODEL[1], 4, [4], threads, steps=5)
        tag = "ckpt_save"
    else:
        tag, devices = args[1], int(args[2])
        hierarchy = [int(h) for h in args[3].split(",")]
        s, g, params, data = run_model(CKPT_MODEL[0], args[4], devices, hierarchy, threads,
                                       steps=5)
    names = list(g.program.variables())
    shards = sharded_checkpoint.SessionShards(s, names)
    extra = {}
    if mode == "ckpt_save":
        td.train(s, g, data[:3])
        state = {n: s.get_variable(n) for n in names}
        sharded_checkpoint.save(directory, shards, model="gpt")
    else:
        ck = sharded_checkpoint.load_into(directory, shards, model="gpt", verify=False)
        index = sharded_checkpoint.read_index(directory)
        want = 0
        for entry in index["tensors"]:
            layout = shards.layout(entry["name"])
            itemsize = np.dtype(entry["dtype"]).itemsize
            for r in shards.ranks:
                mine = (layout["slices"][r]["offset"], layout["slices"][r]["shape"])
                for saved in entry["slices"]:
                    want += overlap_bytes(mine, (saved["offset"], saved["shape"]), itemsize)
        total = sum(sl["nbytes"] for e in index["tensors"] for sl in e["slices"])
        extra = {"bytes_read": ck.stats.bytes_read, "bytes_wanted": want, "bytes_total": total}
        state = {n: s.get_variable(n) for n in names}
    losses = td.train(s, g, data[3:5])
    save(out, tag, losses, state, **extra)
    return 0


def zero_mode(out: str, args, threads: int) -> int:
    """MODEL DTYPE PRESET BUCKET: zero_cases' model trained STEPS steps on
    the mesh [2] under PRESET with BUCKET gradient-bucket bytes."""
    import zero_cases as zc
    model, dtype, preset, bucket = args[0], args[1], args[2], int(args[3])
    g, params = zc.build(model, dtype)
    s = zc.session(g, preset, 2, bucket, threads)
    losses = zc.train(s, g, zc.batches(model, dtype))
    save(out, f"zero-{model}-{dtype}-{preset}-{bucket}", losses,
         {p: s.get_variable(p) for p in params})
    return 0


def dropout_resume_mode(out: str, phase: str, directory: str, threads: int) -> int:
    """zero_cases' GPT (dropout 0.1, float64) under zero on [2]: PHASE save
    trains 2 steps, saves DIR (each process its rank) and trains 2 more; load
    starts a fresh session, loads DIR and trains the same 2 steps."""
    import zero_cases as zc
    g, params = zc.build("gpt", "float64")
    s = zc.session(g, "zero", 2, 1 << 20, threads)
    shards = sharded_checkpoint.SessionShards(s, list(g.program.variables()))
    data = zc.batches("gpt", "float64", steps=4)
    if phase == "save":
        zc.train(s, g, data[:2])
        sharded_checkpoint.save(directory, shards, model="gpt")
    else:
        sharded_checkpoint.load_into(directory, shards, model="gpt")
    losses = zc.train(s, g, data[2:])
    save(out, f"dropout-{phase}", losses, {p: s.get_variable(p) for p in params},
         iteration=s.iteration)
    return 0


def save_end_mode(out: str, directory: str, threads: int) -> int:
    """Trains 3 steps on 3 ranks and saves into DIR; the last process exits
    (status 9) as soon as its shard is gathered, before the outcome is known.
    Each survivor records whether its save returned and the step it saved."""
    from oneflow_lite import _world

    class DiesAfterGather(_world.World):
        def all_gather_obj(self, obj):
            got = super().all_gather_obj(obj)
            if PROCESS == 2:
                os._exit(9)  # noqa: SLF001 - a death, not an exit: no goodbye to the store
            return got

    s, g, params, data = run_model("gpt", "3", 3, [3], threads, steps=3)
    td.train(s, g, data)
    names = list(g.program.variables())
    state = {n: s.get_variable(n) for n in names}  # a collective: before the death
    error = ""
    try:
        sharded_checkpoint.save(directory, sharded_checkpoint.SessionShards(s, names),
                                model="gpt", meta={"step": 3}, world=DiesAfterGather())
    except Exception as e:  # noqa: BLE001 - what the save reported is what the test reads
        error = f"{type(e).__name__}: {e}"
    save(out, "save_end", [], state, error=error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
