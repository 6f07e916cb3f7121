//! Application state (`McpServerBuilder::state`, `State<T>`): a tool, a prompt and a resource
//! template take the state or a part of it (`FromRef`), share it across calls and eras, and a
//! closure handler reads it from its `Context`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use modelctx::client::{Client, Mode};
use modelctx::server::{Context, FromRef, McpServer, State};
use modelctx::types::*;
use modelctx::{prompt, resource, tool};
use modelctx_test_support::client::connect_in_memory;
use serde_json::json;

#[derive(Clone)]
struct AppState {
    visits: Arc<AtomicU64>,
    greeting: Greeting,
}

/// A part of the state, handed out by `FromRef`.
#[derive(Clone)]
struct Greeting(String);

impl FromRef<AppState> for Greeting {
    fn from_ref(state: &AppState) -> Self {
        state.greeting.clone()
    }
}

/// Counts the visits.
#[tool]
async fn visit(app: State<AppState>, who: String) -> String {
    let n = app.visits.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{who} is visit {n}")
}

/// Greets.
#[prompt]
async fn greet(greeting: State<Greeting>, who: String) -> String {
    format!("{}, {who}", greeting.0.0)
}

/// The visit count of a day.
#[resource("visits://{day}")]
async fn visits(day: String, app: State<AppState>, _ctx: &Context) -> String {
    format!("{day}: {}", app.visits.load(Ordering::SeqCst))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn server(visits: &Arc<AtomicU64>) -> modelctx::server::Server {
    McpServer::builder("stateful", "1.0.0")
        .state(AppState {
            visits: Arc::clone(visits),
            greeting: Greeting("Welcome".to_owned()),
        })
        .tool::<visit>()
        .prompt::<greet>()
        .resource::<visits>()
        .tool_fn(
            "peek",
            "Reads the state from the context.",
            |ctx: Context, _args: NoArgs| async move {
                let app: AppState = ctx.state().expect("the server has its state");
                app.visits.load(Ordering::SeqCst).to_string()
            },
        )
        .build()
        .unwrap()
        .into_server()
}

fn text(result: &CallToolResult) -> String {
    match &result.content[0] {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn handlers_share_the_server_s_state_across_calls_and_eras() {
    let count = Arc::new(AtomicU64::new(0));
    let server = server(&count);
    for (mode, n) in [(Mode::Auto, 1), (Mode::Handshake, 2)] {
        let client = connect_in_memory(server.clone(), Client::builder().mode(mode)).await;
        let result = client
            .call_tool("visit", json!({"who": "ada"}))
            .await
            .unwrap();
        assert_eq!(text(&result), format!("ada is visit {n}"));
        let peek = client.call_tool("peek", json!({})).await.unwrap();
        assert_eq!(text(&peek), n.to_string());
        let prompt = client
            .get_prompt("greet", Some([("who".to_owned(), "Ada".to_owned())].into()))
            .await
            .unwrap();
        let PromptMessage {
            content: ContentBlock::Text(greeting),
            ..
        } = &prompt.messages[0]
        else {
            panic!("{prompt:?}");
        };
        assert_eq!(greeting.text, "Welcome, Ada");
        let read = client.read_resource("visits://monday").await.unwrap();
        let ResourceContents::Text(contents) = &read.contents[0] else {
            panic!("{read:?}");
        };
        assert_eq!(contents.text, format!("monday: {n}"));
        client.close().await.unwrap();
    }
    // The state is the caller's too: the counter it kept is the one the handlers moved.
    assert_eq!(count.load(Ordering::SeqCst), 2);
}
