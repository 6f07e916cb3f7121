"""Reference peer: an `MCPServer` "PeerSse" 0.0.1 served over the HTTP+SSE transport of 2024-11-05
(mcp 2.3.0's own `sse_app`): `GET /sse` opens the event stream whose first event is `endpoint`
(`/messages/?session_id=<hex>`), messages are POSTed there (202), everything the server sends
travels on the stream. POST /sse gets 405, as a 2024-era server answers a streamable client.

Tools
* `echo {text}`: returns the text.
* `provision {name}`: asks through the back-channel (`ctx.elicit`, "Which region should the
  database live in?", {region: string}) and answers "Provisioned '<name>' in <region>."; a
  declined or cancelled question -> "Provisioning '<name>' <action>."

Run: python sse_server.py --http PORT   (0 = any free port; prints `listening on http://127.0.0.1:<port>/sse`)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from _peer_common import parse_args, serve_asgi  # noqa: E402


class Region(BaseModel):
    region: str


def build_server() -> MCPServer:
    mcp = MCPServer("PeerSse", version="0.0.1")

    @mcp.tool(description="Return the given text unchanged.")
    def echo(text: str) -> str:
        return text

    @mcp.tool(description="Provision a database; asks which region it should live in.")
    async def provision(name: str, ctx: Context) -> str:
        answer = await ctx.elicit("Which region should the database live in?", Region)
        if answer.action != "accept":
            return f"Provisioning '{name}' {answer.action}d."
        return f"Provisioned '{name}' in {answer.data.region}."

    return mcp


def main() -> None:
    args = parse_args("MCPServer over the HTTP+SSE transport of 2024-11-05")
    app = build_server().sse_app(host="127.0.0.1")
    serve_asgi(app, 0 if args.http is None else args.http, path="/sse")


if __name__ == "__main__":
    main()
