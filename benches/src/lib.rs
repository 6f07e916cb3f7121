//! Shared pieces of the benchmark binaries (`echo-server`, `axum-floor`, `stdio-floor`, `load`):
//! the request the driver sends, the check of every response, the floor's response encoder,
//! argument parsing, the runtime, loopback binding and the clean-shutdown trigger.
//!
//! Everything here is off the servers' measured path except [`floor_response`] (the floors'
//! encoder) and [`runtime`].

use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

/// The name the servers report in `serverInfo`.
pub const SERVER_NAME: &str = "echo-server";
/// The version the servers report in `serverInfo`.
pub const SERVER_VERSION: &str = "1.0.0";
/// The protocol revision of every request.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// The one tool.
pub const TOOL: &str = "echo";
/// The HTTP endpoint path of both HTTP servers.
pub const HTTP_PATH: &str = "/mcp";
/// The default payload: 16 bytes, as in the rmcp baseline.
pub const DEFAULT_TEXT: &str = "hello, benchmark";

/// The JSON text of a string (quotes and escapes included).
fn json_string(text: &str) -> String {
    // A string always serializes.
    serde_json::to_string(text).unwrap_or_default()
}

/// The `_meta` envelope of every request: protocol version, `capabilities` (JSON text) and the
/// client info.
fn envelope(capabilities: &str) -> String {
    format!(
        concat!(
            r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","#,
            r#""io.modelcontextprotocol/clientCapabilities":{capabilities},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"mcp-load","version":"0.1.0"}}}}"#
        ),
        version = PROTOCOL_VERSION,
        capabilities = capabilities,
    )
}

/// The body of `tools/call echo` request `id`: a 2026-07-28 request with the full `_meta`
/// envelope (protocol version, client capabilities, client info). No trailing newline.
pub fn request_body(id: u64, text: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text}}},{meta}}}}}"#,
        text = json_string(text),
        meta = envelope("{}"),
    )
    .into_bytes()
}

/// The multi-round-trip tool of the flow benchmarks (the Python peer's `provision`).
pub const FLOW_TOOL: &str = "provision";
/// The key the flow's question is asked under.
pub const FLOW_KEY: &str = "region";
/// The answer the flow driver gives.
pub const FLOW_REGION: &str = "eu-west-1";
/// The plaintext state the flow's handler mints (the server seals it).
pub const FLOW_STATE: &str = "provision-v1";

/// `tools/call provision {name}` request `id`, from a client that answers form elicitations. The
/// first leg has no `retry`; the second carries the answer under [`FLOW_KEY`] and the
/// `requestState` of the first leg's `InputRequiredResult`, echoed byte for byte.
pub fn flow_request(id: u64, name: &str, retry: Option<&str>) -> Vec<u8> {
    let retry = retry.map_or_else(String::new, |state| {
        format!(
            r#""inputResponses":{{"{FLOW_KEY}":{{"action":"accept","content":{{"region":"{FLOW_REGION}"}}}}}},"requestState":{},"#,
            json_string(state)
        )
    });
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{{retry}"name":"{FLOW_TOOL}","arguments":{{"name":{name}}},{meta}}}}}"#,
        name = json_string(name),
        meta = envelope(r#"{"elicitation":{"form":{}}}"#),
    )
    .into_bytes()
}

/// The `result` of response `id`, with `resultType` `expected` and the checks every response
/// gets (the `jsonrpc` marker, the id, and — when `stamp` — the `serverInfo` stamp of
/// [`SERVER_NAME`]; peers on other SDKs stamp their own name or none).
fn result_of(
    body: &[u8],
    id: u64,
    expected: &str,
    stamp: bool,
) -> Result<serde_json::Map<String, Value>, String> {
    let fail = |what: &str| {
        format!(
            "response to request {id}: {what}: {}",
            String::from_utf8_lossy(body)
        )
    };
    let value = serde_json::from_slice::<Value>(body).map_err(|_| fail("not JSON"))?;
    if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(fail("jsonrpc is not \"2.0\""));
    }
    if value.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(fail("wrong id"));
    }
    let Some(Value::Object(result)) = value.get("result") else {
        return Err(fail("no result"));
    };
    if result.get("resultType").and_then(Value::as_str) != Some(expected) {
        return Err(fail(&format!("resultType is not {expected:?}")));
    }
    let server = result
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str);
    if stamp && server != Some(SERVER_NAME) {
        return Err(fail("no serverInfo stamp"));
    }
    Ok(result.clone())
}

/// The text of the first content block of a complete, successful tool result.
fn first_text(result: &serde_json::Map<String, Value>) -> Option<&str> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let block = result.get("content").and_then(|c| c.get(0))?;
    if block.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    block.get("text").and_then(Value::as_str)
}

/// Checks one echo response: the id, no error, one text block carrying `text`,
/// `isError: false`, `resultType: "complete"` and (when `stamp`) the server stamp.
///
/// # Errors
/// What is wrong with it.
pub fn check_response(body: &[u8], id: u64, text: &str, stamp: bool) -> Result<(), String> {
    let result = result_of(body, id, "complete", stamp)?;
    if first_text(&result) != Some(text) {
        return Err(format!(
            "response to request {id}: content is not the echoed text: {}",
            String::from_utf8_lossy(body)
        ));
    }
    Ok(())
}

/// Checks the first leg of a flow: an `InputRequiredResult` asking a form elicitation under
/// [`FLOW_KEY`], with a `requestState`. Returns the state.
///
/// # Errors
/// What is wrong with it.
pub fn check_input_required(body: &[u8], id: u64, stamp: bool) -> Result<String, String> {
    let result = result_of(body, id, "input_required", stamp)?;
    let asked = result
        .get("inputRequests")
        .and_then(|r| r.get(FLOW_KEY))
        .and_then(|q| q.get("method"))
        .and_then(Value::as_str);
    match (asked, result.get("requestState")) {
        (Some("elicitation/create"), Some(Value::String(state))) => Ok(state.clone()),
        _ => Err(format!(
            "response to request {id}: not a {FLOW_KEY:?} question with a requestState: {}",
            String::from_utf8_lossy(body)
        )),
    }
}

/// Checks the second leg of a flow: complete, and the handler saw the answer and its own
/// plaintext state (so the sealed state was opened).
///
/// # Errors
/// What is wrong with it.
pub fn check_flow_result(body: &[u8], id: u64, name: &str, stamp: bool) -> Result<(), String> {
    let result = result_of(body, id, "complete", stamp)?;
    let text = first_text(&result).unwrap_or_default();
    if !text.starts_with(&format!("Provisioned '{name}' in {FLOW_REGION}"))
        || !text.contains(&format!("'{FLOW_STATE}'"))
    {
        return Err(format!(
            "response to request {id}: not the provisioned text: {}",
            String::from_utf8_lossy(body)
        ));
    }
    Ok(())
}

#[derive(Serialize)]
struct FloorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: FloorResult<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FloorResult<'a> {
    content: [FloorText<'a>; 1],
    is_error: bool,
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: FloorMeta,
}

#[derive(Serialize)]
struct FloorText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct FloorMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: FloorInfo,
}

#[derive(Serialize)]
struct FloorInfo {
    name: &'static str,
    version: &'static str,
}

/// The floors' whole request handling: parse the body with serde_json into a `Value`, pick the
/// id and `params.arguments.text`, and write the same result body the SDK server sends
/// (`content`, `isError`, `resultType`, `_meta.serverInfo`). `None` when the body is not a
/// `tools/call` the floor can answer.
pub fn floor_response(body: &[u8]) -> Option<Vec<u8>> {
    let request: Value = serde_json::from_slice(body).ok()?;
    let id = request.get("id")?;
    let params = request.get("params")?;
    if request.get("method")?.as_str()? != "tools/call" || params.get("name")?.as_str()? != TOOL {
        return None;
    }
    let text = params.get("arguments")?.get("text")?.as_str()?;
    let response = FloorResponse {
        jsonrpc: "2.0",
        id,
        result: FloorResult {
            content: [FloorText { kind: "text", text }],
            is_error: false,
            result_type: "complete",
            meta: FloorMeta {
                server_info: FloorInfo {
                    name: SERVER_NAME,
                    version: SERVER_VERSION,
                },
            },
        },
    };
    let mut out = Vec::with_capacity(256);
    serde_json::to_writer(&mut out, &response).ok()?;
    Some(out)
}

/// Command-line words, consumed front to back.
#[derive(Debug)]
pub struct Args {
    words: std::vec::IntoIter<String>,
}

impl Args {
    /// This process's arguments (without the program name).
    pub fn from_env() -> Self {
        Self::new(std::env::args().skip(1).collect())
    }

    /// Arguments from a list.
    pub fn new(words: Vec<String>) -> Self {
        Self {
            words: words.into_iter(),
        }
    }

    /// The next word.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<String> {
        self.words.next()
    }

    /// The value of option `flag`.
    ///
    /// # Errors
    /// The value is missing.
    pub fn value(&mut self, flag: &str) -> Result<String, String> {
        self.words
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))
    }

    /// The value of option `flag`, parsed.
    ///
    /// # Errors
    /// The value is missing or does not parse.
    pub fn parsed<T: std::str::FromStr>(&mut self, flag: &str) -> Result<T, String> {
        let raw = self.value(flag)?;
        raw.parse()
            .map_err(|_| format!("{flag}: cannot parse {raw:?}"))
    }

    /// Every remaining word.
    pub fn rest(&mut self) -> Vec<String> {
        self.words.by_ref().collect()
    }
}

/// The tokio runtime the servers run on: multi-threaded (what `#[tokio::main]` builds) unless
/// `current_thread`.
///
/// # Errors
/// The runtime could not start.
pub fn runtime(current_thread: bool) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = if current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    builder.enable_all().build()
}

/// Binds a loopback address (anything else is refused) and, when asked, writes the bound address
/// to `addr_file` (written whole, then renamed into place, so a reader never sees half of it).
///
/// # Errors
/// A non-loopback or unparsable address, or binding / writing errors.
pub async fn bind_loopback(
    addr: &str,
    addr_file: Option<&Path>,
) -> io::Result<tokio::net::TcpListener> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "--http wants IP:PORT"))?;
    if !addr.ip().is_loopback() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "benchmark servers bind loopback addresses only (127.0.0.1)",
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    if let Some(path) = addr_file {
        let bound = listener.local_addr()?;
        let mut tmp = PathBuf::from(path);
        tmp.as_mut_os_string().push(".tmp");
        std::fs::write(&tmp, bound.to_string())?;
        std::fs::rename(&tmp, path)?;
    }
    Ok(listener)
}

/// Completes on SIGTERM or SIGINT: the clean-shutdown trigger of the HTTP servers (callgrind
/// writes its output only when the process exits normally).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers, a signal ends the process the default way.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Writes `message` and a newline to stderr (the binaries keep stdout for protocol or results).
pub fn eprint_line(message: &str) {
    let _ = writeln!(io::stderr().lock(), "{message}");
}
