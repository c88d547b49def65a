"""Drives a towerscope A2A server with the official `a2a-sdk` client (JSON-RPC, its default).

Usage: sdk_client.py BASE_URL

Prints one line per observation, `KEY value`, for tests/a2a_python.rs to check. The agent
behind the server picks its behaviour from the context id's prefix (see tests/support/mod.rs):
`chat-*` answers, `confirm-*` asks to confirm a tool call, `slow-*` takes a minute.
"""

import asyncio
import sys
import uuid

from a2a.client import ClientConfig, ClientFactory
from a2a.utils.errors import A2AError
from a2a.helpers.proto_helpers import new_text_message
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)


def state(s):
    return TaskState.Name(s)


def message(text, context_id, task_id=None):
    return new_text_message(text, context_id=context_id, task_id=task_id, role=Role.ROLE_USER)


async def collect(client, msg):
    """Sends a message and returns every StreamResponse the client yields."""
    return [r async for r in client.send_message(SendMessageRequest(message=msg))]


def out(key, value):
    print(f"{key} {value}", flush=True)


async def main(base):
    factory = ClientFactory(ClientConfig(streaming=False))
    client = await factory.create_from_url(base)
    card = client._card  # noqa: SLF001 - the resolved card, as the client uses it
    out("CARD_NAME", card.name)
    out("CARD_STREAMING", card.capabilities.streaming)
    # The card as a 0.3 client reads it: the SDK's own 0.3 model (skills need their tags).
    from a2a.compat.v0_3.types import AgentCard as AgentCard03
    import httpx

    try:
        AgentCard03.model_validate(httpx.get(base + "/.well-known/agent-card.json").json())
        out("CARD_0_3", "valid")
    except Exception as e:  # noqa: BLE001 - what the model refused is the observation
        out("CARD_0_3", " | ".join(str(e).splitlines()[:2]))

    # 1. SendMessage, blocking: the completed task with the answer as an artifact.
    chat = "chat-" + uuid.uuid4().hex
    [resp] = await collect(client, message("Hello?", chat))
    task = resp.task
    out("SEND_STATE", state(task.status.state))
    out("SEND_CONTEXT_KEPT", task.context_id == chat)
    out("SEND_ANSWER", "".join(p.text for a in task.artifacts for p in a.parts))
    got = await client.get_task(GetTaskRequest(id=task.id))
    out("GET_STATE", state(got.status.state))
    out("GET_HISTORY_ROLES", ",".join(Role.Name(m.role) for m in got.history))
    # A message to the task that ended, and a subscription to it: the spec's
    # UnsupportedOperationError, as the SDK's own server answers.
    try:
        await collect(client, message("More?", chat, task_id=task.id))
        out("SEND_TO_ENDED", "accepted")
    except A2AError as e:
        out("SEND_TO_ENDED", type(e).__name__)
    await client.close()

    # 2. SendStreamingMessage: the task, WORKING, the answer in pieces, COMPLETED.
    streaming = await ClientFactory(ClientConfig(streaming=True)).create_from_url(base)
    try:
        kinds = [e.WhichOneof("payload") async for e in streaming.subscribe(SubscribeToTaskRequest(id=task.id))]
        out("SUBSCRIBE_ENDED", "accepted:" + ",".join(kinds))
    except A2AError as e:
        out("SUBSCRIBE_ENDED", type(e).__name__)
    kinds, pieces, states = [], [], []
    view = None  # the task as the SDK's own rule assembles it from the pieces
    for r in await collect(streaming, message("Hello again?", chat)):
        kind = r.WhichOneof("payload")
        kinds.append(kind)
        if kind == "task":
            view = Task()
            view.CopyFrom(r.task)
        if kind == "artifact_update" and not r.artifact_update.last_chunk:
            pieces.extend(p.text for p in r.artifact_update.artifact.parts)
            # Refuses a piece that appends to an artifact it has not seen.
            append_artifact_to_task(view, r.artifact_update)
        if kind == "status_update":
            states.append(state(r.status_update.status.state))
    out("STREAM_FIRST", kinds[0])
    out("STREAM_STATES", ",".join(states))
    out("STREAM_PIECES", len(pieces))
    out("STREAM_TEXT", "".join(pieces))
    out("STREAM_ASSEMBLED", "".join(p.text for a in view.artifacts for p in a.parts))

    # 3. A tool call waiting for confirmation: INPUT_REQUIRED, answered on the same task.
    confirm = "confirm-" + uuid.uuid4().hex
    updates = await collect(streaming, message("Delete /tmp/a", confirm))
    last = updates[-1].status_update
    out("CONFIRM_STATE", state(last.status.state))
    out("CONFIRM_QUESTION", last.status.message.parts[0].text)
    task_id = last.task_id
    updates = await collect(streaming, message("yes", confirm, task_id))
    final = [u.status_update for u in updates if u.WhichOneof("payload") == "status_update"][-1]
    out("CONFIRM_AFTER", state(final.status.state))
    out("CONFIRM_SAME_TASK", final.task_id == task_id)
    out("CONFIRM_ANSWER", final.status.message.parts[0].text)

    # 4. Cancel a task that is working: CANCELED, and a second cancel is refused.
    slow = "slow-" + uuid.uuid4().hex
    req = SendMessageRequest(message=message("Take your time", slow))
    req.configuration.return_immediately = True
    polling = await ClientFactory(ClientConfig(streaming=False)).create_from_url(base)
    [resp] = [r async for r in polling.send_message(req)]
    out("SLOW_STATE", state(resp.task.status.state))
    await asyncio.sleep(0.2)
    canceled = await polling.cancel_task(CancelTaskRequest(id=resp.task.id))
    out("CANCEL_STATE", state(canceled.status.state))
    try:
        await polling.cancel_task(CancelTaskRequest(id=resp.task.id))
        out("CANCEL_AGAIN", "accepted")
    except A2AError as e:
        out("CANCEL_AGAIN", type(e).__name__)

    # 5. An unknown task: the SDK's typed error.
    try:
        await polling.get_task(GetTaskRequest(id="no-such-task"))
        out("UNKNOWN_TASK", "found")
    except A2AError as e:
        out("UNKNOWN_TASK", type(e).__name__)

    # 6. Protocol 0.3 on the same endpoint: the SDK's compatibility transport (message/send,
    #    message/stream, tasks/get, tasks/cancel), chosen by a card that says 0.3.
    legacy_card = AgentCard()
    legacy_card.CopyFrom(card)
    del legacy_card.supported_interfaces[:]
    legacy_card.supported_interfaces.append(
        AgentInterface(url=card.supported_interfaces[0].url, protocol_binding="JSONRPC", protocol_version="0.3")
    )
    legacy = ClientFactory(ClientConfig(streaming=True)).create(legacy_card)
    out("LEGACY_TRANSPORT", type(legacy._transport).__name__)  # noqa: SLF001
    chat03 = "chat-" + uuid.uuid4().hex
    states, pieces = [], []
    for r in await collect(legacy, message("Hello 0.3?", chat03)):
        kind = r.WhichOneof("payload")
        if kind == "status_update":
            states.append(state(r.status_update.status.state))
        if kind == "artifact_update" and not r.artifact_update.last_chunk:
            pieces.extend(p.text for p in r.artifact_update.artifact.parts)
    out("LEGACY_STREAM_STATES", ",".join(states))
    out("LEGACY_STREAM_TEXT", "".join(pieces))
    legacy_blocking = ClientFactory(ClientConfig(streaming=False)).create(legacy_card)
    [resp] = await collect(legacy_blocking, message("Again?", chat03))
    out("LEGACY_SEND_STATE", state(resp.task.status.state))
    out("LEGACY_SEND_ANSWER", "".join(p.text for a in resp.task.artifacts for p in a.parts))
    got = await legacy_blocking.get_task(GetTaskRequest(id=resp.task.id))
    out("LEGACY_GET_ROLES", ",".join(Role.Name(m.role) for m in got.history))
    slow03 = "slow-" + uuid.uuid4().hex
    req = SendMessageRequest(message=message("Take your time", slow03))
    req.configuration.return_immediately = True
    [resp] = [r async for r in legacy_blocking.send_message(req)]
    canceled = await legacy_blocking.cancel_task(CancelTaskRequest(id=resp.task.id))
    out("LEGACY_CANCEL_STATE", state(canceled.status.state))
    # 7. Files: raw bytes and a URL in, beside text; the agent says what it got, and answers
    #    with a PNG, which comes back as a raw part. Over 1.0, then over 0.3.
    def files_message(context_id):
        return Message(
            message_id=uuid.uuid4().hex,
            context_id=context_id,
            role=Role.ROLE_USER,
            parts=[
                Part(text="What are these?"),
                Part(raw=bytes(range(256)) * 3, media_type="application/pdf", filename="notes.pdf"),
                Part(url="https://example.com/cat.jpg", media_type="image/jpeg"),
            ],
        )

    def files_answer(task):
        text = "".join(p.text for a in task.artifacts for p in a.parts if p.WhichOneof("content") == "text")
        files = [
            f"{p.media_type} {len(p.raw)} bytes {p.raw[:4]!r}"
            for a in task.artifacts
            for p in a.parts
            if p.WhichOneof("content") == "raw"
        ]
        return text, ",".join(files)

    blocking = await ClientFactory(ClientConfig(streaming=False)).create_from_url(base)
    [resp] = await collect(blocking, files_message("files-" + uuid.uuid4().hex))
    heard, files = files_answer(resp.task)
    out("FILES_STATE", state(resp.task.status.state))
    out("FILES_HEARD", heard)
    out("FILES_ANSWER", files)
    out("FILES_STATUS_PARTS", ",".join(p.WhichOneof("content") for p in resp.task.status.message.parts))
    [resp] = await collect(legacy_blocking, files_message("files-" + uuid.uuid4().hex))
    heard, files = files_answer(resp.task)
    out("LEGACY_FILES_HEARD", heard)
    out("LEGACY_FILES_ANSWER", files)
    await blocking.close()

    await legacy.close()
    await legacy_blocking.close()

    await streaming.close()
    await polling.close()
    out("DONE", "ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
