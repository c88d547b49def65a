"""An A2A agent written with the official `a2a-sdk` server: what towerscope's client and
RemoteAgent are tested against, so that they are not only tested against our own server.

Usage: sdk_echo_server.py PORT_FILE

Binds 127.0.0.1 on an ephemeral port, writes the port to PORT_FILE, and serves until killed.
The agent answers `echo: <text>` (streamed as two artifact pieces), except:
- `ask` -> INPUT_REQUIRED ("Which city?"); the answer on the same task -> `echo city: <text>`;
- `fail` -> FAILED;
- a message with file parts -> `files: <what each is>` and the same files back;
- `picture` -> `files: image/png dot.png 70 bytes` and that PNG.
"""

import asyncio
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
import base64

from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState

# A 1x1 PNG.
DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED or (
            len(task.history) > 1 and text != "ask"
            and any(p.text == "Which city?" for m in task.history for p in m.parts)
        ):
            await updater.add_artifact([new_text_part(f"echo city: {text}")], name="answer")
            await updater.complete()
            return
        if text == "ask":
            await updater.requires_input(updater.new_agent_message([new_text_part("Which city?")]))
            return
        files = [p for p in context.message.parts if p.WhichOneof("content") in ("raw", "url")]
        if text == "picture":
            files = [Part(raw=DOT_PNG, media_type="image/png", filename="dot.png")]
        if files:
            said = "; ".join(
                f"{p.media_type} {p.filename or '-'} {len(p.raw)} bytes"
                if p.WhichOneof("content") == "raw"
                else f"{p.media_type} url {p.url}"
                for p in files
            )
            await updater.add_artifact([new_text_part(f"files: {said}"), *files], name="answer")
            await updater.complete()
            return
        if text == "fail":
            await updater.failed(updater.new_agent_message([new_text_part("failed on purpose")]))
            return
        answer = f"echo: {text}"
        half = len(answer) // 2
        await updater.add_artifact([new_text_part(answer[:half])], artifact_id="a1", name="answer")
        await updater.add_artifact([new_text_part(answer[half:])], artifact_id="a1", append=True, last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def main(port_file):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    card = AgentCard(
        name="sdk-echo",
        description="Echoes what it is told (a2a-sdk).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes.", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    import os

    os.replace(port_file + ".tmp", port_file)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main(sys.argv[1])
