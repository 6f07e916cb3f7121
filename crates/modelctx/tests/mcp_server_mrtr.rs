//! The high-level server on the wire, driven by a raw newline-JSON peer: resolver questions
//! batched into one `InputRequiredResult`, answers carried in the sealed state and bound to the
//! question's digest, capability checks (`-32021`), decline / cancel / bad content, structured
//! output, and the run-time guard for an undeclared `InputRequiredResult`.

// Test helpers take JSON values by value: they are built inline with `json!`.
#![allow(clippy::needless_pass_by_value)]

#[path = "../examples/mcp_server_bookshop.rs"]
#[allow(dead_code, unreachable_pub, clippy::print_stderr)]
mod bookshop;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bookshop::Prefs;
use modelctx::server::{Elicit, ElicitUrl, Elicitation, McpServer};
use modelctx::types::Outcome;
use modelctx::{resolver, tool};
use modelctx_test_support::server::StdioPeer;
use serde_json::{Value, json};

const ALL: &str = r#"{"elicitation":{"form":{}},"sampling":{},"roots":{}}"#;

/// The `_meta` envelope of a 2026-07-28 request declaring `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

fn all() -> Value {
    serde_json::from_str(ALL).unwrap()
}

fn call(id: i64, name: &str, arguments: Value, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": meta(capabilities)}})
}

/// The same request again with answers and the echoed state (a new id).
fn retry(first: &Value, id: i64, responses: Value, state: Option<&Value>) -> Value {
    let mut body = first.clone();
    body["id"] = json!(id);
    body["params"]["inputResponses"] = responses;
    if let Some(state) = state {
        body["params"]["requestState"] = state.clone();
    }
    body
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

static VERSION: AtomicU64 = AtomicU64::new(1);

/// A question whose wording changes when `VERSION` does (a redeploy rewording it).
#[resolver]
async fn ask_seat_versioned() -> Elicit<Prefs> {
    Elicit::new(format!(
        "Seat preference (form v{})?",
        VERSION.load(Ordering::SeqCst)
    ))
}

/// Books a seat.
#[tool]
async fn book_seat(#[resolve(ask_seat_versioned)] prefs: Prefs) -> String {
    format!("Booked {}.", prefs.seat)
}

/// A return type the macro cannot see through.
type Hidden = Outcome<String>;

/// Uses a resolver and (wrongly) asks by hand as well, behind an alias.
#[tool]
async fn sneaky(
    #[resolve(bookshop::get_roots)] _roots: modelctx::types::ListRootsResult,
) -> Hidden {
    Outcome::InputRequired(modelctx::types::InputRequiredResult::new().with_state("mine"))
}

/// A form with every kind of constraint the elicitation subset has.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
struct Signup {
    /// Seats (1 to 10).
    #[schemars(range(min = 1, max = 10))]
    seats: u32,
    /// A handle of 2 to 8 characters.
    #[schemars(length(min = 2, max = 8))]
    handle: String,
    /// Where to send the receipt.
    #[schemars(email)]
    email: String,
    /// The plan.
    plan: Plan,
}

#[derive(Debug, Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Plan {
    Free,
    Team,
}

#[resolver]
async fn ask_signup() -> Elicit<Signup> {
    Elicit::new("Sign up?")
}

/// Signs up.
#[tool]
async fn sign_up(#[resolve(ask_signup)] signup: Signup) -> String {
    format!(
        "{} seat(s) for {} <{}> on {:?}",
        signup.seats, signup.handle, signup.email, signup.plan
    )
}

/// Asks the user to sign in at a URL.
#[resolver]
async fn sign_in(service: String) -> ElicitUrl {
    ElicitUrl::new(
        format!("Sign in to {service}."),
        format!("https://accounts.example.com/connect?service={service}"),
    )
}

/// Links an account (URL-mode elicitation).
#[tool]
async fn link_account(service: String, #[resolve(sign_in)] consent: Elicitation<()>) -> String {
    match consent {
        Elicitation::Accept(()) => format!("Linked {service}."),
        other => format!("{service} not linked ({:?}).", other.action()),
    }
}

fn server() -> McpServer {
    McpServer::builder("PeerBookshop", "0.0.1")
        .tool::<sign_up>()
        .tool::<link_account>()
        .tool::<bookshop::order_book>()
        .tool::<bookshop::plan_trip>()
        .tool::<bookshop::reserve_seat>()
        .tool::<bookshop::summarize>()
        .tool::<bookshop::where_am_i>()
        .tool::<bookshop::echo>()
        .tool::<bookshop::stock>()
        .tool::<book_seat>()
        .tool::<sneaky>()
        .prompt::<bookshop::briefing>()
        .resource::<bookshop::report>()
        .build()
        .unwrap()
}

fn peer() -> StdioPeer {
    StdioPeer::start(server().into_server())
}

#[tokio::test]
async fn independent_questions_are_batched_into_one_sealed_round() {
    let mut peer = peer();
    let first = call(1, "plan_trip", json!({"city": "Lisbon"}), all());
    let (response, _) = peer.request(&first).await;
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required");
    let requests = result["inputRequests"].as_object().unwrap();
    let keys: Vec<&str> = requests.keys().map(String::as_str).collect();
    assert_eq!(keys, ["ask_budget", "ask_prefs"]);
    let prefs = &requests["ask_prefs"];
    assert_eq!(prefs["method"], "elicitation/create");
    assert_eq!(
        prefs["params"],
        json!({"mode": "form", "message": "Seat preference for the trip to Lisbon?",
               "requestedSchema": {"type": "object", "required": ["seat"],
                   "properties": {"seat": {"type": "string", "description": "Aisle or window."}}}})
    );
    let state = &result["requestState"];
    assert!(
        state.as_str().unwrap().starts_with("v1."),
        "sealed: {state}"
    );

    let answers = json!({
        "ask_prefs": accept(json!({"seat": "aisle"})),
        "ask_budget": accept(json!({"amount": 1200})),
    });
    let (response, _) = peer.request(&retry(&first, 2, answers, Some(state))).await;
    assert_eq!(
        text(&response),
        "Trip to Lisbon: seat aisle, budget 1200 EUR."
    );
    assert_eq!(response["result"]["isError"], false);
}

#[tokio::test]
async fn a_partial_answer_is_kept_and_only_the_missing_question_asked_again() {
    let mut peer = peer();
    let first = call(1, "plan_trip", json!({"city": "Porto"}), all());
    let (response, _) = peer.request(&first).await;
    let state = response["result"]["requestState"].clone();
    let prefs = json!({"ask_prefs": accept(json!({"seat": "window"}))});
    let (response, _) = peer.request(&retry(&first, 2, prefs, Some(&state))).await;
    let requests = response["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["ask_budget"]);
    // The second round's state carries the first answer; only the budget is sent now.
    let state = response["result"]["requestState"].clone();
    let budget = json!({"ask_budget": accept(json!({"amount": 90}))});
    let (response, _) = peer.request(&retry(&first, 3, budget, Some(&state))).await;
    assert_eq!(
        text(&response),
        "Trip to Porto: seat window, budget 90 EUR."
    );
}

#[tokio::test]
async fn a_question_whose_rendering_changed_is_asked_again() {
    let mut peer = peer();
    let key = "ask_seat_versioned";
    VERSION.store(1, Ordering::SeqCst);
    let first = call(1, "book_seat", json!({}), all());
    let (response, _) = peer.request(&first).await;
    assert_eq!(
        response["result"]["inputRequests"][key]["params"]["message"],
        "Seat preference (form v1)?"
    );
    let state = response["result"]["requestState"].clone();

    // The server is redeployed with a reworded question before the client answers.
    VERSION.store(2, Ordering::SeqCst);
    let answer = json!({key: accept(json!({"seat": "aisle"}))});
    let (response, _) = peer
        .request(&retry(&first, 2, answer.clone(), Some(&state)))
        .await;
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "the stale answer must not be consumed: {response}"
    );
    assert_eq!(
        response["result"]["inputRequests"][key]["params"]["message"],
        "Seat preference (form v2)?"
    );
    let state = response["result"]["requestState"].clone();
    let (response, _) = peer.request(&retry(&first, 3, answer, Some(&state))).await;
    assert_eq!(text(&response), "Booked aisle.");
}

#[tokio::test]
async fn an_answer_without_an_asked_record_is_ignored_and_asked_again() {
    let mut peer = peer();
    let first = call(1, "order_book", json!({"title": "Dune"}), all());
    let answer = json!({"confirm_backorder": accept(json!({"confirm": true}))});
    // Answers sent unasked (no state) count for nothing.
    let (response, _) = peer.request(&retry(&first, 2, answer, None)).await;
    assert_eq!(response["result"]["resultType"], "input_required");
    assert_eq!(
        response["result"]["inputRequests"]["confirm_backorder"]["params"]["message"],
        "'Dune' is out of stock. Place a backorder?"
    );
}

#[tokio::test]
async fn a_client_without_elicitation_gets_32021_with_the_required_capability() {
    let mut peer = peer();
    let (response, _) = peer
        .request(&call(
            1,
            "order_book",
            json!({"title": "Neuromancer"}),
            json!({}),
        ))
        .await;
    assert_eq!(
        response["error"],
        json!({"code": -32021,
               "message": "Client did not declare the form elicitation capability required by resolver 'confirm_backorder'",
               "data": {"requiredCapabilities": {"elicitation": {"form": {}}}}})
    );
    // URL-only elicitation is not form elicitation either.
    let url_only = json!({"elicitation": {"url": {}}});
    let (response, _) = peer
        .request(&call(
            2,
            "order_book",
            json!({"title": "Neuromancer"}),
            url_only,
        ))
        .await;
    assert_eq!(response["error"]["code"], -32021);
    for (id, tool, capability) in [(3, "summarize", "sampling"), (4, "where_am_i", "roots")] {
        let (response, _) = peer
            .request(&call(
                id,
                tool,
                json!({"text": "t"}),
                json!({"elicitation": {}}),
            ))
            .await;
        assert_eq!(response["error"]["code"], -32021, "{tool}");
        assert_eq!(
            response["error"]["data"]["requiredCapabilities"],
            json!({capability: {}}),
            "{tool}"
        );
    }
}

#[tokio::test]
async fn decline_fails_the_call_unless_the_parameter_takes_the_outcome() {
    let mut peer = peer();
    let first = call(1, "order_book", json!({"title": "Dune"}), all());
    let (response, _) = peer.request(&first).await;
    let state = response["result"]["requestState"].clone();
    let decline = json!({"confirm_backorder": {"action": "decline"}});
    let (response, _) = peer.request(&retry(&first, 2, decline, Some(&state))).await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(
        text(&response),
        "Error executing tool order_book: the question for 'backorder' was declined, so nothing was done"
    );

    let first = call(3, "reserve_seat", json!({"city": "Rome"}), all());
    let (response, _) = peer.request(&first).await;
    let state = response["result"]["requestState"].clone();
    let cancel = json!({"ask_prefs": {"action": "cancel"}});
    let (response, _) = peer.request(&retry(&first, 4, cancel, Some(&state))).await;
    assert_eq!(response["result"]["isError"], false);
    assert_eq!(text(&response), "No seat reserved to Rome (Cancel).");
}

#[tokio::test]
async fn accepted_content_must_fit_the_schema_and_answers_the_right_kind() {
    let mut peer = peer();
    let first = call(1, "plan_trip", json!({"city": "Oslo"}), all());
    let (response, _) = peer.request(&first).await;
    let state = response["result"]["requestState"].clone();
    let answers = json!({
        "ask_prefs": accept(json!({"seat": "aisle"})),
        "ask_budget": accept(json!({"amount": "lots"})),
    });
    let (response, _) = peer.request(&retry(&first, 2, answers, Some(&state))).await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(
        text(&response),
        "Error executing tool plan_trip: Resolver 'ask_budget' received an accepted elicitation whose content does not match the requested schema"
    );

    let first = call(3, "summarize", json!({"text": "abc"}), all());
    let (response, _) = peer.request(&first).await;
    let state = response["result"]["requestState"].clone();
    let roots = json!({"sample_summary": {"roots": []}});
    let (response, _) = peer.request(&retry(&first, 4, roots, Some(&state))).await;
    assert_eq!(
        text(&response),
        "Error executing tool summarize: Resolver 'sample_summary' received a response of the wrong kind"
    );
}

/// Records the messages of `tracing` events (the server's log lines).
#[derive(Clone, Default)]
struct LogLines(Arc<Mutex<Vec<String>>>);

impl tracing::Subscriber for LogLines {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                use std::fmt::Write as _;
                let _ = write!(self.0, "{}={value:?} ", field.name());
            }
        }
        let mut line = format!("{} ", event.metadata().level());
        event.record(&mut Message(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn an_undeclared_input_required_result_from_a_resolver_using_body_fails_the_call() {
    let lines = LogLines::default();
    let _guard = tracing::subscriber::set_default(lines.clone());
    let mut peer = peer();
    let first = call(1, "sneaky", json!({}), all());
    let (response, _) = peer.request(&first).await;
    let state = response["result"]["requestState"].clone();
    let roots = json!({"get_roots": {"roots": []}});
    let (response, _) = peer.request(&retry(&first, 2, roots, Some(&state))).await;
    assert_eq!(response["result"]["isError"], true);
    // No details for the client; they are in the server log.
    assert_eq!(text(&response), "Error executing tool sneaky");
    let logged = lines.0.lock().unwrap().clone();
    assert!(
        logged.iter().any(|l| l.starts_with("ERROR")
            && l.contains("one input channel")
            && l.contains("name=\"sneaky\"")),
        "{logged:?}"
    );
}

#[tokio::test]
async fn structured_output_declares_its_schema() {
    let mut peer = peer();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                      "params": {"_meta": meta(json!({}))}});
    let (response, _) = peer.request(&list).await;
    let tools = response["result"]["tools"].as_array().unwrap();
    let stock = tools.iter().find(|t| t["name"] == "stock").unwrap();
    assert_eq!(
        stock["outputSchema"]["properties"]["copies"]["type"],
        "integer"
    );
    assert_eq!(stock["annotations"], json!({"readOnlyHint": true}));
    let order = tools.iter().find(|t| t["name"] == "order_book").unwrap();
    assert_eq!(
        order["inputSchema"]["properties"],
        json!({"title": {"type": "string", "description": "The title to order."}}),
        "resolved parameters are not arguments"
    );
    assert!(order.get("outputSchema").is_none());

    let (response, _) = peer
        .request(&call(2, "stock", json!({"title": "Dune"}), json!({})))
        .await;
    assert_eq!(
        response["result"]["structuredContent"],
        json!({"title": "Dune", "copies": 0})
    );
    assert_eq!(text(&response), r#"{"copies":0,"title":"Dune"}"#);
}

#[tokio::test]
async fn invalid_arguments_are_a_failed_call() {
    let mut peer = peer();
    let (response, _) = peer
        .request(&call(1, "echo", json!({"text": 5}), json!({})))
        .await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(
        text(&response),
        "Input validation error: /text: 5 is not of type \"string\"",
        "{response}"
    );
}

#[tokio::test]
async fn a_tampered_state_is_the_frozen_error() {
    let mut peer = peer();
    let first = call(1, "order_book", json!({"title": "Dune"}), all());
    let (response, _) = peer.request(&first).await;
    let mut state = response["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    state.push('A');
    let answer = json!({"confirm_backorder": accept(json!({"confirm": true}))});
    let (response, _) = peer
        .request(&retry(&first, 2, answer, Some(&json!(state))))
        .await;
    assert_eq!(response["error"]["code"], -32602);
    assert_eq!(
        response["error"]["message"],
        "Invalid or expired requestState"
    );
}

#[tokio::test]
async fn prompts_and_templates_ask_too() {
    let mut peer = peer();
    let get = json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {
        "name": "briefing", "arguments": {"topic": "Q3"}, "_meta": meta(all())}});
    let (response, _) = peer.request(&get).await;
    let key = "ask_audience";
    let state = response["result"]["requestState"].clone();
    assert_eq!(
        response["result"]["inputRequests"][key]["params"]["message"],
        "Who is the audience for the briefing on Q3?"
    );
    let answer = json!({key: accept(json!({"audience": "the board"}))});
    let (response, _) = peer.request(&retry(&get, 2, answer, Some(&state))).await;
    assert_eq!(
        response["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Brief the board on Q3."}}])
    );
    // A declined prompt question is a JSON-RPC error (prompts have no isError).
    let (response, _) = peer.request(&retry(&get, 3, json!({}), None)).await;
    let state = response["result"]["requestState"].clone();
    let decline = json!({key: {"action": "decline"}});
    let (response, _) = peer.request(&retry(&get, 4, decline, Some(&state))).await;
    assert_eq!(response["error"]["code"], -32603);
    assert_eq!(
        response["error"]["message"],
        "Error rendering prompt briefing: the question for 'audience' was declined, so nothing \
         was done",
    );

    let read = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {
        "uri": "report://q3", "_meta": meta(all())}});
    let (response, _) = peer.request(&read).await;
    assert_eq!(response["result"]["resultType"], "input_required");
    let state = response["result"]["requestState"].clone();
    let answer = json!({"format": accept(json!({"format": "pdf"}))});
    let (response, _) = peer.request(&retry(&read, 6, answer, Some(&state))).await;
    assert_eq!(response["result"]["contents"][0]["text"], "Report q3 (pdf)");
    assert_eq!(response["result"]["contents"][0]["mimeType"], "text/plain");
}

/// The answers that break the form the client was shown (range, length, format, enum), and one
/// that fits.
fn signup_answers() -> [(Value, Option<&'static str>); 6] {
    let good = json!({"seats": 2, "handle": "ada", "email": "ada@example.com", "plan": "team"});
    let with = |name: &str, value: Value| {
        let mut answer = good.clone();
        answer[name] = value;
        answer
    };
    [
        (with("seats", json!(4_000_000_000_u64)), None),
        (with("seats", json!(0)), None),
        (with("handle", json!("a-very-long-handle")), None),
        (with("email", json!("not an address")), None),
        (with("plan", json!("enterprise")), None),
        (good, Some("2 seat(s) for ada <ada@example.com> on Team")),
    ]
}

/// The result of `sign_up` for `content`: the tool's text when it fits, else the Python SDK's
/// error, without the tool having run.
fn check_signup(response: &Value, content: &Value, expected: Option<&str>) {
    match expected {
        None => {
            assert_eq!(response["result"]["isError"], true, "{content}");
            assert_eq!(
                text(response),
                "Error executing tool sign_up: Resolver 'ask_signup' received \
                 an accepted elicitation whose content does not match the requested schema",
                "{content}"
            );
        }
        Some(done) => assert_eq!(text(response), done),
    }
}

/// 2026-07-28: an answer is checked against the rendered `requestedSchema`
/// before it is decoded, so a value `u32` would take but the form forbids never reaches the tool.
#[tokio::test]
async fn answers_are_checked_against_the_schema_the_client_was_shown() {
    let mut peer = peer();
    let first = call(1, "sign_up", json!({}), all());
    let (response, _) = peer.request(&first).await;
    let key = "ask_signup";
    let schema = &response["result"]["inputRequests"][key]["params"]["requestedSchema"];
    assert_eq!(schema["properties"]["seats"]["maximum"], 10);
    assert_eq!(schema["properties"]["email"]["format"], "email");
    let state = response["result"]["requestState"].clone();
    for (id, (content, expected)) in (2..).zip(signup_answers()) {
        let answer = json!({key: accept(content.clone())});
        let (response, _) = peer.request(&retry(&first, id, answer, Some(&state))).await;
        check_signup(&response, &content, expected);
    }
}

/// A rejected answer is logged at INFO with the problem, which quotes the peer's answer: one
/// bounded line, whatever the answer holds.
#[tokio::test]
async fn a_rejected_answer_is_logged_in_one_bounded_line() {
    let (captured, _default) = modelctx_test_support::server::capture_logs(tracing::Level::INFO);
    let mut peer = peer();
    let first = call(1, "sign_up", json!({}), all());
    let (response, _) = peer.request(&first).await;
    let key = "ask_signup";
    let state = response["result"]["requestState"].clone();
    let handle = format!("x\n2099-01-01T00:00:00Z  WARN forged{}", "y".repeat(65_536));
    let content = json!({"seats": 2, "handle": handle, "email": "ada@example.com", "plan": "team"});
    let answer = json!({key: accept(content.clone())});
    let (response, _) = peer.request(&retry(&first, 2, answer, Some(&state))).await;
    check_signup(&response, &content, None);
    let lines = captured.lines();
    let rejected: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("elicitation answer rejected"))
        .collect();
    assert_eq!(rejected.len(), 1, "{lines:#?}");
    assert!(
        rejected[0].len() < 512,
        "bounded: {} bytes",
        rejected[0].len()
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("forged") && !l.contains("rejected"))
    );
    assert!(rejected[0].contains("problem_len="), "{}", rejected[0]);
}

/// Handshake era: the same check on an answer that arrives over the
/// back-channel.
#[tokio::test]
async fn back_channel_answers_are_checked_against_the_schema_too() {
    let mut peer = peer();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "legacy", "version": "0"}}});
    peer.request(&init).await;
    for (id, (content, expected)) in (2..).zip(signup_answers()) {
        peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "sign_up", "arguments": {}}}))
            .await;
        let ask = peer.next().await.unwrap();
        assert_eq!(ask["method"], "elicitation/create");
        peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": accept(content.clone())}))
            .await;
        let response = peer.next().await.unwrap();
        assert_eq!(response["id"], id);
        check_signup(&response, &content, expected);
    }
}

/// A 2025-11-25 session calling `link_account` (request id 2), and its URL question.
async fn link_account_on_a_handshake_session() -> (StdioPeer, Value) {
    let mut peer = peer();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}, "url": {}}},
        "clientInfo": {"name": "legacy", "version": "0"}}});
    peer.request(&init).await;
    peer.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "link_account", "arguments": {"service": "github"}}}))
        .await;
    let ask = peer.next().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    (peer, ask)
}

/// URL-mode elicitation is a question like `Elicit<T>`. On 2026-07-28 it
/// travels in the `InputRequiredResult` (needing `elicitation.url`), its answer bound to the
/// question like any other.
#[tokio::test]
async fn a_url_question_on_2026() {
    let mut peer = peer();
    let key = "sign_in";
    let form_only = json!({"elicitation": {"form": {}}});
    let (refused, _) = peer
        .request(&call(
            1,
            "link_account",
            json!({"service": "github"}),
            form_only,
        ))
        .await;
    assert_eq!(refused["error"]["code"], -32021);
    assert_eq!(
        refused["error"]["data"],
        json!({"requiredCapabilities": {"elicitation": {"url": {}}}})
    );
    let url_too = json!({"elicitation": {"form": {}, "url": {}}});
    let first = call(2, "link_account", json!({"service": "github"}), url_too);
    let (response, _) = peer.request(&first).await;
    assert_eq!(
        response["result"]["inputRequests"][key],
        json!({"method": "elicitation/create", "params": {"mode": "url",
               "message": "Sign in to github.",
               "url": "https://accounts.example.com/connect?service=github"}})
    );
    let state = response["result"]["requestState"].clone();
    let accepted = json!({key: {"action": "accept"}});
    let (response, _) = peer
        .request(&retry(&first, 3, accepted.clone(), Some(&state)))
        .await;
    assert_eq!(text(&response), "Linked github.");
    let declined = json!({key: {"action": "decline"}});
    let (response, _) = peer
        .request(&retry(&first, 4, declined, Some(&state)))
        .await;
    assert_eq!(text(&response), "github not linked (Decline).");
    // Consent the server never asked for (no state) is not consent: the question is asked.
    let (response, _) = peer.request(&retry(&first, 5, accepted, None)).await;
    assert_eq!(response["result"]["resultType"], "input_required");
}

/// On a 2025-11-25 session the same URL question is an `elicitation/create`
/// with an `elicitationId`, announced complete when the call completes.
#[tokio::test]
async fn a_url_question_on_a_handshake_session() {
    let (mut peer, ask) = link_account_on_a_handshake_session().await;
    assert_eq!(ask["params"]["mode"], "url");
    assert_eq!(
        ask["params"]["url"],
        "https://accounts.example.com/connect?service=github"
    );
    let id = ask["params"]["elicitationId"].clone();
    assert!(id.is_string(), "{ask}");
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}))
        .await;
    let complete = peer.next().await.unwrap();
    assert_eq!(complete["method"], "notifications/elicitation/complete");
    assert_eq!(complete["params"], json!({"elicitationId": id}));
    let result = peer.next().await.unwrap();
    assert_eq!(result["id"], 2);
    assert_eq!(text(&result), "Linked github.");
}

/// A resolver's question the client fails (here `-32601`, a client without a handler) fails
/// the call with `-32603` naming the input request and the method, not with the client's code.
#[tokio::test]
async fn a_resolver_question_the_client_fails_names_the_input_request() {
    let (mut peer, ask) = link_account_on_a_handshake_session().await;
    let refused = json!({"code": -32601, "message": "Method not found"});
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "error": refused}))
        .await;
    let reply = peer.next().await.unwrap();
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(
        reply["error"]["message"],
        "The client could not answer input request 'sign_in' (elicitation/create): Method not \
         found (-32601)"
    );
    assert_eq!(reply["error"]["data"]["clientError"], refused);
}
