//! The resource fixtures (`resources-*`, `caching`, `sep-2164-resource-not-found`).

use mcp::server::{ServerBuilder, UriVariables};
use mcp::types::{
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};

use super::tools::PNG;

fn resource(uri: &str, name: &str, mime: &str) -> Resource {
    Resource {
        uri: uri.to_owned(),
        name: name.to_owned(),
        mime_type: Some(mime.to_owned()),
        description: Some(format!("The {name} fixture.")),
        ..Default::default()
    }
}

fn contents(contents: ResourceContents) -> ReadResourceResult {
    ReadResourceResult {
        contents: vec![contents],
        ..Default::default()
    }
}

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .resource(resource("test://static-text", "static-text", "text/plain"), |_, p: ReadResourceRequestParams| async move {
            contents(ResourceContents::text(p.uri, Some("text/plain".into()), "This is the content of the static text resource."))
        })
        .resource(resource("test://static-binary", "static-binary", "image/png"), |_, p: ReadResourceRequestParams| async move {
            contents(ResourceContents::blob(p.uri, Some("image/png".into()), PNG))
        })
        .resource(resource("test://watched-resource", "watched-resource", "text/plain"), |_, p: ReadResourceRequestParams| async move {
            contents(ResourceContents::text(p.uri, Some("text/plain".into()), "Watched resource content."))
        })
        .resource_template(
            ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                description: Some("Data for an id.".into()),
                mime_type: Some("application/json".into()),
                ..Default::default()
            },
            |_, p: ReadResourceRequestParams, vars: UriVariables| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                let text = serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
                contents(ResourceContents::text(p.uri, Some("application/json".into()), text))
            },
        )
}
