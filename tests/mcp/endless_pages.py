"""A hostile MCP server for towerscope's tests, over stdio, written by hand (no SDK): it answers
`initialize`, and every `tools/list`, `prompts/list`, `resources/list` and
`resources/templates/list` page with one item and a cursor to another page, for ever. A client
that follows cursors without a limit never finishes listing.

    python endless_pages.py
"""

import json
import sys

LISTS = {
    "tools/list": ("tools", lambda n: {"name": f"t{n}", "inputSchema": {"type": "object"}}),
    "prompts/list": ("prompts", lambda n: {"name": f"p{n}"}),
    "resources/list": ("resources", lambda n: {"uri": f"towerscope://r/{n}", "name": f"r{n}"}),
    "resources/templates/list": (
        "resourceTemplates",
        lambda n: {"uriTemplate": f"towerscope://t{n}/{{x}}", "name": f"t{n}"},
    ),
}


def answer(request_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(request_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "endless-pages", "version": "0"},
        })
    elif method in LISTS:
        key, item = LISTS[method]
        cursor = (message.get("params") or {}).get("cursor") or "0"
        n = int(cursor)
        answer(request_id, {key: [item(n)], "nextCursor": str(n + 1)})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                     "error": {"code": -32601, "message": "method not found"}}) + "\n")
        sys.stdout.flush()
