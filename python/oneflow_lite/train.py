"""Trains a reference model (oneflow_lite.models) on one device and reports
the loss per step, then a summary (first vs last loss, ms/step).

    python -m oneflow_lite.train --model gpt --steps 30
    python -m oneflow_lite.train --model gpt --data /work/shared/data/tinyshakespeare.txt
    python -m oneflow_lite.train --model mlp --optimizer sgd --lr 0.1
    python -m oneflow_lite.train --model vgg --batch 16

The default data is synthetic with learnable structure, so the loss clearly
falls: for gpt, sequences from a fixed random Markov (bigram) table, whose
entropy is printed as the floor the loss can reach; for mlp, labels of a
fixed random linear teacher; for vgg, a fixed noisy image template per
class. ``--data PATH`` trains gpt character-level on a text file instead.

``main(argv)`` returns the run's history (losses, timings) as a dict.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from oneflow_lite.graph_builder import GraphBuilder
from oneflow_lite.models import gpt, mlp, vgg

Batch = Tuple[np.ndarray, np.ndarray]

DEFAULT_BATCH = {"gpt": 8, "mlp": 64, "vgg": 16, "vgg16": 16}


def default_lr(model: str, optimizer: str) -> float:
    """sgd: 0.1 (vgg16: 0.01); adam/adamw: 3e-3 for gpt, 1e-2 for mlp and vgg,
    1e-4 for vgg16 (13 convs without normalisation blow up at larger rates)."""
    if optimizer == "sgd":
        return 0.01 if model == "vgg16" else 0.1
    return {"gpt": 3e-3, "vgg16": 1e-4}.get(model, 1e-2)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m oneflow_lite.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["gpt", "mlp", "vgg", "vgg16"], default="gpt")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--layers", type=int, default=2,
                   help="gpt: blocks; mlp: hidden layers; vgg: conv stages (conv + pool)")
    p.add_argument("--hidden", type=int, default=64,
                   help="gpt: embedding width D; mlp: hidden width; vgg/vgg16: FC width")
    p.add_argument("--heads", type=int, default=4, help="gpt: attention heads")
    p.add_argument("--seq", type=int, default=32, help="gpt: context length T")
    p.add_argument("--vocab", type=int, default=32,
                   help="gpt: vocabulary of the synthetic data (--data sets its own)")
    p.add_argument("--classes", type=int, default=10, help="mlp/vgg: number of classes")
    p.add_argument("--features", type=int, default=32, help="mlp: input features")
    p.add_argument("--image-size", type=int, default=16, help="vgg/vgg16: image side")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size (default: 8 for gpt, 64 for mlp, 16 for vgg/vgg16)")
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="adamw")
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: 0.1 for sgd; for adam/adamw 3e-3 for gpt, "
                        "1e-2 for mlp and vgg; smaller for vgg16)")
    p.add_argument("--momentum", type=float, default=0.9, help="sgd momentum")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0, help="seeds the init and the data")
    p.add_argument("--threads", type=int, default=0, help="kernel threads (0 = every core)")
    p.add_argument("--data", default=None, help="gpt: a text file for character-level training")
    args = p.parse_args(argv)
    if args.data is not None and args.model != "gpt":
        p.error(f"--data is for --model gpt (character-level), got --model {args.model}")
    if args.batch is None:
        args.batch = DEFAULT_BATCH[args.model]
    for name in ("steps", "layers", "hidden", "heads", "seq", "vocab", "classes", "features",
                 "image_size", "batch"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.lr is None:
        args.lr = default_lr(args.model, args.optimizer)
    return args


# ---------------------------------------------------------------- data

def markov_batches(vocab: int, seq: int, batch: int, rng: np.random.Generator
                   ) -> Tuple[Iterator[Batch], float]:
    """Sequences from a fixed random bigram table (each row Dirichlet(0.1),
    so a few successors dominate). Returns the batches and the table's
    entropy rate in nats, the loss a perfect model reaches."""
    table = rng.dirichlet(np.full(vocab, 0.1), size=vocab)
    stationary = np.full(vocab, 1.0 / vocab)
    for _ in range(200):
        stationary = stationary @ table
    row_entropy = -(table * np.log(np.maximum(table, 1e-30))).sum(axis=1)
    cumulative = np.cumsum(table, axis=1)

    def gen() -> Iterator[Batch]:
        while True:
            tokens = np.empty((batch, seq + 1), np.int64)
            tokens[:, 0] = rng.choice(vocab, size=batch, p=stationary / stationary.sum())
            for t in range(seq):
                u = rng.random(batch)[:, None]
                nxt = (u > cumulative[tokens[:, t]]).sum(axis=1)
                tokens[:, t + 1] = np.minimum(nxt, vocab - 1)
            yield tokens[:, :-1], tokens[:, 1:]

    return gen(), float(stationary @ row_entropy)


def text_batches(path: str, seq: int, batch: int, rng: np.random.Generator
                 ) -> Tuple[Iterator[Batch], List[str]]:
    """Random windows of a text file, one token per character."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if len(text) < seq + 2:
        raise ValueError(f"--data {path}: {len(text)} characters, need more than --seq + 1 = "
                         f"{seq + 1}")
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = np.fromiter((index[c] for c in text), np.int64, len(text))

    def gen() -> Iterator[Batch]:
        while True:
            starts = rng.integers(0, len(data) - seq - 1, batch)
            window = np.stack([data[s:s + seq + 1] for s in starts])
            yield window[:, :-1], window[:, 1:]

    return gen(), chars


def teacher_batches(features: int, classes: int, batch: int, rng: np.random.Generator
                    ) -> Iterator[Batch]:
    """x ~ N(0, 1), label = argmax(x @ W) of a fixed random linear teacher."""
    teacher = rng.standard_normal((features, classes))
    while True:
        x = rng.standard_normal((batch, features))
        yield x.astype(np.float32), np.argmax(x @ teacher, axis=1).astype(np.int64)


def template_batches(channels: int, size: int, classes: int, batch: int,
                     rng: np.random.Generator) -> Iterator[Batch]:
    """A fixed random template image per class plus as much noise."""
    templates = rng.standard_normal((classes, channels, size, size))
    while True:
        labels = rng.integers(0, classes, batch)
        noise = rng.standard_normal((batch, channels, size, size))
        yield (templates[labels] + noise).astype(np.float32), labels.astype(np.int64)


# ---------------------------------------------------------------- models

def make_model(args: argparse.Namespace, rng: np.random.Generator):
    """Returns (model module, config, batches, description, notes)."""
    if args.model == "gpt":
        notes = []
        if args.data is not None:
            batches, chars = text_batches(args.data, args.seq, args.batch, rng)
            vocab = len(chars)
            notes.append(f"data: {args.data}, {vocab} distinct characters "
                         f"(uniform guess {np.log(vocab):.3f})")
        else:
            vocab = args.vocab
            batches, entropy = markov_batches(vocab, args.seq, args.batch, rng)
            notes.append(f"data: synthetic bigram chain, V={vocab}; uniform guess "
                         f"{np.log(vocab):.3f}, entropy floor {entropy:.3f}")
        config = gpt.GPTConfig(vocab_size=vocab, seq_len=args.seq, n_layer=args.layers,
                               n_head=args.heads, n_embd=args.hidden, dropout=args.dropout)
        desc = (f"gpt: {config.n_layer} layers, D={config.n_embd}, {config.n_head} heads, "
                f"T={config.seq_len}, V={config.vocab_size}")
        return gpt, config, batches, desc, notes
    if args.model == "mlp":
        config = mlp.MLPConfig(in_features=args.features, hidden=(args.hidden,) * args.layers,
                               num_classes=args.classes, dropout=args.dropout)
        batches = teacher_batches(args.features, args.classes, args.batch, rng)
        desc = (f"mlp: {args.features} -> {' -> '.join(map(str, config.hidden))} -> "
                f"{args.classes}")
        return mlp, config, batches, desc, ["data: synthetic linear-teacher labels"]
    if args.model == "vgg":
        features = []
        for i in range(args.layers):
            features += [8 * 2 ** i, "M"]
        config = vgg.VGGConfig(features=tuple(features), in_channels=3,
                               image_size=args.image_size, fc=(args.hidden,),
                               num_classes=args.classes, dropout=args.dropout)
    else:
        base = vgg.vgg16_config(image_size=args.image_size, num_classes=args.classes)
        config = vgg.VGGConfig(features=base.features, in_channels=3,
                               image_size=args.image_size, fc=(args.hidden, args.hidden),
                               num_classes=args.classes, dropout=args.dropout)
    batches = template_batches(3, args.image_size, args.classes, args.batch, rng)
    desc = (f"{args.model}: features {list(config.features)}, fc {list(config.fc)}, "
            f"{config.image_size}x{config.image_size} images, {config.num_classes} classes")
    return vgg, config, batches, desc, ["data: synthetic class templates + noise"]


# ---------------------------------------------------------------- loop

def _progress(steps: int):
    """A tqdm bar on a terminal; None (plain lines) otherwise."""
    if not sys.stdout.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=steps, unit="step", dynamic_ncols=True, file=sys.stdout)


def _hyper(args: argparse.Namespace) -> Dict[str, float]:
    hyper = {"lr": args.lr, "weight_decay": args.weight_decay}
    if args.optimizer == "sgd":
        hyper["momentum"] = args.momentum
    return hyper


def main(argv: Optional[Sequence[str]] = None) -> dict:
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    model, config, batches, desc, notes = make_model(args, rng)
    params = model.init_params(config, seed=args.seed)
    num_params = sum(v.size for v in params.values())

    t0 = time.perf_counter()
    builder = GraphBuilder()
    names = model.build(builder, config, params, args.batch, train=True)
    builder.minimize(names["loss"], args.optimizer, **_hyper(args))
    session = builder.session(num_threads=args.threads)
    compile_s = time.perf_counter() - t0

    hyper_text = ", ".join(f"{k} {v:g}" for k, v in _hyper(args).items())
    print(f"{desc} | {num_params / 1e6:.3f}M parameters | batch {args.batch}")
    for note in notes:
        print(note)
    print(f"optimizer {args.optimizer} ({hyper_text}) | threads {args.threads or 'all'} | "
          f"built and compiled in {compile_s:.2f} s", flush=True)

    losses, times = [], []
    bar = _progress(args.steps)
    for step in range(1, args.steps + 1):
        data, labels = next(batches)
        start = time.perf_counter()
        (loss,) = session.run({names["data"]: data, names["labels"]: labels}, [names["loss"]])
        times.append(time.perf_counter() - start)
        losses.append(float(loss))
        line = (f"step {step:>{len(str(args.steps))}}/{args.steps}  loss {losses[-1]:.4f}  "
                f"{times[-1] * 1e3:.1f} ms")
        if bar is not None:
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
            bar.update(1)
            bar.write(line)
        else:
            print(line, flush=True)
        if not np.isfinite(losses[-1]):
            print(f"loss is {losses[-1]} at step {step}: stopping", flush=True)
            break
    if bar is not None:
        bar.close()

    steady = times[1:] if len(times) > 1 else times
    ms_per_step = 1e3 * float(np.mean(steady))
    print(f"summary: loss {losses[0]:.4f} (step 1) -> {losses[-1]:.4f} (step {len(losses)}), "
          f"min {min(losses):.4f}; {ms_per_step:.1f} ms/step (mean over steps "
          f"{2 if len(times) > 1 else 1}..{len(times)}; step 1 took {times[0] * 1e3:.1f} ms)")
    return {"losses": losses, "step_seconds": times, "ms_per_step": ms_per_step,
            "compile_seconds": compile_s, "num_params": int(num_params)}


if __name__ == "__main__":
    main()
