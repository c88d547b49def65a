"""Peer benchmark: one ReAct reply on Pydantic AI 2.68 (`pydantic-ai-slim`).

Same scenario and CLI as the other peers (see bench_harness.py): an `Agent`
over a `FunctionModel` (no network) that answers add(1, 2), add(3, 4),
add(5, 6), then "done", with a plain `add` tool; each reply is `agent.run`.
With `--middlewares M`, M pass-through capabilities are installed, each
overriding the onion hooks of a run: `wrap_run`, `wrap_model_request` and
`wrap_tool_execute`, all forwarding to the handler.

    scripts/bench-python.sh pydantic_ai single --replies 500 --middlewares 5
    scripts/bench-python.sh pydantic_ai many --n 1000

No message history is passed: every run starts a fresh conversation.
"""

import asyncio
from dataclasses import dataclass
from importlib.metadata import version

from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import Tool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import bench_harness as h


@dataclass
class PassThrough(AbstractCapability):
    """Forwards every wrap hook of a run to its handler."""

    async def wrap_run(self, ctx, *, handler):
        return await handler()

    async def wrap_model_request(self, ctx, *, request_context, handler):
        return await handler(request_context)

    async def wrap_tool_execute(self, ctx, *, call, tool_def, args, handler):
        return await handler(args)


class Agent:
    __slots__ = ("agent", "calls")

    def __init__(self, agent, calls) -> None:
        self.agent, self.calls = agent, calls


class PydanticAi:
    NAME = "pydantic-ai"
    VERSION = version("pydantic-ai-slim")
    MIDDLEWARE = True

    @staticmethod
    def build(middlewares: int, delay_s: float | None) -> Agent:
        calls = h.Calls()

        async def scripted(messages, info: AgentInfo) -> ModelResponse:
            step = calls.model_called()
            if delay_s:
                await asyncio.sleep(delay_s)
            args = h.answer(step)
            if args is None:
                return ModelResponse(parts=[TextPart(h.FINAL_TEXT)])
            a, b = args
            return ModelResponse(parts=[ToolCallPart("add", {"a": a, "b": b},
                                                     tool_call_id=f"call_{step}")])

        async def add(a: int, b: int) -> int:
            """Add two integers."""
            calls.tool_called()
            return a + b

        agent = PydanticAgent(
            FunctionModel(scripted),
            system_prompt=h.SYSTEM_PROMPT,
            tools=[Tool(add, takes_ctx=False)],
            capabilities=[PassThrough() for _ in range(middlewares)] or None,
        )
        return Agent(agent, calls)

    @staticmethod
    async def reply(agent: Agent) -> str:
        result = await agent.agent.run(h.QUESTION)
        return result.output

    @staticmethod
    def calls(agent: Agent) -> h.Calls:
        return agent.calls


if __name__ == "__main__":
    h.main(PydanticAi)
