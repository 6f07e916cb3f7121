"""Reference peer: high-level `MCPServer` named "PeerBookshop" (version 0.0.1), mcp 2.3.0.

Rebuilds the high-level fixture of docs/python-sdk-reference.md §9. On 2026-07-28 every question
travels as an InputRequiredResult (sealed requestState, MCPServer always seals); on a 2025-11-25
session the same questions go through the back-channel (elicitation/create, sampling/createMessage,
roots/list) and reach the same client callbacks.

Tools
* `order_book {title}`: resolver `confirm_backorder` elicits "'<title>' is out of stock. Place a
  backorder?" with schema {confirm: boolean} -> "Backorder for '<title>': placed." / "... not placed."
* `plan_trip {city}`: two independent resolvers batched into ONE round: `ask_prefs` ("Seat preference
  for the trip to <city>?", {seat: string}) and `ask_budget` ("Budget (EUR) for <city>?",
  {amount: integer}) -> "Trip to <city>: seat <seat>, budget <amount> EUR."
* `summarize {text}`: resolver `sample_summary` samples "Summarize: <text>" with maxTokens 50
  -> "summary[<model>]: <sampled text>"
* `where_am_i`: resolver `get_roots` (roots/list) -> "roots: <uri> (<name>), ..."
* `manual_irr {x}`: returns an InputRequiredResult by hand: key "confirm" (elicitation
  "Confirm manual step for x=<x>?", {ok: boolean}), requestState "manual:<x>"; the retry answers
  "manual_irr done: x=<x>, ok=<ok>, state seen by handler: 'manual:<x>'". On a 2025-11-25 session
  the SDK rejects the hand-made InputRequiredResult with -32603 "Handler returned an invalid result"
  (documented Python behaviour, kept on purpose).
* `echo {text}`: returns the text.
Prompt `briefing {topic}`: asks "Who is the audience for the briefing on <topic>?" ({audience:
string}, key "audience") -> one user message "Brief <audience> on <topic>."
Resource template `report://{quarter}`: asks "Which format for the <quarter> report?" ({format:
string}, key "format") -> text "Report <quarter> (<format>)" (text/plain).

Resolver input-request keys are "<module>:<qualname>", i.e. "__main__:confirm_backorder",
"__main__:ask_prefs", "__main__:ask_budget", "__main__:sample_summary", "__main__:get_roots".

Run: python bookshop.py            (stdio)
     python bookshop.py --http PORT (Streamable HTTP on 127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp.server import MCPServer  # noqa: E402
from mcp.server.mcpserver import Context, Elicit, ListRoots, Resolve, Sample  # noqa: E402
from mcp.server.mcpserver.prompts.base import UserMessage  # noqa: E402
from mcp.types import (  # noqa: E402
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from _peer_common import parse_args, serve_mcpserver  # noqa: E402

mcp = MCPServer("PeerBookshop", version="0.0.1")


class Backorder(BaseModel):
    confirm: bool = Field(description="Place a backorder?")


class Prefs(BaseModel):
    seat: str


class Budget(BaseModel):
    amount: int


class Audience(BaseModel):
    audience: str


class ReportFormat(BaseModel):
    format: str


def _ask(message: str, schema: dict) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


async def confirm_backorder(title: str) -> Elicit[Backorder]:
    return Elicit(f"{title!r} is out of stock. Place a backorder?", Backorder)


@mcp.tool()
async def order_book(title: str, backorder: Annotated[Backorder, Resolve(confirm_backorder)]) -> str:
    """Order a book that is out of stock (asks whether to place a backorder)."""
    return f"Backorder for {title!r}: {'placed' if backorder.confirm else 'not placed'}."


async def ask_prefs(city: str) -> Elicit[Prefs]:
    return Elicit(f"Seat preference for the trip to {city}?", Prefs)


async def ask_budget(city: str) -> Elicit[Budget]:
    return Elicit(f"Budget (EUR) for {city}?", Budget)


@mcp.tool()
async def plan_trip(
    city: str,
    prefs: Annotated[Prefs, Resolve(ask_prefs)],
    budget: Annotated[Budget, Resolve(ask_budget)],
) -> str:
    """Plan a trip (asks seat preference and budget in one batched round)."""
    return f"Trip to {city}: seat {prefs.seat}, budget {budget.amount} EUR."


def sample_summary(text: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50,
    )


@mcp.tool()
async def summarize(text: str, summary: Annotated[CreateMessageResult, Resolve(sample_summary)]) -> str:
    """Summarize text with the client's LLM (sampling)."""
    sampled = summary.content.text if summary.content.type == "text" else "?"
    return f"summary[{summary.model}]: {sampled}"


def get_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def where_am_i(roots: Annotated[ListRootsResult, Resolve(get_roots)]) -> str:
    """Report the client's roots (roots/list)."""
    return "roots: " + ", ".join(f"{r.uri} ({r.name})" for r in roots.roots)


@mcp.tool()
async def manual_irr(x: int, ctx: Context) -> str | InputRequiredResult:
    """Return an InputRequiredResult built by hand (requestState 'manual:<x>')."""
    answer = (ctx.input_responses or {}).get("confirm")
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content is not None:
        return f"manual_irr done: x={x}, ok={answer.content.get('ok')}, state seen by handler: '{ctx.request_state}'"
    return InputRequiredResult(
        input_requests={
            "confirm": _ask(
                f"Confirm manual step for x={x}?",
                {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            )
        },
        request_state=f"manual:{x}",
    )


@mcp.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@mcp.prompt()
async def briefing(topic: str, ctx: Context) -> list[UserMessage] | InputRequiredResult:
    """A briefing prompt that asks who the audience is."""
    message = f"Who is the audience for the briefing on {topic}?"
    if _modern(ctx):
        answer = (ctx.input_responses or {}).get("audience")
        if not (isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content):
            return InputRequiredResult(
                input_requests={"audience": _ask(message, Audience.model_json_schema())},
                request_state=f"briefing:{topic}",
            )
        audience = answer.content.get("audience")
    else:
        result = await ctx.elicit(message=message, schema=Audience)
        audience = result.data.audience if result.action == "accept" else "nobody"
    return [UserMessage(role="user", content=TextContent(type="text", text=f"Brief {audience} on {topic}."))]


@mcp.resource("report://{quarter}", mime_type="text/plain")
async def report(quarter: str, ctx: Context) -> str | InputRequiredResult:
    """A quarterly report; asks which format to render."""
    message = f"Which format for the {quarter} report?"
    if _modern(ctx):
        answer = (ctx.input_responses or {}).get("format")
        if not (isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content):
            return InputRequiredResult(
                input_requests={"format": _ask(message, ReportFormat.model_json_schema())},
                request_state=f"report:{quarter}",
            )
        fmt = answer.content.get("format")
    else:
        result = await ctx.elicit(message=message, schema=ReportFormat)
        fmt = result.data.format if result.action == "accept" else "none"
    return f"Report {quarter} ({fmt})"


def main() -> None:
    args = parse_args("PeerBookshop: high-level MCP reference server (resolvers, MRTR, prompt, template)")
    serve_mcpserver(mcp, args)


if __name__ == "__main__":
    main()
