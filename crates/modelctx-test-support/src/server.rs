//! Shared by the server tests: a fixture server, and raw peers that speak to it over the
//! in-memory pipe (the stdio code path) and over HTTP on 127.0.0.1.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use modelctx::memory;
use modelctx::server::http::HttpConfig;
use modelctx::server::{Change, RequestContext, Server};
use modelctx::types::*;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::oneshot;

pub use crate::json::object;

/// The `_meta` of a 2026-07-28 request with the given client capabilities.
pub fn meta(capabilities: &Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1.0.0"},
    })
}

/// A request with the standard envelope.
pub fn request(id: i64, method: &str, mut params: Value) -> Value {
    params
        .as_object_mut()
        .unwrap()
        .insert("_meta".into(), meta(&json!({})));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The [`fixture`], plus a tool `fail` that reports a failure as a result (`isError`).
pub fn fixture_with_failing_tool() -> Server {
    let server = fixture();
    server
        .add_tool(
            Tool::new("fail", Tool::empty_input_schema()),
            |_ctx, _params| async { CallToolResult::error("the disk is full") },
        )
        .unwrap();
    server
}

/// A server with one of everything.
pub fn fixture() -> Server {
    Server::builder("ladder-test", "1.2.3")
        .instructions("test instructions")
        .tool(
            Tool::new("echo", object(json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}))),
            |_ctx, params: CallToolRequestParams| async move {
                let text = params.arguments.as_ref().and_then(|a| a.get("text")).and_then(Value::as_str).unwrap_or_default().to_owned();
                CallToolResult::text(text)
            },
        )
        .tool(
            Tool::new("regional", object(json!({"type":"object","properties":{
                "region":{"type":"string","x-mcp-header":"Region"},
                "count":{"type":"integer","x-mcp-header":"Count"}}}))),
            |_ctx, _params| async { CallToolResult::text("ok") },
        )
        .tool(Tool::new("needs_sampling", Tool::empty_input_schema()), |ctx: RequestContext, _params| async move {
            ctx.require_capabilities(&ClientCapabilities::new().with_sampling())?;
            Ok::<_, ErrorObject>(CallToolResult::text("sampled"))
        })
        .tool(Tool::new("progress", Tool::empty_input_schema()), |ctx: RequestContext, _params| async move {
            ctx.progress(1.0, Some(2.0), Some("half")).await;
            ctx.progress(2.0, Some(2.0), None).await;
            CallToolResult::text("done")
        })
        .tool(Tool::new("logs", Tool::empty_input_schema()), |ctx: RequestContext, _params| async move {
            ctx.log(LoggingLevel::Debug, None, json!("debug line")).await;
            ctx.log(LoggingLevel::Warning, Some("test"), json!("warning line")).await;
            CallToolResult::text("logged")
        })
        .tool(Tool::new("announce", Tool::empty_input_schema()), |ctx: RequestContext, _params| async move {
            ctx.server().notify(Change::ToolsListChanged);
            ctx.server().notify(Change::ResourceUpdated("test://doc".into()));
            CallToolResult::text("announced")
        })
        .tool(Tool::new("announce_prompts", Tool::empty_input_schema()), |ctx: RequestContext, _params| async move {
            ctx.server().notify(Change::PromptsListChanged);
            CallToolResult::text("announced")
        })
        .tool(Tool::new("ask", Tool::empty_input_schema()), |_ctx, params: CallToolRequestParams| async move {
            match params.request_state.as_deref() {
                Some("asked") => Outcome::Complete(CallToolResult::text("answered")),
                _ => Outcome::InputRequired(InputRequiredResult::new().with_state("asked")),
            }
        })
        .prompt(
            Prompt::new("greet").with_arguments(vec![PromptArgument::new("who").with_required(true)]),
            |_ctx, params: GetPromptRequestParams| async move {
                let who = params.arguments.unwrap_or_default().remove("who").unwrap_or_default();
                GetPromptResult::new(vec![PromptMessage::new(Role::USER, ContentBlock::text(format!("Hello {who}")))])
            },
        )
        .resource(
            Resource::new("test://doc", "doc"),
            |_ctx, params: ReadResourceRequestParams| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, "doc text")])
            },
        )
        .resource_template(
            ResourceTemplate::new("test://items/{id}", "item"),
            |_ctx, params: ReadResourceRequestParams, vars: modelctx::uri_template::UriVariables| async move {
                ReadResourceResult::new(vec![ResourceContents::text(params.uri, None, format!("item {}", vars["id"]))])
            },
        )
        .completion(|_ctx, _params| async { CompleteResult::new(Completion::new((0..150).map(|i| i.to_string()).collect::<Vec<_>>())) })
        .build()
        .unwrap()
}

/// A raw newline-JSON peer on the in-memory pipe: the stdio code path without a process.
#[derive(Debug)]
pub struct StdioPeer {
    writer: WriteHalf<DuplexStream>,
    reader: Lines<BufReader<ReadHalf<DuplexStream>>>,
    /// The serving task; it ends when the peer closes the pipe.
    pub server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl StdioPeer {
    /// Serves `server` on a new in-memory pipe.
    pub fn start(server: Server) -> Self {
        let pipe = memory::pipe();
        let task = tokio::spawn(async move {
            server
                .serve_io(pipe.server.reader, pipe.server.writer)
                .await
        });
        Self {
            writer: pipe.client.writer,
            reader: BufReader::new(pipe.client.reader).lines(),
            server: task,
        }
    }

    /// Writes `line` as it is (add the newline yourself).
    pub async fn send_raw(&mut self, line: &[u8]) {
        self.writer.write_all(line).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    /// Writes `message` as one line.
    pub async fn send(&mut self, message: &Value) {
        self.send_raw(serde_json::to_string(message).unwrap().as_bytes())
            .await;
    }

    /// The next message from the server.
    pub async fn next(&mut self) -> Option<Value> {
        let line = self.reader.next_line().await.unwrap()?;
        Some(serde_json::from_str(&line).expect("server wrote JSON"))
    }

    /// Sends a request and returns its response, collecting the notifications before it.
    pub async fn request(&mut self, message: &Value) -> (Value, Vec<Value>) {
        self.send(message).await;
        let mut notifications = Vec::new();
        loop {
            let reply = self.next().await.expect("server closed before answering");
            if reply.get("id") == message.get("id") && reply.get("method").is_none() {
                return (reply, notifications);
            }
            notifications.push(reply);
        }
    }

    /// Closes our side; the server should finish.
    pub async fn close(mut self) -> std::io::Result<()> {
        self.writer.shutdown().await.unwrap();
        drop(self.writer);
        while self.reader.next_line().await.unwrap().is_some() {}
        self.server.await.unwrap()
    }
}

/// The server on HTTP at 127.0.0.1 on a free port.
#[derive(Debug)]
pub struct HttpPeer {
    /// Where the server listens.
    pub addr: SocketAddr,
    /// `http://<addr>/mcp`.
    pub url: String,
    /// An HTTP client for raw requests.
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
}

impl HttpPeer {
    /// Serves `server` with the default HTTP configuration.
    pub async fn start(server: Server) -> Self {
        Self::start_with(server, HttpConfig::default()).await
    }

    /// Serves `server` with `config`.
    pub async fn start_with(server: Server, config: HttpConfig) -> Self {
        Self::start_configured(server, |_| config).await
    }

    /// Serves `server` with the configuration `configure` builds once the port is known (an
    /// authorization config names the resource's URL, port included).
    pub async fn start_configured(
        server: Server,
        configure: impl FnOnce(SocketAddr) -> HttpConfig,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let config = configure(addr);
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            server
                .serve_http_on(listener, config, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Self {
            addr,
            url: format!("http://localhost:{}/mcp", addr.port()),
            client: reqwest::Client::new(),
            stop: Some(stop),
        }
    }

    /// The standard headers for a body: version, method, and name for the three named methods.
    pub fn standard_headers(body: &Value) -> Vec<(String, String)> {
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let mut headers = vec![
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "mcp-protocol-version".to_owned(),
                body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                    .as_str()
                    .unwrap_or("2026-07-28")
                    .to_owned(),
            ),
            ("mcp-method".to_owned(), method.clone()),
        ];
        let name = match method.as_str() {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            headers.push(("mcp-name".to_owned(), name.to_owned()));
        }
        headers
    }

    /// POSTs `body` with the standard headers adjusted by `overrides` (a `None` value removes
    /// the header). Returns the status, the content type and the messages of the response (one
    /// for JSON, every event for SSE).
    pub async fn post(
        &self,
        body: &Value,
        overrides: &[(&str, Option<&str>)],
    ) -> (u16, String, Vec<Value>) {
        let mut headers = Self::standard_headers(body);
        for (name, value) in overrides {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            if let Some(value) = value {
                headers.push(((*name).to_owned(), (*value).to_owned()));
            }
        }
        let mut request = self
            .client
            .post(&self.url)
            .body(serde_json::to_vec(body).unwrap());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(
            response.headers().get("mcp-session-id").is_none(),
            "a modern response never carries a session id"
        );
        let bytes = response.bytes().await.unwrap();
        let messages = if content_type.starts_with("text/event-stream") {
            let mut parser = modelctx::__fuzz::SseParser::default();
            parser
                .feed(&bytes)
                .unwrap()
                .into_iter()
                .map(|e| serde_json::from_str(&e.data).unwrap())
                .collect()
        } else if bytes.is_empty() {
            Vec::new()
        } else {
            vec![
                serde_json::from_slice(&bytes)
                    .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned())),
            ]
        };
        (status, content_type, messages)
    }

    /// POSTs with the standard headers and returns the status and the final message.
    pub async fn call(&self, body: &Value) -> (u16, Value) {
        let (status, _, messages) = self.post(body, &[]).await;
        (status, messages.last().cloned().unwrap_or(Value::Null))
    }

    /// Opens a 2025-11-25 session (`initialize` with `capabilities`, then
    /// `notifications/initialized`); its `Mcp-Session-Id`.
    pub async fn open_handshake_session(&self, capabilities: &Value) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "0"}}});
        let response = self.handshake_post(&initialize, None).await;
        assert_eq!(response.status(), 200);
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let status = self.handshake_post(&initialized, Some(&id)).await.status();
        assert_eq!(status, 202);
        id
    }

    /// POSTs `body` on the handshake-era path (no 2026 headers), on the 2025-11-25 session
    /// `session` when given (`Mcp-Session-Id` and `MCP-Protocol-Version: 2025-11-25`).
    pub async fn handshake_post(&self, body: &Value, session: Option<&str>) -> reqwest::Response {
        let mut builder = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(session) = session {
            builder = builder
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        builder.send().await.unwrap()
    }
}

/// One event of a stream as a raw client reads it: its `id`, and its message (`None` for an
/// event without data, such as a resumable stream's priming event).
pub type SseEvent = (Option<String>, Option<Value>);

/// The events of an event-stream response, read as they come, each wait bounded (10 s).
#[derive(Debug)]
pub struct SseEvents {
    response: reqwest::Response,
    parser: modelctx::__fuzz::SseParser,
    ready: std::collections::VecDeque<SseEvent>,
}

impl SseEvents {
    /// The reader of `response`, which must be a 200 event stream.
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self {
            response,
            parser: modelctx::__fuzz::SseParser::default(),
            ready: std::collections::VecDeque::new(),
        }
    }

    /// The next event, or `None` once the stream ended (or broke).
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        let read = async {
            while self.ready.is_empty() {
                let chunk = self.response.chunk().await.ok()??;
                for event in self.parser.feed(&chunk).unwrap() {
                    let message = (!event.data.is_empty())
                        .then(|| serde_json::from_str(&event.data).unwrap());
                    self.ready.push_back((event.id, message));
                }
            }
            self.ready.pop_front()
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), read)
            .await
            .expect("the stream moves on within 10 s")
    }

    /// The next message with its event's id, skipping events without data; `None` once the
    /// stream ended.
    pub async fn next_message(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            if let (id, Some(message)) = self.next_event().await? {
                return Some((id, message));
            }
        }
    }

    /// Every message until the stream ends.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        while let Some((_, message)) = self.next_message().await {
            messages.push(message);
        }
        messages
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Collects what a `fmt` subscriber writes.
#[derive(Debug, Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("the capture buffer is poisoned"))?
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The log lines captured so far.
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The capture of the test running on this thread, and its level.
type Sink = Option<(Captured, tracing::Level)>;

thread_local! {
    static SINK: std::cell::RefCell<Sink> = const { std::cell::RefCell::new(None) };
}

/// Where the binary's one global subscriber writes: the capture of the test on the current
/// thread, for events at its level and above; nowhere otherwise.
#[derive(Debug, Clone, Copy)]
struct ThreadSink;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for ThreadSink {
    type Writer = Box<dyn Write>;

    fn make_writer(&'a self) -> Self::Writer {
        Box::new(std::io::sink())
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        SINK.with(|sink| match &*sink.borrow() {
            Some((captured, level)) if meta.level() <= level => {
                Box::new(captured.clone()) as Box<dyn Write>
            }
            _ => Box::new(std::io::sink()),
        })
    }
}

/// Ends a capture when dropped.
#[derive(Debug)]
pub struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        SINK.with(|sink| sink.borrow_mut().take());
    }
}

/// Captures what the server logs at `level` and above while the guard lives. The test runtime
/// has one thread, so the server's tasks log on the test's thread.
///
/// One global subscriber (installed on first use) writes to the
/// capture of the current thread's test. Not a scoped `set_default` per test: tracing caches
/// each call site's interest process-wide, and with tests creating and dropping scoped
/// subscribers on parallel threads a call site could be left disabled for a test that wants it
/// (a WARN line went missing under load, 2 runs in ~10).
pub fn capture_logs(level: tracing::Level) -> (Captured, CaptureGuard) {
    global_subscriber();
    let captured = Captured::default();
    SINK.with(|sink| *sink.borrow_mut() = Some((captured.clone(), level)));
    (captured, CaptureGuard(()))
}

/// The test binary's one global subscriber: the log lines of [`capture_logs`] (events only: the
/// lines are about what the event says, not the spans it happens in) and the spans of
/// [`capture_spans`].
fn global_subscriber() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::{Layer as _, filter};
    static GLOBAL: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    GLOBAL.get_or_init(|| {
        let lines = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(ThreadSink)
            .with_filter(filter::filter_fn(|meta| meta.is_event()));
        let subscriber = tracing_subscriber::registry().with(lines).with(SpanSink);
        tracing::subscriber::set_global_default(subscriber)
            .expect("the test-support subscriber owns the test binary's global subscriber");
    });
}

/// One span, as it was when it closed: its name and its fields (strings as they are, other
/// values in their `Debug` form).
#[derive(Debug, Clone, Default)]
pub struct SpanRecord {
    /// The span's name (its call site's).
    pub name: String,
    /// Field name → value.
    pub fields: std::collections::BTreeMap<String, String>,
}

impl SpanRecord {
    /// The value of `field`, if it was recorded.
    pub fn field(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(String::as_str)
    }
}

/// The spans closed on the test's thread while its [`SpanGuard`] lives.
#[derive(Debug, Clone, Default)]
pub struct CapturedSpans(Arc<Mutex<Vec<SpanRecord>>>);

impl CapturedSpans {
    /// The spans closed so far, in closing order.
    pub fn spans(&self) -> Vec<SpanRecord> {
        self.0.lock().unwrap().clone()
    }

    /// The closed spans named `name`.
    pub fn named(&self, name: &str) -> Vec<SpanRecord> {
        self.spans()
            .into_iter()
            .filter(|span| span.name == name)
            .collect()
    }
}

thread_local! {
    static SPANS: std::cell::RefCell<Option<CapturedSpans>> = const { std::cell::RefCell::new(None) };
}

/// Ends a span capture when dropped.
#[derive(Debug)]
pub struct SpanGuard(());

impl Drop for SpanGuard {
    fn drop(&mut self) {
        SPANS.with(|spans| spans.borrow_mut().take());
    }
}

/// Captures the spans created and closed on this thread while the guard lives (a current-thread
/// test runtime: the server's tasks run on the test's thread). Shares [`capture_logs`]'s global
/// subscriber.
pub fn capture_spans() -> (CapturedSpans, SpanGuard) {
    global_subscriber();
    let captured = CapturedSpans::default();
    SPANS.with(|spans| *spans.borrow_mut() = Some(captured.clone()));
    (captured, SpanGuard(()))
}

/// Writes a span's fields into its [`SpanRecord`].
struct Fields<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// The layer behind [`capture_spans`]: a record per span made while a capture is on, kept in
/// the span's extensions until it closes.
struct SpanSink;

impl<S> tracing_subscriber::Layer<S> for SpanSink
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if SPANS.with(|spans| spans.borrow().is_none()) {
            return;
        }
        let mut record = SpanRecord {
            name: attributes.metadata().name().to_owned(),
            fields: std::collections::BTreeMap::new(),
        };
        attributes.record(&mut Fields(&mut record.fields));
        if let Some(span) = context.span(id) {
            span.extensions_mut().insert(record);
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(span) = context.span(id)
            && let Some(record) = span.extensions_mut().get_mut::<SpanRecord>()
        {
            values.record(&mut Fields(&mut record.fields));
        }
    }

    fn on_close(&self, id: tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        let Some(record) = context
            .span(&id)
            .and_then(|span| span.extensions_mut().remove::<SpanRecord>())
        else {
            return;
        };
        SPANS.with(|spans| {
            if let Some(captured) = &*spans.borrow() {
                captured.0.lock().unwrap().push(record);
            }
        });
    }
}

/// Serves `server` over streamable HTTP on 127.0.0.1 (a free port) in the background, for as long
/// as the test's runtime lives; returns its MCP endpoint URL.
pub async fn serve_http_background(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        server
            .serve_http_on(listener, HttpConfig::default(), std::future::pending())
            .await
    });
    url
}

/// This test binary re-run as a stdio server child: it runs only the ignored test `entry`, which
/// serves when `marker` is set in its environment. Its stderr is dropped; libtest's own lines on
/// stdout are not JSON-RPC, and the client skips them.
pub fn stdio_child(entry: &str, marker: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .args([entry, "--exact", "--ignored", "--quiet"])
        .env(marker, "1")
        .stderr(std::process::Stdio::null());
    command
}
