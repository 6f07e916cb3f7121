//! The flow-store contract: what every [`FlowStore`] keeps, as plain async functions that
//! panic on a violation. Run them against a store of your own (say, Postgres) the way the SDK
//! runs them against its memory, SQLite and Redis stores (`tests/store_memory.rs`,
//! `tests/store_sqlite.rs`, `tests/store_redis.rs`). Each takes two handles on one empty store
//! (two connections, as two instances or processes would hold; pass one handle twice for an
//! in-process store). [`form_question`] builds the rounds the contract records, for test
//! servers to ask.
//!
//! It lives with the flows it checks, not in the store kernel below them: the kernel names no
//! runtime (DESIGN.md, "Layers"), and checks its own verbs over a record of its own
//! (`modelctx::store::contract`). Enabled by the `test-util` feature.

#![allow(
    clippy::missing_panics_doc,
    reason = "panicking is how a contract reports"
)]

use std::sync::Arc;

use modelctx_types::{
    CallToolRequestParams, ElicitRequestFormParams, ElicitResult, InputRequest,
    InputRequiredResult, InputResponse, InputResponses,
};
use serde_json::{Map, Value, json};

use super::{FlowError, FlowFailure, FlowFilter, FlowMethod, FlowRecord, FlowStatus, FlowStore};
use crate::client::api::PendingRequest;

/// A round that asks, under `key`, one form question: the required `property` of JSON type
/// `kind` (`"string"`, `"boolean"`, …), with `state` as its `requestState`. The flows contract
/// records such rounds; test servers can answer with them.
pub fn form_question(
    key: &str,
    message: &str,
    property: &str,
    kind: &str,
    state: String,
) -> InputRequiredResult {
    let schema = serde_json::from_value(json!({
        "type": "object",
        "properties": {property: {"type": kind}},
        "required": [property],
    }))
    .unwrap();
    InputRequiredResult::new()
        .with_request(
            key,
            InputRequest::elicit(ElicitRequestFormParams::new(message, schema)),
        )
        .with_state(state)
}

/// Answers under one key: an accepted form `{property: value}`.
fn answers(key: &str, property: &str, value: Value) -> InputResponses {
    let mut content = Map::new();
    content.insert(property.to_owned(), value);
    let mut answers = InputResponses::new();
    answers.insert(
        key.to_owned(),
        InputResponse::elicit(&ElicitResult::accept(content)),
    );
    answers
}

/// A flow record awaiting the user, built by hand.
fn record(server: &str, owner: Option<&str>, key: &str) -> FlowRecord {
    let mut arguments = Map::new();
    arguments.insert("name".to_owned(), json!(key));
    let pending = PendingRequest {
        params: CallToolRequestParams::new("provision", Some(arguments)),
        input_required: form_question(key, "?", "value", "string", format!("opaque-state-{key}")),
    };
    FlowRecord::new(
        server,
        FlowMethod::CallTool,
        owner.map(str::to_owned),
        &pending,
    )
    .unwrap()
}

/// The flow-store contract: every transition of a flow's life, listing, removal and expiry; `a` and `b` are two handles on the same storage (two
/// connections, as two processes would have).
pub async fn flows(a: Arc<dyn FlowStore>, b: Arc<dyn FlowStore>) {
    // Insert, load through the other handle, no duplicates.
    let flow = record("s1", Some("alice"), "q");
    a.save(&flow).await.unwrap();
    assert_eq!(b.load(&flow.id).await.unwrap().as_ref(), Some(&flow));
    assert!(matches!(b.insert(&flow).await, Err(FlowError::Exists(id)) if id == flow.id));
    assert_eq!(a.load("flow_missing").await.unwrap(), None);

    // Not claimable before the user answered; answers must match the questions.
    assert_eq!(b.claim(&flow.id, "w1", 1, 1000).await.unwrap(), None);
    let wrong = a
        .record_answers(&flow.id, answers("nope", "value", json!("x")), 10)
        .await;
    assert!(
        matches!(wrong, Err(FlowError::InvalidAnswers { .. })),
        "{wrong:?}"
    );
    let answered = a
        .record_answers(&flow.id, answers("q", "value", json!("x")), 10)
        .await
        .unwrap();
    assert_eq!(answered.status, FlowStatus::Answered);
    assert_eq!(answered.version, flow.version + 1);
    let twice = b
        .record_answers(&flow.id, answers("q", "value", json!("y")), 11)
        .await;
    assert!(
        matches!(
            twice,
            Err(FlowError::WrongStatus {
                status: FlowStatus::Answered,
                ..
            })
        ),
        "{twice:?}"
    );

    // One claim wins; the other handle sees it taken until the lease runs out.
    let now = answered.updated_at_ms + 1;
    let claimed = a
        .claim(&flow.id, "w1", now, 1000)
        .await
        .unwrap()
        .expect("claimable");
    assert_eq!(claimed.status, FlowStatus::Resuming);
    assert_eq!(claimed.worker.as_deref(), Some("w1"));
    assert_eq!(claimed.attempts, 1);
    assert_eq!(claimed.lease_until_ms, Some(now + 1000));
    assert_eq!(
        b.claim(&flow.id, "w2", now + 999, 1000).await.unwrap(),
        None
    );
    // The lease ran out: w2 takes over, and w1's late outcome is refused.
    let taken = b
        .claim(&flow.id, "w2", now + 1000, 1000)
        .await
        .unwrap()
        .expect("an expired lease is claimable");
    assert_eq!(taken.worker.as_deref(), Some("w2"));
    assert_eq!(taken.attempts, 2);
    let late = a
        .finish(&claimed, Ok(json!({"late": true})), now + 1001)
        .await;
    assert!(matches!(late, Err(FlowError::ClaimLost(_))), "{late:?}");

    // The server asks again: a new round awaits the user.
    let round2 = form_question("q2", "again?", "value", "string", "state-2".into());
    let advanced = b.advance(&taken, round2.clone(), now + 1002).await.unwrap();
    assert_eq!(advanced.status, FlowStatus::AwaitingUser);
    assert_eq!(advanced.round, 2);
    assert_eq!(advanced.attempts, 0);
    assert_eq!(advanced.answers, None);
    assert_eq!(advanced.input_required, round2);
    assert_eq!(a.load(&flow.id).await.unwrap().as_ref(), Some(&advanced));

    // Answer, claim, a retryable failure releases it, then it finishes.
    a.record_answers(&flow.id, answers("q2", "value", json!("z")), now + 1003)
        .await
        .unwrap();
    let claimed = a
        .claim(&flow.id, "w1", now + 1004, 1000)
        .await
        .unwrap()
        .unwrap();
    let failure = FlowFailure {
        code: None,
        message: "connection refused".into(),
    };
    let released = a
        .release(&claimed, failure.clone(), now + 1005)
        .await
        .unwrap();
    assert_eq!(released.status, FlowStatus::Answered);
    assert_eq!(released.error.as_ref(), Some(&failure));
    let claimed = b
        .claim(&flow.id, "w2", now + 1006, 1000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.attempts, 2);
    let done = b
        .finish(&claimed, Ok(json!({"ok": 1})), now + 1007)
        .await
        .unwrap();
    assert_eq!(done.status, FlowStatus::Done);
    assert_eq!(done.result, Some(json!({"ok": 1})));
    assert_eq!(done.error, None);
    assert_eq!(a.claim(&flow.id, "w3", u64::MAX, 1).await.unwrap(), None);

    // Listing: by status, server, owner, age; oldest first; limited.
    let mut others = Vec::new();
    for (i, (server, owner)) in [("s1", Some("bob")), ("s2", Some("alice")), ("s1", None)]
        .into_iter()
        .enumerate()
    {
        let mut other = record(server, owner, &format!("k{i}"));
        other.created_at_ms = 100 + i as u64;
        other.updated_at_ms = 100 + i as u64;
        a.save(&other).await.unwrap();
        others.push(other);
    }
    let ids = |records: Vec<FlowRecord>| records.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let awaiting = FlowFilter::new().statuses([FlowStatus::AwaitingUser]);
    assert_eq!(
        ids(b.list(&awaiting).await.unwrap()),
        ids(others.clone()),
        "oldest first"
    );
    assert_eq!(
        ids(b.list(&awaiting.clone().server("s1")).await.unwrap()),
        vec![others[0].id.clone(), others[2].id.clone()]
    );
    assert_eq!(
        ids(b.list(&FlowFilter::new().owner("alice")).await.unwrap()),
        vec![others[1].id.clone(), flow.id.clone()]
    );
    assert_eq!(
        ids(b
            .list(&FlowFilter::new().updated_before_ms(102))
            .await
            .unwrap()),
        vec![others[0].id.clone(), others[1].id.clone()]
    );
    assert_eq!(
        ids(b.list(&awaiting.clone().limit(1)).await.unwrap()),
        vec![others[0].id.clone()]
    );
    assert_eq!(
        ids(b
            .list(&FlowFilter::new().statuses([FlowStatus::Done]))
            .await
            .unwrap()),
        vec![flow.id.clone()]
    );

    // Remove only the version read; expire by status and age.
    assert!(!a.remove(&others[0].id, Some(99)).await.unwrap());
    assert!(a.remove(&others[0].id, Some(1)).await.unwrap());
    assert!(!a.remove(&others[0].id, None).await.unwrap());
    assert_eq!(
        b.expire(&[FlowStatus::AwaitingUser], 102).await.unwrap(),
        1,
        "only k1 is older than 102"
    );
    assert_eq!(
        b.expire(&[FlowStatus::Done, FlowStatus::Failed], u64::MAX)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        ids(a.list(&FlowFilter::new()).await.unwrap()),
        vec![others[2].id.clone()]
    );
}

/// Many claims of the same answered flow at the same instant, through `stores` (one handle
/// each): exactly one wins, for each of `flows` flows. Returns the number of claims tried.
pub async fn flow_claim_race(stores: Vec<Arc<dyn FlowStore>>, flows: usize) -> usize {
    let mut tried = 0;
    for i in 0..flows {
        let flow = record("race", None, &format!("r{i}"));
        stores[0].save(&flow).await.unwrap();
        stores[0]
            .record_answers(&flow.id, answers(&format!("r{i}"), "value", json!(i)), 1)
            .await
            .unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(stores.len()));
        let mut claims = Vec::new();
        for (w, store) in stores.iter().enumerate() {
            let (store, barrier, id) = (Arc::clone(store), Arc::clone(&barrier), flow.id.clone());
            claims.push(tokio::spawn(async move {
                barrier.wait().await;
                store.claim(&id, &format!("w{w}"), 2, 60_000).await.unwrap()
            }));
        }
        let mut winners = Vec::new();
        for claim in claims {
            if let Some(won) = claim.await.unwrap() {
                winners.push(won.worker.unwrap());
            }
        }
        tried += stores.len();
        assert_eq!(winners.len(), 1, "flow {i}: winners {winners:?}");
        let stored = stores[0].load(&flow.id).await.unwrap().unwrap();
        assert_eq!(stored.worker.as_ref(), Some(&winners[0]));
        assert_eq!(stored.attempts, 1);
    }
    tried
}
