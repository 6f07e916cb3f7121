//! Every shape the macros accept, registered on one server.

use modelctx::server::{
    Ask, Context, Elicit, Elicitation, Json, ListRoots, McpServer, Sample,
};
use modelctx::types::{CreateMessageResult, ListRootsResult, Outcome};

#[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
struct Prefs {
    seat: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Quote {
    price: u32,
}

/// A plain value, from a tool argument and the context.
#[modelctx::resolver]
async fn region(city: String, ctx: &Context) -> String {
    format!("{city}@{}", ctx.protocol_version())
}

/// A question depending on another resolver.
#[modelctx::resolver]
async fn prefs(#[resolve(region)] region: String) -> Elicit<Prefs> {
    Elicit::new(format!("Seat in {region}?"))
}

/// Known or asked.
#[modelctx::resolver]
async fn maybe_prefs(known: Option<String>) -> Ask<Elicit<Prefs>> {
    match known {
        Some(seat) => Ask::Ready(Prefs { seat }),
        None => Elicit::new("Seat?").into(),
    }
}

/// A fallible question.
#[modelctx::resolver]
async fn fallible(city: String) -> Result<Sample, String> {
    if city.is_empty() {
        return Err("no city".to_owned());
    }
    Ok(Sample::text(format!("Describe {city}"), 20))
}

#[modelctx::resolver]
async fn roots() -> ListRoots {
    ListRoots
}

/// Plan a trip.
#[modelctx::tool(title = "Trip planner", idempotent)]
async fn plan(
    /// Where to.
    city: String,
    known: Option<String>,
    #[resolve(prefs)] prefs: Prefs,
    #[resolve(maybe_prefs)] maybe: Elicitation<Prefs>,
    #[resolve(fallible)] description: CreateMessageResult,
    #[resolve(roots)] roots: ListRootsResult,
    ctx: Context,
) -> Result<Json<Quote>, String> {
    let _ = (city, known, prefs.seat, maybe, description, roots, ctx);
    Ok(Json(Quote { price: 1 }))
}

/// A synchronous tool with a renamed argument and no parameters but the context.
#[modelctx::tool(name = "sync-tool", description = "Synchronous.")]
fn sync_tool(ctx: &Context) -> &'static str {
    let _ = ctx;
    "ok"
}

/// Asks by hand.
#[modelctx::tool]
async fn by_hand(x: i64, ctx: Context) -> Outcome<String> {
    match ctx.request_state() {
        Some(_) => Outcome::Complete(x.to_string()),
        None => Outcome::InputRequired(modelctx::types::InputRequiredResult::new().with_state("s")),
    }
}

/// A prompt with a resolver.
#[modelctx::prompt(title = "Briefing")]
async fn briefing(
    topic: String,
    known: Option<String>,
    #[resolve(maybe_prefs)] prefs: Elicitation<Prefs>,
) -> String {
    format!("{topic} {known:?} {:?}", prefs.accepted().map(|p| p.seat))
}

/// A template with a resolver taking the variable by name.
#[modelctx::resolver]
async fn format_for(quarter: String) -> Elicit<Prefs> {
    Elicit::new(format!("Format for {quarter}?"))
}

#[modelctx::resource("report://{quarter}", mime_type = "text/plain")]
async fn report(quarter: String, #[resolve(format_for)] format: Prefs) -> String {
    format!("{quarter} {}", format.seat)
}

#[modelctx::resource("info://hours", name = "hours")]
async fn hours(ctx: Context) -> Result<String, std::io::Error> {
    let _ = ctx;
    Ok("9-18".to_owned())
}

fn main() {
    let server = McpServer::builder("everything", "1.0.0")
        .tool::<plan>()
        .tool::<sync_tool>()
        .tool::<by_hand>()
        .prompt::<briefing>()
        .resource::<report>()
        .resource::<hours>()
        .build()
        .unwrap();
    let _ = server;
    // The functions stay callable as written.
    let _ = sync_tool;
}
