"""Reads the card of a towerscope A2A server behind a bearer token with the official `a2a-sdk`
(its 1.0 parser and its 0.3 model), and sends it a message with and without the token.

Usage: sdk_bearer.py BASE_URL TOKEN

Prints one line per observation, `KEY value`, for tests/a2a_python.rs to check.
"""

import asyncio
import copy
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3.types import AgentCard as AgentCard03
from a2a.helpers.proto_helpers import new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest, TaskState


def out(key, value):
    print(f"{key} {value}", flush=True)


async def send(base, headers):
    """Sends one message with `headers` on every request; the task's state or the error's name."""
    async with httpx.AsyncClient(headers=headers) as http:
        client = await ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create_from_url(base)
        msg = new_text_message("Hello?", context_id="chat-" + uuid.uuid4().hex, role=Role.ROLE_USER)
        try:
            [resp] = [r async for r in client.send_message(SendMessageRequest(message=msg))]
            return TaskState.Name(resp.task.status.state)
        except Exception as e:  # noqa: BLE001 - what the client raised is the observation
            return type(e).__name__


async def main(base, token):
    raw = httpx.get(base + "/.well-known/agent-card.json").json()
    card = parse_agent_card(copy.deepcopy(raw))  # it rewrites what it is given
    scheme = card.security_schemes["bearer"]
    out("CARD_SCHEME", f"{scheme.WhichOneof('scheme')} {scheme.http_auth_security_scheme.scheme}")
    out("CARD_REQUIREMENTS", ",".join(name for r in card.security_requirements for name in r.schemes))
    legacy = AgentCard03.model_validate(raw)
    root = legacy.security_schemes["bearer"].root
    out("CARD_0_3_SCHEME", f"{type(root).__name__} {root.scheme}")
    out("CARD_0_3_SECURITY", ",".join(name for r in legacy.security for name in r))
    out("SEND_WITH_TOKEN", await send(base, {"Authorization": f"Bearer {token}"}))
    out("SEND_WITHOUT_TOKEN", await send(base, {}))
    out("DONE", "ok")


asyncio.run(main(sys.argv[1], sys.argv[2]))
