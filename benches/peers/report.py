"""Render the peer-benchmark results as a markdown table and an SVG bar chart.

    target/bench-python/venv/bin/python benches/peers/report.py \
        [--results target/bench-compare/results.jsonl] \
        [--table target/bench-compare/table.md] [--svg docs/bench/peers.svg]

Reads the JSON lines written by benches/peers/compare.py. The one-reply runs
come in interleaved rounds: a peer's figure is its run with the median median
over the rounds, and its ratio to towerscope is the median of the ratios taken
within each round, with their spread (min-max). A figure from a run that never
got under the load limit is marked "loaded" in the table and hatched in the
chart; none is shown as a clean figure. Run by scripts/bench-compare.sh after
compare.py.
"""

import argparse
import json
import math
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HOOKS = {
    "towerscope": "6 onion positions + system-prompt fold",
    "tower-llm": "agent, model and tool services (one boxed layer each)",
    "agentscope-rs": "on_agent, on_reasoning, on_acting, on_model_call + system prompt",
    "agentscope": "6 onion hooks + on_system_prompt",
    "langchain": "awrap_model_call, awrap_tool_call + 4 node hooks",
    "pydantic-ai": "wrap_run, wrap_model_request, wrap_tool_execute",
}


def fmt_us(us) -> str:
    if us is None:
        return "–"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} µs"


def fmt_num(x, digits=0) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def load(line: dict) -> str:
    mark = "" if line.get("clean") else " ⚠ loaded"
    peak = line.get("other_load_peak_cores")
    peak = "" if peak is None else f" (peak {peak:.2f})"
    return f"{line['other_load_cores']:.2f}{peak}{mark}"


def aggregate(runs: dict) -> dict:
    """(peer, middlewares) -> the run with the median median over its rounds, plus
    "round_medians" {round: median_us}, the highest other load and whether all were clean."""
    out = {}
    for key, lines in runs.items():
        ordered = sorted(lines, key=lambda l: l["median_us"])
        line = dict(ordered[(len(ordered) - 1) // 2])
        line["round_medians"] = {l.get("round", 0): l["median_us"] for l in lines}
        line["rounds"] = len(lines)
        worst = max(lines, key=lambda l: l["other_load_cores"])
        line["other_load_cores"] = worst["other_load_cores"]
        line["other_load_peak_cores"] = worst.get("other_load_peak_cores")
        line["clean"] = all(l.get("clean") for l in lines)
        out[key] = line
    return out


def round_ratios(a: dict | None, b: dict | None) -> list[float]:
    """a / b within each round both ran."""
    if not a or not b:
        return []
    ra, rb = a["round_medians"], b["round_medians"]
    return [ra[r] / rb[r] for r in sorted(set(ra) & set(rb)) if rb[r] > 0]


def fmt_ratio(ratios: list[float], digits: int = 2) -> str:
    """Median ratio, with the spread of the rounds when there are several."""
    if not ratios:
        return "–"
    med = f"{statistics.median(ratios):.{digits}f}×"
    if len(ratios) == 1:
        return med
    return f"{med} ({min(ratios):.{digits}f}–{max(ratios):.{digits}f}, {len(ratios)} rounds)"


def read(path: Path):
    meta, runs, many, criterion, missing = {}, {}, {}, None, []
    for raw in path.read_text().splitlines():
        line = json.loads(raw)
        if line.get("kind") == "meta":
            meta = line
        elif line.get("kind") == "criterion":
            criterion = line if line.get("status") == "ok" else None
        elif line.get("status") in ("unavailable", "failed"):
            missing.append(line)
        elif line.get("mode") == "single" and line.get("middlewares") is not None:
            runs.setdefault((line["peer"], line["middlewares"]), []).append(line)
        elif line.get("mode") == "many":
            many[(line["peer"], line["n"])] = line
    return meta, aggregate(runs), many, criterion, missing


def table(meta, single, many, criterion, missing) -> str:
    peers = list(dict.fromkeys(p for p, _ in single))
    base = single.get(("towerscope", 0))
    out = ["# Peer benchmark: one ReAct reply (4 model calls, 3 tool calls)", ""]
    out.append(f"Run started {meta.get('started', '?')} on {meta.get('nproc', '?')} cores"
               f"{' (--quick)' if meta.get('quick') else ''}. Scripted models, no network. "
               f"\"Other load\" is the CPU other processes used during the run, in cores "
               f"(method: benches/peers/compare.py); ⚠ loaded = above "
               f"{meta.get('load_limit_cores', 0.1)} core in every one of up to "
               f"{meta.get('attempts_max', 3)} attempts (the least loaded is shown; a loaded "
               f"run over 2 minutes is not repeated; a one-reply run inside an interleaved "
               f"round is never repeated). One-reply runs: {meta.get('rounds', 1)} interleaved "
               f"round(s), each peer once per round; a figure is the median over the rounds, a "
               f"ratio the median of the per-round ratios (min–max).")
    out += ["", "## One reply at a time (no middleware)", "",
            "| peer | version | median | p10 / p90 | allocs / reply | bytes / reply "
            "| idle bytes / agent | × towerscope | other load |",
            "|---|---|---|---|---|---|---|---|---|"]
    for p in peers:
        s = single.get((p, 0))
        if not s:
            continue
        ratio = fmt_ratio(round_ratios(s, base))
        out.append(f"| {p} | {s['version']} | {fmt_us(s['median_us'])} | "
                   f"{fmt_us(s['p10_us'])} / {fmt_us(s['p90_us'])} | "
                   f"{fmt_num(s.get('allocs_per_reply'))} | {fmt_num(s.get('bytes_per_reply'))} | "
                   f"{fmt_num(s.get('idle_agent_bytes'))} | {ratio} | {load(s)} |")
    out += ["", "Allocations are counted by a counting global allocator in the Rust peers; "
            "Python has none (–). Idle bytes: live heap after building agents, per agent "
            "(Rust: 1,000 agents, counting allocator; Python: 50 agents, tracemalloc).", ""]

    out += ["## Pass-through middleware overhead", "",
            "| peer | one middleware hooks | 0 | 1 | 5 | 10 | per middleware (10 vs 0) "
            "| 10 / 0 | 10 / 1 | other load (10) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for p in peers:
        if (p, 10) not in single:
            continue
        m = {k: single[(p, k)]["median_us"] for k in (0, 1, 5, 10) if (p, k) in single}
        per = (m[10] - m[0]) / 10 if 0 in m else None
        pct = f" ({100 * per / m[0]:+.1f}% of a reply)" if per is not None else ""
        cells = " | ".join(fmt_us(m.get(k)) for k in (0, 1, 5, 10))
        r10_0 = fmt_ratio(round_ratios(single.get((p, 10)), single.get((p, 0))), 3)
        r10_1 = fmt_ratio(round_ratios(single.get((p, 10)), single.get((p, 1))), 3)
        out.append(f"| {p} | {HOOKS.get(p, '')} | {cells} | {fmt_us(per)}{pct} | "
                   f"{r10_0} | {r10_1} | {load(single[(p, 10)])} |")
    no_mw = [p for p in peers if (p, 10) not in single]
    if no_mw:
        out.append(f"\nNo middleware stack to install: {', '.join(no_mw)}.")
    out.append("")

    out += ["## Many replies in flight", "",
            "Each reply on its own agent; the scripted model sleeps 50 ms before each answer "
            "(4 sleeps per reply). Rust: tokio multi-thread runtime, 2 workers; Python: one "
            "asyncio loop. CPU is user + system time of the process over the replies "
            "(agent construction excluded).", "",
            "| peer | N | wall | peak RSS | CPU / reply | other load |",
            "|---|---|---|---|---|---|"]
    for (p, n), r in many.items():
        out.append(f"| {p} | {n:,} | {r['wall_s']:.2f} s | {r['peak_rss_mb']:.0f} MiB | "
                   f"{fmt_us(r['cpu_us_per_reply'])} | {load(r)} |")
    py_ns = meta.get("python_many_ns")
    if py_ns is not None and py_ns != meta.get("many_ns"):
        out.append(f"\nPython peers ran N = {', '.join(f'{n:,}' for n in py_ns)} only "
                   "(100,000 would take over half an hour per peer here).")
    out.append("")

    if criterion:
        ag = {m: single[("agentscope", m)] for m in (0, 1, 5, 10) if ("agentscope", m) in single}
        med = {int(k): v for k, v in criterion["median_us_by_middlewares"].items()}
        out += ["## towerscope (criterion, benches/react.rs) vs AgentScope 2.0.11", "",
                f"criterion other load: {load(criterion)}.", "",
                "| middlewares | towerscope criterion median | AgentScope median | AgentScope / towerscope |",
                "|---|---|---|---|"]
        for n in sorted(set(med) & set(ag)):
            a = ag[n]["median_us"]
            out.append(f"| {n} | {fmt_us(med[n])} ({100 * (med[n] / med[0] - 1):+.1f}%) | "
                       f"{fmt_us(a)} ({100 * (a / ag[0]['median_us'] - 1):+.1f}%) | "
                       f"{a / med[n]:.0f}× |")
        out.append("")

    if missing:
        out += ["## Not measured", ""]
        for line in missing:
            what = line.get("reason") or line.get("error")
            out.append(f"- {line.get('peer', '?')}: {line['status']}: {what}")
        out.append("")
    return "\n".join(out)


def chart(single, svg: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "towerscope-peers"
    peers = [p for p in dict.fromkeys(p for p, _ in single) if (p, 0) in single]
    peers.sort(key=lambda p: single[(p, 0)]["median_us"])
    colors = {"rust": "#b7410e", "python": "#3572a5"}

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.55 * len(peers) + 1.8))
    ys = range(len(peers))
    med = [single[(p, 0)]["median_us"] for p in peers]
    lo = [m - single[(p, 0)]["p10_us"] for p, m in zip(peers, med)]
    hi = [single[(p, 0)]["p90_us"] - m for p, m in zip(peers, med)]
    langs = [single[(p, 0)].get("language", "rust") for p in peers]
    bars = left.barh(ys, med, xerr=[lo, hi], color=[colors.get(l, "grey") for l in langs],
                     capsize=3)
    for bar, p in zip(bars, peers):
        if not single[(p, 0)].get("clean", True):
            bar.set_hatch("//")
    left.set_yticks(list(ys), [p + ("" if single[(p, 0)].get("clean", True) else " (loaded)")
                               for p in peers])
    left.set_xscale("log")
    left.set_xlim(left=10 ** math.floor(math.log10(min(single[(p, 0)]["p10_us"] for p in peers))))
    left.set_xlabel("µs per reply (median, p10–p90), log scale")
    left.set_title("One ReAct reply: 4 model calls, 3 tool calls")
    for y, m, h in zip(ys, med, hi):
        left.text((m + h) * 1.1, y, fmt_us(m), fontsize=8, va="center")

    mw = [p for p in peers if (p, 10) in single]
    per = [(single[(p, 10)]["median_us"] - single[(p, 0)]["median_us"]) / 10 for p in mw]
    floor = 0.01
    mw_bars = right.barh(range(len(mw)), [max(v, floor) for v in per],
                         color=[colors.get(single[(p, 0)].get("language", "rust"), "grey")
                                for p in mw])
    mw_loaded = [not (single[(p, 0)].get("clean", True) and single[(p, 10)].get("clean", True))
                 for p in mw]
    for bar, loaded in zip(mw_bars, mw_loaded):
        if loaded:
            bar.set_hatch("//")
    for y, (p, v) in enumerate(zip(mw, per)):
        label = f"{v:,.1f} µs" if v > floor else f"≈0 ({v:+.2f} µs)"
        right.text(max(v, floor) * 1.15, y, label, fontsize=8, va="center")
    right.set_yticks(range(len(mw)), [p + (" (loaded)" if loaded else "")
                                      for p, loaded in zip(mw, mw_loaded)])
    right.set_xscale("log")
    positive = [v for v in per if v > floor] or [floor]
    right.set_xlim(left=min(10 ** math.floor(math.log10(min(positive))), floor))
    right.set_xlabel("µs added per pass-through middleware (10 vs 0), log scale")
    right.set_title("Per-middleware overhead")
    fig.text(0.01, 0.01, "orange: Rust, blue: Python; hatched: run taken under load "
             "from other processes", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    svg.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(svg, format="svg", metadata={"Date": None})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(ROOT / "target/bench-compare/results.jsonl"))
    ap.add_argument("--table", default=str(ROOT / "target/bench-compare/table.md"))
    ap.add_argument("--svg", default=str(ROOT / "docs/bench/peers.svg"))
    args = ap.parse_args()
    meta, single, many, criterion, missing = read(Path(args.results))
    text = table(meta, single, many, criterion, missing)
    Path(args.table).write_text(text + "\n")
    print(text)
    chart(single, Path(args.svg))


if __name__ == "__main__":
    main()
