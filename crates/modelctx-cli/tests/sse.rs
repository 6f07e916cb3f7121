//! `mcp` and the HTTP+SSE transport of 2024-11-05: a URL that answers the old way is spoken to
//! over SSE without being told (the spec's backwards-compatibility rule), against the Python
//! SDK 2.3.0's own `sse_app` (`tests/python/sse_server.py`), and `mcp serve demo --sse` mounts
//! the transport beside `/mcp`.

use modelctx_test_support::cli::{
    HttpServer, assert_ok, mcp, mcp_binary, python, repo_root, stdout,
};

fn python_sse_server() -> HttpServer {
    let script = repo_root().join("tests/python/sse_server.py");
    HttpServer::start(python(), &[&script.display().to_string(), "--http", "0"])
}

/// Today's `mcp call http://…/sse echo` against Python's `MCPServer` over SSE: the streamable
/// POST gets 405, so `mcp` opens the event stream and calls through it.
#[test]
fn mcp_call_falls_back_to_sse_against_python() {
    let server = python_sse_server();
    assert!(server.url.ends_with("/sse"), "{}", server.url);
    let output = mcp(
        &[
            "call",
            "--timeout",
            "60",
            &server.url,
            "echo",
            "text=over the old transport",
        ],
        "",
    );
    assert_ok(&output);
    assert_eq!(stdout(&output).trim(), "over the old transport");
    let output = mcp(&["tools", "--timeout", "60", &server.url], "");
    assert_ok(&output);
    assert!(
        stdout(&output).contains("provision(name: string*)"),
        "{}",
        stdout(&output)
    );
}

/// `mcp serve demo --http 0 --sse`: `/mcp` serves as before and `/sse` serves the old
/// transport, which `mcp` falls back to by itself.
#[test]
fn serve_demo_mounts_sse_beside_mcp() {
    let server = HttpServer::start(mcp_binary(), &["serve", "demo", "--http", "0", "--sse"]);
    let sse = server.url.replace("/mcp", "/sse");
    for url in [&server.url, &sse] {
        let output = mcp(
            &["call", "--timeout", "60", url, "echo", "text=both ways"],
            "",
        );
        assert_ok(&output);
        assert_eq!(stdout(&output).trim(), "both ways", "{url}");
    }
}

/// Without `--sse` nothing answers at `/sse`: the fallback finds no event stream and the
/// streamable error stands.
#[test]
fn serve_demo_without_sse_has_no_sse_endpoint() {
    let server = HttpServer::demo();
    let sse = server.url.replace("/mcp", "/sse");
    let output = mcp(&["call", "--timeout", "60", &sse, "echo", "text=x"], "");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("404"), "{stderr}");
}
