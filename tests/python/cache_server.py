"""Reference peer: `MCPServer` "PeerCache" 0.0.1 (mcp 2.3.0) with caching hints (SEP-2549).

`cache_hints`: `tools/list` public for a minute, `resources/read` private for a minute,
`prompts/list` `ttlMs: 0`. It counts what reaches it, so that a client's cache hits show:

* `counts`: `{"tools/list": n, "prompts/list": n, "resources/read": n}` as JSON text
* `change_tools`: publishes `ToolsListChanged` on `subscriptions/listen` -> "tools changed"
* resource template `data://{name}`: the text "data <name>"

Run: python cache_server.py            (stdio)
     python cache_server.py --http PORT (Streamable HTTP on 127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp.server import CacheHint, MCPServer  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402

from _peer_common import parse_args, serve_mcpserver  # noqa: E402

served: Counter[str] = Counter()


class CountingServer(MCPServer):
    """Counts the listings it serves (its own handlers call these)."""

    async def list_tools(self):  # type: ignore[override]
        served["tools/list"] += 1
        return await super().list_tools()

    async def list_prompts(self):  # type: ignore[override]
        served["prompts/list"] += 1
        return await super().list_prompts()


mcp = CountingServer(
    "PeerCache",
    version="0.0.1",
    cache_hints={
        "tools/list": CacheHint(ttl_ms=60_000, scope="public"),
        "resources/read": CacheHint(ttl_ms=60_000, scope="private"),
        "prompts/list": CacheHint(ttl_ms=0, scope="public"),
    },
)


@mcp.tool()
async def counts() -> str:
    """What reached the server so far."""
    return json.dumps(dict(served))


@mcp.tool()
async def change_tools(ctx: Context) -> str:
    """Announces that the tool list changed."""
    await ctx.notify_tools_changed()
    return "tools changed"


@mcp.prompt()
def brief() -> str:
    """A prompt, so that prompts/list has something."""
    return "brief"


@mcp.resource("data://{name}")
def data(name: str) -> str:
    """Counted reads."""
    served["resources/read"] += 1
    return f"data {name}"


def main() -> None:
    args = parse_args("PeerCache: caching hints reference server")
    serve_mcpserver(mcp, args)


if __name__ == "__main__":
    main()
