//! Resource templates with the operators of RFC 6570 levels 1 to 3, end to end: a client expands
//! the template the server lists (`modelctx::uri_template`), reads the URI, and the server's
//! routing (the same `UriTemplate`) hands the values back to the `#[resource]` function.

use modelctx::client::Client;
use modelctx::resource;
use modelctx::server::McpServer;
use modelctx::types::ResourceContents;
use modelctx::uri_template::{UriTemplate, Value};
use modelctx_test_support::client::connect_in_memory;

/// A section of the handbook, in a format, at a revision.
#[resource("handbook://{/part,section}{.format}{?rev}", mime_type = "text/plain")]
async fn handbook(part: String, section: String, format: String, rev: Option<String>) -> String {
    let rev = rev.as_deref().unwrap_or("latest");
    format!("{part}|{section}|{format}|{rev}")
}

async fn connect() -> Client {
    let server = McpServer::builder("handbook", "1.0.0")
        .resource::<handbook>()
        .build()
        .unwrap();
    connect_in_memory(server.into_server(), Client::builder()).await
}

fn text(contents: &[ResourceContents]) -> &str {
    match contents {
        [ResourceContents::Text(text)] => &text.text,
        other => panic!("one text content expected, got {other:?}"),
    }
}

#[tokio::test]
async fn a_listed_template_expands_to_a_uri_the_server_routes_back() {
    let client = connect().await;
    let templates = client.list_resource_templates().await.unwrap();
    let [listed] = templates.as_slice() else {
        panic!("one template expected: {templates:?}");
    };
    let template = UriTemplate::parse(&listed.uri_template).unwrap();

    let values = [
        ("part", Value::from("ops guide")),
        ("section", Value::from("on-call")),
        ("format", Value::from("md")),
        ("rev", Value::from("7/b")),
    ];
    let uri = template.expand(&values);
    assert_eq!(uri, "handbook:///ops%20guide/on-call.md?rev=7%2Fb");
    let read = client.read_resource(uri).await.unwrap();
    assert_eq!(text(&read.contents), "ops guide|on-call|md|7/b");

    // The query is optional and lenient (order, unknown names); the path is not.
    let read = client
        .read_resource("handbook:///ops/faq.txt?utm=x")
        .await
        .unwrap();
    assert_eq!(text(&read.contents), "ops|faq|txt|latest");
    for unrouted in [
        "handbook:///ops/faq",        // no `.format`
        "handbook:///ops/a/faq.txt",  // `{/part,section}` is two segments, not three
        "handbook:///ops/f%zz.txt",   // a broken percent-encoding
        "handbook:///ops/faq.tar.gz", // `{.format}` may not hold a `.`
    ] {
        assert!(
            client.read_resource(unrouted).await.is_err(),
            "{unrouted} should not be routed"
        );
    }
}
