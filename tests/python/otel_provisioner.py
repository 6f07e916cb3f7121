"""Reference peer for the cross-language trace tests: provisioner.py's low-level server with the
OpenTelemetry SDK recording the spans of mcp 2.3.0's default `OpenTelemetryMiddleware`.

* stdio (default): serves until stdin ends, then writes `{"spans": [...]}` to `--spans-out FILE`
  (the client's close is the deterministic end).
* `--http PORT`: also answers `GET /otel/spans` with `{"spans": [...]}` (the spans finished so
  far; a server span ends before its response is written, so after a reply its span is there).

Run: python otel_provisioner.py --spans-out FILE
     python otel_provisioner.py --http 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio  # noqa: E402

from _otel_spans import finished_spans, record_spans, write_json  # noqa: E402
from _peer_common import parse_args, serve_asgi  # noqa: E402
from provisioner import build_server  # noqa: E402


def main() -> None:
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--spans-out", help="stdio: where to write the spans when stdin ends")
    known, rest = own.parse_known_args()
    args = parse_args("Provisioner with in-memory OpenTelemetry spans", rest)
    record_spans()
    server = build_server()
    if args.http is None:
        if not known.spans_out:
            sys.exit("otel_provisioner: stdio needs --spans-out FILE")
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
        write_json(known.spans_out, {"spans": finished_spans()})
        return
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def spans(_request: Request) -> JSONResponse:
        return JSONResponse({"spans": finished_spans()})

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    app.router.routes.append(Route("/otel/spans", spans, methods=["GET"]))
    serve_asgi(app, args.http)


if __name__ == "__main__":
    main()
