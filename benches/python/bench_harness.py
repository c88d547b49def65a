"""What every Python peer benchmark shares: the CLI, call checks, stats, JSON lines.

The Python counterpart of benches/peers/harness (the Rust peers' harness), with
the same scenario and output. A peer module defines a class with

    NAME, VERSION        the framework and its version
    MIDDLEWARE           whether it can install pass-through middlewares
    build(middlewares, delay_s) -> agent   (sync; the agent holds a Calls)
    async reply(agent) -> str               one reply from a fresh conversation
    calls(agent) -> Calls

and calls `bench_harness.main(PeerClass)`. CLI:

    python <peer>_bench.py single --replies N [--middlewares M] [--warmup W]
    python <peer>_bench.py many --n N

One reply: the model is called 4 times; its first 3 answers call add(a, b)
once each, the 4th answers "done". `Calls.check_reply` aborts unless a reply
made exactly 4 model calls and 3 tool calls.

single: replies one after the other on one agent (asyncio, one thread):
median/p10/p90 per reply, and `idle_agent_bytes` (tracemalloc: bytes still
traced after building IDLE_AGENTS agents, divided by their number).
Allocation counts per reply are not measured in Python (null).

many: N replies in flight at once (asyncio.gather), each on its own agent,
the model sleeping 50 ms (asyncio.sleep) before each answer: wall time, peak
RSS (VmHWM) and CPU time (getrusage) per reply.
"""

import asyncio
import gc
import json
import resource
import statistics
import sys
import time
import tracemalloc

TOOL_ARGS = ((1, 2), (3, 4), (5, 6))
FINAL_TEXT = "done"
QUESTION = "What is 1+2, 3+4 and 5+6?"
SYSTEM_PROMPT = "You are a calculator."
IDLE_AGENTS = 50
MANY_MODEL_DELAY_S = 0.05
USAGE = ("usage: <peer> single --replies N [--middlewares M] [--warmup W]\n"
         "       <peer> many --n N")


class Calls:
    """Model and tool calls since the last check_reply."""

    __slots__ = ("model", "tool")

    def __init__(self) -> None:
        self.model = 0
        self.tool = 0

    def model_called(self) -> int:
        """Counts one model call; returns its 0-based index in the reply."""
        step = self.model
        self.model += 1
        return step

    def tool_called(self) -> None:
        self.tool += 1

    def check_reply(self) -> None:
        model, tool = self.model, self.tool
        self.model = self.tool = 0
        if (model, tool) != (4, 3):
            raise BenchError(f"the reply made {model} model calls and {tool} tool "
                             "calls; the scenario is 4 and 3")


class BenchError(Exception):
    pass


def answer(step: int):
    """Scripted answer number `step`: (a, b) for a tool call, None for the text."""
    return TOOL_ARGS[step % 4] if step % 4 < 3 else None


def parse(argv: list[str]) -> dict:
    if not argv or argv[0] not in ("single", "many"):
        raise BenchError(USAGE)
    mode, opts = argv[0], {"middlewares": 0}
    allowed = {"single": {"--replies", "--middlewares", "--warmup"}, "many": {"--n"}}[mode]
    rest = argv[1:]
    if len(rest) % 2:
        raise BenchError(f"{rest[-1]} needs a value\n{USAGE}")
    for flag, value in zip(rest[::2], rest[1::2]):
        if flag not in allowed:
            raise BenchError(f"unknown option {flag} for mode {mode}\n{USAGE}")
        try:
            opts[flag[2:]] = int(value.replace("_", ""))
        except ValueError:
            raise BenchError(f"{flag} {value}: not a count\n{USAGE}") from None
    if mode == "single" and opts.get("replies", 0) < 1:
        raise BenchError(f"single needs --replies N (N >= 1)\n{USAGE}")
    if mode == "many" and "n" not in opts:
        raise BenchError(f"many needs --n\n{USAGE}")
    opts["mode"] = mode
    return opts


def pct(sorted_us: list[float], q: float) -> float:
    """Nearest rank, index round(q * (n - 1)), as the Rust harness."""
    return sorted_us[min(len(sorted_us) - 1, round(q * (len(sorted_us) - 1)))]


async def checked_reply(peer, agent) -> None:
    text = await peer.reply(agent)
    peer.calls(agent).check_reply()
    if (text or "").strip() != FINAL_TEXT:
        raise BenchError(f"the reply's text is {text!r}, expected {FINAL_TEXT!r}")


def header(peer, mode: str) -> dict:
    return {"peer": peer.NAME, "version": peer.VERSION, "mode": mode}


def idle_agent_bytes(peer, middlewares: int) -> float:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    agents = [peer.build(middlewares, None) for _ in range(IDLE_AGENTS)]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del agents
    return (after - before) / IDLE_AGENTS


async def single(peer, replies: int, middlewares: int, warmup: int) -> dict:
    if middlewares and not peer.MIDDLEWARE:
        return {**header(peer, "single"), "middlewares": None,
                "requested_middlewares": middlewares,
                "skipped": "this peer has no middleware to install"}
    agent = peer.build(middlewares, None)
    await checked_reply(peer, agent)
    idle = idle_agent_bytes(peer, middlewares)
    for _ in range(warmup):
        await checked_reply(peer, agent)
    samples = []
    perf = time.perf_counter_ns
    for _ in range(replies):
        t0 = perf()
        text = await peer.reply(agent)
        samples.append((perf() - t0) / 1000)
        peer.calls(agent).check_reply()
        if (text or "").strip() != FINAL_TEXT:
            raise BenchError(f"the reply's text is {text!r}, expected {FINAL_TEXT!r}")
    us = sorted(samples)
    return {**header(peer, "single"), "middlewares": middlewares, "replies": replies,
            "warmup": warmup, "median_us": round(statistics.median(us), 2),
            "p10_us": round(pct(us, 0.10), 2), "p90_us": round(pct(us, 0.90), 2),
            "mean_us": round(statistics.fmean(us), 2), "allocs_per_reply": None,
            "bytes_per_reply": None, "idle_agent_bytes": round(idle),
            "model_calls_per_reply": 4, "tool_calls_per_reply": 3}


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise BenchError("no VmHWM line in /proc/self/status")


async def many(peer, n: int) -> dict:
    t0 = time.perf_counter()
    agents = [peer.build(0, MANY_MODEL_DELAY_S) for _ in range(n)]
    build_s = time.perf_counter() - t0
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    results = await asyncio.gather(*(checked_reply(peer, a) for a in agents),
                                   return_exceptions=True)
    wall_s, cpu_s = time.perf_counter() - t0, cpu_seconds() - cpu0
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise BenchError(f"{len(errors)} of {n} replies failed; the first: {errors[0]!r}")
    return {**header(peer, "many"), "n": n, "model_delay_ms": 50,
            "wall_s": round(wall_s, 3), "peak_rss_mb": round(peak_rss_mib(), 1),
            "cpu_s": round(cpu_s, 3), "cpu_us_per_reply": round(cpu_s * 1e6 / n, 1),
            "build_s": round(build_s, 3)}


def main(peer, argv: list[str] | None = None) -> None:
    try:
        opts = parse(sys.argv[1:] if argv is None else argv)
        if opts["mode"] == "single":
            warmup = opts.get("warmup", max(20, min(500, opts["replies"] // 5)))
            line = asyncio.run(single(peer, opts["replies"], opts["middlewares"], warmup))
        else:
            line = asyncio.run(many(peer, opts["n"]))
    except BenchError as e:
        sys.exit(f"{peer.NAME} bench: error: {e}")
    print(json.dumps(line), flush=True)
