"""Reference-side benchmark: one AgentScope 2.x ReAct reply vs. middleware depth.

Measures, with the Python reference (AgentScope 2.0.11), the wall time of ONE
`Agent.reply()` made of exactly 4 model calls and 3 tool calls:

    model call 1 -> tool call add(a=1, b=2)
    model call 2 -> tool call add(a=3, b=4)
    model call 3 -> tool call add(a=5, b=6)
    model call 4 -> text "done"

with 0, 1, 5 and 10 pass-through middlewares installed. This is the Python
counterpart of towerscope's Rust benches; run it with scripts/bench-python.sh.

Setup notes (how the reference's API is used):
  * The model is a scripted `ChatModelBase` subclass with `stream=False`: its
    `_call_api` returns one complete, non-streaming `ChatResponse` (with
    `ChatUsage`) per call. The base class does not force streaming.
  * `Agent._handle_incoming_messages` reads `model.formatter` for every input
    message, so the mock carries a real (network-free) `OpenAIChatFormatter`.
  * A `FunctionTool` without `permission=` answers ASK ("Custom function tools
    must be explicitly allowed"), which would park the reply waiting for the
    user. We pass `permission=PermissionDecision(ALLOW)` so it runs directly.
  * `InjectionConfig(inject_runtime_state=False)`: no runtime-state hint, so the
    reply is only the ReAct loop. `context_size` is huge so the compression
    check (which still runs before every reasoning step) never compresses.
  * One agent per case; before each reply its conversation context is cleared
    (`state.context = []`; a new reply creates a fresh `ReplyContext` itself)
    and the script is rewound. Reset and checks happen outside the timed region.

Timing: one `time.perf_counter_ns()` sample per reply (a reply is ~ms, timer
overhead ~0.1 us, so per-reply samples are fine); median/p10/p90 in us.

Peer-benchmark mode (scripts/bench-compare.sh): with a first argument
`single` or `many` the same agent runs under bench_harness.py, the CLI and
JSON lines shared with the other peers (`single --replies N --middlewares M`,
`many --n N`); there the reset happens inside the timed reply, as for every
peer, and the model and the tool count their calls in a `bench_harness.Calls`.
"""

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any, AsyncGenerator

import agentscope
from agentscope.agent import Agent, ContextConfig, InjectionConfig
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import TextBlock, ToolCallBlock, ToolResultBlock, UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

import bench_harness

MIDDLEWARE_COUNTS = (0, 1, 5, 10)
TOOL_ARGS = ((1, 2), (3, 4), (5, 6))  # one add() call per model call 1..3
EXPECTED_RESULTS = ["3", "7", "11"]


class ScriptedModel(ChatModelBase):
    """Mock chat model: replays the 4-step script, no network."""

    def __init__(self, counter: "bench_harness.Calls | None" = None,
                 delay_s: float | None = None) -> None:
        super().__init__(
            credential=None,  # never used: _call_api is local
            model="scripted-mock",
            parameters=ChatModelBase.Parameters(),
            stream=False,  # plain ChatResponse, not an async generator
            max_retries=0,
            context_size=100_000_000,  # never reach the compression trigger
        )
        self.formatter = OpenAIChatFormatter()
        self.calls = 0
        self.counter = counter  # peer-benchmark mode: counts every call
        self.delay_s = delay_s  # peer-benchmark `many` mode: 50 ms per call

    async def _call_api(self, model_name: str, messages: list, tools: Any = None,
                        tool_choice: Any = None, **kwargs: Any) -> ChatResponse:
        step = self.calls
        self.calls += 1
        if self.counter is not None:
            self.counter.model_called()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        usage = ChatUsage(input_tokens=100, output_tokens=10, time=0.0)
        if step < len(TOOL_ARGS):
            a, b = TOOL_ARGS[step]
            # Fresh blocks every call: the agent mutates ToolCallBlock.state.
            block = ToolCallBlock(id=f"call_{step}", name="add",
                                  input=f'{{"a": {a}, "b": {b}}}')
            return ChatResponse(content=[block], is_last=True, usage=usage)
        if step == len(TOOL_ARGS):
            return ChatResponse(content=[TextBlock(text="done")], is_last=True,
                                usage=usage)
        raise RuntimeError(f"scripted model called too often (call {step + 1})")


def make_add(counter: "bench_harness.Calls | None"):
    """The `add` tool, counting its calls in `counter` when given."""

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a (int): The first integer.
            b (int): The second integer.
        """
        if counter is not None:
            counter.tool_called()
        return a + b

    return add


class PassThrough(MiddlewareBase):
    """Implements every onion hook by forwarding to next_handler (like the
    docs' FullObservability), plus an identity on_system_prompt."""

    async def on_reply(self, agent, input_kwargs: dict, next_handler) -> AsyncGenerator:
        async for item in next_handler(**input_kwargs):
            yield item

    async def on_reasoning(self, agent, input_kwargs: dict, next_handler) -> AsyncGenerator:
        async for item in next_handler(**input_kwargs):
            yield item

    async def on_acting(self, agent, input_kwargs: dict, next_handler) -> AsyncGenerator:
        async for item in next_handler(**input_kwargs):
            yield item

    async def on_model_call(self, agent, input_kwargs: dict, next_handler):
        # Non-streaming model: next_handler() resolves to a ChatResponse.
        return await next_handler(**input_kwargs)

    async def on_check_permission(self, agent, input_kwargs: dict, next_handler):
        return await next_handler(**input_kwargs)

    async def on_compress_context(self, agent, input_kwargs: dict, next_handler) -> None:
        await next_handler(**input_kwargs)

    async def on_system_prompt(self, agent, current_prompt: str) -> str:
        return current_prompt


def build_agent(n_middlewares: int, counter: "bench_harness.Calls | None" = None,
                delay_s: float | None = None) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(counter, delay_s)
    tool = FunctionTool(make_add(counter), permission=PermissionDecision(
        behavior=PermissionBehavior.ALLOW, message="add is always allowed."))
    agent = Agent(
        name="bench",
        system_prompt="You are a calculator assistant.",
        model=model,
        toolkit=Toolkit(tools=[tool]),
        middlewares=[PassThrough() for _ in range(n_middlewares)],
        context_config=ContextConfig(),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    for name in ("reply", "reasoning", "acting", "model_call",
                 "check_permission", "compress_context", "system_prompt"):
        installed = len(getattr(agent, f"_{name}_middlewares"))
        if installed != n_middlewares:
            sys.exit(f"ERROR: {installed} on_{name} middlewares installed, "
                     f"expected {n_middlewares}")
    return agent, model


def reset(agent: Agent, model: ScriptedModel) -> None:
    agent.state.context = []
    model.calls = 0


def verify(agent: Agent, model: ScriptedModel, msg: Any) -> None:
    """Abort unless the reply really ran the whole script."""
    problems = []
    if msg.get_text_content() != "done":
        problems.append(f"final text is {msg.get_text_content()!r}, not 'done'")
    if str(msg.finished_reason) not in ("completed", "ReplyFinishedReason.COMPLETED"):
        problems.append(f"finished_reason is {msg.finished_reason!r}")
    if model.calls != 4:
        problems.append(f"{model.calls} model calls, expected 4")
    results = [b for m in agent.state.context for b in m.content
               if isinstance(b, ToolResultBlock)]
    outputs = [b.output if isinstance(b.output, str)
               else "".join(x.text for x in b.output if isinstance(x, TextBlock))
               for b in results]
    states = [str(b.state) for b in results]
    if outputs != EXPECTED_RESULTS or any("success" not in s.lower() for s in states):
        problems.append(f"tool results {outputs} (states {states}), "
                        f"expected {EXPECTED_RESULTS} all success")
    if problems:
        sys.exit("ERROR: the benchmark reply is not the intended 4-call/3-tool "
                 "ReAct loop:\n  " + "\n  ".join(problems))


def pct(sorted_us: list[float], q: float) -> float:
    """Nearest-rank percentile on an already sorted list."""
    idx = min(len(sorted_us) - 1, max(0, round(q * (len(sorted_us) - 1))))
    return sorted_us[idx]


async def run_case(n_mw: int, warmup: int, replies: int) -> None:
    agent, model = build_agent(n_mw)
    user = UserMsg("user", "Please add 1+2, 3+4 and 5+6.")

    reset(agent, model)
    verify(agent, model, await agent.reply(user))  # first reply: full check
    for _ in range(warmup):
        reset(agent, model)
        await agent.reply(user)

    samples_ns = []
    perf = time.perf_counter_ns
    for _ in range(replies):
        reset(agent, model)
        t0 = perf()
        msg = await agent.reply(user)
        samples_ns.append(perf() - t0)
        if model.calls != 4:  # cheap per-reply sanity check, outside timing
            sys.exit(f"ERROR: reply made {model.calls} model calls, expected 4")
    verify(agent, model, msg)  # last reply: full check again

    us = sorted(s / 1000 for s in samples_ns)
    med, p10, p90 = statistics.median(us), pct(us, 0.10), pct(us, 0.90)
    print(f"middlewares={n_mw:>2}  median {med:9.1f} us  p10 {p10:9.1f} us  "
          f"p90 {p90:9.1f} us  ({replies} replies, {warmup} warm-up)")
    print(f"RESULT agentscope middlewares={n_mw} median_us={med:.1f} "
          f"p10_us={p10:.1f} p90_us={p90:.1f} replies={replies}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="short run: 20 warm-up + 200 timed replies per case")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--replies", type=int, default=2000)
    ap.add_argument("--middlewares", type=int, nargs="+",
                    default=list(MIDDLEWARE_COUNTS))
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.replies = 20, 200

    print(f"agentscope {agentscope.__version__} | Python "
          f"{sys.version.split()[0]} | one reply = 4 model calls + 3 tool calls"
          f" | non-streaming mock model | injection off | per-reply samples")
    if agentscope.__version__ != "2.0.11":
        print(f"WARNING: expected agentscope 2.0.11, got "
              f"{agentscope.__version__}", file=sys.stderr)

    async def run_all() -> None:
        for n in args.middlewares:
            await run_case(n, args.warmup, args.replies)

    asyncio.run(run_all())


class AgentScopePeer:
    """This agent under bench_harness (the peer benchmark's CLI and JSON)."""

    NAME = "agentscope"
    VERSION = agentscope.__version__
    MIDDLEWARE = True

    @staticmethod
    def build(middlewares: int, delay_s: float | None):
        counter = bench_harness.Calls()
        agent, model = build_agent(middlewares, counter, delay_s)
        return agent, model, counter

    @staticmethod
    async def reply(handle) -> str:
        agent, model, _ = handle
        reset(agent, model)
        msg = await agent.reply(UserMsg("user", bench_harness.QUESTION))
        return msg.get_text_content()

    @staticmethod
    def calls(handle) -> "bench_harness.Calls":
        return handle[2]


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("single", "many"):
        bench_harness.main(AgentScopePeer)
    else:
        main()
