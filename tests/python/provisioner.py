"""Reference peer: low-level `mcp.server.Server` named "Provisioner" (version 0.0.1), mcp 2.3.0.

Rebuilds the low-level fixture of docs/python-sdk-reference.md §9 (modelled on the python-sdk
docs example docs_src/mrtr/tutorial001.py):

* `provision {name}`: round 1 answers an InputRequiredResult with key "region"
  (elicitation/create, form mode, "Which region should the database live in?", schema
  {region: string} required) and plaintext requestState "provision-v1"; the retry answers
  "Provisioned '<name>' in <region> (protocol <version>, state seen by handler: '<state>')."
  On a 2025-11-25 (handshake) session, where InputRequiredResult does not exist, it asks the same
  question through the back-channel `elicitation/create` instead and reports state '' .
* `echo {text}`: returns the text; never mints state.
* `state_only {n}`: answers n state-only InputRequiredResults (requestState "1", "2", ...) and
  then "state_only completed after <n> state-only round(s)".

Sealing: when MCP_REQUEST_STATE_KEYS is set (comma-separated secrets, each >= 32 bytes), the
server appends RequestStateBoundary(RequestStateSecurity(keys=..., ttl=MCP_REQUEST_STATE_TTL
seconds, default 600), default_audience="Provisioner"): requestState on the wire becomes an
opaque "v1." token and any tampered/expired/replayed-elsewhere token is rejected with
-32602 "Invalid or expired requestState".

Run: python provisioner.py            (stdio)
     python provisioner.py --http PORT (Streamable HTTP on 127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp.server import Server, ServerRequestContext  # noqa: E402
from mcp.types import (  # noqa: E402
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: E402

from _peer_common import parse_args, serve_lowlevel  # noqa: E402

REGION_MESSAGE = "Which region should the database live in?"
REGION_SCHEMA = {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}

TOOLS = [
    Tool(
        name="provision",
        description="Provision a database. Asks which region to put it in.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    ),
    Tool(
        name="echo",
        description="Return the given text unchanged.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    Tool(
        name="state_only",
        description="Answer n state-only InputRequiredResult rounds, then complete.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    ),
]


def _text(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
    args = params.arguments or {}
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    if params.name == "echo":
        return _text(str(args.get("text", "")))
    if params.name == "provision":
        name = str(args.get("name", ""))
        if not modern:
            answer = await ctx.session.elicit_form(REGION_MESSAGE, REGION_SCHEMA, related_request_id=ctx.request_id)
            if answer.action != "accept" or not answer.content:
                return _text(f"Provisioning '{name}' cancelled ({answer.action}).", is_error=True)
            region = answer.content.get("region")
            return _text(
                f"Provisioned '{name}' in {region} (protocol {ctx.protocol_version}, state seen by handler: '')."
            )
        answer = (params.input_responses or {}).get("region")
        if not isinstance(answer, ElicitResult) or answer.action != "accept" or not answer.content:
            return InputRequiredResult(
                input_requests={
                    "region": ElicitRequest(
                        params=ElicitRequestFormParams(message=REGION_MESSAGE, requested_schema=REGION_SCHEMA)
                    )
                },
                request_state="provision-v1",
            )
        region = answer.content.get("region")
        return _text(
            f"Provisioned '{name}' in {region} (protocol {ctx.protocol_version}, "
            f"state seen by handler: '{params.request_state}')."
        )
    if params.name == "state_only":
        n = int(args.get("n", 0))
        if not modern:
            return _text("state_only needs protocol 2026-07-28", is_error=True)
        done = int(params.request_state) if params.request_state and params.request_state.isdigit() else 0
        if done < n:
            return InputRequiredResult(request_state=str(done + 1))
        return _text(f"state_only completed after {n} state-only round(s)")
    return _text(f"Unknown tool: {params.name}", is_error=True)


def build_server() -> Server:
    server = Server("Provisioner", version="0.0.1", on_list_tools=list_tools, on_call_tool=call_tool)
    keys = [k for k in os.environ.get("MCP_REQUEST_STATE_KEYS", "").split(",") if k]
    if keys:
        from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

        ttl = float(os.environ.get("MCP_REQUEST_STATE_TTL", "600"))
        server.middleware.append(
            RequestStateBoundary(RequestStateSecurity(keys=keys, ttl=ttl), default_audience=server.name)
        )
    return server


def main() -> None:
    args = parse_args("Provisioner: low-level MCP reference server (provision / echo / state_only)")
    serve_lowlevel(build_server(), args)


if __name__ == "__main__":
    main()
