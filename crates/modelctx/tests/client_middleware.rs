//! The client middleware chain: every message the client sends passes it — each round of a
//! multi-round call as a request of its own, negotiation, notifications, a listen stream, and in
//! the handshake era the answers to the server's requests.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use modelctx::client::middleware::{Kind, Middleware, Next, Reply, Request};
use modelctx::client::{ClientBuilder, ClientError, Mode};
use modelctx::server::{RequestContext, Server};
use modelctx::types::*;
use modelctx_test_support::client::{Recorder, answers, connect_in_memory, recording_builder};
use modelctx_test_support::server::{HttpPeer, object};
use serde_json::{Value, json};

/// One message the chain saw, and what came back.
#[derive(Debug, Clone)]
struct Sent {
    kind: Kind,
    method: String,
    target: Option<String>,
    params: Value,
    /// `input required`, `ok`, `error <code>`, `sent`, `answer`, or `refused`.
    outcome: String,
}

/// Records every message (its method as it enters, the whole of it once answered); refuses
/// `tools/call` of `forbidden` without sending it.
#[derive(Clone, Default)]
struct Record {
    entered: Arc<Mutex<Vec<String>>>,
    answered: Arc<Mutex<Vec<Sent>>>,
}

impl Record {
    fn entered(&self, method: &str) -> usize {
        let entered = self.entered.lock().unwrap();
        entered.iter().filter(|entered| *entered == method).count()
    }

    fn of(&self, method: &str) -> Vec<Sent> {
        let sent = self.answered.lock().unwrap();
        sent.iter()
            .filter(|sent| sent.method == method)
            .cloned()
            .collect()
    }
}

impl Middleware for Record {
    fn handle<'a>(
        &'a self,
        request: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<Reply, ClientError>> {
        Box::pin(async move {
            self.entered
                .lock()
                .unwrap()
                .push(request.method().to_owned());
            let mut sent = Sent {
                kind: request.kind(),
                method: request.method().to_owned(),
                target: request.target().map(|target| target.into_owned()),
                params: request
                    .params()
                    .map_or(Value::Null, |params| serde_json::from_str(params).unwrap()),
                outcome: String::new(),
            };
            let reply = if sent.target.as_deref() == Some("forbidden") {
                Err(ClientError::Refused("not this one".into()))
            } else {
                next.run(request).await
            };
            sent.outcome = match &reply {
                Err(_) => "refused".to_owned(),
                Ok(reply) if reply.is_input_required() => "input required".to_owned(),
                Ok(reply) if reply.is_sent() => "sent".to_owned(),
                Ok(reply) if reply.answer().is_some() => "answer".to_owned(),
                Ok(reply) => match reply.as_error() {
                    Some(error) => format!("error {}", error.code.0),
                    None => "ok".to_owned(),
                },
            };
            self.answered.lock().unwrap().push(sent);
            reply
        })
    }
}

/// A tool that asks for a region in whichever way the request's era allows: an
/// `InputRequiredResult` on 2026-07-28 (a second round), the back-channel in the handshake era.
fn asker() -> Server {
    Server::builder("client-middleware-test", "1.0.0")
        .tool(
            Tool::new("provision", Tool::empty_input_schema()),
            |ctx: RequestContext, params: CallToolRequestParams| async move {
                let schema: ElicitationSchema = serde_json::from_value(json!({"type":"object",
                    "properties":{"region":{"type":"string"}},"required":["region"]}))
                .unwrap();
                let question = ElicitRequestFormParams::new("Which region?", schema);
                let answer = match ctx.era() {
                    Era::Handshake => ctx.elicit(question).await?,
                    Era::Modern => match params
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get("region"))
                    {
                        Some(answer) => answer
                            .as_elicit()
                            .map_err(|e| ErrorObject::invalid_params(e.to_string()))?,
                        None => {
                            return Ok(Outcome::InputRequired(
                                InputRequiredResult::new()
                                    .with_request("region", InputRequest::elicit(question)),
                            ));
                        }
                    },
                };
                let region = answer.content.unwrap_or_default()["region"].clone();
                Ok::<_, ErrorObject>(Outcome::Complete(CallToolResult::text(format!(
                    "in {region}"
                ))))
            },
        )
        .tool(
            Tool::new("forbidden", object(json!({"type":"object"}))),
            |_ctx, _params| async { CallToolResult::text("should not run") },
        )
        .build()
        .unwrap()
}

fn client_builder(record: &Record) -> ClientBuilder {
    recording_builder(&Recorder::default(), answers()).middleware(record.clone())
}

/// 2026-07-28: the two rounds of one call are two requests in the chain, the second carrying the
/// answer; negotiation passes too, and a refusal never reaches the server.
#[tokio::test]
async fn each_round_of_a_multi_round_call_passes_the_chain() {
    let record = Record::default();
    let client = connect_in_memory(asker(), client_builder(&record)).await;

    let result = client.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("in \"eu-west-1\""));
    let rounds = record.of("tools/call");
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    assert_eq!(rounds[0].outcome, "input required");
    assert_eq!(rounds[1].outcome, "ok");
    assert!(
        rounds.iter().all(
            |round| round.kind == Kind::Request && round.target.as_deref() == Some("provision")
        )
    );
    assert!(rounds[0].params.get("inputResponses").is_none());
    assert_eq!(
        rounds[1].params["inputResponses"]["region"]["content"]["region"],
        "eu-west-1"
    );
    // The params are the ones sent: the 2026-07-28 envelope is in them.
    assert_eq!(
        rounds[1].params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(record.of("server/discover").len(), 1);

    let refused = client.call_tool("forbidden", json!({})).await;
    assert!(
        matches!(refused, Err(ClientError::Refused(_))),
        "{refused:?}"
    );
    assert_eq!(record.of("tools/call").len(), 3);
    client.close().await.unwrap();
}

/// The handshake era: `initialize`, `notifications/initialized`, the call, and the answer to the
/// server's `elicitation/create` all pass the chain.
#[tokio::test]
async fn handshake_answers_and_notifications_pass_the_chain() {
    let record = Record::default();
    let client = connect_in_memory(asker(), client_builder(&record).mode(Mode::Handshake)).await;

    let result = client.call_tool("provision", json!({})).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("in \"eu-west-1\""));
    assert_eq!(record.of("initialize")[0].outcome, "ok");
    let initialized = record.of("notifications/initialized");
    assert_eq!(initialized.len(), 1);
    assert_eq!(
        (initialized[0].kind, initialized[0].outcome.as_str()),
        (Kind::Notification, "sent")
    );
    assert_eq!(record.of("tools/call").len(), 1);
    let answers = record.of("elicitation/create");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].kind, Kind::Answer);
    assert_eq!(answers[0].outcome, "answer");
    assert_eq!(answers[0].params["message"], "Which region?");
    client.close().await.unwrap();
}

/// On HTTP, a listen stream is a request in the chain like any other (one that is answered only
/// when the stream ends), and so are both rounds.
#[tokio::test]
async fn http_rounds_and_a_listen_stream_pass_the_chain() {
    let record = Record::default();
    let peer = HttpPeer::start(asker()).await;
    let client = client_builder(&record)
        .connect_http(&peer.url)
        .await
        .unwrap();
    client.call_tool("provision", json!({})).await.unwrap();
    let outcomes: Vec<String> = record
        .of("tools/call")
        .into_iter()
        .map(|sent| sent.outcome)
        .collect();
    assert_eq!(outcomes, ["input required", "ok"]);

    let subscription = client
        .listen(SubscriptionFilter::default().with_tools_list_changed())
        .await
        .unwrap();
    assert_eq!(record.entered("subscriptions/listen"), 1);
    subscription.close().await;
    client.close().await.unwrap();
}
