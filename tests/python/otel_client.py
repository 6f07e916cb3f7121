"""Reference client for the cross-language trace tests: `mcp.Client` (mcp 2.3.0) with the
OpenTelemetry SDK recording its spans (the dispatcher's CLIENT span per request, whose context
it injects into `params._meta`).

    python otel_client.py --out FILE [--mode auto|legacy] [--ops-json JSON] (--url URL | --own-stdio)

`--own-stdio` speaks MCP on this process's own stdin/stdout (the test's server is at the other
end of the pipes), so the server under test can live in the test process. When the client is
done it closes stdout; the server sees EOF and closes our stdin in turn (the SDK's
`stdio_server()` would wait for stdin's EOF while keeping stdout open: each side would wait for
the other). Every operation runs
under one root span, "python root". At the end (whatever happened) writes
`{"results": [...], "spans": [...]}` to FILE; results are client_driver.py's result records.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.client._transport import TransportStreams  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.context import ClientRequestContext  # noqa: E402
from mcp.shared._context_streams import create_context_streams  # noqa: E402
from mcp.shared.message import SessionMessage  # noqa: E402
from opentelemetry import trace  # noqa: E402

from _otel_spans import finished_spans, record_spans, write_json  # noqa: E402
from client_driver import Answers, _dump, _error_json, run_op  # noqa: E402


@asynccontextmanager
async def own_stdio() -> AsyncIterator[TransportStreams]:
    """Newline-delimited JSON-RPC on this process's stdin/stdout; stdout closes (after the last
    message) when the client leaves, and the streams end at the server's EOF."""
    stdin = anyio.wrap_file(sys.stdin)
    # Our own file object on fd 1 (sys.stdout's never closes the descriptor); stray prints go
    # to stderr.
    stdout = anyio.wrap_file(open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=True))  # noqa: SIM115
    sys.stdout = sys.stderr
    inbound_writer, inbound = create_context_streams[SessionMessage | Exception](0)
    outbound, outbound_reader = create_context_streams[SessionMessage](0)

    async def read() -> None:
        async with inbound_writer:
            async for line in stdin:
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # noqa: BLE001 - handed to the session, as stdio_server does
                    await inbound_writer.send(exc)
                    continue
                await inbound_writer.send(SessionMessage(message))

    async def write() -> None:
        async with outbound_reader:
            async for message in outbound_reader:
                await stdout.write(message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")
                await stdout.flush()
        await stdout.aclose()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        try:
            yield inbound, outbound
        finally:
            # The session does not close its write stream: the client is done when it leaves.
            await outbound.aclose()


async def drive(args: argparse.Namespace) -> list[dict[str, Any]]:
    answers = Answers(json.loads(args.answers_json))
    ops = json.loads(args.ops_json)

    async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return answers.elicit(str(ctx.request_id), params)

    if args.url:
        target: Any = args.url
    else:
        target = own_stdio()
    results: list[dict[str, Any]] = []
    with trace.get_tracer("otel_client").start_as_current_span("python root"):
        async with Client(target, mode=args.mode, cache=None, elicitation_callback=on_elicit) as client:
            for op in ops:
                record: dict[str, Any] = {"op": op.get("op"), "protocol_version": client.protocol_version}
                try:
                    record.update(ok=True, result=_dump(await run_op(client, op)))
                except Exception as exc:  # noqa: BLE001 - reported to the test, not raised
                    record.update(ok=False, error=_error_json(exc))
                results.append(record)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="mcp.Client with in-memory OpenTelemetry spans")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="Streamable HTTP endpoint")
    target.add_argument("--own-stdio", action="store_true", help="speak MCP on this process's stdin/stdout")
    parser.add_argument("--out", required=True, help="where to write the results and spans")
    parser.add_argument("--mode", default="auto", help="auto (default), legacy, or 2026-07-28")
    parser.add_argument("--ops-json", default='[{"op": "list_tools"}]', help="operations (client_driver.py's)")
    parser.add_argument("--answers-json", default="{}", help="answers (client_driver.py's)")
    parser.add_argument("--timeout", type=float, default=60.0, help="overall timeout in seconds")
    args = parser.parse_args()
    record_spans()
    document: dict[str, Any] = {"results": []}

    async def runner() -> None:
        with anyio.fail_after(args.timeout):
            document["results"] = await drive(args)

    try:
        anyio.run(runner)
    except BaseException as exc:  # noqa: BLE001 - the test reads the failure from the file
        document["error"] = _error_json(exc) if isinstance(exc, Exception) else repr(exc)
    document["spans"] = finished_spans()
    write_json(args.out, document)


if __name__ == "__main__":
    main()
