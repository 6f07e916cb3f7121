"""Shared command-line handling for the Python reference peers (stdio by default, `--http PORT`).

Every peer serves either newline-delimited JSON-RPC on stdin/stdout (default) or Streamable
HTTP on 127.0.0.1:PORT at /mcp (`--http PORT`). Log output goes to stderr only; stdout belongs
to the protocol in stdio mode.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

import anyio


def parse_args(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve Streamable HTTP on 127.0.0.1:PORT at /mcp instead of stdio (0 = any free port)",
    )
    parser.add_argument("--log-level", default="WARNING", help="Python log level for stderr (default WARNING)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.WARNING),
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    return args


def serve_lowlevel(server: Any, args: argparse.Namespace) -> None:
    """Serve a low-level `mcp.server.Server` over stdio or Streamable HTTP."""
    if args.http is None:
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(main)
        return
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    serve_asgi(app, args.http)


def serve_asgi(app: Any, port: int, path: str = "/mcp") -> None:
    """Run an ASGI app on 127.0.0.1:port and announce the bound URL (at `path`) on stderr."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.02)
            for s in server.servers:
                for sock in s.sockets:
                    host, bound = sock.getsockname()[:2]
                    print(f"listening on http://{host}:{bound}{path}", file=sys.stderr, flush=True)

    anyio.run(main)


def serve_mcpserver(mcp: Any, args: argparse.Namespace) -> None:
    """Serve a high-level `MCPServer` over stdio or Streamable HTTP."""
    if args.http is None:
        mcp.run(transport="stdio")
        return
    app = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    serve_asgi(app, args.http)
