"""A hostile streamable-HTTP MCP server for towerscope's tests, written by hand on the standard
library (no SDK), on loopback: it answers `initialize` and `tools/list` with JSON (or, given
`flood_init`, `initialize` with an endless event), its own event stream (`GET`) with an event
that never ends, and a call of

- `flood_json` with a JSON answer that never ends (200 MiB of text, then nothing);
- `flood_len` with the same, announcing its 200 MiB in `Content-Length`;
- `flood_sse` with an event stream whose one event never ends;
- `answer_then_flood` with an event stream: the call's whole answer, then an endless event;
- `err500` with a 500 whose HTML body never ends;
- `slow_json` with a JSON answer that comes a byte every half second, forever;
- `late` with a JSON answer whose status and headers come after six seconds;
- `not_the_answer` with a JSON notification instead of the call's answer;
- `other_answer` with a JSON answer to another request;
- `server_error` with a 500 carrying a JSON-RPC error whose id is not the call's (the Python
  SDK's `server-error`);
- `gets` with the number of `GET`s it was sent so far;
- `echo` with an event stream holding the answer, as the Python SDK sends it.

It answers a cancel (`notifications/cancelled`) only after 30 seconds.

A client that reads an answer or an event whole before parsing it fills its memory. It exits
when its stdin closes (its test ended, however), and after five minutes in any case.

    python endless_http.py PORT [flood_init]   # PORT 0: any free port; prints "PORT <n>"
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = b"x" * (1 << 20)
TOOLS = ["flood_json", "flood_len", "flood_sse", "answer_then_flood", "err500", "slow_json", "late",
         "not_the_answer", "other_answer", "server_error", "gets", "echo"]
FLOOD_INIT = sys.argv[2:] == ["flood_init"]
GETS = [0]


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
        GETS[0] += 1
        self.flood("text/event-stream", b"data: ")

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

    def flood(self, content_type, head, status=200, length=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Mcp-Session-Id", "endless")
        if length is not None:
            self.send_header("Content-Length", str(length))
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
            if method == "notifications/cancelled":
                time.sleep(30)
            self.send_response(202)
            self.end_headers()
            return
        if method == "initialize" and FLOOD_INIT:
            self.flood("text/event-stream", b"data: ")
        elif method == "initialize":
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
            elif name == "flood_len":
                self.flood("application/json", head, length=200 << 20)
            elif name == "err500":
                self.flood("text/html", b"<html>" + head, status=500)
            elif name == "slow_json":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                try:
                    for byte in head + b"x" * 10000:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.5)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass
            elif name == "late":
                time.sleep(6)
                self.send("application/json", text_result(request_id, "late"))
            elif name == "not_the_answer":
                self.send("application/json", json.dumps({
                    "jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "not the answer"}}).encode())
            elif name == "other_answer":
                self.send("application/json", text_result(123456, "for another request"))
            elif name == "server_error":
                body = json.dumps({"jsonrpc": "2.0", "id": "server-error",
                                   "error": {"code": -32603, "message": "the server broke"}}).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif name == "gets":
                self.send("text/event-stream", b"data: " + text_result(request_id, str(GETS[0])) + b"\n\n")
            elif name == "answer_then_flood":
                whole = b"data: " + text_result(request_id, "the answer") + b"\n\n"
                self.flood("text/event-stream", whole + b"data: ")
            else:
                self.send("text/event-stream", b"event: message\ndata: " + text_result(request_id, "echoed") + b"\n\n")
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32601, "message": "no such method"}}).encode()
            self.send("application/json", body)


def exit_when_stdin_closes():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
threading.Timer(300, lambda: os._exit(0)).start()

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
