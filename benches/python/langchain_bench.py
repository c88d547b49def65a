"""Peer benchmark: one ReAct reply on LangChain 1.5 (`create_agent`, a LangGraph graph).

Same scenario and CLI as the other peers (see bench_harness.py): a scripted
chat model (a `BaseChatModel` subclass whose `bind_tools` returns itself, no
network) answers add(1, 2), add(3, 4), add(5, 6), then "done"; the agent runs
them with `ainvoke`. With `--middlewares M`, M pass-through `AgentMiddleware`s
are installed, each implementing every hook LangChain offers for a reply:
the onion hooks `awrap_model_call` and `awrap_tool_call` (forwarding to the
handler) and the node hooks `abefore_agent`, `abefore_model`, `aafter_model`,
`aafter_agent` (returning no state update).

    scripts/bench-python.sh langchain single --replies 500 --middlewares 5
    scripts/bench-python.sh langchain many --n 1000

No checkpointer: every `ainvoke` starts a fresh conversation.
"""

import asyncio
from importlib.metadata import version
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from pydantic import ConfigDict

import bench_harness as h


class ScriptedChatModel(BaseChatModel):
    """Replays the scenario: answer number `i % 4` of the script."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    calls: Any
    delay_s: float | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):  # the script already knows its tool
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError("the benchmark only calls the model asynchronously")

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        step = self.calls.model_called()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        args = h.answer(step)
        if args is None:
            msg = AIMessage(content=h.FINAL_TEXT)
        else:
            a, b = args
            msg = AIMessage(content="", tool_calls=[
                {"name": "add", "args": {"a": a, "b": b}, "id": f"call_{step}",
                 "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=msg)])


class PassThrough(AgentMiddleware):
    """Every reply hook, forwarding (onion) or returning no update (node)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self._name = f"pass_through_{index}"  # LangChain rejects duplicate names

    @property
    def name(self) -> str:
        return self._name

    async def abefore_agent(self, state, runtime):
        return None

    async def abefore_model(self, state, runtime):
        return None

    async def aafter_model(self, state, runtime):
        return None

    async def aafter_agent(self, state, runtime):
        return None

    async def awrap_model_call(self, request, handler):
        return await handler(request)

    async def awrap_tool_call(self, request, handler):
        return await handler(request)


class Agent:
    __slots__ = ("graph", "calls")

    def __init__(self, graph, calls) -> None:
        self.graph, self.calls = graph, calls


def make_add(calls: h.Calls) -> StructuredTool:
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.tool_called()
        return a + b

    return StructuredTool.from_function(coroutine=add, name="add",
                                        description="Add two integers.")


class LangChain:
    NAME = "langchain"
    VERSION = f"{version('langchain')} (langgraph {version('langgraph')})"
    MIDDLEWARE = True

    @staticmethod
    def build(middlewares: int, delay_s: float | None) -> Agent:
        calls = h.Calls()
        graph = create_agent(
            ScriptedChatModel(calls=calls, delay_s=delay_s),
            tools=[make_add(calls)],
            system_prompt=h.SYSTEM_PROMPT,
            middleware=[PassThrough(i) for i in range(middlewares)],
        )
        return Agent(graph, calls)

    @staticmethod
    async def reply(agent: Agent) -> str:
        result = await agent.graph.ainvoke({"messages": [HumanMessage(h.QUESTION)]})
        return result["messages"][-1].text

    @staticmethod
    def calls(agent: Agent) -> h.Calls:
        return agent.calls


if __name__ == "__main__":
    h.main(LangChain)
