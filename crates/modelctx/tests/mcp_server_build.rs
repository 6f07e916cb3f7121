//! Registration errors `McpServer::build` reports (those the macros cannot see), the closure
//! builder API, and the back-channel hook that answers the same resolvers without an
//! `InputRequiredResult` (the handshake-era path).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use modelctx::server::RegistrationError;
use modelctx::server::{
    BackChannel, BuildError, Context, Elicit, HandlerFuture, Interrupt, McpServer, Resolution,
    ResolverInfo, ToolDefinition,
};
use modelctx::types::{
    CallToolResult, ErrorObject, Extra, InputRequest, InputRequiredResult, Outcome, Resource,
    ResourceTemplate, Tool,
};
use modelctx::{resolver, resource, tool};
use modelctx_test_support::server::StdioPeer;
use serde_json::{Value, json};

#[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

#[resolver]
async fn confirm(title: String) -> Elicit<Confirm> {
    Elicit::new(format!("Order '{title}'?"))
}

/// Echo.
#[tool]
async fn echo(text: String) -> String {
    text
}

type Hidden = Outcome<String>;

/// A static resource whose return type (behind an alias the macro cannot read) could ask.
#[resource("info://hidden")]
async fn hidden() -> Hidden {
    Outcome::Complete("x".to_owned())
}

/// A hand-written tool definition whose resolver needs an argument (`title`) that the tool's
/// schema lacks: the macro would refuse it at compile time; the builder refuses it at build.
struct HandWritten;

/// Takes no state.
impl<S> modelctx::server::UsesState<S> for HandWritten {}

impl ToolDefinition for HandWritten {
    const RESOLVERS: &'static [&'static ResolverInfo] =
        &[&<confirm as modelctx::server::Resolver>::INFO];
    const ASKS: bool = false;
    fn tool() -> Tool {
        Tool::new("hand_written", Tool::empty_input_schema())
    }
    fn call(_ctx: Context, _arguments: Extra) -> HandlerFuture<CallToolResult> {
        Box::pin(async { Ok(Outcome::Complete(CallToolResult::text("never"))) })
    }
}

#[test]
fn a_static_resource_that_can_ask_is_refused() {
    let error = McpServer::builder("s", "1")
        .resource::<hidden>()
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::StaticResourceAsks {
            uri: "info://hidden".into()
        }
    );
    let resource = Resource::new("info://closure", "closure");
    let error = McpServer::builder("s", "1")
        .resource_fn(resource, |_ctx| async {
            Outcome::InputRequired::<String>(InputRequiredResult::new().with_state("x"))
        })
        .build()
        .unwrap_err();
    assert!(
        error.to_string().starts_with(
            "static resource \"info://closure\" cannot ask for input: only resource templates"
        ),
        "{error}"
    );
}

#[test]
fn an_unknown_resolver_argument_is_refused() {
    let error = McpServer::builder("s", "1")
        .tool::<HandWritten>()
        .build()
        .unwrap_err();
    let BuildError::UnknownResolverArgument {
        kind,
        name,
        message,
    } = error
    else {
        panic!("{error:?}");
    };
    assert_eq!((kind, name.as_str()), ("tool", "hand_written"));
    assert!(
        message.starts_with("resolver `confirm` takes `title` by name"),
        "{message}"
    );
}

#[test]
fn low_level_refusals_surface_at_build() {
    let error = McpServer::builder("s", "1")
        .tool::<echo>()
        .tool::<echo>()
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::Registration(RegistrationError::Duplicate {
            kind: "tool",
            name: "echo".into()
        })
    );
    let template = ResourceTemplate::new("files://{a}{b}", "bad");
    let error = McpServer::builder("s", "1")
        .resource_template_fn(template, |_ctx, _vars| async { String::new() })
        .build()
        .unwrap_err();
    assert!(
        matches!(
            error,
            BuildError::Registration(RegistrationError::InvalidTemplate(_))
        ),
        "{error:?}"
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first term.
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    who: String,
    mood: Option<String>,
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

fn request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn closures_register_typed_tools_prompts_and_resources() {
    let template = ResourceTemplate::new("files://{name}", "file").with_mime_type("text/plain");
    let server = McpServer::builder("closures", "1")
        .tool_fn("add", "Adds.", |_ctx, args: AddArgs| async move {
            Ok::<_, String>((args.a + args.b).to_string())
        })
        .prompt_fn("greet", "Greets.", |_ctx, args: GreetArgs| async move {
            format!("Greet {} ({})", args.who, args.mood.unwrap_or_default())
        })
        .resource_template_fn(template, |_ctx, vars| async move {
            format!("contents of {}", vars["name"])
        })
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server.into_server());
    let (response, _) = peer.request(&request(1, "tools/list", json!({}))).await;
    let add = &response["result"]["tools"][0];
    assert_eq!(add["description"], "Adds.");
    assert_eq!(
        add["inputSchema"]["properties"]["a"],
        json!({"type": "integer", "format": "int64", "description": "The first term."})
    );
    let (response, _) = peer
        .request(&request(
            2,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        ))
        .await;
    assert_eq!(response["result"]["content"][0]["text"], "5");
    let (response, _) = peer.request(&request(3, "prompts/list", json!({}))).await;
    assert_eq!(
        response["result"]["prompts"][0]["arguments"],
        json!([{"name": "mood", "required": false}, {"name": "who", "required": true}])
    );
    let (response, _) = peer
        .request(&request(
            4,
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "Ada"}}),
        ))
        .await;
    assert_eq!(
        response["result"]["messages"][0]["content"]["text"],
        "Greet Ada ()"
    );
    let (response, _) = peer
        .request(&request(
            5,
            "resources/read",
            json!({"uri": "files://notes"}),
        ))
        .await;
    assert_eq!(
        response["result"]["contents"],
        json!([{"uri": "files://notes", "mimeType": "text/plain", "text": "contents of notes"}])
    );
}

/// A back-channel that answers every question at once and records it.
#[derive(Default)]
struct Immediate(Mutex<Vec<InputRequest>>);

impl BackChannel for Immediate {
    fn ask(
        &self,
        request: InputRequest,
    ) -> modelctx::server::BoxFuture<'static, Result<Value, ErrorObject>> {
        self.0.lock().unwrap().push(request);
        Box::pin(async { Ok(json!({"action": "accept", "content": {"ok": true}})) })
    }
}

#[tokio::test]
async fn a_back_channel_answers_the_same_resolvers_mid_call() {
    let channel = Arc::new(Immediate::default());
    let seen = Arc::clone(&channel);
    let server = McpServer::builder("handshake-hook", "1")
        .tool_fn(
            "order",
            "Orders.",
            move |ctx: Context, args: BTreeMap<String, String>| {
                let channel = Arc::clone(&channel);
                async move {
                    // What the handshake transport will do for a handshake-era request.
                    let ctx = ctx.with_back_channel(channel);
                    let arguments: Extra =
                        args.into_iter().map(|(k, v)| (k, Value::from(v))).collect();
                    let resolution = Resolution::new(ctx, arguments);
                    match resolution.resolve::<confirm>().await {
                        Ok(outcome) => {
                            Ok(format!("ok={}", outcome.accepted().is_some_and(|c| c.ok)))
                        }
                        Err(Interrupt::Protocol(error)) => Err(error.to_string()),
                        Err(other) => Err(format!("{other:?}")),
                    }
                }
            },
        )
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server.into_server());
    let (response, _) = peer
        .request(&request(
            1,
            "tools/call",
            json!({"name": "order", "arguments": {"title": "Dune"}}),
        ))
        .await;
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(response["result"]["content"][0]["text"], "ok=true");
    let asked = seen.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    let InputRequest::Elicit(elicit) = &asked[0] else {
        panic!("{asked:?}")
    };
    assert_eq!(elicit.params.message(), "Order 'Dune'?");
}

#[tokio::test]
async fn shared_keys_let_another_instance_finish_the_flow() {
    let key = b"a shared 32+ byte secret for the fleet";
    let instance = || {
        McpServer::builder("fleet", "1")
            .request_state_security(modelctx::seal::RequestStateSecurity::with_keys([key]).unwrap())
            .tool::<order>()
            .build()
            .unwrap()
    };
    let mut first = StdioPeer::start(instance().into_server());
    let mut second = StdioPeer::start(instance().into_server());
    let call = request(
        1,
        "tools/call",
        json!({"name": "order", "arguments": {"title": "Dune"}}),
    );
    let (response, _) = first.request(&call).await;
    let state = response["result"]["requestState"].clone();
    assert!(state.as_str().unwrap().starts_with("v1."));
    let mut retry = call.clone();
    retry["id"] = json!(2);
    retry["params"]["requestState"] = state;
    retry["params"]["inputResponses"] =
        json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let (response, _) = second.request(&retry).await;
    assert_eq!(response["result"]["content"][0]["text"], "ordered: true");
}

/// Orders after confirmation.
#[tool]
async fn order(title: String, #[resolve(confirm)] confirmed: Confirm) -> String {
    let _ = title;
    format!("ordered: {}", confirmed.ok)
}

/// A resolver written by hand (the [`Resolver`](modelctx::server::Resolver) docs allow it for
/// what `#[resolver]` cannot express): its `ResolverInfo` comes from the constructor, and its
/// question's key is its name, with no second copy to keep equal.
struct Approve;

impl modelctx::server::Resolver for Approve {
    type Value = Confirm;
    const INFO: ResolverInfo = ResolverInfo::new("approve", concat!(module_path!(), "::approve"));
    fn resolve(
        resolution: &Resolution,
    ) -> modelctx::server::BoxFuture<'_, Result<modelctx::server::Elicitation<Confirm>, Interrupt>>
    {
        Box::pin(resolution.ask(Self::INFO.key(), Elicit::<Confirm>::new("Approve?")))
    }
}

/// Another hand-written resolver named `confirm`, in another place than `#[resolver] confirm`.
struct OtherConfirm;

impl modelctx::server::Resolver for OtherConfirm {
    type Value = bool;
    const INFO: ResolverInfo = ResolverInfo::new("confirm", "elsewhere::confirm");
    fn resolve(
        _resolution: &Resolution,
    ) -> modelctx::server::BoxFuture<'_, Result<modelctx::server::Elicitation<bool>, Interrupt>>
    {
        Box::pin(async { Ok(modelctx::server::Elicitation::Accept(true)) })
    }
}

/// A hand-written tool (taking `title`) whose graph holds both resolvers named `confirm`.
struct TwoConfirms;

/// Takes no state.
impl<S> modelctx::server::UsesState<S> for TwoConfirms {}

impl ToolDefinition for TwoConfirms {
    const RESOLVERS: &'static [&'static ResolverInfo] = &[
        &<confirm as modelctx::server::Resolver>::INFO,
        &<OtherConfirm as modelctx::server::Resolver>::INFO,
    ];
    const ASKS: bool = true;
    fn tool() -> Tool {
        let mut schema = Tool::empty_input_schema();
        schema.insert(
            "properties".to_owned(),
            json!({"title": {"type": "string"}}),
        );
        Tool::new("two_confirms", schema)
    }
    fn call(_ctx: Context, _arguments: Extra) -> HandlerFuture<CallToolResult> {
        Box::pin(async { Ok(Outcome::Complete(CallToolResult::text("never"))) })
    }
}

#[test]
fn a_hand_written_resolver_s_key_is_its_name_and_clashes_by_it() {
    let info = &<Approve as modelctx::server::Resolver>::INFO;
    assert_eq!((info.key(), info.name), ("approve", "approve"));
    assert_eq!(info.path, "mcp_server_build::approve");
    assert!(info.arguments.is_empty() && info.dependencies.is_empty());
    let error = McpServer::builder("s", "1")
        .tool::<TwoConfirms>()
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::ResolverKeyClash {
            kind: "tool",
            name: "two_confirms".to_owned(),
            key: "confirm".to_owned(),
            paths: [
                "mcp_server_build::confirm".to_owned(),
                "elsewhere::confirm".to_owned()
            ],
        }
    );
}

#[tokio::test]
async fn a_hand_written_resolver_asks_under_its_name() {
    let server = McpServer::builder("hand", "1")
        .tool_fn(
            "approve",
            "Approves.",
            |ctx: Context, _args: BTreeMap<String, String>| async move {
                let resolution = Resolution::new(ctx, Extra::new());
                match resolution.resolve::<Approve>().await {
                    Ok(outcome) => Ok(Outcome::Complete(format!(
                        "ok={}",
                        outcome.accepted().is_some_and(|c| c.ok)
                    ))),
                    Err(Interrupt::Pending) => Ok(Outcome::InputRequired(
                        resolution.input_required().expect("a pending question"),
                    )),
                    Err(other) => Err(format!("{other:?}")),
                }
            },
        )
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server.into_server());
    let call = request(1, "tools/call", json!({"name": "approve", "arguments": {}}));
    let (response, _) = peer.request(&call).await;
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required", "{response}");
    let keys: Vec<&String> = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["approve"], "{response}");
    let mut retry = call.clone();
    retry["id"] = json!(2);
    retry["params"]["requestState"] = result["requestState"].clone();
    retry["params"]["inputResponses"] =
        json!({"approve": {"action": "accept", "content": {"ok": true}}});
    let (response, _) = peer.request(&retry).await;
    assert_eq!(
        response["result"]["content"][0]["text"], "ok=true",
        "{response}"
    );
}
