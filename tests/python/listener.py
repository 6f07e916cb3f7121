"""Reference peer: `MCPServer` "PeerListener" 0.0.1 (mcp 2.3.0) for `subscriptions/listen`.

Serves the SDK's own `subscriptions/listen` (its default `ListenHandler`, in-memory bus); the
tools publish the events a test then expects on its listen streams:

* `touch {uri}`: publishes `ResourceUpdated(uri)` -> "touched <uri>"
* `change_tools`: publishes `ToolsListChanged` -> "tools changed"

Run: python listener.py            (stdio)
     python listener.py --http PORT (Streamable HTTP on 127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp.server import MCPServer  # noqa: E402
from mcp.server.mcpserver import Context  # noqa: E402

from _peer_common import parse_args, serve_mcpserver  # noqa: E402

mcp = MCPServer("PeerListener", version="0.0.1")


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announces that the resource `uri` changed."""
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


@mcp.tool()
async def change_tools(ctx: Context) -> str:
    """Announces that the tool list changed."""
    await ctx.notify_tools_changed()
    return "tools changed"


def main() -> None:
    args = parse_args("PeerListener: subscriptions/listen reference server")
    serve_mcpserver(mcp, args)


if __name__ == "__main__":
    main()
