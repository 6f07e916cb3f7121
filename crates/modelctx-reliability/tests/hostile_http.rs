//! Hostile input over streamable HTTP, against a real `reliability-server` process on
//! 127.0.0.1: every case of `modelctx_test_support::hostile` gets its precise JSON-RPC error and HTTP
//! status (each followed by a probe that must be answered), the transport's own refusals (body limit,
//! media types, Host/Origin, header agreement) answer their status, a 100 MB body is refused
//! with bounded memory, and the server keeps serving.

use std::time::Duration;

use modelctx_reliability::procfs::Memory;
use modelctx_reliability::rawhttp::{self, Body};
use modelctx_reliability::server::HttpServer;
use modelctx_reliability::wire::{self, MRTR_TOOL};
use modelctx_test_support::hostile::{
    Case, Expect, MIB, Reply, Wire, assert_peak_within, bytes, check, echo_body, error,
    limit_is_exact, memory_checked_launch, probe,
};
use serde_json::{Value, json};

/// The HTTP body limit of the SDK (`HttpConfig::default().max_body_size`).
const MAX_BODY: usize = 4 * 1024 * 1024;

struct Http {
    server: HttpServer,
}

impl Http {
    async fn start() -> Self {
        let server = HttpServer::start(
            env!("CARGO_BIN_EXE_reliability-server").as_ref(),
            &memory_checked_launch(),
        )
        .await
        .expect("the server starts");
        Self { server }
    }

    async fn send(&self, headers: &[(String, Vec<u8>)], body: Body) -> Reply {
        let response = rawhttp::post(
            self.server.addr(),
            "/mcp",
            headers,
            body,
            Duration::from_secs(30),
        )
        .await
        .expect("an HTTP response");
        Reply {
            status: Some(response.status),
            body: response.body,
        }
    }

    async fn finish(self) {
        let status = self
            .server
            .stop(Duration::from_secs(10))
            .await
            .expect("stop");
        assert!(status.success(), "graceful stop: {status}");
    }
}

/// The 2026-07-28 headers that agree with the body, or plausible ones when it does not parse.
fn headers_for(body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let headers = match serde_json::from_slice::<Value>(body) {
        Ok(value) if value["method"].is_string() => wire::headers_for(&value),
        _ => wire::http_headers("tools/call", Some("echo")),
    };
    rawhttp::text_headers(&headers)
}

impl Wire for Http {
    fn name(&self) -> &'static str {
        "http"
    }

    async fn exchange(
        &mut self,
        body: &[u8],
        headers: Option<&[(String, Vec<u8>)]>,
        _reply: bool,
    ) -> Reply {
        let headers = headers.map_or_else(|| headers_for(body), <[_]>::to_vec);
        self.send(&headers, Body::Bytes(body.to_vec())).await
    }

    fn memory(&self) -> Memory {
        self.server.memory().expect("the server is running")
    }
}

fn replace_header(
    mut headers: Vec<(String, Vec<u8>)>,
    name: &str,
    value: Option<&[u8]>,
) -> Vec<(String, Vec<u8>)> {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    if let Some(value) = value {
        headers.push((name.to_owned(), value.to_vec()));
    }
    headers
}

/// The cases only HTTP has: the transport's refusals and the header ladder.
fn http_cases() -> Vec<Case> {
    let echo = bytes(&wire::call_tool(51, "echo", &json!({"text": "x"})));
    let base = headers_for(&echo);
    let with = |name: &str, value: Option<&[u8]>| replace_header(base.clone(), name, value);
    // The echo request with other headers: the transport's refusals and the header ladder.
    let on_echo = |name: &str, headers: Vec<(String, Vec<u8>)>, expect: Expect| {
        Case::new(name, echo.clone(), expect).with_headers(headers)
    };
    // A header that disagrees with the body, is missing or malformed: -32020 with the echo's id.
    let header_error = |fragment: &'static str| error(-32020, Some(json!(51)), fragment);
    vec![
        Case::new("empty body", Vec::new(), error(-32700, None, "Parse error")),
        on_echo(
            "Content-Type text/plain",
            with("Content-Type", Some(b"text/plain")),
            Expect::Status(415),
        ),
        on_echo(
            "no Content-Type",
            with("Content-Type", None),
            Expect::Status(415),
        ),
        on_echo(
            "Accept text/html only",
            with("Accept", Some(b"text/html")),
            Expect::Status(406),
        ),
        on_echo(
            "Host evil.example",
            with("Host", Some(b"evil.example")),
            Expect::Status(421),
        ),
        on_echo(
            "Origin http://evil.example",
            with("Origin", Some(b"http://evil.example")),
            Expect::Status(403),
        ),
        on_echo(
            "Mcp-Method disagrees with the body",
            with("Mcp-Method", Some(b"tools/list")),
            header_error("Mcp-Method"),
        ),
        on_echo(
            "Mcp-Name disagrees with the body",
            with("Mcp-Name", Some(b"test_simple_text")),
            header_error("Mcp-Name"),
        ),
        on_echo(
            "Mcp-Name missing",
            with("Mcp-Name", None),
            header_error("Mcp-Name"),
        ),
        on_echo(
            "Mcp-Name not UTF-8",
            with("Mcp-Name", Some(b"ec\xffho")),
            header_error("not valid text"),
        ),
        on_echo(
            "Mcp-Name a malformed base64 sentinel",
            with("Mcp-Name", Some(b"=?base64?!!!?=")),
            header_error("Mcp-Name"),
        ),
        on_echo(
            "MCP-Protocol-Version disagrees with the body",
            with("MCP-Protocol-Version", Some(b"2099-01-01")),
            header_error("MCP-Protocol-Version"),
        ),
        on_echo(
            "MCP-Protocol-Version repeated",
            {
                let mut h = base.clone();
                h.push(("MCP-Protocol-Version".to_owned(), b"2026-07-28".to_vec()));
                h
            },
            header_error("repeated"),
        ),
        on_echo(
            "Mcp-Name of 64 KiB",
            with("Mcp-Name", Some("n".repeat(64 * 1024).as_bytes())),
            header_error("Mcp-Name"),
        ),
        Case::new(
            "a JSON-RPC response posted (accepted and dropped)",
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
            Expect::Silent,
        ),
        Case::new(
            "the MRTR tool without Mcp-Name",
            bytes(&wire::call_tool(52, MRTR_TOOL, &json!({}))),
            error(-32020, Some(json!(52)), "Mcp-Name"),
        )
        .with_headers(rawhttp::text_headers(&wire::http_headers(
            "tools/call",
            None,
        ))),
    ]
}

#[tokio::test]
async fn every_hostile_case_over_http() {
    let mut http = Http::start().await;
    let mut cases = modelctx_test_support::hostile::cases();
    cases.extend(http_cases());
    modelctx_test_support::hostile::every_case_twice(&mut http, &cases).await;
    http.finish().await;
}

#[tokio::test]
async fn a_hundred_megabyte_body_over_http() {
    let mut http = Http::start().await;
    let before = http.memory();
    let headers = rawhttp::text_headers(&wire::http_headers("tools/call", Some("echo")));
    let refused = Case::new("a 100 MB body", Vec::new(), Expect::Status(413));
    for chunked in [false, true] {
        let started = std::time::Instant::now();
        let reply = http
            .send(
                &headers,
                Body::Repeat {
                    chunk: vec![b' '; 1 << 20],
                    total: 100_000_000,
                    chunked,
                },
            )
            .await;
        check("http", &refused, &reply).unwrap_or_else(|f| panic!("chunked={chunked}: {f}"));
        eprintln!(
            "http 100 MB body (chunked={chunked}): 413 in {:?}",
            started.elapsed()
        );
        probe(&mut http, usize::from(chunked))
            .await
            .unwrap_or_else(|f| panic!("{f}"));
    }
    // The body is collected up to the 4 MiB limit and no further.
    assert_peak_within(
        "http 100 MB bodies",
        &before,
        &http.memory(),
        4 * MIB + 8 * MIB,
    );

    let refused = Case::new("limit + 1", Vec::new(), Expect::Status(413));
    limit_is_exact(&mut http, MAX_BODY, &refused, Some(&headers)).await;
    assert_peak_within(
        "http at the limit",
        &before,
        &http.memory(),
        6 * 4 * MIB + 8 * MIB,
    );
    http.finish().await;
}

/// One raw upload on its own connection: the head of a POST sent at once, its body whenever the
/// test says. Its answer is read by a task of its own, so refusals arrive whatever the order.
struct Upload {
    writer: Option<tokio::net::tcp::OwnedWriteHalf>,
    answer: tokio::task::JoinHandle<String>,
}

impl Upload {
    async fn start(http: &Http, head: &str) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let stream = tokio::net::TcpStream::connect(http.server.addr())
            .await
            .expect("connect");
        let (mut reader, mut writer) = stream.into_split();
        writer.write_all(head.as_bytes()).await.expect("head");
        let answer = tokio::spawn(async move {
            // Everything until the end, or until the server resets a connection whose body it
            // stopped reading (the answer came before the reset).
            let mut answer = Vec::new();
            let mut chunk = vec![0u8; 64 * 1024];
            while let Ok(read @ 1..) = reader.read(&mut chunk).await {
                answer.extend_from_slice(&chunk[..read]);
            }
            String::from_utf8_lossy(&answer).into_owned()
        });
        Self {
            writer: Some(writer),
            answer,
        }
    }

    /// Sends body bytes; a connection the server has refused and closed takes no more.
    async fn send(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        if let Some(writer) = &mut self.writer
            && writer.write_all(bytes).await.is_err()
        {
            self.writer = None;
        }
    }

    async fn answer(self) -> String {
        tokio::time::timeout(Duration::from_secs(30), self.answer)
            .await
            .expect("an answer in time")
            .expect("the reader")
    }
}

/// The head of a 2026-07-28 echo POST with a body of `length` bytes.
fn echo_head(http: &Http, length: usize) -> String {
    let mut head = String::from("POST /mcp HTTP/1.1\r\n");
    head.push_str(&format!("Host: 127.0.0.1:{}\r\n", http.server.port));
    for (name, value) in wire::http_headers("tools/call", Some("echo")) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {length}\r\nConnection: close\r\n\r\n"
    ));
    head
}

/// Waits until the server has read every byte sent to it so far (no sleeping: polls the sockets'
/// queues until they are empty).
async fn drained(port: u16) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let queues = modelctx_reliability::procfs::tcp_queues(port).expect("/proc/net/tcp");
        if queues.iter().all(|&(tx, rx)| tx == 0 && rx == 0) {
            return;
        }
        assert!(
            std::time::Instant::now() < until,
            "the server did not read what was sent: {queues:?}"
        );
        tokio::task::yield_now().await;
    }
}

/// The request bytes the default budget lets large bodies hold: three quarters of it (the last
/// quarter is kept for the first 64 KiB of each body).
fn shared_budget() -> usize {
    modelctx::server::http::HttpConfig::default().max_buffered_body_bytes / 4 * 3
}

/// `n` clients, one after the other, each send a 4 MiB echo but its last byte, and hold it. The
/// budget is charged as bytes arrive: the bodies its shared part covers are read, each later one
/// is refused with 503 and `Retry-After` as soon as its bytes exceed what is left; the admitted
/// ones are all answered once their last byte arrives, and the server keeps serving afterwards.
/// Returns the server's memory idle and with the bodies held.
#[allow(clippy::print_stderr)]
async fn held_bodies(n: usize) -> (Memory, Memory) {
    let admitted = n.min(shared_budget() / MAX_BODY);
    let mut http = Http::start().await;
    let idle = http.memory();
    let (body, fill) = echo_body("held", MAX_BODY, b'h');
    let head = echo_head(&http, body.len());
    let (last, rest) = body.split_last().expect("a body");
    let mut uploads = Vec::new();
    for _ in 0..n {
        let mut upload = Upload::start(&http, &head).await;
        upload.send(rest).await;
        // Whoever arrives first is admitted: one at a time.
        drained(http.server.port).await;
        uploads.push(upload);
    }
    let refused = uploads.split_off(admitted);
    for upload in refused {
        let text = upload.answer().await;
        assert!(
            text.starts_with("HTTP/1.1 503")
                && text.to_ascii_lowercase().contains("retry-after: 1"),
            "{}",
            &text[..text.len().min(300)]
        );
    }
    let held = http.memory();
    for upload in &mut uploads {
        assert!(upload.writer.is_some(), "an admitted body was refused");
        upload.send(&[*last]).await;
    }
    for upload in uploads {
        let text = upload.answer().await;
        assert!(
            text.starts_with("HTTP/1.1 200"),
            "{}",
            &text[..text.len().min(200)]
        );
        assert!(text.contains(&"h".repeat(fill)), "the echo came back whole");
    }
    eprintln!(
        "http {n} held 4 MiB bodies, {admitted} admitted: VmRSS {:.1} → {:.1} MiB",
        idle.rss_mib(),
        held.rss_mib()
    );
    probe(&mut http, 1).await.unwrap_or_else(|f| panic!("{f}"));
    http.finish().await;
    (idle, held)
}

#[tokio::test]
async fn sixteen_held_bodies_the_budget_covers_are_answered() {
    held_bodies(16).await;
}

#[tokio::test]
async fn many_held_bodies_stay_within_a_global_bound() {
    let budget =
        modelctx::server::http::HttpConfig::default().max_buffered_body_bytes as u64 / 1024;
    let (idle, held) = held_bodies(64).await;
    // The bodies the budget admits, plus room for the server's own working memory.
    assert!(
        held.rss_kib < idle.rss_kib + budget + 16 * MIB,
        "VmRSS grew from {:.1} to {:.1} MiB with 64 bodies in flight",
        idle.rss_mib(),
        held.rss_mib()
    );
}

/// Uploads that send only their headers (declaring 4 MiB each, twice what the whole budget
/// covers), large ones stalled before their last byte (filling all the budget large bodies may
/// hold) and slow ones a few bytes in: a body over its share is refused, yet an ordinary
/// request is served.
#[tokio::test]
async fn silent_slow_and_stalled_uploads_do_not_lock_out_a_normal_client() {
    let mut http = Http::start().await;
    let budget = modelctx::server::http::HttpConfig::default().max_buffered_body_bytes;
    let (body, _) = echo_body("upload", MAX_BODY, b'u');
    let head = echo_head(&http, body.len());
    let mut uploads = Vec::new();
    for _ in 0..2 * budget / MAX_BODY {
        uploads.push(Upload::start(&http, &head).await);
    }
    for _ in 0..shared_budget() / MAX_BODY {
        let mut stalled = Upload::start(&http, &head).await;
        stalled.send(&body[..body.len() - 1]).await;
        uploads.push(stalled);
    }
    // Read before the slow ones start: together they fill the large bodies' part exactly.
    drained(http.server.port).await;
    for _ in 0..16 {
        let mut slow = Upload::start(&http, &head).await;
        slow.send(&body[..100]).await;
        uploads.push(slow);
    }
    drained(http.server.port).await;
    // The large bodies' part of the budget is spent...
    let (big, _) = echo_body("big", 1024 * 1024, b'b');
    let headers = rawhttp::text_headers(&wire::http_headers("tools/call", Some("echo")));
    let reply = http.send(&headers, Body::Bytes(big)).await;
    assert_eq!(reply.status, Some(503), "a 1 MiB body does not fit now");
    // ...and ordinary requests are still served.
    for n in 0..8 {
        probe(&mut http, n).await.unwrap_or_else(|f| panic!("{f}"));
    }
    for upload in &uploads {
        assert!(upload.writer.is_some(), "every upload is still being read");
        assert!(!upload.answer.is_finished(), "no upload was answered yet");
    }
    drop(uploads);
    probe(&mut http, 8).await.unwrap_or_else(|f| panic!("{f}"));
    http.finish().await;
}
