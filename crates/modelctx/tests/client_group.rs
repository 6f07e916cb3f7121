//! A client of several servers at once (`modelctx::client::group`): the Python SDK 2.3.0's
//! bookshop over stdio beside our own servers in either era, a collision refused whole, names
//! prefixed or made by a function, each call routed to its server, a member removed, and the
//! group following a server's list changes.

use std::sync::Arc;
use std::time::Duration;

use modelctx::client::group::{ClientGroup, GroupError, Naming};
use modelctx::client::{Client, Mode};
use modelctx::server::{Change, Server};
use modelctx::types::*;
use modelctx_test_support::client::{connect_in_memory, peer_command};
use modelctx_test_support::server::fixture;
use serde_json::json;

fn text(result: &CallToolResult) -> String {
    match &result.content[0] {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

async fn python_bookshop() -> Client {
    Client::builder()
        .connect_stdio(peer_command("bookshop.py", &[]))
        .await
        .unwrap()
}

fn names<T>(items: &[modelctx::client::group::Grouped<T>]) -> Vec<&str> {
    items.iter().map(|item| item.name.as_str()).collect()
}

#[tokio::test]
async fn a_collision_is_refused_whole_and_prefixes_keep_both() {
    let group = ClientGroup::default();
    group
        .add(
            "rust",
            connect_in_memory(fixture(), Client::builder()).await,
        )
        .await
        .unwrap();
    let before = group.tools().len();
    // Both offer `echo`: the Python server joins with nothing, not with what does not collide.
    let error = group
        .add("python", python_bookshop().await)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, GroupError::Collision { kind: "tool", name, other, .. } if name == "echo" && other == "rust"),
        "{error}"
    );
    assert_eq!(group.tools().len(), before);
    assert_eq!(group.servers(), ["rust"]);

    let group = ClientGroup::new(Naming::Prefixed {
        separator: "__".to_owned(),
    });
    group
        .add(
            "rust",
            connect_in_memory(fixture(), Client::builder().mode(Mode::Handshake)).await,
        )
        .await
        .unwrap();
    let python = python_bookshop().await;
    group.add("python", python).await.unwrap();
    let tools = group.tools();
    let names = names(&tools);
    assert!(
        names.contains(&"rust__echo") && names.contains(&"python__echo"),
        "{names:?}"
    );
    assert!(names.contains(&"python__order_book"), "{names:?}");
    let from_rust = group
        .call_tool("rust__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&from_rust), "hi");
    let from_python = group
        .call_tool("python__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert!(text(&from_python).contains("hi"), "{}", text(&from_python));
    // The prompt and the resource of our fixture, routed to it.
    let prompt = group
        .get_prompt(
            "rust__greet",
            Some([("who".to_owned(), "Ada".to_owned())].into()),
        )
        .await
        .unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let doc = group.read_resource("test://doc").await.unwrap();
    assert_eq!(doc.contents.len(), 1);

    let python = group.remove("python").unwrap();
    assert!(group.tools().iter().all(|tool| tool.server == "rust"));
    let gone = group
        .call_tool("python__echo", json!({"text": "hi"}))
        .await
        .unwrap_err();
    assert!(
        matches!(gone, GroupError::Unknown { kind: "tool", .. }),
        "{gone}"
    );
    python.close().await.unwrap();
}

#[tokio::test]
async fn a_naming_function_names_and_its_duplicates_are_refused() {
    let group = ClientGroup::new(Naming::Custom(Arc::new(|name: &str, key: &str| {
        format!("{}.{name}", key.to_uppercase())
    })));
    group
        .add("a", connect_in_memory(fixture(), Client::builder()).await)
        .await
        .unwrap();
    assert!(group.tools().iter().any(|tool| tool.name == "A.echo"));
    let duplicate = group
        .add("a", connect_in_memory(fixture(), Client::builder()).await)
        .await
        .unwrap_err();
    assert!(
        matches!(duplicate, GroupError::DuplicateServer(_)),
        "{duplicate}"
    );

    // A function that gives every tool one name: the member's own items collide.
    let flat = ClientGroup::new(Naming::Custom(Arc::new(|_name: &str, _key: &str| {
        "same".to_owned()
    })));
    let error = flat
        .add("b", connect_in_memory(fixture(), Client::builder()).await)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, GroupError::Collision { server, other, .. } if server == "b" && other == "b"),
        "{error}"
    );
}

/// Waits (polling, bounded) until the group lists a tool named `name`.
async fn until_listed(group: &ClientGroup, name: &str) -> bool {
    for _ in 0..500 {
        if group.tools().iter().any(|tool| tool.name == name) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn the_group_follows_a_server_s_tool_changes_in_both_eras() {
    for mode in [Mode::Auto, Mode::Handshake] {
        let server: Server = fixture();
        let group = ClientGroup::default();
        group
            .add(
                "live",
                connect_in_memory(server.clone(), Client::builder().mode(mode.clone())).await,
            )
            .await
            .unwrap();
        server
            .add_tool(
                Tool::new("fresh", Tool::empty_input_schema()),
                |_ctx, _p: CallToolRequestParams| async { CallToolResult::text("new") },
            )
            .unwrap();
        server.notify(Change::ToolsListChanged);
        assert!(
            until_listed(&group, "fresh").await,
            "{mode:?}: {:?}",
            group.tools()
        );
        let fresh = group.call_tool("fresh", json!({})).await.unwrap();
        assert_eq!(text(&fresh), "new");

        assert!(server.remove_tool("fresh"));
        server.notify(Change::ToolsListChanged);
        let mut gone = false;
        for _ in 0..500 {
            if !group.tools().iter().any(|tool| tool.name == "fresh") {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone, "{mode:?}: a removed tool stayed in the group");
    }
}
