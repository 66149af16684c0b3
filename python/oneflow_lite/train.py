"""The main job: define a model from flow.models, let the planner lay it out
over virtual devices (flow.nn.Graph with auto-parallel), train it, and show
the chosen plan, predicted beside measured, and the best expert preset.

    python -m oneflow_lite.train --model gpt --devices 4 --hierarchy 2,2 --searcher autoddl \\
        --steps 50 --compare expert --report out/train.json --plot out/train.png
    python -m oneflow_lite.train --model gpt --data tinyshakespeare.txt
    python -m oneflow_lite.train --model mlp --devices 4 --searcher data_parallel
    python -m oneflow_lite.train --plan-only --cluster h100_8gpu --mesh 128,8 --layers 96

Runs train on ``--devices`` virtual CPU devices in this process (mesh
``--hierarchy``), planned for ``--cluster`` ("local": this machine,
calibrated first; a preset such as h100_8gpu; or a Cluster file). After the
run: predicted beside measured step time (median after the first step),
bytes sent per rank (the last step) and peak memory per rank. ``--compare
expert`` also runs the rule-based preset the cost model ranks best and shows
both side by side. Predicted step times are the full model
(``planned.step_estimate``: gradient buckets, overlap), not the searchers'
additive proxy; a line per strategy gives predicted, measured and their
ratio, and a WARNING where they differ by more than 1.5x. ``--nproc 2
--devices 2 --threads 1`` (what ./scripts/run.sh runs) trains as 2
processes of one rank and one thread each, all planned on the same
calibrated local cluster (process 0 calibrates and shares it).
``--plan-only`` plans for a cluster the user does not have (parameters on
the "meta" device: nothing is allocated) and prints the strategy report
and the expert comparison; by default it plans a 96-layer GPT of width
1024 (16 heads, T=512, V=50257, batch 16; see train_args.PLAN_ONLY for why
not GPT-3's width) unless sizes are given.

Data: synthetic with learnable structure by default (oneflow_lite.train_data),
or ``--data PATH`` for character-level GPT training on a text file.

``--checkpoint-dir DIR --checkpoint-every K`` saves a sharded checkpoint
every K steps (written in the background) and resumes from the newest
complete one; ``--nproc 4 --max-restarts 1`` then carries on after a lost
process: the launcher restarts the job on the processes left, which loads
the newest checkpoint, plans for the new mesh and prints what changed and
why (oneflow_lite.train_elastic).
``main(argv)`` returns the report as a dict.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from dataclasses import asdict
from typing import Optional, Sequence

import numpy as np

import oneflow_lite as flow
from oneflow_lite import _C, _progress, _world, train_args, train_data, train_elastic
from oneflow_lite import train_report as rep
from oneflow_lite.nn.graph_compile import resolve_cluster

EXPERTS = ("data_parallel", "megatron", "2d", "zero", "vgg")  # rule-based presets
# ops x devices past which --plan-only does not simulate its candidates (about the
# plan's tasks; the report's own limit, api/step_simulation.h kReportSimulationBudget)
SIMULATION_BUDGET = 200000


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The checked arguments (oneflow_lite.train_args; usage errors exit 2)."""
    return train_args.parse_args(argv, description=__doc__)


# ---------------------------------------------------------------- model and data

def make_config(args, vocab: int):
    if args.model == "gpt":
        return flow.models.GPTConfig(vocab_size=vocab, seq_len=args.seq, n_layer=args.layers,
                                     n_head=args.heads, n_embd=args.hidden)
    if args.model == "mlp":
        return flow.models.MLPConfig(in_features=32, hidden=(args.hidden,) * args.layers,
                                     num_classes=10)
    features = []
    for i in range(args.layers):
        features += [8 * 2 ** i, "M"]
    return flow.models.VGGConfig(features=tuple(features), in_channels=3,
                                 image_size=2 ** max(args.layers, 4), fc=(args.hidden,),
                                 num_classes=10)


def make_data(args, rng):
    """(batches iterator, vocab, notes)."""
    if args.model == "gpt":
        if args.data is not None:
            batches, chars = train_data.text_batches(args.data, args.seq, args.batch, rng)
            return batches, len(chars), [data_note(args.data, chars)]
        batches, entropy = train_data.markov_batches(args.vocab, args.seq, args.batch, rng)
        return batches, args.vocab, [f"data: synthetic bigram chain, V={args.vocab}, uniform "
                                     f"guess {np.log(args.vocab):.3f}, floor {entropy:.3f}"]
    if args.model == "mlp":
        return train_data.teacher_batches(32, 10, args.batch, rng), 0, ["data: linear teacher"]
    size = 2 ** max(args.layers, 4)
    return (train_data.template_batches(3, size, 10, args.batch, rng), 0,
            ["data: class templates + noise"])


def data_note(path: str, chars) -> str:
    """The --data line: the file's size and its vocabulary (one token per
    distinct character), not to be mistaken for each other."""
    return (f"data: {path} ({os.path.getsize(path)} bytes), vocabulary {len(chars)} "
            f"(one token per distinct character)")


def describe(args, config) -> str:
    if args.model == "gpt":
        return (f"gpt: {config.n_layer} layers, D={config.n_embd}, {config.n_head} heads, "
                f"T={config.seq_len}, V={config.vocab_size}, batch {args.batch}")
    return f"{args.model}: {config}, batch {args.batch}"


class TrainGraph(flow.nn.Graph):
    def __init__(self, model, optimizer, clip):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer, clip_grad_max_norm=clip)

    def build(self, data, labels):
        return flow.nn.functional.cross_entropy(self.model(data), labels)


def make_optimizer(args, model):
    params = model.named_parameters()
    if args.optimizer == "sgd":
        return flow.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)
    cls = flow.optim.AdamW if args.optimizer == "adamw" else flow.optim.Adam
    return cls(params, lr=args.lr, weight_decay=args.weight_decay)


# ---------------------------------------------------------------- runs

def predicted_of(planned, ranks, memory=None) -> dict:
    if planned is None:
        return {}
    by_rank = dict(planned.predicted_bytes)
    # memory: the session's _C.MemoryEstimate (Compiled.predicted_memory); else the proxy.
    peak = list(memory.peak_bytes) if memory is not None else None
    if peak is None and planned.stats.get("memory_bytes") is not None:
        peak = [planned.stats["memory_bytes"]] * len(ranks)
    # the full model (gradient buckets, overlap), not the searchers' additive proxy
    return {"step_s": full_step_s(planned), "proxy_step_s": planned.predicted_step_s,
            "bytes_per_rank": [int(by_rank.get(r, 0)) for r in ranks],
            "peak_bytes_per_rank": peak}


def full_step_s(planned) -> float:
    """The full model's step time of a plan (graph/cost_model_buckets.h)."""
    return float(planned.step_estimate["total_s"])


def train_run(args, config, data, searcher: str, label: str, cluster) -> dict:
    flow.manual_seed(args.seed)
    model = flow.models.create(args.model, config)
    graph = TrainGraph(model, make_optimizer(args, model), args.clip)
    placement = flow.placement("cpu", list(range(args.devices)), hierarchy=args.hierarchy)
    graph.config.auto_parallel(cluster=cluster, searcher=searcher, placement=placement,
                               micro_batches=args.micro_batches, num_threads=args.threads,
                               optimality_cap_s=args.optimality_cap or None)
    if args.trace:
        stem, ext = os.path.splitext(args.trace)
        graph.config.chrome_trace(f"{stem}.{searcher}{ext}")
    items = args.batch * (args.seq if args.model == "gpt" else 1)
    unit = "tokens" if args.model == "gpt" else "samples"
    saves = None
    first = 0  # the step this run starts after (a checkpoint's)
    if args.checkpoint_dir and label == args.searcher:
        saves = train_elastic.Checkpoints(args.checkpoint_dir, args.checkpoint_every,
                                          args.checkpoint_keep)
        first = saves.resume(graph)
    bar = rep.Progress(args.steps - first, label, unit)
    try:
        losses, times, compile_s = _train_steps(args, graph, data, searcher, label, saves, first,
                                                bar, items)
    except BaseException:
        if saves is not None:  # the writer thread ends before the process does
            saves.close(raise_errors=False)
        raise
    if saves is not None:
        saves.close()
    bar.close()
    c = graph.compiled
    peak = list(c.session.peak_bytes())
    return {"name": label, "searcher": searcher, "first_step": first + 1, "losses": losses,
            "step_seconds": times,
            "compile_seconds": compile_s,
            "predicted": predicted_of(c.planned, list(range(args.devices)),
                                      c.predicted_memory()),
            "measured": {"step_s": rep.steady_median(times), "bytes_per_rank": c.step_bytes(),
                         "peak_bytes_per_rank": peak},
            "strategy": c.session.strategy(), "plan": c.planned.report_json(),
            "_program": c.program}


def _train_steps(args, graph, data, searcher, label, saves, first, bar, items):
    """Steps first+1 .. args.steps: (losses, step times, compile seconds);
    a checkpoint after every --checkpoint-every steps when ``saves``."""
    losses, times, compile_s, plan = [], [], 0.0, None
    for step, (x, y) in enumerate(itertools.islice(data, first, None), start=first + 1):
        start = time.perf_counter()
        try:
            loss = float(graph(x, y).numpy())
        except ValueError as e:  # the first step plans: a searcher that does not fit the model
            if step > first + 1:
                raise
            train_args.usage_error(f"planning --model {args.model} with --searcher {searcher}: "
                                   f"{str(e).splitlines()[0]}")
        times.append(time.perf_counter() - start)  # step 1 includes planning and compiling
        losses.append(loss)
        if step == first + 1:
            compile_s = times[0]
            print(f"[{label}] traced, planned, compiled and ran step {step} in {compile_s:.2f} "
                  f"s; predicted {rep.human_seconds(full_step_s(graph.compiled.planned))} "
                  f"per step")
            print(graph.plan_report(max_rows=12), flush=True)
            if saves is not None:
                plan = train_elastic.plan_record(graph, args,
                                                 full_step_s(graph.compiled.planned))
                if saves.resumed_meta is not None:
                    restart = int(os.environ.get("OFL_RESTART_COUNT") or 0)
                    for line in train_elastic.describe_change(
                            saves.resumed_meta.get("plan", {}), plan, restart):
                        print(line, flush=True)
        if saves is not None:
            saves.after_step(graph, step, plan)
        bar.update(step - first, loss, times[-1], items)
    return losses, times, compile_s


def mesh_placement(args):
    """The ``_C.Placement`` every plan of this run is made for (built once from
    the arguments, as nn.Graph's auto_parallel builds its own)."""
    return _C.Placement("cpu", list(range(args.devices)), list(args.hierarchy))


def best_expert(program, args, cluster, skip: str, model=None):
    """(name, planned) of the rule-based preset the cost model ranks fastest
    (its full model, as reported), and a line per preset (its predicted step
    or why it does not apply). `model`: a cost model of `program` already
    built (_C.build_cost_model) to plan on."""
    best, lines = None, []
    for preset in EXPERTS:
        if preset == skip:
            continue
        try:
            if model is not None:
                planned = model.plan(preset)
            else:
                planned = _C.plan(program, mesh_placement(args), cluster, preset,
                                  micro_batches=args.micro_batches)
        except ValueError as e:
            lines.append(f"  {preset}: does not apply ({str(e).splitlines()[0][:100]})")
            continue
        seconds = full_step_s(planned)
        lines.append(f"  {preset}: predicted {rep.human_seconds(seconds)}")
        if best is None or seconds < best[2]:
            best = (preset, planned, seconds)
    return (best[:2] if best else None), lines


def traced_program(args, config, meta: bool):
    """The training program of the model (meta: parameters without values)."""
    flow.manual_seed(args.seed)
    if meta:
        with flow.device("meta"):
            model = flow.models.create(args.model, config)
    else:
        model = flow.models.create(args.model, config)
    graph = TrainGraph(model, make_optimizer(args, model), args.clip)
    if args.model == "gpt":
        x = flow.nn.graph_trace.Spec([args.batch, args.seq], flow.int64)
        y = x
    elif args.model == "mlp":
        x = flow.nn.graph_trace.Spec([args.batch, 32])
        y = flow.nn.graph_trace.Spec([args.batch], flow.int64)
    else:
        size = config.image_size
        x = flow.nn.graph_trace.Spec([args.batch, 3, size, size])
        y = flow.nn.graph_trace.Spec([args.batch], flow.int64)
    r = flow.nn.graph_trace.trace(_Loss(model), x, y, input_names=["data", "labels"])
    opt = graph._optimizer
    hyper = {k: float(opt.param_groups[0][k]) for k in type(opt)._HYPER}
    r.builder.minimize(r.output_names[0], args.optimizer, **hyper)
    return r.program


class _Loss(flow.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, data, labels):
        return flow.nn.functional.cross_entropy(self.model(data), labels)


def plan_only(args, config) -> dict:
    cluster = resolve_cluster(args.cluster, args.devices)
    start = time.perf_counter()
    program = traced_program(args, config, meta=True)
    print(f"traced {program.num_ops()} ops in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    try:  # one cost model for the searcher and the presets (the model is most of the time)
        model = _C.build_cost_model(program, mesh_placement(args), cluster,
                                    micro_batches=args.micro_batches)
        with _progress.optimality_check(args.searcher, args.optimality_cap):
            planned = model.plan(args.searcher, optimality_cap_s=args.optimality_cap or None)
    except ValueError as e:  # a searcher that does not fit the model
        train_args.usage_error(f"planning --model {args.model} with --searcher {args.searcher}: "
                               f"{str(e).splitlines()[0]}")
    print(f"planned with {args.searcher} in {time.perf_counter() - start:.1f} s\n")
    print(planned.report(max_rows=20))
    ranks = list(range(args.devices))
    runs = [dict(name=args.searcher, predicted=predicted_of(planned, ranks))]
    best, lines = best_expert(program, args, cluster, args.searcher, model)
    print("\nexpert presets:\n" + "\n".join(lines))
    if best is not None:
        runs.append(dict(name=f"{best[0]} (best expert)", predicted=predicted_of(best[1], ranks)))
        print(f"\n{args.searcher} vs {best[0]}:\n{planned.diff(best[1]).to_text()}")
    print("\n" + rep.comparison_table(runs))
    choice = simulated_choice(program, args, cluster)
    return {"plan_only": True, "runs": runs, "plan": planned.report_json(),
            "experts": lines, "simulated_choice": choice}


def simulated_choice(program, args, cluster):
    """autoddl's answer and the presets, each simulated as the session would run it
    (``_C.plan_by_simulation``): printed with both figures; the rows, or None."""
    if args.searcher != "autoddl":
        return None
    if program.num_ops() * args.devices > SIMULATION_BUDGET:
        print(f"\nsimulated choice: skipped ({program.num_ops()} ops x {args.devices} devices is "
              f"past {SIMULATION_BUDGET}; plan_by_simulation has no such limit)")
        return None
    try:
        _chosen, rows, text = _C.plan_by_simulation(program, list(args.hierarchy), cluster,
                                                    micro_batches=args.micro_batches)
    except ValueError as e:
        print(f"\nsimulated choice: not available ({str(e).splitlines()[0][:100]})")
        return None
    print("\n" + text)
    return rows


def setup(args):
    """(batches, config, notes); what is wrong with the user's input here (a
    binary --data file, sizes the model refuses) is a usage error."""
    rng = np.random.default_rng(args.seed)
    try:
        if args.plan_only:  # no data: a V x V bigram table would not even fit at V=50257
            batches, vocab, notes = None, args.vocab, []
        else:
            batches, vocab, notes = make_data(args, rng)
        return batches, make_config(args, vocab or args.vocab), notes
    except (ValueError, OSError) as e:
        train_args.usage_error(str(e))


def launch_self(args, argv: Sequence[str]) -> int:
    """--nproc N: this job again as N processes of one world (the launcher's
    variables tell each its part); the launcher's exit code."""
    from oneflow_lite.distributed import emulate
    from oneflow_lite.distributed.launch import LaunchOptions, launch, python_command
    spec, per_node = None, args.nproc
    if args.emulate_nodes is not None:  # --nproc processes over M emulated nodes
        rate = args.emulate_rate and emulate.parse_rate("--emulate-rate", args.emulate_rate)
        spec, per_node = emulate.EmulationSpec(args.emulate_nodes, rate or None), (
            args.nproc // args.emulate_nodes)
    try:
        result = launch(python_command("oneflow_lite.train", list(argv), module=True),
                        LaunchOptions(nproc_per_node=per_node,
                                      devices_per_process=args.devices_per_process,
                                      max_restarts=args.max_restarts, emulate=spec))
    except (ValueError, OSError) as e:  # no privilege; the network could not be made
        print(f"{train_args.PROG}: {e}", file=sys.stderr)
        return 2
    if result.message:
        print(result.message, file=sys.stderr)
    return result.exit_code


def main(argv: Optional[Sequence[str]] = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    world = _world.info()
    restarted = os.environ.get("OFL_RESTART_COUNT") is not None  # a launcher's child, maybe
    if (args.nproc > 1 or args.emulate_nodes) and not world["distributed"] and not restarted:
        raise SystemExit(launch_self(args, argv))  # (a restart may leave one process)
    if world["distributed"] and world["process"] != 0:  # process 0 speaks for the job
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
        args.report = args.plot = None
    changed = train_elastic.adapt_to_world(args, world)  # a restart on fewer processes
    if changed:
        print(changed, flush=True)
    batches, config, notes = setup(args)
    print(describe(args, config))
    for note in notes:
        print(note)
    print(f"mesh {args.hierarchy} ({args.devices} devices), cluster {args.cluster}, searcher "
          f"{args.searcher}, optimizer {args.optimizer} lr {args.lr:g}", flush=True)
    if args.plan_only:
        report = plan_only(args, config)
    else:
        data = train_data.step_loader(batches, args.steps, args.batch)
        cluster = resolve_cluster(args.cluster, args.devices)
        runs = [train_run(args, config, data, args.searcher, args.searcher, cluster)]
        experts = []
        if args.compare == "expert":  # ranked on the very program the first run compiled
            best, experts = best_expert(runs[0]["_program"], args, cluster, args.searcher)
            print("\nexpert presets:\n" + "\n".join(experts))
            if best is not None:
                runs.append(train_run(args, config, data, best[0], f"{best[0]} (best expert)",
                                      cluster))
        print("\n" + rep.comparison_table(runs))
        for line in rep.summary_lines(runs):
            print(line)
        print("\npredicted (full model) against measured step time:")
        for line in rep.fidelity_lines(runs):
            print(line)
        for run in runs:
            run.pop("_program")
        report = {"runs": runs, "experts": experts}
    report.update(args={k: v for k, v in vars(args).items()}, model=describe(args, config),
                  config=asdict(config), command=" ".join(sys.argv))
    if args.report:
        rep.write_json(args.report, report)
        print(f"report: {args.report}")
    if args.plot and not args.plan_only:
        rep.plot_runs(args.plot, report["runs"], describe(args, config))
        print(f"plot: {args.plot}")
    return report


if __name__ == "__main__":
    try:
        main()
    except ValueError as error:  # bad sizes or settings: one line and status 2, as argparse
        train_args.usage_error(str(error).splitlines()[0])
    except RuntimeError as error:  # a lost peer: this process stops cleanly, in one line
        if "lost process" not in str(error) and "lost rank" not in str(error):
            raise
        print(f"process {os.environ.get('RANK', '0')} stops: {str(error).splitlines()[0]}",
              file=sys.stderr, flush=True)
        sys.exit(1)
