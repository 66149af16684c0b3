"""The command line of the main job (``python -m oneflow_lite.train``): the
parser, the defaults that depend on the model, and every check that can be
made before training, so that a mistake costs a one-line usage error (exit
status 2, no traceback) and not a run. ``--help`` shows every default.

Checked here: names (model, searcher, cluster: a preset, "local" or a
Cluster file that loads), numbers (positive sizes, ``--threads`` >= 0, a
finite positive ``--lr``, finite ``--weight-decay`` >= 0 and ``--clip`` >
0), the mesh against ``--devices``, ``--micro-batches`` dividing
``--batch``, ``--data`` (an existing file), and the ``--report`` and
``--plot`` paths (not a directory; their folder is created now if missing,
so a path through a file or an unwritable folder fails before training).
``usage_error`` turns a later setup error (a binary ``--data`` file, a model
config that does not fit) into the same kind of message. Pure apart from
creating those folders.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
from typing import List, Optional, Sequence

import numpy as np

from oneflow_lite import _C

PROG = "python -m oneflow_lite.train"
MODELS = ("gpt", "mlp", "vgg")
SMALL = {"layers": 2, "hidden": 64, "heads": 4, "seq": 32, "vocab": 32}
# --plan-only's default model: 96 layers at GPT-2-medium width. GPT-3's own
# width does not fit 80 GiB per device today: reshapes that merge the batch
# and sequence axes keep no split (ops/array/reshape.cpp), so activations
# around them are broadcast (2 layers at D=12288, 64 x 512 tokens already
# need 70-80 GiB per device).
PLAN_ONLY = {"layers": 96, "hidden": 1024, "heads": 16, "seq": 512, "vocab": 50257, "batch": 16}
DEFAULT_BATCH = {"gpt": 8, "mlp": 64, "vgg": 16}
DEFAULT_LR = {"gpt": 3e-3, "mlp": 1e-2, "vgg": 1e-2}


class _HelpFormatter(argparse.RawDescriptionHelpFormatter,
                     argparse.ArgumentDefaultsHelpFormatter):
    """Keeps the description's layout and appends "(default: X)" to every
    option whose help does not state its default itself."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if "default" in text or action.default is None:
            return text
        return super()._get_help_string(action)


def _ints(text: str) -> List[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"'{text}': every size must be positive")
    return values


def _int(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{value} is {'not positive' if minimum == 1 else f'below {minimum}'}")
        return value
    parse.__name__ = "positive integer" if minimum == 1 else f"integer >= {minimum}"
    return parse


class _ListSearchers(argparse.Action):
    """--list-searchers: prints each registered searcher and its one-line
    description (_C.searcher_info, in listing order), then exits 0, as --help does."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        info = _C.searcher_info()
        width = max(map(len, info))
        print("".join(f"{name:<{width}}  {text}\n" for name, text in info.items()), end="")
        parser.exit(0)


def _float(positive: bool):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if math.isnan(value):
            raise argparse.ArgumentTypeError(f"'{text}' is not a number (nan)")
        if math.isinf(value):
            raise argparse.ArgumentTypeError(f"'{text}' is not finite")
        if value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f"{value:g} must be {'positive' if positive else 'zero or positive'}")
        return value
    parse.__name__ = "positive number" if positive else "number >= 0"
    return parse


def build_parser(description: str = "") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=description,
                                formatter_class=_HelpFormatter)
    count = _int(1)
    p.add_argument("--model", default="gpt", help="gpt, mlp or vgg")
    p.add_argument("--devices", type=count, default=None,
                   help="CPU devices in all (default: 4, or --nproc x --devices-per-process)")
    p.add_argument("--nproc", type=count, default=1,
                   help="processes on this machine: the job launches itself through "
                        "oneflow_lite.distributed.launch (default: 1, every device a thread)")
    p.add_argument("--devices-per-process", type=count, default=None,
                   help="virtual devices of each process (default: --devices / --nproc)")
    p.add_argument("--emulate-nodes", type=count, default=None, metavar="M",
                   help="run the --nproc processes on M emulated nodes of this machine (root; "
                        "the launcher's --emulate-nodes); needs --cluster FILE, a "
                        "calibration of that emulation (python -m oneflow_lite.calibrate --nodes); "
                        "default: none, this machine as it is")
    p.add_argument("--emulate-rate", default=None, metavar="RATE",
                   help="each emulated node's link (tc units: 1gbit; default: unshaped)")
    p.add_argument("--hierarchy", type=_ints, default=None,
                   help="mesh, e.g. 2,2 (default: flat, [--devices])")
    p.add_argument("--searcher", default="autoddl",
                   help="a registered searcher: " + ", ".join(_C.searchers())
                        + " (--list-searchers describes each)")
    p.add_argument("--list-searchers", action=_ListSearchers,
                   help="list the registered searchers with a line on each, and exit")
    p.add_argument("--cluster", default=None,
                   help="local, local_kernels (with the kernel table), a preset or a Cluster "
                        "file (default: local for runs, "
                        "h100_8gpu with --plan-only)")
    p.add_argument("--compare", choices=["none", "expert"], default="none",
                   help="expert: also run the expert preset ranked best")
    p.add_argument("--plan-only", action="store_true",
                   help="plan for --cluster and --mesh without running")
    p.add_argument("--mesh", type=_ints, default=None,
                   help="--plan-only: the mesh, e.g. 128,8 (default: --hierarchy)")
    p.add_argument("--steps", type=count, default=30, help="training steps")
    _add_checkpoint_options(p)
    _add_model_options(p)
    return p


def _add_checkpoint_options(p: argparse.ArgumentParser) -> None:
    """Periodic sharded checkpoints and elastic restarts."""
    p.add_argument("--checkpoint-dir", default=os.environ.get("OFL_CHECKPOINT_DIR") or None,
                   help="keep sharded checkpoints here (step-<n> folders) and resume from the "
                        "newest complete one (default: $OFL_CHECKPOINT_DIR)")
    p.add_argument("--checkpoint-every", type=_int(0),
                   default=int(os.environ.get("OFL_CHECKPOINT_EVERY") or 0),
                   help="save every K steps, written in the background (default: "
                        "$OFL_CHECKPOINT_EVERY, or 0: never)")
    p.add_argument("--checkpoint-keep", type=_int(0), default=2,
                   help="newest checkpoints kept (0: all)")
    p.add_argument("--max-restarts", type=_int(0), default=0,
                   help="with --nproc: after a lost process, restart on the processes left "
                        "up to N times, resuming from the newest checkpoint with a plan "
                        "searched for the new world")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """The model, its data, the optimizer and the outputs."""
    count = _int(1)
    p.add_argument("--micro-batches", type=count, default=1,
                   help="pipeline micro-batches; must divide --batch")
    for name, help_text in (("layers", "gpt blocks / mlp hidden layers / vgg conv stages"),
                            ("hidden", "gpt D / mlp width / vgg FC width"),
                            ("heads", "gpt heads"), ("seq", "gpt context T"),
                            ("vocab", "gpt vocabulary (synthetic data)")):
        p.add_argument(f"--{name}", type=count, default=None,
                       help=f"{help_text} (default: {SMALL[name]}; {PLAN_ONLY[name]} for gpt "
                            f"with --plan-only)")
    p.add_argument("--batch", type=count, default=None,
                   help="global batch (default: " + ", ".join(
                       f"{v} for {k}" for k, v in DEFAULT_BATCH.items())
                   + f"; {PLAN_ONLY['batch']} for gpt with --plan-only)")
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="adamw",
                   help="sgd (momentum 0.9), adam or adamw")
    p.add_argument("--lr", type=_float(positive=True), default=None,
                   help="learning rate (default: " + ", ".join(
                       f"{v:g} for {k}" for k, v in DEFAULT_LR.items()) + ")")
    p.add_argument("--weight-decay", type=_float(positive=False), default=0.01,
                   help="weight decay")
    p.add_argument("--clip", type=_float(positive=True), default=None,
                   help="clip gradients to this global norm (default: no clipping)")
    p.add_argument("--seed", type=_int(0), default=0, help="initialisation and data seed")
    p.add_argument("--optimality-cap", type=_float(positive=False), default=5.0,
                   help="seconds exact may spend from the plan to state its distance to the "
                        "optimum, or to a lower bound (0: skip)")
    p.add_argument("--threads", type=_int(0), default=0,
                   help="kernel threads (0: every core)")
    p.add_argument("--data", default=None,
                   help="gpt: a UTF-8 text file, character-level (default: synthetic data)")
    p.add_argument("--report", default=None,
                   help="write the JSON report here (default: none; its folder is created)")
    p.add_argument("--plot", default=None,
                   help="write the PNG plot here (default: none; its folder is created)")
    p.add_argument("--trace", default=None, metavar="PATH",
                   help="write a Chrome trace of each strategy's last step, PATH with the "
                        "searcher's name before the extension (out/t.json: out/t.autoddl.json; "
                        "several processes: out/t.autoddl.process<p>.json; default: none)")


def usage_error(message: str) -> None:
    """Exits with status 2 after a one-line usage error, as argparse does."""
    build_parser().error(message)


def parse_args(argv: Optional[Sequence[str]] = None, description: str = ""
               ) -> argparse.Namespace:
    """Parses, fills the model-dependent defaults and checks everything that
    can be checked before training (see the module docstring)."""
    p = build_parser(description)
    args = p.parse_args(argv)
    if args.model not in MODELS:
        p.error(f"unknown model '{args.model}' (expected one of {', '.join(MODELS)})")
    searchers = list(_C.searchers())
    if args.searcher not in searchers:
        p.error(f"unknown searcher '{args.searcher}' (expected one of {', '.join(searchers)})")
    _fill_processes(p, args)
    _fill_defaults(args)
    if args.plan_only:
        args.hierarchy = args.mesh or args.hierarchy
        args.devices = int(np.prod(args.hierarchy))
    elif int(np.prod(args.hierarchy)) != args.devices:
        p.error(f"--hierarchy {args.hierarchy} holds {int(np.prod(args.hierarchy))} devices, "
                f"--devices is {args.devices}")
    if args.batch % args.micro_batches != 0:
        p.error(f"--micro-batches {args.micro_batches} does not divide --batch {args.batch}")
    for message in (_cluster_error(args.cluster), _data_error(args), _emulation_error(args)):
        if message:
            p.error(message)
    _check_outputs(p, args)
    if args.checkpoint_every and not args.checkpoint_dir:
        p.error(f"--checkpoint-every {args.checkpoint_every} needs --checkpoint-dir")
    if args.max_restarts and args.nproc < 2:
        p.error(f"--max-restarts {args.max_restarts} needs --nproc >= 2")
    return args


def _emulation_error(args: argparse.Namespace) -> Optional[str]:
    if args.emulate_nodes is None:
        return "--emulate-rate needs --emulate-nodes" if args.emulate_rate else None
    if args.nproc % args.emulate_nodes != 0:
        return (f"--emulate-nodes {args.emulate_nodes} does not divide --nproc {args.nproc} "
                "(each node runs --nproc / M processes)")
    if args.cluster in ("local", "local_kernels"):
        return (f"--emulate-nodes with --cluster {args.cluster}: calibrate the emulation first "
                "(python -m oneflow_lite.calibrate --out FILE --nodes M ...) and pass "
                "--cluster FILE")
    if args.emulate_rate is not None:
        from oneflow_lite.distributed import emulate

        try:
            emulate.parse_rate("--emulate-rate", args.emulate_rate)
        except ValueError as e:
            return str(e)
    return None


def _fill_processes(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--devices = --nproc x --devices-per-process (filling whichever is not
    given; --devices defaults to 4 with one process)."""
    if args.nproc > 1 and args.plan_only:
        p.error(f"--nproc {args.nproc} runs training; --plan-only plans in one process")
    if args.devices_per_process is None:
        if args.devices is None:
            args.devices = 4 if args.nproc == 1 else args.nproc
        if args.devices % args.nproc != 0:
            p.error(f"--devices {args.devices} does not split over --nproc {args.nproc} "
                    f"processes (give --devices-per-process)")
        args.devices_per_process = args.devices // args.nproc
    elif args.devices is None:
        args.devices = args.nproc * args.devices_per_process
    elif args.devices != args.nproc * args.devices_per_process:
        p.error(f"--devices {args.devices} is not --nproc {args.nproc} x --devices-per-process "
                f"{args.devices_per_process}")


def _fill_defaults(args: argparse.Namespace) -> None:
    defaults = PLAN_ONLY if args.plan_only and args.model == "gpt" else SMALL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.batch is None:
        args.batch = DEFAULT_BATCH[args.model]
    if args.lr is None:
        args.lr = DEFAULT_LR[args.model]
    if args.cluster is None:
        args.cluster = "h100_8gpu" if args.plan_only else "local"
    args.hierarchy = args.hierarchy or [args.devices]


def _cluster_error(cluster: str) -> Optional[str]:
    if cluster in ("local", "local_kernels") or cluster in _C.cluster_presets():
        return None
    if not os.path.exists(cluster):
        return (f"unknown --cluster '{cluster}': neither 'local', 'local_kernels', a preset "
                f"({', '.join(_C.cluster_presets())}), nor an existing file")
    try:
        _C.load_cluster(cluster)
    except ValueError as e:
        return f"--cluster: {e}"
    return None


def _data_error(args: argparse.Namespace) -> Optional[str]:
    if args.data is None:
        return None
    if args.model != "gpt":
        return f"--data is for --model gpt (character-level), got --model {args.model}"
    if not os.path.exists(args.data):
        return f"--data {args.data}: no such file"
    if not os.path.isfile(args.data):
        return f"--data {args.data}: not a regular file"
    if not os.access(args.data, os.R_OK):
        return f"--data {args.data}: not readable"
    return None


def _check_outputs(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--report and --plot: not a directory, not the same file, and their
    folder exists (created now) and is writable."""
    outputs = [(flag, path) for flag, path in (("--report", args.report), ("--plot", args.plot))
               if path is not None]
    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        p.error("--plot needs matplotlib (pip install matplotlib)")
    if len(outputs) == 2 and os.path.abspath(args.report) == os.path.abspath(args.plot):
        p.error(f"--report and --plot are the same file '{args.report}'")
    for flag, path in outputs:
        if not path.strip():
            p.error(f"{flag}: the path is empty")
        if os.path.isdir(path):
            p.error(f"{flag} {path}: is a directory; name a file in it")
        folder = os.path.dirname(os.path.abspath(path))
        existing = folder
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        if not os.path.isdir(existing):
            p.error(f"{flag} {path}: {existing} is a file, not a folder")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            p.error(f"{flag} {path}: cannot create its folder {folder} ({e.strerror})")
        if not os.access(folder, os.W_OK | os.X_OK):
            p.error(f"{flag} {path}: its folder {folder} is not writable")
        if os.path.exists(path) and not os.access(path, os.W_OK):
            p.error(f"{flag} {path}: exists and is not writable")
