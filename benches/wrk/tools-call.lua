-- wrk script: every request is the load driver's 2026-07-28 `tools/call echo` (benches/src/lib.rs,
-- request_body with id 1 and the 16-byte default text): the full `_meta` envelope in the body
-- and the SEP-2243 headers a 2026-07-28 client sends over streamable HTTP. Stateless servers
-- answer every copy on its own; the id may repeat. Responses are not parsed here (that would
-- make wrk the bottleneck): scripts/bench.sh checks each server's answer with `load` first, and
-- wrk counts every non-2xx status.
--
--   wrk -t1 -c32 -d10s -s benches/wrk/tools-call.lua http://127.0.0.1:PORT/mcp
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "echo"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
  .. '"arguments":{"text":"hello, benchmark"},"_meta":{'
  .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"mcp-load","version":"0.1.0"}}}}'
