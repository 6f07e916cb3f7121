//! What subscriptions cost a real `reliability-server` process (issue 32, items 1 and 2), with
//! the SDK's default limits: the probes — listen requests of 4 MiB of one-character
//! URIs (four took the demo from 26 to 592 MiB), 40 `resources/subscribe`s of 4 MiB URIs on
//! one 2025-11-25 session (+204 MiB) — are refused with the server's memory flat, and the
//! largest listen streams and sessions the limits admit cost no more than their documented
//! bound (`SubscriptionLimits::max_stream_charge`; per session `max_resource_bytes` plus
//! `ENTRY_CHARGE` per URI).
//! `SUBSCRIPTION_REPORT=1 cargo test -p modelctx-reliability --test subscription_bounds --
//! --nocapture` prints the figures.

use std::time::Duration;

use modelctx::server::SubscriptionLimits;
use modelctx_reliability::procfs::Memory;
use modelctx_reliability::server::HttpServer;
use modelctx_reliability::wire;
use modelctx_test_support::hostile::memory_checked_launch;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(60);

async fn start() -> HttpServer {
    HttpServer::start(
        env!("CARGO_BIN_EXE_reliability-server").as_ref(),
        &memory_checked_launch(),
    )
    .await
    .expect("the server starts")
}

fn kib(memory: Memory) -> u64 {
    memory.rss_kib
}

#[allow(clippy::print_stderr, reason = "the figures RELIABILITY.md records")]
fn report(line: &str) {
    if std::env::var_os("SUBSCRIPTION_REPORT").is_some() {
        eprintln!("{line}");
    }
}

/// A 2026-07-28 POST of `body`, its response not read yet.
async fn post(http: &reqwest::Client, server: &HttpServer, body: &Value) -> reqwest::Response {
    let mut request = http
        .post(server.url())
        .body(serde_json::to_vec(body).unwrap());
    for (name, value) in wire::headers_for(body) {
        request = request.header(name, value);
    }
    tokio::time::timeout(BOUND, request.send())
        .await
        .expect("an answer in time")
        .expect("a response")
}

/// Reads a listen response until its acknowledgement; the stream stays open with it.
async fn acknowledged(response: &mut reqwest::Response) {
    let mut seen = Vec::new();
    let read = async {
        while !String::from_utf8_lossy(&seen).contains("notifications/subscriptions/acknowledged") {
            let chunk = response.chunk().await.unwrap().expect("the stream is open");
            seen.extend_from_slice(&chunk);
        }
    };
    tokio::time::timeout(BOUND, read)
        .await
        .expect("acknowledged in time");
}

/// `count` distinct URIs of `length` bytes each.
fn uris(prefix: &str, count: usize, length: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let uri = format!("{prefix}{i:0>width$}", width = length - prefix.len());
            assert_eq!(uri.len(), length);
            uri
        })
        .collect()
}

/// The probe is refused, and the largest streams the limits admit cost at most their
/// bound each.
#[tokio::test]
async fn listen_streams_cost_at_most_their_bound() {
    let server = start().await;
    let http = reqwest::Client::new();
    // Four listen requests of just under 4 MiB (the body limit) of one-character URIs.
    let probe = wire::request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": vec!["a"; 1_000_000]}}),
    );
    let before = server.memory().unwrap();
    for _ in 0..4 {
        let response = post(&http, &server, &probe).await;
        assert_eq!(response.status(), 400);
        let answer: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{}", answer["error"]);
    }
    let after = server.memory().unwrap();
    report(&format!(
        "four 4 MiB listen probes: VmRSS {:.1} -> {:.1} MiB, VmHWM {:.1} -> {:.1} MiB",
        before.rss_mib(),
        after.rss_mib(),
        before.hwm_mib(),
        after.hwm_mib()
    ));
    assert!(
        kib(after) < kib(before) + 16 * 1024,
        "the probes were held: {before:?} -> {after:?}"
    );

    // The largest request the limits admit: 1 000 URIs of 64 bytes (64 000 bytes of them),
    // 32 streams from this one address (each its own HTTP/1.1 connection; charged ~340 KiB
    // each, as many as fit in one client's 16 MiB share).
    const STREAMS: usize = 32;
    let limits = SubscriptionLimits::default();
    assert!(STREAMS * limits.max_stream_charge() <= limits.max_held_bytes_per_client);
    let idle = server.memory().unwrap();
    let mut streams = Vec::new();
    for i in 0..STREAMS {
        let listen = wire::request(
            100 + i,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions":
                uris(&format!("bound://{i}/"), 1_000, 64)}}),
        );
        let client = reqwest::Client::new();
        let mut response = post(&client, &server, &listen).await;
        acknowledged(&mut response).await;
        streams.push((client, response));
    }
    let held = server.memory().unwrap();
    let per_stream = (kib(held).saturating_sub(kib(idle))) * 1024 / STREAMS as u64;
    report(&format!(
        "{STREAMS} streams of 1 000 URIs: VmRSS {:.1} -> {:.1} MiB, {:.1} KiB a stream \
         (bound {:.1} KiB)",
        idle.rss_mib(),
        held.rss_mib(),
        per_stream as f64 / 1024.0,
        limits.max_stream_charge() as f64 / 1024.0
    ));
    assert!(
        per_stream <= limits.max_stream_charge() as u64,
        "{per_stream} bytes a stream, over the bound of {}",
        limits.max_stream_charge()
    );
    drop(streams);
    server.stop(Duration::from_secs(10)).await.unwrap();
}

/// A handshake-era POST on `session` (none for `initialize`), answered as JSON.
async fn legacy(
    http: &reqwest::Client,
    server: &HttpServer,
    session: Option<&str>,
    body: &Value,
) -> (Option<String>, Value) {
    let mut request = http
        .post(server.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = tokio::time::timeout(BOUND, request.send())
        .await
        .expect("an answer in time")
        .unwrap();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.bytes().await.unwrap();
    (id, serde_json::from_slice(&body).unwrap())
}

fn plain(id: usize, method: &str, params: Value) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    message["params"] = params;
    message
}

/// The probe on a 2025-11-25 session is refused with the server's memory flat, and a
/// session following the most URIs it may costs at most its bound.
#[tokio::test]
async fn sessions_cost_at_most_their_bound() {
    let server = start().await;
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for i in 0..4 {
        let (id, opened) = legacy(
            &http,
            &server,
            None,
            &plain(
                1,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": format!("legacy-{i}"), "version": "1"}}),
            ),
        )
        .await;
        assert_eq!(opened["result"]["protocolVersion"], "2025-11-25");
        let id = id.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = http
            .post(server.url())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-11-25")
            .body(serde_json::to_vec(&initialized).unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
        sessions.push(id);
    }
    // 40 subscribes of a 4 MiB URI (of the fixtures' template) on one session.
    let huge = format!("test://template/{}/data", "x".repeat(4 * 1024 * 1024 - 512));
    let before = server.memory().unwrap();
    for i in 0..40 {
        let subscribe = plain(10 + i, "resources/subscribe", json!({"uri": huge}));
        let (_, answer) = legacy(&http, &server, Some(&sessions[0]), &subscribe).await;
        assert_eq!(
            answer["error"]["code"], -32602,
            "{}",
            answer["error"]["message"]
        );
    }
    let after = server.memory().unwrap();
    report(&format!(
        "40 subscribes of a 4 MiB URI: VmRSS {:.1} -> {:.1} MiB",
        before.rss_mib(),
        after.rss_mib()
    ));
    assert!(
        kib(after) < kib(before) + 16 * 1024,
        "the URIs were held: {before:?} -> {after:?}"
    );

    // Each of four sessions follows the most it may: 1 000 URIs of 64 bytes.
    let limits = SubscriptionLimits::default();
    let bound = limits.max_resource_bytes + limits.max_resources * SubscriptionLimits::ENTRY_CHARGE;
    let idle = server.memory().unwrap();
    for session in &sessions {
        let followed = uris("test://template/", 1_000, 64 - "/data".len());
        for (i, uri) in followed.iter().enumerate() {
            let subscribe = plain(
                100 + i,
                "resources/subscribe",
                json!({"uri": format!("{uri}/data")}),
            );
            let (_, answer) = legacy(&http, &server, Some(session), &subscribe).await;
            assert_eq!(answer["result"], json!({}), "{answer}");
        }
        let one_more = plain(
            2_000,
            "resources/subscribe",
            json!({"uri": "test://template/one-more/data"}),
        );
        let (_, answer) = legacy(&http, &server, Some(session), &one_more).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
    let held = server.memory().unwrap();
    let per_session = (kib(held).saturating_sub(kib(idle))) * 1024 / sessions.len() as u64;
    report(&format!(
        "{} sessions of 1 000 URIs: VmRSS {:.1} -> {:.1} MiB, {:.1} KiB a session (bound {:.1} KiB)",
        sessions.len(),
        idle.rss_mib(),
        held.rss_mib(),
        per_session as f64 / 1024.0,
        bound as f64 / 1024.0
    ));
    assert!(
        per_session <= bound as u64,
        "{per_session} bytes a session, over the bound of {bound}"
    );
    server.stop(Duration::from_secs(10)).await.unwrap();
}
