"""Reference peer: mcp 2.3.0's own `sse_client` (the HTTP+SSE transport of 2024-11-05) driving a
`ClientSession` against URL (our server's `/sse`). It initializes, lists the tools, calls
`echo {"text": "over sse"}` and `provision {"name": "orders"}` (its elicitation answered with
{"region": "eu-west"}), and prints one JSON line per step on stdout:
{"step": "initialized", "protocol_version": ...}, {"step": "tools", "names": [...]},
{"step": "echo", "text": ...}, {"step": "provision", "text": ..., "elicited": <message>},
then {"step": "done"}. Any failure: {"step": "failed", "error": ...} and exit status 1.

Run: python sse_client.py URL [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def drive(url: str) -> None:
    asked: list[str] = []

    async def on_elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"region": "eu-west"})

    async with sse_client(url) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            init = await session.initialize()
            emit({"step": "initialized", "protocol_version": init.protocol_version})
            tools = await session.list_tools()
            emit({"step": "tools", "names": sorted(t.name for t in tools.tools)})
            echoed = await session.call_tool("echo", {"text": "over sse"})
            emit({"step": "echo", "text": text_of(echoed)})
            provisioned = await session.call_tool("provision", {"name": "orders"})
            emit({"step": "provision", "text": text_of(provisioned), "elicited": asked})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    async def run() -> None:
        with anyio.fail_after(args.timeout):
            await drive(args.url)

    try:
        anyio.run(run)
    except BaseException as exc:  # noqa: BLE001 - reported, then a failing status
        emit({"step": "failed", "error": repr(exc)})
        sys.exit(1)
    emit({"step": "done"})


if __name__ == "__main__":
    main()
