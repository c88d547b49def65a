"""The MCP server of towerscope's MCP tests (Python `mcp` package, FastMCP).

    python server.py stdio                 speak over stdin/stdout
    python server.py http HOST PORT        streamable HTTP at http://HOST:PORT/mcp

Tools: `echo` (read-only), `add`, `count` (reports progress), `fail` (an error result), and
`strict`, whose input schema uses `unevaluatedProperties` (a keyword towerscope's validator does
not enforce). With MCP_PID_FILE set, the server writes its PID there.
"""

import asyncio
import os
import sys

from mcp.server.fastmcp import Context, FastMCP
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

if __name__ == "__main__":
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
    if sys.argv[1:2] == ["http"]:
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")
