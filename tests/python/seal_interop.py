"""Python side of the modelctx-seal interop test (crates/modelctx-seal/tests/python_interop.rs).

Reads one JSON request on stdin, answers one JSON document on stdout. Everything is computed
with the installed Python SDK 2.3.0's own classes and functions (`mcp.server.request_state`,
`mcp.server.mcpserver.resolve`, `mcp.server.auth`), so the Rust crate is checked against the
reference implementation itself, not against a re-implementation.

Request members (all optional):
  open:       [{keys, audience, method, params, principal, token}] — run the real
              RequestStateBoundary middleware on a request carrying `token`; report the
              plaintext the handler saw, or the wire error and the reason the boundary logged.
  mint:       [{keys, audience, method, params, principal, state}] — let the boundary seal an
              input_required result carrying `state`; report the token.
  unseal:     [{keys, token}] — AESGCMRequestStateCodec.unseal; payload or reason.
  seal:       [{keys, payload}] — AESGCMRequestStateCodec.seal of a UTF-8 payload.
  digests:    [json text] — the boundary's argument digest of `arguments` parsed from the text.
  dumps:      [json text] — compact_json(json.loads(text), sort_keys=True).
  principals: [{client_id, iss, sub}] — authenticated_principal for such an access token.
  questions:  [{message, schema} | null] — resolver question digest of a form elicitation
              (null: a roots/list request, whose params are absent).
Keys are hex strings; principals are OAuth triples or null (unauthenticated).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import sys
from typing import Any

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import resolve
from mcp.server.request_state import (
    AESGCMRequestStateCodec,
    InvalidRequestState,
    RequestStateBoundary,
    RequestStateSecurity,
    _request_identity,  # the boundary's own (target, args-digest) computation
    authenticated_principal,
    compact_json,
)
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitRequest, ElicitRequestFormParams, ListRootsRequest


class _Reasons(logging.Handler):
    """Collects the boundary's log-only rejection reasons ("requestState rejected on %s: %s")."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "requestState rejected on %s: %s" and isinstance(record.args, tuple):
            self.reasons.append(str(record.args[1]))


_REASONS = _Reasons()
_LOGGER = logging.getLogger("mcp.server.request_state")
_LOGGER.addHandler(_REASONS)
_LOGGER.propagate = False  # keep stderr quiet: the reasons are reported in the answer


def _keys(item: dict[str, Any]) -> list[bytes]:
    return [bytes.fromhex(k) for k in item["keys"]]


def _boundary(item: dict[str, Any]) -> RequestStateBoundary:
    # Default bind_principal (authenticated_principal), as MCPServer installs it.
    security = RequestStateSecurity(keys=_keys(item))
    return RequestStateBoundary(security, default_audience=item.get("audience"))


def _ctx(item: dict[str, Any], params: dict[str, Any]) -> ServerRequestContext[Any, Any]:
    return ServerRequestContext(
        session=None,  # type: ignore[arg-type]  # the boundary never touches the session
        lifespan_context=None,
        protocol_version="2026-07-28",
        method=item["method"],
        params=params,
    )


def _authenticate(principal: dict[str, Any] | None) -> Any:
    if principal is None:
        return auth_context_var.set(None)
    claims = {"iss": principal["iss"]} if principal.get("iss") is not None else None
    token = AccessToken(
        token="opaque",
        client_id=principal["client_id"],
        scopes=[],
        subject=principal.get("sub"),
        claims=claims,
    )
    return auth_context_var.set(AuthenticatedUser(token))


async def _open(item: dict[str, Any]) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def handler(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        seen["state"] = (ctx.params or {}).get("requestState")
        return {"resultType": "complete", "content": []}

    params = dict(item["params"])
    params["requestState"] = item["token"]
    reset = _authenticate(item.get("principal"))
    try:
        await _boundary(item)(_ctx(item, params), handler)
        return {"ok": seen["state"]}
    except MCPError as exc:
        reason = _REASONS.reasons[-1] if _REASONS.reasons else None
        error = {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
        return {"error": error, "reason": reason}
    finally:
        auth_context_var.reset(reset)


async def _mint(item: dict[str, Any]) -> str:
    async def handler(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        return {"resultType": "input_required", "inputRequests": {}, "requestState": item["state"]}

    reset = _authenticate(item.get("principal"))
    try:
        result = await _boundary(item)(_ctx(item, dict(item["params"])), handler)
    finally:
        auth_context_var.reset(reset)
    return result["requestState"]


def _unseal(item: dict[str, Any]) -> dict[str, Any]:
    try:
        payload = AESGCMRequestStateCodec(_keys(item)).unseal(item["token"])
    except InvalidRequestState as exc:
        return {"reason": str(exc)}
    return {"payload": payload.decode("utf-8")}


def _principal(item: dict[str, Any]) -> str | None:
    reset = _authenticate(item)
    try:
        return authenticated_principal(None)  # type: ignore[arg-type]  # ctx is unused
    finally:
        auth_context_var.reset(reset)


def _question(item: dict[str, Any] | None) -> dict[str, Any]:
    if item is None:
        request: Any = ListRootsRequest()
    else:
        request = ElicitRequest(
            params=ElicitRequestFormParams(message=item["message"], requested_schema=json.loads(item["schema"]))
        )
    params = request.params
    rendered = compact_json(params.model_dump(mode="json", by_alias=True, exclude_none=True) if params else None)
    return {"digest": resolve._request_digest(request), "rendered": rendered}


async def main() -> None:
    request = json.load(sys.stdin)
    answer: dict[str, Any] = {"sdk_version": importlib.metadata.version("mcp")}
    answer["open"] = [await _open(item) for item in request.get("open", [])]
    answer["mint"] = [await _mint(item) for item in request.get("mint", [])]
    answer["unseal"] = [_unseal(item) for item in request.get("unseal", [])]
    answer["seal"] = [
        AESGCMRequestStateCodec(_keys(item)).seal(item["payload"].encode("utf-8")) for item in request.get("seal", [])
    ]
    answer["digests"] = [
        _request_identity("tools/call", {"name": "t", "arguments": json.loads(text)})[1]
        for text in request.get("digests", [])
    ]
    answer["dumps"] = [compact_json(json.loads(text), sort_keys=True) for text in request.get("dumps", [])]
    answer["principals"] = [_principal(item) for item in request.get("principals", [])]
    answer["questions"] = [_question(item) for item in request.get("questions", [])]
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
