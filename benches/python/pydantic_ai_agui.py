"""Pydantic AI's AG-UI app on the scenario of benches/serve.rs: one agent whose model streams
"Hello!" (a FunctionModel, no network), served at POST /agui by uvicorn on loopback.

    python benches/python/pydantic_ai_agui.py PORT
"""

import sys

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route


async def hello(messages, info: AgentInfo):
    yield "Hello!"


agent = Agent(FunctionModel(stream_function=hello), name="assistant")


async def run(request: Request):
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/agui", run, methods=["POST"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
