//! The host side of the MCP Apps protocol, for one app in one page.
//!
//! The app starts with `ui/initialize`; we answer with who we are, what we offer
//! (`hostCapabilities`: links, the server's tools and resources, logging, messages, model
//! context, the sandbox we applied) and the context (`hostContext`: the tool, display modes,
//! the container). Once it says `ui/notifications/initialized` — and never before, as the spec
//! requires — it gets the tool's arguments (`ui/notifications/tool-input`) and result
//! (`ui/notifications/tool-result`). Then it may call the server's tools and read its
//! resources (`proxy.rs`), send messages (printed on stdout) and logs (stderr), ask to open a
//! link (asked in the terminal), switch between inline and fullscreen, report its size, and
//! update the model context (said on stderr; there is no model here). When the session ends —
//! Ctrl-C, `--timeout`, or the app asking — the app is told (`ui/resource-teardown`) and given
//! [`TEARDOWN_WAIT`] to answer.
//!
//! What the app sends is hostile: it has been checked for shape (`message.rs`), its text is
//! printed escaped, its numbers are clamped, and at most [`MAX_IN_FLIGHT`] of its requests run
//! at once. Every call it makes on the server is logged on stderr, refused or not.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use modelctx::client::Client;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::app::channel::Channel;
use crate::app::message::{AppMessage, error, notification, result};
use crate::app::proxy::{self, Answer, Failure, METHOD_NOT_FOUND, REFUSED};
use crate::ask::Asker;
use crate::safe_text::{clip, json_line, line};

/// The MCP Apps protocol revision we speak.
const PROTOCOL_VERSION: &str = "2026-01-26";

/// How long the app has to answer `ui/resource-teardown`.
pub(crate) const TEARDOWN_WAIT: Duration = Duration::from_secs(3);

/// The id of our `ui/resource-teardown` request.
const TEARDOWN_ID: &str = "mcp-teardown";

/// At most this many of the app's requests run at once (tool calls, reads, links).
const MAX_IN_FLIGHT: usize = 8;

/// The display modes this host offers.
const DISPLAY_MODES: [&str; 2] = ["inline", "fullscreen"];

/// The most characters of one message, log line or name of the app's printed.
const MAX_PRINTED: usize = 4096;

/// The tallest the app may make its frame, in pixels.
const MAX_HEIGHT: f64 = 10_000.0;

/// Why the session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Ctrl-C.
    Interrupted,
    /// `--timeout`.
    TimedOut,
    /// The app asked (`ui/notifications/request-teardown`).
    AppAsked,
}

/// The tool the app shows, and what the server has.
#[derive(Debug)]
pub(crate) struct Shown {
    /// The tool's listing.
    pub(crate) tool: Value,
    /// The arguments it was called with.
    pub(crate) arguments: Map<String, Value>,
    /// Its result (a `CallToolResult`).
    pub(crate) result: Value,
    /// Every tool the server listed (which of them the app may call).
    pub(crate) tools: Vec<Value>,
    /// `hostCapabilities.sandbox`: the domains and permissions applied.
    pub(crate) sandbox: Value,
}

/// One app's session.
#[derive(Debug)]
pub(crate) struct Session {
    client: Client,
    asker: Arc<Asker>,
    channel: Arc<Channel>,
    shown: Shown,
    /// Whether the app has said `ui/notifications/initialized`.
    initialized: bool,
    display_mode: &'static str,
    /// The display modes the app declared, if it did.
    app_modes: Option<Vec<String>>,
    in_flight: JoinSet<(Value, Answer)>,
}

impl Session {
    pub(crate) fn new(
        client: Client,
        asker: Arc<Asker>,
        channel: Arc<Channel>,
        shown: Shown,
    ) -> Self {
        Self {
            client,
            asker,
            channel,
            shown,
            initialized: false,
            display_mode: "inline",
            app_modes: None,
            in_flight: JoinSet::new(),
        }
    }

    /// Serves the app until Ctrl-C, `deadline` or the app's asking, then tears it down.
    pub(crate) async fn run(
        mut self,
        mut inbound: mpsc::Receiver<AppMessage>,
        deadline: Option<Instant>,
    ) -> Ending {
        let mut interrupt = pin!(tokio::signal::ctrl_c());
        let mut out_of_time = pin!(async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        });
        let ending = loop {
            tokio::select! {
                Some(message) = inbound.recv() => {
                    if self.handle(message) {
                        break Ending::AppAsked;
                    }
                }
                Some(Ok((id, answer))) = self.in_flight.join_next(), if !self.in_flight.is_empty() => {
                    self.channel.to_app(answer_for(&id, answer));
                }
                _ = &mut interrupt => break Ending::Interrupted,
                () = &mut out_of_time => break Ending::TimedOut,
            }
        };
        self.teardown(&mut inbound, ending).await;
        ending
    }

    /// Handles one message; `true` when the app asks to be torn down.
    fn handle(&mut self, message: AppMessage) -> bool {
        match message {
            AppMessage::Request { id, method, params } => self.request(id, &method, &params),
            AppMessage::Notification { method, params } => {
                return self.notification(&method, &params);
            }
            // Only our teardown request is answered, and that is awaited in `teardown`.
            AppMessage::Response { .. } => {}
        }
        false
    }

    fn request(&mut self, id: Value, method: &str, params: &Map<String, Value>) {
        let answer = match method {
            "ui/initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "ui/message" => Ok(print_message(params)),
            "ui/update-model-context" => Ok(note_model_context(params)),
            "ui/request-display-mode" => Ok(self.display_mode(params)),
            "tools/call" | "resources/read" | "ui/open-link" => {
                return self.start(id, method, params);
            }
            _ => Err(Failure::new(
                METHOD_NOT_FOUND,
                format!("{method} is not offered by this host"),
            )),
        };
        self.channel.to_app(answer_for(&id, answer));
    }

    /// Starts a request that takes time; its answer goes out when it ends.
    fn start(&mut self, id: Value, method: &str, params: &Map<String, Value>) {
        if self.in_flight.len() >= MAX_IN_FLIGHT {
            let busy = Failure::new(REFUSED, "too many requests in flight");
            self.channel.to_app(answer_for(&id, Err(busy)));
            return;
        }
        let client = self.client.clone();
        let work: std::pin::Pin<Box<dyn Future<Output = Answer> + Send>> = match method {
            "tools/call" => match proxy::app_tool_call(&self.shown.tools, params) {
                Ok(call) => {
                    eprintln!("the app calls tool {}", line(&clip(&call.name, 200)));
                    Box::pin(proxy::call_tool(client, call))
                }
                Err(refused) => {
                    eprintln!(
                        "refused the app's tools/call: {}",
                        line(&clip(&refused.message, MAX_PRINTED))
                    );
                    self.channel.to_app(answer_for(&id, Err(refused)));
                    return;
                }
            },
            "resources/read" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    let bad = Failure::new(proxy::INVALID_PARAMS, "resources/read needs a uri");
                    self.channel.to_app(answer_for(&id, Err(bad)));
                    return;
                };
                eprintln!("the app reads {}", line(&clip(uri, MAX_PRINTED)));
                Box::pin(proxy::read_resource(client, uri.to_owned()))
            }
            _ => match proxy::link(params) {
                Ok(url) => Box::pin(proxy::open_link(Arc::clone(&self.asker), url)),
                Err(bad) => {
                    self.channel.to_app(answer_for(&id, Err(bad)));
                    return;
                }
            },
        };
        self.in_flight.spawn(async move { (id, work.await) });
    }

    /// The answer to `ui/initialize`.
    fn initialize(&mut self, params: &Map<String, Value>) -> Value {
        let app = params.get("appInfo");
        let name = app.and_then(|a| a.get("name")).and_then(Value::as_str);
        let version = app.and_then(|a| a.get("version")).and_then(Value::as_str);
        eprintln!(
            "the app started: {} {}",
            line(&clip(name.unwrap_or("(unnamed)"), 200)),
            line(&clip(version.unwrap_or(""), 200))
        );
        self.initialized = false;
        self.app_modes = params
            .get("appCapabilities")
            .and_then(|c| c.get("availableDisplayModes"))
            .and_then(Value::as_array)
            .map(|modes| {
                modes
                    .iter()
                    .take(8)
                    .filter_map(|m| m.as_str().map(str::to_owned))
                    .collect()
            });
        // One revision exists; an app that asks for another gets ours, and may give up.
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "hostInfo": {"name": "modelctx-cli", "version": env!("CARGO_PKG_VERSION")},
            "hostCapabilities": {
                "openLinks": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "message": {"text": {}},
                "updateModelContext": {"text": {}, "structuredContent": {}},
                "sandbox": self.shown.sandbox,
            },
            "hostContext": {
                "toolInfo": {"tool": self.shown.tool},
                "displayMode": self.display_mode,
                "availableDisplayModes": DISPLAY_MODES,
                "containerDimensions": {"maxHeight": MAX_HEIGHT},
                "platform": "web",
                "userAgent": concat!("modelctx-cli/", env!("CARGO_PKG_VERSION")),
            },
        })
    }

    /// Handles a notification; `true` when the app asks to be torn down.
    fn notification(&mut self, method: &str, params: &Map<String, Value>) -> bool {
        match method {
            "ui/notifications/initialized" => {
                self.initialized = true;
                let arguments = Value::Object(self.shown.arguments.clone());
                self.channel.to_app(notification(
                    "ui/notifications/tool-input",
                    json!({"arguments": arguments}),
                ));
                self.channel.to_app(notification(
                    "ui/notifications/tool-result",
                    self.shown.result.clone(),
                ));
            }
            "ui/notifications/size-changed" => {
                if let Some(height) = params.get("height").and_then(Value::as_f64)
                    && height.is_finite()
                {
                    self.channel
                        .to_page(json!({"height": height.clamp(0.0, MAX_HEIGHT).ceil()}));
                }
            }
            "notifications/message" => print_log(params),
            "ui/notifications/request-teardown" => return true,
            _ => {}
        }
        false
    }

    /// `ui/request-display-mode`: a mode both sides support is switched to; the answer is the
    /// mode in force.
    fn display_mode(&mut self, params: &Map<String, Value>) -> Value {
        let asked = params
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let app_has = self
            .app_modes
            .as_ref()
            .is_none_or(|modes| modes.iter().any(|m| m == asked));
        if let Some(mode) = DISPLAY_MODES.iter().find(|m| **m == asked)
            && app_has
            && *mode != self.display_mode
        {
            self.display_mode = mode;
            self.channel.to_page(json!({"displayMode": mode}));
            if self.initialized {
                self.channel.to_app(notification(
                    "ui/notifications/host-context-changed",
                    json!({"displayMode": mode}),
                ));
            }
        }
        json!({"mode": self.display_mode})
    }

    /// Tells the app it is being torn down and waits (a while) for its answer.
    async fn teardown(&mut self, inbound: &mut mpsc::Receiver<AppMessage>, ending: Ending) {
        self.in_flight.abort_all();
        let reason = match ending {
            Ending::Interrupted => "the user closed mcp app (Ctrl-C)",
            Ending::TimedOut => "mcp app's --timeout ran out",
            Ending::AppAsked => "the app asked to close",
        };
        if self.initialized {
            let request = json!({"jsonrpc": "2.0", "id": TEARDOWN_ID,
                "method": "ui/resource-teardown", "params": {"reason": reason}});
            if self.channel.to_app(request) {
                let answered = tokio::time::timeout(TEARDOWN_WAIT, async {
                    while let Some(message) = inbound.recv().await {
                        if matches!(&message, AppMessage::Response { id, .. } if id == TEARDOWN_ID)
                        {
                            return;
                        }
                    }
                })
                .await;
                match answered {
                    Ok(()) => eprintln!("the app answered ui/resource-teardown"),
                    Err(_) => eprintln!(
                        "the app did not answer ui/resource-teardown within {} s",
                        TEARDOWN_WAIT.as_secs()
                    ),
                }
            }
        }
        self.channel
            .to_page(json!({"status": format!("closed: {reason}"), "closed": true}));
        eprintln!("app closed: {reason}");
    }
}

/// The JSON-RPC answer to the app's request `id`.
fn answer_for(id: &Value, answer: Answer) -> Value {
    match answer {
        Ok(value) => result(id, value),
        Err(failure) => error(id, failure.code, &failure.message),
    }
}

/// `ui/update-model-context`: said on stderr. A chat host keeps the last one for the model's
/// next turn; here there is no model to give it to.
fn note_model_context(params: &Map<String, Value>) -> Value {
    let blocks = params
        .get("content")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let structured = params.contains_key("structuredContent");
    eprintln!(
        "the app updated the model context: {blocks} content block(s){}",
        if structured {
            " and structured content"
        } else {
            ""
        }
    );
    json!({})
}

/// `ui/message`: its text on stdout, a line per block (escaped: it is the app's text).
fn print_message(params: &Map<String, Value>) -> Value {
    let blocks = match params.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => Vec::new(),
    };
    for block in &blocks {
        match block.get("text").and_then(Value::as_str) {
            Some(text) => println!("message from the app: {}", line(&clip(text, MAX_PRINTED))),
            None => println!(
                "message from the app: [{} content]",
                line(
                    block
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                )
            ),
        }
    }
    json!({})
}

/// `notifications/message`: the app's log line on stderr.
fn print_log(params: &Map<String, Value>) {
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .unwrap_or("info");
    let data = match params.get("data") {
        Some(Value::String(text)) => line(&clip(text, MAX_PRINTED)).into_owned(),
        Some(other) => json_line(other),
        None => String::new(),
    };
    eprintln!(
        "app log [{}]: {}",
        line(&clip(level, 40)),
        clip(&data, MAX_PRINTED)
    );
}
