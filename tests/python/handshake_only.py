"""Reference peer: a server that speaks ONLY the handshake era (initialize; 2025-11-25 and older).

SDK-free (Python standard library only), because mcp 2.3.0's Server always serves both eras.
It answers `server/discover` with JSON-RPC -32601 "Method not found" (data "server/discover"),
which is what a pre-2026 server does, so a client in auto mode must fall back to `initialize`.

Methods: initialize (negotiates the requested version if it is 2024-11-05 / 2025-03-26 /
2025-06-18 / 2025-11-25, else 2025-11-25), notifications/initialized, ping, tools/list,
tools/call, logging/setLevel ({}); anything else -> -32601.
Server info: {"name": "HandshakeOnly", "version": "0.0.1"}; capabilities {"tools": {}}.

Tools
* `provision {name}`: asks through the back-channel: the server sends a JSON-RPC request
  `elicitation/create` {"mode":"form","message":"Which region should the database live in?",
  "requestedSchema":{"type":"object","properties":{"region":{"type":"string"}},"required":["region"]}}
  and, after the client's response, answers
  "Provisioned '<name>' in <region> (protocol <version>, via back-channel elicitation)."
  decline/cancel -> isError result "Provisioning '<name>' declined." / "... cancelled."; an error response from the
  client -> that JSON-RPC error becomes the tools/call error; a client without the elicitation
  capability -> isError result "Client did not declare the elicitation capability".
* `echo {text}`: returns the text.
* `wait`: answers only once the client cancels it (`notifications/cancelled`; then with an
  isError result "cancelled", which the client has stopped waiting for) or after 120 s; over
  stdio it is never answered.

Transports
* stdio (default): newline-delimited JSON-RPC.
* `--http PORT`: Streamable HTTP (2025-11-25 style) on 127.0.0.1:PORT at /mcp: `initialize` mints an
  `Mcp-Session-Id`; later requests need it (400 "Bad Request: Missing session ID" without, 404 for an
  unknown one); notifications and client responses -> 202; `tools/call provision` answers with a
  text/event-stream carrying the `elicitation/create` request, waits for the client to POST its
  response, then sends the result and closes the stream; other requests answer application/json;
  GET -> 405; DELETE ends the session. Every notification (`notification <method> <params>`),
  `tools/call wait` (`waiting <id>`) and DELETE (`DELETE <ended|unknown> session`) is logged to
  stderr, so that a test sees what a client sent (`crates/modelctx-cli/tests/timeouts.rs`). `server/discover` without a session is answered per
  `--discover-http`: `404` (default: HTTP 404 + -32601), `200` (HTTP 200 + -32601) or `400-session`
  (HTTP 400 + -32600 "Bad Request: Missing session ID", what real 2025-era SDK servers do).
  Host must be localhost/127.0.0.1/[::1] (else 421).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVER_INFO = {"name": "HandshakeOnly", "version": "0.0.1"}
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"
REGION_PARAMS = {
    "mode": "form",
    "message": "Which region should the database live in?",
    "requestedSchema": {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]},
}
TOOLS = [
    {
        "name": "provision",
        "description": "Provision a database; asks the region through a back-channel elicitation.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    {
        "name": "echo",
        "description": "Return the given text unchanged.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "wait",
        "description": "Answer only once cancelled (or after 120 s).",
        "inputSchema": {"type": "object"},
    },
]


def log(msg: str) -> None:
    print(f"handshake_only: {msg}", file=sys.stderr, flush=True)


def error(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": err}


def result(msg_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def text_result(text: str, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class Session:
    """Era state of one connection (stdio) or one Mcp-Session-Id (HTTP)."""

    def __init__(self) -> None:
        self.version = LATEST
        self.capabilities: dict[str, Any] = {}
        self.next_id = 1
        self.lock = threading.Lock()

    def new_request_id(self) -> int:
        with self.lock:
            rid = self.next_id
            self.next_id += 1
            return rid

    def handle_simple(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        """Requests that need no back-channel. Returns the response, or None for tools/call provision
        and wait."""
        method, msg_id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            requested = params.get("protocolVersion")
            self.version = requested if requested in HANDSHAKE_VERSIONS else LATEST
            self.capabilities = params.get("capabilities") or {}
            return result(
                msg_id, {"protocolVersion": self.version, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}
            )
        if method in ("ping", "logging/setLevel"):
            return result(msg_id, {})
        if method == "tools/list":
            return result(msg_id, {"tools": TOOLS})
        if method == "tools/call":
            name = params.get("name")
            args = params.get("arguments") or {}
            if name == "echo":
                return result(msg_id, text_result(str(args.get("text", ""))))
            if name == "wait":
                return None
            if name == "provision":
                if "elicitation" not in self.capabilities:
                    return result(msg_id, text_result("Client did not declare the elicitation capability", True))
                return None
            return error(msg_id, -32602, f"Unknown tool: {name}")
        return error(msg_id, -32601, "Method not found", method)

    def provision_outcome(self, call: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        name = str(((call.get("params") or {}).get("arguments") or {}).get("name", ""))
        if "error" in reply:
            err = reply["error"]
            return error(call.get("id"), err.get("code", -32603), err.get("message", "elicitation failed"), err.get("data"))
        answer = reply.get("result") or {}
        action = answer.get("action")
        if action != "accept":
            verb = {"decline": "declined", "cancel": "cancelled"}.get(str(action), str(action))
            return result(call.get("id"), text_result(f"Provisioning '{name}' {verb}.", True))
        region = (answer.get("content") or {}).get("region")
        return result(
            call.get("id"),
            text_result(f"Provisioned '{name}' in {region} (protocol {self.version}, via back-channel elicitation)."),
        )


# --------------------------------------------------------------------------------------------- stdio


def serve_stdio() -> None:
    session = Session()
    pending: dict[Any, dict[str, Any]] = {}  # our elicitation request id -> the tools/call it serves

    def send(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            send(error(None, -32700, "Parse error"))
            continue
        if not isinstance(msg, dict):
            send(error(None, -32600, "Invalid Request"))
            continue
        if "method" not in msg:  # a response to one of our back-channel requests
            call = pending.pop(msg.get("id"), None)
            if call is not None:
                send(session.provision_outcome(call, msg))
            continue
        if "id" not in msg:  # notification
            log(f"notification {msg.get('method')} {json.dumps(msg.get('params'))}")
            continue
        reply = session.handle_simple(msg)
        if reply is not None:
            send(reply)
            continue
        if (msg.get("params") or {}).get("name") == "wait":
            log(f"waiting {msg.get('id')}")
            continue
        rid = session.new_request_id()
        pending[rid] = msg
        send({"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": REGION_PARAMS})


# ---------------------------------------------------------------------------------------------- HTTP


class HttpState:
    def __init__(self, discover_mode: str) -> None:
        self.discover_mode = discover_mode
        self.sessions: dict[str, Session] = {}
        self.waiters: dict[tuple[str, Any], tuple[threading.Event, list[dict[str, Any]]]] = {}
        # (session, tools/call id) of a `wait` call -> set when the client cancels it.
        self.cancels: dict[tuple[str, Any], threading.Event] = {}
        self.lock = threading.Lock()


def make_handler(state: HttpState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            log(format % args)

        def _host_ok(self) -> bool:
            host = self.headers.get("Host") or ""
            name = host.split("]")[0] + "]" if host.startswith("[") else host.split(":")[0]
            return name in ("localhost", "127.0.0.1", "[::1]")

        def _send_json(self, status: int, body: Any, session_id: str | None = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            if session_id:
                self.send_header("Mcp-Session-Id", session_id)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _plain(self, status: int, text: str = "") -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            if text:
                self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self.send_response(405)
            self.send_header("Allow", "POST, DELETE")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:  # noqa: N802
            sid = self.headers.get("Mcp-Session-Id")
            with state.lock:
                found = state.sessions.pop(sid or "", None)
            log(f"DELETE {'ended' if found else 'unknown'} session")
            self._plain(200 if found else 404)

        def do_POST(self) -> None:  # noqa: N802
            if self.path.split("?")[0] != "/mcp":
                self._plain(404, "Not Found")
                return
            if not self._host_ok():
                self._plain(421, "Invalid Host header")
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                msg = json.loads(self.rfile.read(length) or b"null")
            except json.JSONDecodeError:
                self._send_json(400, error(None, -32700, "Parse error"))
                return
            if not isinstance(msg, dict):
                self._send_json(400, error(None, -32600, "Invalid Request"))
                return
            sid = self.headers.get("Mcp-Session-Id")
            if msg.get("method") == "initialize":
                session = Session()
                new_sid = uuid.uuid4().hex
                with state.lock:
                    state.sessions[new_sid] = session
                self._send_json(200, session.handle_simple(msg), new_sid)
                return
            with state.lock:
                session = state.sessions.get(sid or "")
            if session is None:
                if msg.get("method") == "server/discover" and state.discover_mode != "400-session":
                    status = 404 if state.discover_mode == "404" else 200
                    self._send_json(status, error(msg.get("id"), -32601, "Method not found", "server/discover"))
                elif sid:
                    self._send_json(404, error(None, -32001, "Session not found"))
                else:
                    self._send_json(400, error(None, -32600, "Bad Request: Missing session ID"))
                return
            if "method" not in msg:  # client response to our elicitation request
                with state.lock:
                    waiter = state.waiters.pop((sid, msg.get("id")), None)
                if waiter is not None:
                    waiter[1].append(msg)
                    waiter[0].set()
                self._plain(202)
                return
            if "id" not in msg:
                log(f"notification {msg.get('method')} {json.dumps(msg.get('params'))}")
                if msg.get("method") == "notifications/cancelled":
                    with state.lock:
                        cancelled = state.cancels.get((sid, (msg.get("params") or {}).get("requestId")))
                    if cancelled is not None:
                        cancelled.set()
                self._plain(202)
                return
            reply = session.handle_simple(msg)
            if reply is not None:
                self._send_json(200, reply, sid)
                return
            if (msg.get("params") or {}).get("name") == "wait":
                self._wait(sid, msg)
                return
            self._provision_over_sse(sid, session, msg)

        def _wait(self, sid: str, call: dict[str, Any]) -> None:
            cancelled = threading.Event()
            with state.lock:
                state.cancels[(sid, call.get("id"))] = cancelled
            log(f"waiting {call.get('id')}")
            outcome = "cancelled" if cancelled.wait(timeout=120) else "waited 120 s"
            with state.lock:
                state.cancels.pop((sid, call.get("id")), None)
            try:
                self._send_json(200, result(call.get("id"), text_result(outcome, True)), sid)
            except OSError:  # the client is gone
                pass

        def _provision_over_sse(self, sid: str, session: Session, call: dict[str, Any]) -> None:
            rid = session.new_request_id()
            event = threading.Event()
            box: list[dict[str, Any]] = []
            with state.lock:
                state.waiters[(sid, rid)] = (event, box)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Mcp-Session-Id", sid)
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            request = {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": REGION_PARAMS}
            self.wfile.write(f"event: message\ndata: {json.dumps(request)}\n\n".encode())
            self.wfile.flush()
            if not event.wait(timeout=120):
                with state.lock:
                    state.waiters.pop((sid, rid), None)
                outcome = error(call.get("id"), -32001, "Timed out waiting for the elicitation response")
            else:
                outcome = session.provision_outcome(call, box[0])
            self.wfile.write(f"event: message\ndata: {json.dumps(outcome)}\n\n".encode())
            self.wfile.flush()

    return Handler


def serve_http(port: int, discover_mode: str) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", port), make_handler(HttpState(discover_mode)))
    httpd.daemon_threads = True
    host, bound = httpd.server_address[:2]
    log(f"listening on http://{host}:{bound}/mcp")
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description="Handshake-era-only MCP server (SDK-free)")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument(
        "--discover-http",
        choices=("404", "200", "400-session"),
        default="404",
        help="how HTTP answers a session-less server/discover (default 404 + -32601)",
    )
    args = parser.parse_args()
    if args.http is None:
        serve_stdio()
    else:
        serve_http(args.http, args.discover_http)


if __name__ == "__main__":
    main()
