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

/// The body of `tools/call echo` request `id`: a 2026-07-28 request with the full `_meta`
/// envelope (protocol version, client capabilities, client info). No trailing newline.
pub fn request_body(id: u64, text: &str) -> Vec<u8> {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","#,
            r#""arguments":{{"text":{text}}},"_meta":{{"#,
            r#""io.modelcontextprotocol/protocolVersion":"{version}","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"mcp-load","version":"0.1.0"}}}}}}}}"#
        ),
        id = id,
        text = json_string(text),
        version = PROTOCOL_VERSION,
    )
    .into_bytes()
}

/// Checks one response: the id, no error, one text block carrying `text`, `isError: false`,
/// `resultType: "complete"` and the server stamp.
///
/// # Errors
/// What is wrong with it.
pub fn check_response(body: &[u8], id: u64, text: &str) -> Result<(), String> {
    let fail = |what: &str| {
        Err(format!(
            "response to request {id}: {what}: {}",
            String::from_utf8_lossy(body)
        ))
    };
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return fail("not JSON");
    };
    if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return fail("jsonrpc is not \"2.0\"");
    }
    if value.get("id").and_then(Value::as_u64) != Some(id) {
        return fail("wrong id");
    }
    let Some(result) = value.get("result") else {
        return fail("no result");
    };
    if result.get("resultType").and_then(Value::as_str) != Some("complete") {
        return fail("resultType is not \"complete\"");
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return fail("isError");
    }
    let block = result.get("content").and_then(|c| c.get(0));
    if block.and_then(|b| b.get("type")).and_then(Value::as_str) != Some("text")
        || block.and_then(|b| b.get("text")).and_then(Value::as_str) != Some(text)
    {
        return fail("content is not the echoed text");
    }
    let server = result
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str);
    if server != Some(SERVER_NAME) {
        return fail("no serverInfo stamp");
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
