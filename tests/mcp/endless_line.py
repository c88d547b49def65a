"""A hostile MCP server for towerscope's tests, over stdio, written by hand (no SDK): it answers
`initialize` and `tools/list` (one tool, `flood`), and a call of `flood` with one message that
never ends: 200 MiB of text without a newline, then nothing, until it is ended. A client that
reads a line whole before parsing it fills its memory.

    python endless_line.py
"""

import json
import sys
import time


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
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "endless-line", "version": "0"},
        })
    elif method == "tools/list":
        answer(request_id, {"tools": [{"name": "flood", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        head = '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "' % json.dumps(request_id)
        chunk = "x" * (1 << 20)
        try:
            sys.stdout.write(head)
            for _ in range(200):
                sys.stdout.write(chunk)
            sys.stdout.flush()
            time.sleep(600)
        except (BrokenPipeError, OSError):
            sys.exit(0)
