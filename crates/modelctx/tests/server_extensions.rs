//! Server extensions (SEP-2133, `modelctx::server::extension`): what an extension advertises in
//! both eras, what it contributes is served, and what the builder refuses.

use futures::future::BoxFuture;
use modelctx::server::extension::{
    Contributions, Extension, InvalidMethodBinding, MAX_SETTINGS_BYTES, MethodBinding,
};
use modelctx::server::middleware::{Middleware, Next, Reply, Request};
use modelctx::server::{RegistrationError, RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::server::{StdioPeer, request};
use serde_json::{Value, json};

const STAMP: &str = "com.example/stamp";

/// An extension with settings, a tool, a resource, a method and (optionally) an interceptor.
struct Stamp {
    settings: Value,
    intercept: bool,
}

impl Stamp {
    fn new() -> Self {
        Self {
            settings: json!({"format": "rfc3339", "precision": 3}),
            intercept: false,
        }
    }
}

/// Answers `tools/call` of `stamp/forbidden` itself; passes every other call on.
struct RefuseForbidden;

impl Middleware for RefuseForbidden {
    fn handle<'a>(&'a self, request: Request<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        let forbidden = request
            .params()
            .is_some_and(|params| params.get().contains("\"stamp/forbidden\""));
        if forbidden {
            Box::pin(async { Reply::error(ErrorObject::new(ErrorCode(-32001), "stamped out")) })
        } else {
            next.run(request)
        }
    }
}

impl Extension for Stamp {
    fn id(&self) -> ExtensionId {
        STAMP.parse().unwrap()
    }

    fn settings(&self) -> Extra {
        self.settings.as_object().cloned().unwrap()
    }

    fn contribute(&self, contributions: &mut Contributions) {
        contributions
            .tool(
                Tool::new("stamp/now", Tool::empty_input_schema()),
                |_ctx: RequestContext, _p: CallToolRequestParams| async {
                    CallToolResult::text("2026-12-03T00:00:00.000Z")
                },
            )
            .tool(
                Tool::new("stamp/forbidden", Tool::empty_input_schema()),
                |_ctx: RequestContext, _p: CallToolRequestParams| async {
                    CallToolResult::text("ran anyway")
                },
            )
            .resource(
                Resource::new("stamp://format", "format"),
                |_ctx: RequestContext, _p: ReadResourceRequestParams| async {
                    ReadResourceResult::new(vec![ResourceContents::text(
                        "stamp://format",
                        None,
                        "rfc3339",
                    )])
                },
            )
            .method(
                MethodBinding::new(
                    "stamp/echo",
                    |ctx: RequestContext, params: Value| async move {
                        json!({"echo": params["text"], "version": ctx.protocol_version().as_str()})
                    },
                )
                .unwrap(),
            )
            .method(
                MethodBinding::new(
                    "stamp/modern",
                    |_ctx: RequestContext, _params: Value| async { json!({"modern": true}) },
                )
                .unwrap()
                .versions([ProtocolVersion::LATEST])
                .unwrap(),
            );
        if self.intercept {
            contributions.intercept_tool_calls(RefuseForbidden);
        }
    }
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy","version":"0"}}})
}

async fn handshake_peer(server: Server) -> (StdioPeer, Value) {
    let mut peer = StdioPeer::start(server);
    let (init, _) = peer.request(&initialize(1)).await;
    peer.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    (peer, init)
}

/// The settings are advertised at `capabilities.extensions[id]`, in `server/discover` and at
/// `initialize`.
#[tokio::test]
async fn an_extension_is_advertised_in_both_eras() {
    let server = Server::builder("stamped", "1.0.0")
        .extension(Stamp::new())
        .build()
        .unwrap();
    let mut modern = StdioPeer::start(server.clone());
    let (discover, _) = modern
        .request(&request(1, "server/discover", json!({})))
        .await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][STAMP],
        json!({"format": "rfc3339", "precision": 3}),
        "{discover}"
    );
    modern.close().await.unwrap();
    let (peer, init) = handshake_peer(server).await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"][STAMP],
        json!({"format": "rfc3339", "precision": 3}),
        "{init}"
    );
    peer.close().await.unwrap();
}

/// A server with no extension advertises no `extensions` member at all.
#[tokio::test]
async fn no_extension_no_member() {
    let server = Server::builder("plain", "1.0.0").build().unwrap();
    assert!(server.capabilities().extensions.is_none());
}

/// Contributed tools, resources and methods are served like the server's own.
#[tokio::test]
async fn contributed_tools_resources_and_methods_are_served() {
    let server = Server::builder("stamped", "1.0.0")
        .extension(Stamp::new())
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    let (list, _) = peer.request(&request(1, "tools/list", json!({}))).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["stamp/now", "stamp/forbidden"]);
    let (call, _) = peer
        .request(&request(2, "tools/call", json!({"name": "stamp/now"})))
        .await;
    assert_eq!(
        call["result"]["content"][0]["text"],
        "2026-12-03T00:00:00.000Z"
    );
    let (read, _) = peer
        .request(&request(
            3,
            "resources/read",
            json!({"uri": "stamp://format"}),
        ))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "rfc3339", "{read}");
    let (echo, _) = peer
        .request(&request(4, "stamp/echo", json!({"text": "hi"})))
        .await;
    assert_eq!(echo["result"]["echo"], "hi", "{echo}");
    assert_eq!(echo["result"]["version"], "2026-07-28");
    let (modern, _) = peer.request(&request(5, "stamp/modern", json!({}))).await;
    assert_eq!(modern["result"]["modern"], true, "{modern}");
    peer.close().await.unwrap();
}

/// A method bound to some protocol versions is `-32601` at the others (here the handshake
/// era's), as a method the server does not have; the unrestricted one is served in both.
#[tokio::test]
async fn a_version_bound_method_is_not_found_at_other_versions() {
    let server = Server::builder("stamped", "1.0.0")
        .extension(Stamp::new())
        .build()
        .unwrap();
    let (mut peer, _) = handshake_peer(server).await;
    let (modern_only, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":2,"method":"stamp/modern","params":{}}))
        .await;
    assert_eq!(modern_only["error"]["code"], -32601, "{modern_only}");
    let (echo, _) = peer
        .request(&json!({"jsonrpc":"2.0","id":3,"method":"stamp/echo","params":{"text":"old"}}))
        .await;
    assert_eq!(
        echo["result"],
        json!({"echo": "old", "version": "2025-11-25"})
    );
    peer.close().await.unwrap();
}

/// A spec method cannot be bound (in either era's list), nor an empty set of versions, nor
/// an empty or control-character name.
#[test]
fn spec_methods_and_empty_version_sets_are_refused() {
    let handler = |_ctx: RequestContext, _params: Value| async { json!({}) };
    for spec in [
        "tools/list",
        "tools/call",
        "server/discover",
        "subscriptions/listen",
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
    ] {
        assert_eq!(
            MethodBinding::new(spec, handler).unwrap_err(),
            InvalidMethodBinding::SpecMethod(spec.to_owned())
        );
    }
    let error = MethodBinding::new("tools/list", handler).unwrap_err();
    assert!(
        error.to_string().contains("may only add methods"),
        "{error}"
    );
    assert_eq!(
        MethodBinding::new("x/y", handler)
            .unwrap()
            .versions([])
            .unwrap_err(),
        InvalidMethodBinding::NoVersions("x/y".to_owned())
    );
    for bad in ["", "x/\ny"] {
        assert_eq!(
            MethodBinding::new(bad, handler).unwrap_err(),
            InvalidMethodBinding::BadName(bad.to_owned())
        );
    }
}

/// Two extensions with one identifier are refused by `build`, with the identifier named.
#[test]
fn a_duplicate_extension_is_refused() {
    let error = Server::builder("stamped", "1.0.0")
        .extension(Stamp::new())
        .extension(Stamp::new())
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistrationError::DuplicateExtension(id) if id == STAMP),
        "{error}"
    );
}

/// Settings over the limit are refused: they would be sent on every discovery.
#[test]
fn oversized_settings_are_refused() {
    let mut stamp = Stamp::new();
    stamp.settings = json!({"padding": "x".repeat(MAX_SETTINGS_BYTES)});
    let error = Server::builder("stamped", "1.0.0")
        .extension(stamp)
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistrationError::Extension { id, reason } if id == STAMP && reason.contains("settings")),
        "{error}"
    );
}

/// A method already bound (here by `ServerBuilder::method`) is refused rather than shadowed.
#[test]
fn a_method_bound_twice_is_refused() {
    let error = Server::builder("stamped", "1.0.0")
        .method("stamp/echo", |_ctx: RequestContext, _params: Value| async {
            json!({})
        })
        .extension(Stamp::new())
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistrationError::Extension { reason, .. } if reason.contains("\"stamp/echo\" is already bound")),
        "{error}"
    );
}

/// A contributed tool whose name the server already has is the registry's duplicate error.
#[test]
fn a_contributed_tool_that_clashes_is_refused() {
    let error = Server::builder("stamped", "1.0.0")
        .tool(
            Tool::new("stamp/now", Tool::empty_input_schema()),
            |_ctx: RequestContext, _p: CallToolRequestParams| async { CallToolResult::text("") },
        )
        .extension(Stamp::new())
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistrationError::Duplicate { kind: "tool", name } if name == "stamp/now"),
        "{error}"
    );
}

/// The interceptor sees `tools/call` and may answer it; other requests pass it by.
#[tokio::test]
async fn the_tool_call_interceptor_wraps_tools_call_only() {
    let mut stamp = Stamp::new();
    stamp.intercept = true;
    let server = Server::builder("stamped", "1.0.0")
        .extension(stamp)
        .build()
        .unwrap();
    let mut peer = StdioPeer::start(server);
    let (refused, _) = peer
        .request(&request(
            1,
            "tools/call",
            json!({"name": "stamp/forbidden"}),
        ))
        .await;
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    assert_eq!(refused["error"]["message"], "stamped out");
    let (allowed, _) = peer
        .request(&request(2, "tools/call", json!({"name": "stamp/now"})))
        .await;
    assert_eq!(
        allowed["result"]["content"][0]["text"],
        "2026-12-03T00:00:00.000Z"
    );
    // `stamp/echo` names the forbidden tool in its params, but is no `tools/call`.
    let (echo, _) = peer
        .request(&request(
            3,
            "stamp/echo",
            json!({"text": "stamp/forbidden"}),
        ))
        .await;
    assert_eq!(echo["result"]["echo"], "stamp/forbidden", "{echo}");
    peer.close().await.unwrap();
}

/// The tasks extension is an extension like any other: advertised with `{}`, and a second
/// extension claiming its identifier is refused.
#[cfg(feature = "tasks")]
#[test]
fn the_tasks_extension_runs_on_the_seam() {
    use modelctx::server::tasks::{MemoryTaskStore, Tasks};
    struct Impostor;
    impl Extension for Impostor {
        fn id(&self) -> ExtensionId {
            TASKS_EXTENSION.parse().unwrap()
        }
    }
    let tasks = Tasks::builder(MemoryTaskStore::new()).build();
    let server = Server::builder("jobs", "1.0.0")
        .tasks(tasks.clone())
        .build()
        .unwrap();
    let extensions = server.capabilities().extensions.unwrap();
    assert_eq!(extensions[TASKS_EXTENSION], json!({}));
    assert_eq!(extensions.len(), 1);
    let error = Server::builder("jobs", "1.0.0")
        .tasks(tasks)
        .extension(Impostor)
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, RegistrationError::DuplicateExtension(id) if id == TASKS_EXTENSION),
        "{error}"
    );
}
