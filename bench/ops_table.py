"""Prints the README's tables of bench/results/ops.json (markdown): the GPT
step against PyTorch with the bench's goals, and the top op types of both
one-step profiles. ``.venv/bin/python bench/ops_table.py [--readme
README.md] [ops.json]``: with --readme the tables replace what stands
between README.md's ``<!-- ops tables begin -->`` and ``<!-- ops tables
end -->`` lines instead of being printed."""
import argparse
import json
import os
import sys

BEGIN, END = "<!-- ops tables begin", "<!-- ops tables end -->"

HERE = os.path.dirname(os.path.abspath(__file__))


def fmt(v, digits=2):
    return "n/a" if v is None else f"{v:.{digits}f}"


def headline(r: dict) -> list:
    g = r.get("goals") or {}
    mem = g.get("peak_rss_growth_mib") or {}
    met = g.get("met") or {}
    lim = g.get("limits") or {}
    yes = lambda k: {True: "yes", False: "no", None: "n/a"}[met.get(k)]  # noqa: E731
    return [
        "| figure | value | goal | met |", "|---|---|---|---|",
        f"| our nn.Graph step / PyTorch eager step | {fmt(g.get('graph_over_torch'))} "
        f"({fmt(r.get('gpt_step_ms'), 0)} / {fmt(r.get('torch_gpt_step_ms'), 0)} ms) | "
        f"{lim.get('graph_over_torch', '')} | {yes('graph_over_torch')} |",
        f"| our eager step / PyTorch eager step | {fmt(g.get('eager_over_torch'))} "
        f"({fmt(r.get('eager_gpt_step_ms'), 0)} / {fmt(r.get('torch_gpt_step_ms'), 0)} ms) | "
        f"{lim.get('eager_over_torch', '')} | {yes('eager_over_torch')} |",
        f"| step FLOP rate / reference_gflops | {fmt(g.get('step_flop_fraction'))} "
        f"({fmt(g.get('step_gflop'), 2)} GFLOP per step, {fmt(g.get('step_gflops'), 1)} / "
        f"{fmt(r.get('reference_gflops'), 1)} GFLOP/s) | {lim.get('step_flop_fraction', '')} | "
        f"{yes('step_flop_fraction')} |",
        f"| peak memory (ru_maxrss growth over the steps), ours graph / PyTorch | "
        f"{fmt(g.get('peak_memory_over_torch'))} ({fmt(mem.get('ours_graph'), 0)} / "
        f"{fmt(mem.get('torch_eager'), 0)} MiB; eager {fmt(mem.get('ours_eager'), 0)} MiB) | "
        f"{lim.get('peak_memory_over_torch', '')} | {yes('peak_memory_over_torch')} |",
    ]


def profiles(r: dict, n: int = 10) -> list:
    p = r.get("profile_top") or {}
    ours = (p.get("ours_graph") or {}).get("top", [])[:n]
    torch = (p.get("torch_eager") or {}).get("top", [])[:n]
    lines = [f"| # | ours (nn.Graph step, {fmt((p.get('ours_graph') or {}).get('step_ms'), 0)} ms "
             f"traced) | ms | share | PyTorch (eager step, "
             f"{fmt((p.get('torch_eager') or {}).get('step_ms'), 0)} ms profiled) | ms | share |",
             "|---|---|---|---|---|---|---|"]
    for i in range(max(len(ours), len(torch))):
        a = ours[i] if i < len(ours) else None
        b = torch[i] if i < len(torch) else None
        cell = lambda x: ("", "", "") if x is None else (  # noqa: E731
            f"`{x['op']}` x{x['count']}", f"{x['ms']:.1f}", f"{100 * x['share']:.1f} %")
        lines.append("| " + " | ".join([str(i + 1), *cell(a), *cell(b)]) + " |")
    return lines


def categories(r: dict) -> list:
    p = r.get("profile_top") or {}
    ours = (p.get("ours_graph") or {}).get("by_category_ms", {})
    torch = (p.get("torch_eager") or {}).get("by_category_ms", {})
    groups = sorted(set(ours) | set(torch), key=lambda k: -max(ours.get(k, 0), torch.get(k, 0)))
    lines = ["| op group | ours ms | PyTorch ms |", "|---|---|---|"]
    lines += [f"| {k} | {ours.get(k, 0):.1f} | {torch.get(k, 0):.1f} |" for k in groups]
    return lines


def tables(r: dict) -> str:
    m = r["machine"]
    return "\n".join([
        f"Run of {r['date_utc']}, commit {r['commit']}, {r['threads']} threads, load average "
        f"{m['loadavg_before']} -> {m['loadavg_after']} (1, 5, 15 min).", "",
        *headline(r), "", *profiles(r), "", *categories(r)])


def replace_between_markers(text: str, body: str) -> str:
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        raise SystemExit(f"ops_table: no '{BEGIN} ... -->' ... '{END}' lines in the README")
    a = text.index("\n", a) + 1
    return text[:a] + "\n" + body + "\n\n" + text[b:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="?", default=os.path.join(HERE, "results", "ops.json"))
    ap.add_argument("--readme", default="")
    args = ap.parse_args()
    with open(args.json) as f:
        body = tables(json.load(f))
    if not args.readme:
        print(body)
        return 0
    with open(args.readme, encoding="utf-8") as f:
        text = f.read()
    with open(args.readme, "w", encoding="utf-8") as f:
        f.write(replace_between_markers(text, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
