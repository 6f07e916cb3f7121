//! Hostile input over streamable HTTP, against a real `reliability-server` process on
//! 127.0.0.1: every case of `hostile_support` gets its precise JSON-RPC error and HTTP status
//! (each followed by a probe that must be answered), the transport's own refusals (body limit,
//! media types, Host/Origin, header agreement) answer their status, a 100 MB body is refused
//! with bounded memory, and the server keeps serving.

mod hostile_support;

use std::time::Duration;

use hostile_support::{Case, Expect, MIB, Reply, Wire, bytes, check, echo_of_size, error, probe};
use mcp_reliability::procfs::Memory;
use mcp_reliability::rawhttp::{self, Body};
use mcp_reliability::server::{HttpServer, Launch};
use mcp_reliability::wire::{self, MRTR_TOOL};
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
            &Launch::default(),
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
    vec![
        Case::new("empty body", Vec::new(), error(-32700, None, "Parse error")),
        Case::new("Content-Type text/plain", echo.clone(), Expect::Status(415))
            .with_headers(with("Content-Type", Some(b"text/plain"))),
        Case::new("no Content-Type", echo.clone(), Expect::Status(415))
            .with_headers(with("Content-Type", None)),
        Case::new("Accept text/html only", echo.clone(), Expect::Status(406))
            .with_headers(with("Accept", Some(b"text/html"))),
        Case::new("Host evil.example", echo.clone(), Expect::Status(421))
            .with_headers(with("Host", Some(b"evil.example"))),
        Case::new(
            "Origin http://evil.example",
            echo.clone(),
            Expect::Status(403),
        )
        .with_headers(with("Origin", Some(b"http://evil.example"))),
        Case::new(
            "Mcp-Method disagrees with the body",
            echo.clone(),
            error(-32020, Some(json!(51)), "Mcp-Method"),
        )
        .with_headers(with("Mcp-Method", Some(b"tools/list"))),
        Case::new(
            "Mcp-Name disagrees with the body",
            echo.clone(),
            error(-32020, Some(json!(51)), "Mcp-Name"),
        )
        .with_headers(with("Mcp-Name", Some(b"test_simple_text"))),
        Case::new(
            "Mcp-Name missing",
            echo.clone(),
            error(-32020, Some(json!(51)), "Mcp-Name"),
        )
        .with_headers(with("Mcp-Name", None)),
        Case::new(
            "Mcp-Name not UTF-8",
            echo.clone(),
            error(-32020, Some(json!(51)), "not valid text"),
        )
        .with_headers(with("Mcp-Name", Some(b"ec\xffho"))),
        Case::new(
            "Mcp-Name a malformed base64 sentinel",
            echo.clone(),
            error(-32020, Some(json!(51)), "Mcp-Name"),
        )
        .with_headers(with("Mcp-Name", Some(b"=?base64?!!!?="))),
        Case::new(
            "MCP-Protocol-Version disagrees with the body",
            echo.clone(),
            error(-32020, Some(json!(51)), "MCP-Protocol-Version"),
        )
        .with_headers(with("MCP-Protocol-Version", Some(b"2099-01-01"))),
        Case::new(
            "MCP-Protocol-Version repeated",
            echo.clone(),
            error(-32020, Some(json!(51)), "repeated"),
        )
        .with_headers({
            let mut h = base.clone();
            h.push(("MCP-Protocol-Version".to_owned(), b"2026-07-28".to_vec()));
            h
        }),
        Case::new(
            "Mcp-Name of 64 KiB",
            echo,
            error(-32020, Some(json!(51)), "Mcp-Name"),
        )
        .with_headers(with("Mcp-Name", Some("n".repeat(64 * 1024).as_bytes()))),
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
    let mut cases = hostile_support::cases();
    cases.extend(http_cases());
    hostile_support::every_case_twice(&mut http, &cases).await;
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
    let after_big = http.memory();
    eprintln!(
        "http 100 MB bodies: VmRSS {:.1} → {:.1} MiB, VmHWM {:.1} → {:.1} MiB",
        before.rss_mib(),
        after_big.rss_mib(),
        before.hwm_mib(),
        after_big.hwm_mib()
    );
    // The body is collected up to the 4 MiB limit and no further.
    assert!(
        after_big.hwm_kib < before.hwm_kib + 4 * MIB + 8 * MIB,
        "VmHWM grew from {:.1} to {:.1} MiB on 100 MB bodies",
        before.hwm_mib(),
        after_big.hwm_mib()
    );

    // The limit is exact: one byte over is refused, a body of exactly the limit is served.
    let (prefix, suffix, fill) = echo_of_size("over", MAX_BODY + 1);
    let mut body = prefix;
    body.resize(body.len() + fill, b'b');
    body.extend_from_slice(&suffix);
    let reply = http.send(&headers, Body::Bytes(body)).await;
    check(
        "http",
        &Case::new("limit + 1", Vec::new(), Expect::Status(413)),
        &reply,
    )
    .unwrap_or_else(|f| panic!("{f}"));
    let (prefix, suffix, fill) = echo_of_size("at-limit", MAX_BODY);
    let mut body = prefix;
    body.resize(body.len() + fill, b'c');
    body.extend_from_slice(&suffix);
    let reply = http.send(&headers, Body::Bytes(body)).await;
    check(
        "http",
        &Case::new(
            "exactly the limit",
            Vec::new(),
            Expect::Text {
                id: json!("at-limit"),
                text: "c".repeat(fill),
            },
        ),
        &reply,
    )
    .unwrap_or_else(|f| panic!("{f}"));
    probe(&mut http, 2).await.unwrap_or_else(|f| panic!("{f}"));
    let after = http.memory();
    eprintln!(
        "http at the limit: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
        after.rss_mib(),
        after.hwm_mib()
    );
    assert!(
        after.hwm_kib < before.hwm_kib + 6 * 4 * MIB + 8 * MIB,
        "VmHWM {:.1} MiB",
        after.hwm_mib()
    );
    http.finish().await;
}

/// `n` clients each send the head of a 4 MiB echo and all of its body but the last byte, then
/// hold it. The SDK admits as many as its buffered-body budget covers
/// (`HttpConfig::default().max_buffered_body_bytes`) and refuses the rest at once with 503 and
/// `Retry-After`; the admitted ones are all answered once their last byte arrives, and the
/// server keeps serving afterwards. Returns the server's memory idle and with the bodies held.
#[allow(clippy::print_stderr)]
async fn held_bodies(n: usize) -> (Memory, Memory) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let budget = mcp::server::http::HttpConfig::default().max_buffered_body_bytes;
    let admitted = n.min(budget / MAX_BODY);
    let mut http = Http::start().await;
    let idle = http.memory();
    let (prefix, suffix, fill) = echo_of_size("held", MAX_BODY);
    let mut body = prefix;
    body.resize(body.len() + fill, b'h');
    body.extend_from_slice(&suffix);
    let mut head = String::from("POST /mcp HTTP/1.1\r\n");
    head.push_str(&format!("Host: 127.0.0.1:{}\r\n", http.server.port));
    for (name, value) in wire::http_headers("tools/call", Some("echo")) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    // Every connection's answer is read by its own task, so refusals arrive whatever the order.
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let mut writers = Vec::new();
    for index in 0..n {
        let stream = tokio::net::TcpStream::connect(http.server.addr())
            .await
            .expect("connect");
        let (mut reader, mut writer) = stream.into_split();
        writer.write_all(head.as_bytes()).await.expect("head");
        writers.push(Some(writer));
        let answers = answers.clone();
        tokio::spawn(async move {
            let mut answer = Vec::new();
            let read = reader.read_to_end(&mut answer).await;
            let _ = answers.send((index, read.map(|_| answer)));
        });
    }
    let deadline = Duration::from_secs(30);
    for _ in admitted..n {
        let (index, answer) = tokio::time::timeout(deadline, answered.recv())
            .await
            .expect("the refusals arrive without the bodies")
            .expect("a reader");
        let text = String::from_utf8_lossy(&answer.expect("a refusal is readable")).into_owned();
        assert!(
            text.starts_with("HTTP/1.1 503")
                && text.to_ascii_lowercase().contains("retry-after: 1"),
            "{}",
            &text[..text.len().min(300)]
        );
        writers[index] = None;
    }
    let (last, rest) = body.split_last().expect("a body");
    // The server reads every admitted connection concurrently, so writing them in turn cannot
    // stall.
    for writer in writers.iter_mut().flatten() {
        writer.write_all(rest).await.expect("body");
    }
    // Wait until the server has read every byte sent so far (no sleeping: poll the sockets'
    // queues until they are empty).
    let until = std::time::Instant::now() + deadline;
    loop {
        let queues = mcp_reliability::procfs::tcp_queues(http.server.port).expect("/proc/net/tcp");
        if queues.len() >= 2 * admitted && queues.iter().all(|&(tx, rx)| tx == 0 && rx == 0) {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the server did not read the bodies: {queues:?}"
        );
        tokio::task::yield_now().await;
    }
    let held = http.memory();
    for writer in writers.iter_mut().flatten() {
        writer.write_all(&[*last]).await.expect("last byte");
    }
    for _ in 0..admitted {
        let (index, answer) = tokio::time::timeout(deadline, answered.recv())
            .await
            .expect("the admitted are answered")
            .expect("a reader");
        assert!(
            writers[index].is_some(),
            "connection {index} answered twice"
        );
        let text = String::from_utf8_lossy(&answer.expect("an answer")).into_owned();
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
async fn sixteen_held_bodies_are_all_answered() {
    held_bodies(16).await;
}

#[tokio::test]
async fn many_held_bodies_stay_within_a_global_bound() {
    let budget = mcp::server::http::HttpConfig::default().max_buffered_body_bytes as u64 / 1024;
    let (idle, held) = held_bodies(64).await;
    // The bodies the budget admits, plus room for the server's own working memory.
    assert!(
        held.rss_kib < idle.rss_kib + budget + 16 * MIB,
        "VmRSS grew from {:.1} to {:.1} MiB with 64 bodies in flight",
        idle.rss_mib(),
        held.rss_mib()
    );
}
