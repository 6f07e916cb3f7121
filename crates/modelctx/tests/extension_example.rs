//! The third-party extension example (`examples/echo_stamp.rs`, `com.example/echo-stamp`): its
//! server and client sides together, in both eras — the server's setting read by the client,
//! the client's setting read by the server, the contributed method, and a claimed `resultType`
//! redeemed by the client's resolver.

#[path = "../examples/echo_stamp.rs"]
#[allow(dead_code, unreachable_pub)]
mod echo_stamp;

use modelctx::client::{Client, ClientError, Mode};
use modelctx::server::Server;
use modelctx::types::ResultDecodeError;
use modelctx_test_support::client::connect_in_memory;
use serde_json::json;

#[tokio::test]
async fn the_echo_stamp_extension_works_in_both_eras() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let seen = echo_stamp::demo(mode).await.unwrap();
        assert_eq!(seen[0], "server stampPrefix = srv", "{seen:?}");
        assert_eq!(seen[1], "echo: HELLO [srv-1]", "{seen:?}");
        assert_eq!(seen[2], "stamp_later: LATER [srv-2]", "{seen:?}");
    }
}

/// A client without the extension refuses the extension's result type, precisely.
#[tokio::test]
async fn a_client_without_the_extension_refuses_its_result_type() {
    let server = Server::builder("stamps", "1.0.0")
        .extension(echo_stamp::EchoStamp::new("srv"))
        .build()
        .unwrap();
    let client = connect_in_memory(server, Client::builder()).await;
    let error = client
        .call_tool("stamp_later", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::InvalidResult(ResultDecodeError::UnknownResultType(t)) if t == "stamped"),
        "{error}"
    );
}
