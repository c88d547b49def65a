"""The MCP server of towerscope's MCP tests (Python `mcp` package, FastMCP).

    python server.py stdio                 speak over stdin/stdout
    python server.py http HOST PORT        streamable HTTP at http://HOST:PORT/mcp
    python server.py https HOST PORT CERT KEY BEARER
                                           the same over TLS (uvicorn's ssl options), answering
                                           401 to a request without `Authorization: Bearer BEARER`

Tools: `echo` (read-only), `add`, `count` (reports progress), `fail` (an error result), and
`strict`, whose input schema uses `unevaluatedProperties` (a keyword towerscope's validator does
not enforce). Over HTTP, `headers` returns the request's `authorization` and `x-towerscope-*`
headers as JSON (so a test sees what reached the server). Resources: `towerscope://greeting`
(text), `towerscope://pixel` (binary), the template `towerscope://notes/{name}`. Prompts:
`review` (arguments `code`, required, and `language`) and `plain` (no arguments). With
MCP_PID_FILE set, the server writes its PID there.
"""

import asyncio
import json
import os
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.prompts.base import AssistantMessage, UserMessage
from mcp.types import ToolAnnotations

host = sys.argv[2] if len(sys.argv) > 3 else "127.0.0.1"
port = int(sys.argv[3]) if len(sys.argv) > 3 else 8000
server = FastMCP("towerscope-test", instructions="Test tools of towerscope.", host=host, port=port)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting progress."""
    for i in range(1, n + 1):
        await ctx.report_progress(progress=i, total=n, message=f"step {i}")
        await asyncio.sleep(0.01)
    return f"counted to {n}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
def strict(x: int) -> str:
    """A tool with a schema keyword the client may not enforce."""
    return str(x)


server._tool_manager._tools["strict"].parameters["unevaluatedProperties"] = False


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def headers(ctx: Context) -> str:
    """The request's authorization and x-towerscope-* headers, as JSON."""
    request = ctx.request_context.request
    seen = {}
    if request is not None:
        for k, v in request.headers.items():
            if k == "authorization" or k.startswith("x-towerscope-"):
                seen[k] = v
    return json.dumps(seen, sort_keys=True)


@server.resource("towerscope://greeting", name="greeting", description="A greeting.", mime_type="text/plain")
def greeting() -> str:
    return "Hello from the resource."


@server.resource("towerscope://pixel", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    return b"\x89PNG\r\n\x1a\n"


@server.resource("towerscope://notes/{name}", name="note", description="A note by name.")
def note(name: str) -> str:
    return f"The note called {name}."


@server.prompt(description="Ask for a code review.")
def review(code: str, language: str = "unknown") -> list:
    return [
        UserMessage(f"Review this {language} code:\n{code}"),
        AssistantMessage("I will look at it."),
    ]


@server.prompt()
def plain() -> str:
    """A prompt without arguments."""
    return "Say hello."


def require_bearer(app, token):
    """An ASGI wrapper answering 401 to HTTP requests without the bearer token."""
    expected = f"Bearer {token}".encode()

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
            return
        await app(scope, receive, send)

    return wrapped


if __name__ == "__main__":
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
    if sys.argv[1:2] == ["http"]:
        server.run(transport="streamable-http")
    elif sys.argv[1:2] == ["https"]:
        import uvicorn

        cert, key, token = sys.argv[4], sys.argv[5], sys.argv[6]
        app = require_bearer(server.streamable_http_app(), token)
        uvicorn.run(app, host=host, port=port, ssl_certfile=cert, ssl_keyfile=key, log_level="warning")
    else:
        server.run(transport="stdio")
