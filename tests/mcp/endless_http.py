"""A hostile streamable-HTTP MCP server for towerscope's tests, written by hand on the standard
library (no SDK), on loopback: it answers `initialize` and `tools/list` with JSON, and a call of

- `flood_json` with a JSON answer that never ends (200 MiB of text, then nothing);
- `flood_sse` with an event stream whose one event never ends;
- `answer_then_flood` with an event stream: the call's whole answer, then an endless event;
- `echo` with an event stream holding the answer, as the Python SDK sends it.

A client that reads an answer or an event whole before parsing it fills its memory.

    python endless_http.py PORT      # 0: any free port; prints "PORT <n>" once listening
"""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = b"x" * (1 << 20)
TOOLS = ["flood_json", "flood_sse", "answer_then_flood", "echo"]


def answer(request_id, result):
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def text_result(request_id, text):
    return answer(request_id, {"content": [{"type": "text", "text": text}], "isError": False})


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: a body without a length runs until the connection closes.
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(405)
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.end_headers()

    def send(self, content_type, body):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Mcp-Session-Id", "endless")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def flood(self, content_type, head):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Mcp-Session-Id", "endless")
        self.end_headers()
        try:
            self.wfile.write(head)
            for _ in range(200):
                self.wfile.write(CHUNK)
            self.wfile.flush()
            time.sleep(600)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length))
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            self.send_response(202)
            self.end_headers()
            return
        if method == "initialize":
            self.send("application/json", answer(request_id, {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "endless-http", "version": "0"},
            }))
        elif method == "tools/list":
            tools = [{"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]
            self.send("application/json", answer(request_id, {"tools": tools}))
        elif method == "tools/call":
            name = message["params"]["name"]
            prefix = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
            head = (prefix + ', "result": {"content": [{"type": "text", "text": "').encode()
            if name == "flood_json":
                self.flood("application/json", head)
            elif name == "flood_sse":
                self.flood("text/event-stream", b"data: " + head)
            elif name == "answer_then_flood":
                whole = b"data: " + text_result(request_id, "the answer") + b"\n\n"
                self.flood("text/event-stream", whole + b"data: ")
            else:
                self.send("text/event-stream", b"event: message\ndata: " + text_result(request_id, "echoed") + b"\n\n")
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32601, "message": "no such method"}}).encode()
            self.send("application/json", body)


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
