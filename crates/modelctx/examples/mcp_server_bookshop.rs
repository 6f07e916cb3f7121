//! The high-level server, mirroring the Python reference peer `PeerBookshop`
//! (`tests/python/bookshop.py`): tools whose parameters are filled by resolvers that ask the
//! client (one elicitation, two batched elicitations, a URL to open, sampling, roots), a tool
//! that asks by hand, a prompt that asks for its audience, and a resource template that asks
//! for a format.
//!
//! ```sh
//! cargo run -p modelctx --example mcp_server_bookshop              # stdio
//! cargo run -p modelctx --example mcp_server_bookshop -- --http 0  # streamable HTTP on 127.0.0.1
//! ```
//!
//! Over HTTP it prints `listening on http://127.0.0.1:<port>/mcp` to stderr.

use modelctx::server::{
    Context, Elicit, ElicitUrl, Elicitation, Json, ListRoots, McpServer, Sample,
};
use modelctx::types::{
    CreateMessageResult, ElicitAction, ElicitRequestFormParams, InputRequest, InputRequiredResult,
    ListRootsResult, Outcome,
};
use modelctx::{prompt, resolver, resource, tool};
use serde::{Deserialize, Serialize};

/// The answer to "place a backorder?".
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Backorder {
    /// Place a backorder?
    pub confirm: bool,
}

/// Seat preference.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Prefs {
    /// Aisle or window.
    pub seat: String,
}

/// Trip budget.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Budget {
    /// In euros.
    pub amount: u32,
}

/// Who a briefing is for.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
pub struct Audience {
    /// The audience.
    pub audience: String,
}

/// Asks whether to place a backorder for an out-of-stock title.
#[resolver]
pub async fn confirm_backorder(title: String) -> Elicit<Backorder> {
    Elicit::new(format!("'{title}' is out of stock. Place a backorder?"))
}

/// Order a book that is out of stock (asks whether to place a backorder).
#[tool]
pub async fn order_book(
    /// The title to order.
    title: String,
    #[resolve(confirm_backorder)] backorder: Backorder,
) -> String {
    let placed = if backorder.confirm {
        "placed"
    } else {
        "not placed"
    };
    format!("Backorder for '{title}': {placed}.")
}

/// Asks for a seat preference.
#[resolver]
pub async fn ask_prefs(city: String) -> Elicit<Prefs> {
    Elicit::new(format!("Seat preference for the trip to {city}?"))
}

/// Asks for a budget.
#[resolver]
pub async fn ask_budget(city: String) -> Elicit<Budget> {
    Elicit::new(format!("Budget (EUR) for {city}?"))
}

/// Plan a trip (asks seat preference and budget in one batched round).
#[tool]
pub async fn plan_trip(
    city: String,
    #[resolve(ask_prefs)] prefs: Prefs,
    #[resolve(ask_budget)] budget: Budget,
) -> String {
    format!(
        "Trip to {city}: seat {}, budget {} EUR.",
        prefs.seat, budget.amount
    )
}

/// Reserve a seat; a declined question is an answer too (the parameter takes the whole
/// outcome).
#[tool]
pub async fn reserve_seat(city: String, #[resolve(ask_prefs)] prefs: Elicitation<Prefs>) -> String {
    match prefs {
        Elicitation::Accept(prefs) => format!("Seat {} reserved to {city}.", prefs.seat),
        other => format!("No seat reserved to {city} ({:?}).", other.action()),
    }
}

/// Samples a summary from the client's LLM.
#[resolver]
pub async fn sample_summary(text: String) -> Sample {
    Sample::text(format!("Summarize: {text}"), 50)
}

/// Summarize text with the client's LLM (sampling).
#[tool]
pub async fn summarize(
    text: String,
    #[resolve(sample_summary)] summary: CreateMessageResult,
) -> String {
    let sampled = match &summary.content {
        modelctx::types::OneOrMany::One(block) => block.as_text().unwrap_or("?").to_owned(),
        modelctx::types::OneOrMany::Many(blocks) => blocks
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let _ = text;
    format!("summary[{}]: {sampled}", summary.model)
}

/// Asks for the client's roots.
#[resolver]
pub async fn get_roots() -> ListRoots {
    ListRoots
}

/// Report the client's roots (roots/list).
#[tool]
pub async fn where_am_i(#[resolve(get_roots)] roots: ListRootsResult) -> String {
    let roots: Vec<String> = roots
        .roots
        .iter()
        .map(|r| format!("{} ({})", r.uri, r.name.as_deref().unwrap_or("")))
        .collect();
    format!("roots: {}", roots.join(", "))
}

fn form(message: String, field: &str, kind: &str) -> InputRequest {
    let schema = serde_json::from_value(serde_json::json!({
        "type": "object", "properties": {field: {"type": kind}}, "required": [field]
    }))
    .unwrap_or_default();
    InputRequest::elicit(ElicitRequestFormParams::new(message, schema))
}

/// Return an InputRequiredResult built by hand (requestState `manual:<x>`).
#[tool]
pub async fn manual_irr(x: i64, ctx: Context) -> Outcome<String> {
    if let Some(answer) = ctx.elicit_result("confirm")
        && answer.action == ElicitAction::Accept
    {
        let ok = answer.content.as_ref().and_then(|c| c.get("ok")).cloned();
        return Outcome::Complete(format!(
            "manual_irr done: x={x}, ok={}, state seen by handler: '{}'",
            ok.unwrap_or_default(),
            ctx.request_state().unwrap_or_default()
        ));
    }
    Outcome::InputRequired(
        InputRequiredResult::new()
            .with_request(
                "confirm",
                form(format!("Confirm manual step for x={x}?"), "ok", "boolean"),
            )
            .with_state(format!("manual:{x}")),
    )
}

/// Return the given text unchanged.
#[tool(read_only, idempotent)]
pub async fn echo(text: String) -> String {
    text
}

/// A book's stock record.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Stock {
    /// The title.
    pub title: String,
    /// Copies on the shelf.
    pub copies: u32,
}

/// Look up the stock of a title (structured output).
#[tool(read_only)]
pub async fn stock(title: String) -> Json<Stock> {
    let copies = u32::try_from(title.len() % 4).unwrap_or(0);
    Json(Stock { title, copies })
}

/// Asks who the briefing is for.
#[resolver]
pub async fn ask_audience(topic: String) -> Elicit<Audience> {
    Elicit::new(format!("Who is the audience for the briefing on {topic}?"))
}

/// A briefing prompt that asks who the audience is.
#[prompt]
pub async fn briefing(
    /// What the briefing is about.
    topic: String,
    #[resolve(ask_audience)] audience: Audience,
) -> String {
    format!("Brief {} on {topic}.", audience.audience)
}

/// A quarterly report; asks which format to render (by hand, with key `format`).
#[resource("report://{quarter}", mime_type = "text/plain")]
pub async fn report(quarter: String, ctx: Context) -> Outcome<String> {
    match ctx.elicit_result("format") {
        Some(answer) if answer.action == ElicitAction::Accept => {
            let format = answer
                .content
                .as_ref()
                .and_then(|c| c.get("format"))
                .and_then(|f| f.as_str())
                .unwrap_or("?")
                .to_owned();
            Outcome::Complete(format!("Report {quarter} ({format})"))
        }
        _ => Outcome::InputRequired(
            InputRequiredResult::new()
                .with_request(
                    "format",
                    form(
                        format!("Which format for the {quarter} report?"),
                        "format",
                        "string",
                    ),
                )
                .with_state(format!("report:{quarter}")),
        ),
    }
}

/// Asks the user to sign in at the partner (URL-mode elicitation: the client shows the URL and
/// asks for consent; the credentials never pass through it).
#[resolver]
pub async fn sign_in_partner(partner: String) -> ElicitUrl {
    ElicitUrl::new(
        format!("Sign in to {partner} to link your loyalty account."),
        format!("https://accounts.example.com/link?partner={partner}"),
    )
}

/// Link a loyalty account at a partner shop (asks you to open a URL).
#[tool]
pub async fn link_loyalty(
    partner: String,
    #[resolve(sign_in_partner)] consent: Elicitation<()>,
) -> String {
    match consent {
        Elicitation::Accept(()) => format!("Linked your {partner} account."),
        other => format!(
            "Your {partner} account was not linked ({:?}).",
            other.action()
        ),
    }
}

/// The shop's opening hours.
#[resource("info://hours", mime_type = "text/plain")]
pub async fn hours() -> String {
    "Mon-Sat 9-18".to_owned()
}

/// The bookshop server (the same name and version as the Python peer).
pub fn bookshop() -> McpServer {
    McpServer::builder("PeerBookshop", "0.0.1")
        .tool::<order_book>()
        .tool::<plan_trip>()
        .tool::<reserve_seat>()
        .tool::<summarize>()
        .tool::<where_am_i>()
        .tool::<manual_irr>()
        .tool::<link_loyalty>()
        .tool::<echo>()
        .tool::<stock>()
        .prompt::<briefing>()
        .resource::<report>()
        .resource::<hours>()
        .build()
        .expect("the bookshop registers cleanly")
}

#[allow(dead_code)]
#[allow(
    clippy::print_stderr,
    reason = "the URL is the example's output, as the Python peers print it"
)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = bookshop();
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--http") {
        Some(i) => {
            let port = args.get(i + 1).map_or("0", String::as_str);
            let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
            let addr = listener.local_addr()?;
            eprintln!("listening on http://127.0.0.1:{}/mcp", addr.port());
            server
                .serve_http_on(listener, Default::default(), std::future::pending())
                .await?;
        }
        None => server.serve_stdio().await?,
    }
    Ok(())
}
