//! `serverInfo` beyond name and version — description, website, icons — as a client of either
//! era reads it, and the icons the builder refuses.

use modelctx::client::{Client, Mode};
use modelctx::server::{McpServer, RegistrationError, Server};
use modelctx::types::*;
use modelctx_test_support::client::connect_in_memory;

fn icon(src: &str) -> Icon {
    let mut icon = Icon::new(src.to_owned());
    icon.sizes = Some(vec!["48x48".to_owned()]);
    icon
}

#[tokio::test]
async fn a_client_reads_the_description_website_and_icons_in_both_eras() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let server = McpServer::builder("weather", "2.1.0")
            .description("Forecasts for any city.")
            .website_url("https://weather.example")
            .icons([
                icon("https://weather.example/icon.png"),
                icon("data:image/png;base64,AAAA"),
            ])
            .build()
            .unwrap()
            .into_server();
        let client = connect_in_memory(server, Client::builder().mode(mode.clone())).await;
        let info = client.server_info().expect("the server said who it is");
        assert_eq!(
            info.description.as_deref(),
            Some("Forecasts for any city."),
            "{mode:?}"
        );
        assert_eq!(info.website_url.as_deref(), Some("https://weather.example"));
        let icons = info.icons.unwrap_or_default();
        assert_eq!(icons.len(), 2);
        assert_eq!(icons[0].src, "https://weather.example/icon.png");
        assert_eq!(icons[0].sizes.as_deref(), Some(&["48x48".to_owned()][..]));
        client.close().await.unwrap();
    }
}

#[test]
fn an_icon_that_is_not_https_or_data_is_refused() {
    for src in [
        "http://weather.example/icon.png",
        "file:///etc/passwd",
        "javascript:alert(1)",
    ] {
        let error = Server::builder("weather", "2.1.0")
            .icons([icon(src)])
            .build()
            .unwrap_err();
        assert!(
            matches!(&error, RegistrationError::ServerInfo(reason) if reason.contains(src)),
            "{error}"
        );
    }
}
