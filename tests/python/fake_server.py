"""Reference peer: SDK-free fake 2026-07-28 server that answers hand-crafted results, to probe how
strict a CLIENT is (docs/python-sdk-reference.md §9 and §11).

It answers `server/discover` correctly ({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":
{"name":"FakeServer","version":"0.0.1"}}}), `tools/list` (all variant tools below, with ttlMs/cacheScope
unless the list-no-cache variant is active), `initialize` (2025-11-25, for legacy-mode clients) and
`ping`; it does not validate the request envelope. Every other method -> -32601.

Variants: a tool of the same name, or `--variant NAME` (then EVERY tools/call behaves as NAME).
Strict (the Python mcp 2.3.0 client rejects these with pydantic.ValidationError):
* `no-result-type`     complete tools/call result WITHOUT resultType: {"content":[{"type":"text","text":"no-result-type"}]}
* `list-no-cache`      the call answers normally, but from then on (and always with --variant) tools/list
                       results lack ttlMs and cacheScope (the Python client lists tools itself after a call)
* `irr-empty`          {"resultType":"input_required"} with neither inputRequests nor requestState
* `irr-unknown-method` an IRR whose nested input request has method "bogus/method"
Tolerated (a conforming client completes them):
* `irr-extra`     IRR with unknown extra fields at top level and inside the nested params
                  ("x-unknown", "x-extra"), requestState "extra-1"; the retry gets a complete result that
                  also carries an unknown field; text "irr-extra: answered <json of inputResponses.q>, requestState=extra-1"
* `irr-no-state`  IRR with inputRequests only (no requestState); the retry's text reports
                  "irr-no-state: requestState absent" (or "present: <value>" — a client bug)
* `irr-url`       URL-mode elicitation {"mode":"url","message":"Open the consent page to continue",
                  "url":"https://example.com/consent"}; the retry -> "irr-url: action=<action>"
* `echo {text}`   returns the text (a plain control)
* `asks-legacy`   fails as FastMCP 4.1.6's `ctx.elicit` does on a 2026-07-28 connection (on every
                  connection here): isError, "elicitation via server-initiated requests is
                  unavailable on 2026-07-28 connections."
All IRRs use the input-request key "q"; elicitation schema {ok: boolean} required.

Resources (`resources/list`, `resources/read`), to probe how a client shows contents:
* `fake://page.html`  215 KiB of text/html (a page too long to print by default)
* `fake://pixel.png`  a 70-byte PNG (a blob)
* `fake://note.txt`   "a short note" (text/plain)

Transports: stdio (default, newline-delimited JSON-RPC) or `--http PORT` (stateless Streamable HTTP
on 127.0.0.1:PORT/mcp: one POST per request, JSON responses, 202 for notifications, GET/DELETE 405,
non-localhost Host -> 421).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVER_INFO = {"name": "FakeServer", "version": "0.0.1"}
META = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
STRICT = ("no-result-type", "list-no-cache", "irr-empty", "irr-unknown-method")
TOLERATED = ("irr-extra", "irr-no-state", "irr-url")
OK_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _tool(name: str, description: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props or {}}
    if props:
        schema["required"] = list(props)
    return {"name": name, "description": description, "inputSchema": schema}


# 1 x 1 transparent PNG.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
PAGE = "<!doctype html>\n<title>big</title>\n" + "<p>fake page line</p>\n" * 10_000
RESOURCES: dict[str, tuple[str, dict[str, str]]] = {
    "fake://page.html": ("text/html", {"text": PAGE}),
    "fake://pixel.png": ("image/png", {"blob": PIXEL}),
    "fake://note.txt": ("text/plain", {"text": "a short note"}),
}

TOOLS = [_tool(v, f"fake-server variant {v}") for v in STRICT + TOLERATED] + [
    _tool("echo", "Return the given text unchanged.", {"text": {"type": "string"}}),
    _tool("asks-legacy", "Fails as a server that can only ask over the back-channel."),
]


class Fake:
    def __init__(self, variant: str | None) -> None:
        self.variant = variant
        self.lists_without_cache = variant == "list-no-cache"
        self.lock = threading.Lock()

    def handle(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        method, msg_id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if "id" not in msg:
            return None  # notification (or a stray response): ignored
        if method == "server/discover":
            return self._ok(
                msg_id,
                {
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}, "resources": {}},
                    "resultType": "complete",
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": META,
                },
            )
        if method == "initialize":
            return self._ok(
                msg_id,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "resources": {}},
                    "serverInfo": SERVER_INFO,
                },
            )
        if method == "ping":
            return self._ok(msg_id, {})
        if method == "tools/list":
            listed: dict[str, Any] = {"tools": TOOLS, "resultType": "complete", "_meta": META}
            with self.lock:
                if not self.lists_without_cache:
                    listed.update(ttlMs=0, cacheScope="private")
            return self._ok(msg_id, listed)
        if method == "tools/call":
            return self._ok(msg_id, self._call(params))
        if method == "resources/list":
            listed = [{"uri": uri, "name": uri, "mimeType": mime} for uri, (mime, _) in RESOURCES.items()]
            return self._ok(msg_id, {"resources": listed, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        if method == "resources/read" and params.get("uri") in RESOURCES:
            uri = params["uri"]
            mime, body = RESOURCES[uri]
            entry = {"uri": uri, "mimeType": mime, **body}
            return self._ok(msg_id, {"contents": [entry], "resultType": "complete"})
        return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "Method not found", "data": method}}

    @staticmethod
    def _ok(msg_id: Any, value: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": msg_id, "result": value}

    @staticmethod
    def _text(text: str, **extra: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": text}], "isError": False, "resultType": "complete", **extra}

    def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        args = params.get("arguments") or {}
        responses = params.get("inputResponses")
        state = params.get("requestState")
        variant = self.variant or name
        if variant == "echo" or (self.variant is None and name == "echo"):
            return self._text(str(args.get("text", "")))
        if variant == "asks-legacy":
            message = "elicitation via server-initiated requests is unavailable on 2026-07-28 connections."
            return {"content": [{"type": "text", "text": message}], "isError": True, "resultType": "complete"}
        if variant == "no-result-type":
            return {"content": [{"type": "text", "text": "no-result-type"}]}
        if variant == "list-no-cache":
            with self.lock:
                self.lists_without_cache = True
            return self._text("list-no-cache: tools/list now omits ttlMs and cacheScope")
        if variant == "irr-empty":
            return {"resultType": "input_required"}
        if variant == "irr-unknown-method":
            return {
                "resultType": "input_required",
                "inputRequests": {"q": {"method": "bogus/method", "params": {}}},
                "requestState": "unknown-1",
            }
        answered = isinstance(responses, dict) and "q" in responses
        if variant == "irr-extra":
            if answered:
                return self._text(
                    f"irr-extra: answered {json.dumps(responses['q'], sort_keys=True)}, requestState={state}",
                    **{"x-extra": True},
                )
            return {
                "resultType": "input_required",
                "inputRequests": {
                    "q": {
                        "method": "elicitation/create",
                        "params": {"mode": "form", "message": "Extra fields?", "requestedSchema": OK_SCHEMA, "x-extra": 1},
                        "x-extra": "nested",
                    }
                },
                "requestState": "extra-1",
                "x-unknown": {"a": 1},
                "_meta": META,
            }
        if variant == "irr-no-state":
            if answered:
                seen = "absent" if "requestState" not in params else f"present: {state!r}"
                return self._text(f"irr-no-state: requestState {seen}")
            return {
                "resultType": "input_required",
                "inputRequests": {
                    "q": {"method": "elicitation/create", "params": {"mode": "form", "message": "No state?", "requestedSchema": OK_SCHEMA}}
                },
            }
        if variant == "irr-url":
            if answered:
                action = responses["q"].get("action") if isinstance(responses["q"], dict) else None
                return self._text(f"irr-url: action={action}")
            return {
                "resultType": "input_required",
                "inputRequests": {
                    "q": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "url",
                            "message": "Open the consent page to continue",
                            "url": "https://example.com/consent",
                        },
                    }
                },
                "requestState": "url-1",
            }
        return {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True, "resultType": "complete"}


def serve_stdio(fake: Fake) -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            reply: dict[str, Any] | None = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        else:
            reply = fake.handle(msg) if isinstance(msg, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply, separators=(",", ":")) + "\n")
            sys.stdout.flush()


def serve_http(fake: Fake, port: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            print("fake_server: " + format % args, file=sys.stderr, flush=True)

        def _reply(self, status: int, body: dict[str, Any] | None = None, text: str = "") -> None:
            data = json.dumps(body).encode() if body is not None else text.encode()
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self._reply(405)

        def do_DELETE(self) -> None:  # noqa: N802
            self._reply(405)

        def do_POST(self) -> None:  # noqa: N802
            host = self.headers.get("Host") or ""
            name = host.split("]")[0] + "]" if host.startswith("[") else host.split(":")[0]
            if name not in ("localhost", "127.0.0.1", "[::1]"):
                self._reply(421, text="Invalid Host header")
                return
            if self.path.split("?")[0] != "/mcp":
                self._reply(404, text="Not Found")
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                msg = json.loads(self.rfile.read(length) or b"null")
            except json.JSONDecodeError:
                self._reply(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
                return
            reply = fake.handle(msg) if isinstance(msg, dict) else None
            if reply is None:
                self._reply(202)
            elif "error" in reply and reply["error"]["code"] == -32601:
                self._reply(404, reply)
            else:
                self._reply(200, reply)

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    host, bound = httpd.server_address[:2]
    print(f"fake_server: listening on http://{host}:{bound}/mcp", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description="SDK-free fake 2026-07-28 server with hand-crafted results")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve stateless HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--variant", choices=STRICT + TOLERATED + ("echo",), help="apply this variant to every call")
    args = parser.parse_args()
    fake = Fake(args.variant)
    if args.http is None:
        serve_stdio(fake)
    else:
        serve_http(fake, args.http)


if __name__ == "__main__":
    main()
