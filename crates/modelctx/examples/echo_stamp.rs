//! A third-party extension, `com.example/echo-stamp`, on both sides, written against the SDK's
//! public API alone (SEP-2133; `modelctx::server::extension`, `modelctx::client::extension`).
//!
//! * **Server** ([`EchoStamp`]): advertises `{"stampPrefix": …}` and adds a method,
//!   `echo-stamp/echo`, that echoes a text with a stamp — upper-cased for clients that
//!   advertise `{"uppercase": true}` — and a tool, `stamp_later`, that answers with the
//!   extension's own `resultType: "stamped"` (a ticket to redeem) instead of a tool result.
//! * **Client** ([`EchoStampClient`]): advertises `{"uppercase": true}`, and claims `"stamped"`:
//!   its resolver redeems the ticket with a follow-up `echo-stamp/echo` on the session, so that
//!   `Client::call_tool("stamp_later", …)` returns an ordinary tool result.
//!
//! The client reads the server's `stampPrefix` from what the server advertised
//! (`Client::server_extension`) and checks the stamps against it. Run it with
//! `cargo run -p modelctx --example echo_stamp`: a server and a client in process, over an
//! in-memory pipe, in both eras. `tests/extension_example.rs` runs it too.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use modelctx::client::extension::{ClientExtension, ResultClaim};
use modelctx::client::{Client, ClientError, Mode, RequestOptions, RoundOutcome};
use modelctx::server::extension::{Contributions, Extension, MethodBinding};
use modelctx::server::{RequestContext, Server};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, ErrorObject, ExtensionId, ExtensionResult, Extra,
    Method, Outcome, RequestMeta, RequestParams, ResultType, Tool,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The extension's identifier.
pub const ECHO_STAMP: &str = "com.example/echo-stamp";

fn echo_stamp_id() -> ExtensionId {
    ECHO_STAMP.parse().expect("a valid extension id")
}

// ---- the wire: one method, one result type ----

/// `echo-stamp/echo`: `{"text"}` → `{"text", "stamp"}`.
#[derive(Debug)]
pub struct Echo;

impl Method for Echo {
    const NAME: &'static str = "echo-stamp/echo";
    type Params = EchoParams;
    type Result = Echoed;
}

/// The params of `echo-stamp/echo`.
#[derive(Debug, Serialize, Deserialize)]
pub struct EchoParams {
    /// What to echo.
    pub text: String,
    /// The request's `_meta` (the client stamps its envelope here).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<RequestMeta>>,
}

impl RequestParams for EchoParams {
    fn meta(&self) -> Option<&RequestMeta> {
        self.meta.as_deref()
    }
    fn meta_mut(&mut self) -> &mut Option<Box<RequestMeta>> {
        &mut self.meta
    }
}

/// The result of `echo-stamp/echo`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Echoed {
    /// The text, upper-cased for clients that asked.
    pub text: String,
    /// `<stampPrefix>-<n>`.
    pub stamp: String,
}

/// The extension's `resultType` on `tools/call`.
pub const STAMPED: &str = "stamped";

// ---- the server side ----

/// The server side: settings, a method, a tool answering the extension's result type.
#[derive(Debug)]
pub struct EchoStamp {
    prefix: String,
    counter: Arc<AtomicU64>,
}

impl EchoStamp {
    /// Stamps with `prefix`.
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            counter: Arc::default(),
        }
    }
}

impl Extension for EchoStamp {
    fn id(&self) -> ExtensionId {
        echo_stamp_id()
    }

    fn settings(&self) -> Extra {
        let mut settings = Extra::new();
        settings.insert("stampPrefix".into(), json!(self.prefix));
        settings
    }

    fn contribute(&self, contributions: &mut Contributions) {
        let (prefix, counter) = (self.prefix.clone(), Arc::clone(&self.counter));
        let echo = move |ctx: RequestContext, params: Value| {
            // What the client advertised for this extension, on this very request.
            let uppercase = ctx
                .client_capabilities()
                .extensions
                .as_ref()
                .and_then(|extensions| extensions.get(ECHO_STAMP))
                .and_then(|settings| settings["uppercase"].as_bool())
                .unwrap_or(false);
            let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
            let stamp = format!("{prefix}-{n}");
            async move {
                let Some(text) = params["text"].as_str() else {
                    return Err(ErrorObject::invalid_params(
                        "Invalid params: text must be a string",
                    ));
                };
                let text = if uppercase {
                    text.to_uppercase()
                } else {
                    text.to_owned()
                };
                Ok(json!({"text": text, "stamp": stamp}))
            }
        };
        match MethodBinding::new(Echo::NAME, echo) {
            Ok(binding) => contributions.method(binding),
            Err(refused) => contributions.refuse(modelctx::server::RegistrationError::Extension {
                id: ECHO_STAMP.into(),
                reason: refused.to_string(),
            }),
        };
        // Answers with a ticket of the extension's own result type, which clients that
        // claim it redeem (and others refuse as an unknown `resultType`).
        let later = |_ctx: RequestContext, params: CallToolRequestParams| async move {
            let text = params.arguments.unwrap_or_default()["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let ticket = json!({"resultType": STAMPED, "ticket": text});
            let raw = serde_json::value::to_raw_value(&ticket)
                .map_err(|e| ErrorObject::internal(e.to_string()))?;
            Ok::<_, ErrorObject>(Outcome::<CallToolResult>::Extension(ExtensionResult::new(
                ResultType::new(STAMPED),
                raw,
            )))
        };
        contributions.tool(Tool::new("stamp_later", Tool::empty_input_schema()), later);
    }
}

// ---- the client side ----

/// The client side: asks for upper case, and redeems `"stamped"` tickets.
#[derive(Debug)]
pub struct EchoStampClient;

impl ClientExtension for EchoStampClient {
    fn id(&self) -> ExtensionId {
        echo_stamp_id()
    }

    fn settings(&self) -> Extra {
        let mut settings = Extra::new();
        settings.insert("uppercase".into(), json!(true));
        settings
    }

    fn claims(&self) -> Vec<ResultClaim> {
        let redeem = ResultClaim::new(STAMPED, |claimed, context| async move {
            #[derive(Deserialize)]
            struct Ticket {
                ticket: String,
            }
            let ticket: Ticket = serde_json::from_str(claimed.raw.get())
                .map_err(|e| ClientError::InvalidArgument(format!("a malformed ticket: {e}")))?;
            let params = EchoParams {
                text: ticket.ticket,
                meta: None,
            };
            match context
                .session()
                .request::<Echo>(params, &RequestOptions::new())
                .await?
            {
                RoundOutcome::Complete(echoed) => Ok(CallToolResult::text(format!(
                    "{} [{}]",
                    echoed.text, echoed.stamp
                ))),
                RoundOutcome::InputRequired(_) => Err(ClientError::InvalidArgument(
                    "echo-stamp/echo never asks for input".into(),
                )),
            }
        });
        vec![redeem.expect("\"stamped\" is no core resultType")]
    }
}

// ---- the two together ----

/// Serves an `EchoStamp` server in process and runs the client against it in `mode`; returns
/// what the client saw, checked.
pub async fn demo(mode: Mode) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let server = Server::builder("stamps", "1.0.0")
        .extension(EchoStamp::new("srv"))
        .build()?;
    let pipe = modelctx::memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });
    let client = Client::builder()
        .mode(mode)
        .client_extension(EchoStampClient)
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await?;
    let mut seen = Vec::new();
    // The setting the server advertised, read from its capabilities.
    let prefix = client
        .server_extension(ECHO_STAMP)
        .and_then(|settings| settings["stampPrefix"].as_str().map(str::to_owned))
        .ok_or("the server does not advertise com.example/echo-stamp")?;
    seen.push(format!("server stampPrefix = {prefix}"));
    // The method, called directly.
    let params = EchoParams {
        text: "hello".into(),
        meta: None,
    };
    let RoundOutcome::Complete(echoed) = client
        .session()
        .request::<Echo>(params, &RequestOptions::new())
        .await?
    else {
        return Err("echo-stamp/echo asked for input".into());
    };
    if echoed.text != "HELLO" || !echoed.stamp.starts_with(&format!("{prefix}-")) {
        return Err(format!("unexpected echo {echoed:?}").into());
    }
    seen.push(format!("echo: {} [{}]", echoed.text, echoed.stamp));
    // The tool whose result the client's claim redeems.
    let redeemed = client
        .call_tool("stamp_later", json!({"text": "later"}))
        .await?;
    let text = redeemed.first_text().unwrap_or_default().to_owned();
    if !text.starts_with("LATER [") || !text.contains(&format!("{prefix}-")) {
        return Err(format!("unexpected redeemed result {text:?}").into());
    }
    seen.push(format!("stamp_later: {text}"));
    client.close().await?;
    Ok(seen)
}

#[allow(clippy::print_stdout, reason = "the example shows what the client saw")]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (era, mode) in [("2026-07-28", Mode::Auto), ("2025-11-25", Mode::Handshake)] {
        for line in demo(mode).await? {
            println!("{era}: {line}");
        }
    }
    Ok(())
}
