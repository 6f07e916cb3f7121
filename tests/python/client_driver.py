"""Reference client: drives the Python SDK `mcp.Client` (mcp 2.3.0) for interop tests.

Usage (see tests/python/README.md for the full contract):

    python client_driver.py [--mode auto|legacy|2026-07-28] [--answers FILE | --answers-json JSON]
                            [--ops FILE | --ops-json JSON] [--no-elicitation] [--no-sampling] [--no-roots]
                            [--timeout SECONDS]
                            (--url URL | --stdio CMD [ARGS...])

`--stdio` must come last: everything after it is the server command line.
Operations default to `[{"op": "list_tools"}]`; with `--ops -` they are read from stdin.

stdout: one JSON object per line: first {"event": "connected", ...}, then one
{"event": "result", "index": i, "op": ..., "ok": true|false, "protocol_version": ..., "result"|"error": ...}
per operation, then {"event": "done", "ok": <all ops ok>}. Each callback invocation is logged to
stderr as a line starting with "CALLBACK " followed by JSON (kind, key/request id, summary).
Exit status: 0 when the connection succeeded and every operation ran (even if some returned errors;
see "ok"), 2 when connecting failed, 3 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

DEFAULT_SAMPLING = {"text": "A short summary.", "model": "fake-llm-1", "stopReason": "endTurn"}
DEFAULT_ROOTS = [{"uri": "file:///tmp/mcp-peer-root", "name": "peer-root"}]
TYPE_FALLBACK: dict[str, Any] = {"string": "x", "integer": 1, "number": 1, "boolean": True}


def log_callback(**fields: Any) -> None:
    print("CALLBACK " + json.dumps(fields, sort_keys=True, default=str), file=sys.stderr, flush=True)


def _dump(model: Any) -> Any:
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return model


class Answers:
    """Deterministic answers for the three callbacks, from an answers JSON object.

    {
      "elicitation": {
        "by_key":     {"<input-request key or JSON-RPC id>": <ElicitResult JSON | {"error": {...}}>},
        "by_message": {"<substring of the message>": <ElicitResult JSON | {"error": {...}}>},
        "default":    <ElicitResult JSON>,      # optional; else accept + auto-filled content
        "values":     {"<property>": <value>}   # used for auto-fill before schema defaults/type fallbacks
      },
      "sampling": {"text": "...", "model": "...", "stopReason": "...", "by_key": {...}} | {"error": {...}},
      "roots": [{"uri": "file:///...", "name": "..."}] | {"error": {...}}
    }
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.elicitation: dict[str, Any] = data.get("elicitation") or {}
        self.sampling: Any = data.get("sampling") if data.get("sampling") is not None else DEFAULT_SAMPLING
        self.roots: Any = data.get("roots") if data.get("roots") is not None else DEFAULT_ROOTS

    @staticmethod
    def _error(spec: dict[str, Any]) -> types.ErrorData:
        err = spec["error"]
        return types.ErrorData(code=int(err.get("code", -32603)), message=str(err.get("message", "refused")))

    def elicit(self, key: str, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        rules = self.elicitation
        message = getattr(params, "message", "")
        spec = (rules.get("by_key") or {}).get(key)
        if spec is None:
            for needle, candidate in (rules.get("by_message") or {}).items():
                if needle in message:
                    spec = candidate
                    break
        if spec is None:
            spec = rules.get("default")
        if isinstance(spec, dict) and "error" in spec:
            return self._error(spec)
        if spec is not None:
            return types.ElicitResult.model_validate(spec)
        # Auto-fill: accept, with a value for every property of a form schema.
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        values = rules.get("values") or {}
        schema = getattr(params, "requested_schema", None) or {}
        content: dict[str, Any] = {}
        for prop, prop_schema in (schema.get("properties") or {}).items():
            if prop in values:
                content[prop] = values[prop]
            elif isinstance(prop_schema, dict) and "default" in prop_schema:
                content[prop] = prop_schema["default"]
            elif isinstance(prop_schema, dict) and prop_schema.get("enum"):
                content[prop] = prop_schema["enum"][0]
            else:
                kind = prop_schema.get("type") if isinstance(prop_schema, dict) else None
                content[prop] = TYPE_FALLBACK.get(kind, "x")
        return types.ElicitResult(action="accept", content=content)

    def sample(self, key: str, params: types.CreateMessageRequestParams) -> types.CreateMessageResult | types.ErrorData:
        spec = self.sampling
        if isinstance(spec, dict) and "error" in spec:
            return self._error(spec)
        by_key = spec.get("by_key") or {}
        if key in by_key:
            spec = {**spec, **by_key[key]}
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=str(spec.get("text", DEFAULT_SAMPLING["text"]))),
            model=str(spec.get("model", DEFAULT_SAMPLING["model"])),
            stop_reason=spec.get("stopReason", "endTurn"),
        )

    def list_roots(self) -> types.ListRootsResult | types.ErrorData:
        if isinstance(self.roots, dict) and "error" in self.roots:
            return self._error(self.roots)
        return types.ListRootsResult(roots=[types.Root.model_validate(r) for r in self.roots])


def _load_json_arg(path: str | None, inline: str | None, default: Any) -> Any:
    if inline is not None:
        return json.loads(inline)
    if path is None:
        return default
    if path == "-":
        return json.loads(sys.stdin.read())
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Drive mcp.Client (Python SDK 2.3.0) against a server")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    target.add_argument("--stdio", nargs=argparse.REMAINDER, metavar="CMD", help="server command line (must be last)")
    parser.add_argument("--mode", default="auto", help="auto (default), legacy, or 2026-07-28")
    parser.add_argument("--answers", help="answers JSON file for the callbacks")
    parser.add_argument("--answers-json", help="answers as inline JSON")
    parser.add_argument("--ops", help="operations JSON file ('-' = stdin)")
    parser.add_argument("--ops-json", help="operations as inline JSON")
    parser.add_argument("--no-elicitation", action="store_true", help="do not register an elicitation callback")
    parser.add_argument("--no-sampling", action="store_true", help="do not register a sampling callback")
    parser.add_argument("--no-roots", action="store_true", help="do not register a list_roots callback")
    parser.add_argument("--timeout", type=float, default=60.0, help="overall timeout in seconds (default 60)")
    args = parser.parse_args(argv)
    if args.stdio is not None and not args.stdio:
        parser.error("--stdio needs a command")
    return args


async def run_op(client: Client, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if kind == "call_tool":
        return await client.call_tool(op["name"], op.get("arguments"))
    if kind == "get_prompt":
        return await client.get_prompt(op["name"], op.get("arguments"))
    if kind == "read_resource":
        return await client.read_resource(op["uri"])
    if kind == "list_tools":
        return await client.list_tools()
    if kind == "list_prompts":
        return await client.list_prompts()
    if kind == "list_resources":
        return await client.list_resources()
    if kind == "list_resource_templates":
        return await client.list_resource_templates()
    if kind == "sleep":
        await anyio.sleep(float(op.get("seconds", 0)))
        return {}
    raise ValueError(f"unknown op {kind!r}")


def _error_json(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return _error_json(exc.exceptions[0])
    if isinstance(exc, MCPError):
        err: dict[str, Any] = {"type": "MCPError", "code": exc.error.code, "message": exc.error.message}
        if exc.error.data is not None:
            err["data"] = exc.error.data
        return err
    return {"type": type(exc).__name__, "message": str(exc)}


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, default=str), flush=True)


async def drive(args: argparse.Namespace) -> int:
    answers = Answers(_load_json_arg(args.answers, args.answers_json, {}))
    ops = _load_json_arg(args.ops, args.ops_json, [{"op": "list_tools"}])
    if not isinstance(ops, list):
        print("client_driver: --ops must be a JSON array", file=sys.stderr)
        return 3

    async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        answer = answers.elicit(str(ctx.request_id), params)
        log_callback(
            kind="elicitation",
            key=ctx.request_id,
            message=getattr(params, "message", None),
            mode=getattr(params, "mode", None),
            answer=_dump(answer),
        )
        return answer

    async def on_sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        answer = answers.sample(str(ctx.request_id), params)
        log_callback(kind="sampling", key=ctx.request_id, max_tokens=params.max_tokens, answer=_dump(answer))
        return answer

    async def on_roots(ctx: ClientRequestContext) -> Any:
        answer = answers.list_roots()
        log_callback(kind="roots", key=ctx.request_id, answer=_dump(answer))
        return answer

    if args.url:
        target: Any = args.url
    else:
        target = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
    client = Client(
        target,
        mode=args.mode,
        cache=None,
        elicitation_callback=None if args.no_elicitation else on_elicit,
        sampling_callback=None if args.no_sampling else on_sample,
        list_roots_callback=None if args.no_roots else on_roots,
    )
    all_ok = True
    try:
        async with client:
            info = client.server_info
            emit(
                {
                    "event": "connected",
                    "protocol_version": client.protocol_version,
                    "server_info": _dump(info) if info is not None else None,
                    "mode": args.mode,
                }
            )
            for index, op in enumerate(ops):
                record: dict[str, Any] = {"event": "result", "index": index, "op": op.get("op")}
                try:
                    result = await run_op(client, op)
                    record.update(ok=True, result=_dump(result))
                except Exception as exc:  # noqa: BLE001 - every failure is reported, not raised
                    all_ok = False
                    record.update(ok=False, error=_error_json(exc))
                record["protocol_version"] = client.protocol_version
                emit(record)
    except Exception as exc:  # noqa: BLE001
        emit({"event": "connect_failed", "ok": False, "error": _error_json(exc)})
        traceback.print_exc(file=sys.stderr)
        return 2
    emit({"event": "done", "ok": all_ok})
    return 0


def main() -> None:
    args = parse_args(sys.argv[1:])
    code = 2

    async def runner() -> None:
        nonlocal code
        with anyio.fail_after(args.timeout):
            code = await drive(args)

    try:
        anyio.run(runner)
    except TimeoutError:
        emit({"event": "timeout", "ok": False, "seconds": args.timeout})
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
