//! The resource fixtures (`resources-*`, `caching`, `sep-2164-resource-not-found`).

use modelctx::server::ServerBuilder;
use modelctx::types::{
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use modelctx::uri_template::UriVariables;

use super::tools::PNG;

fn resource(uri: &str, name: &str, mime: &str) -> Resource {
    Resource::new(uri, name)
        .with_mime_type(mime)
        .with_description(format!("The {name} fixture."))
}

fn contents(contents: ResourceContents) -> ReadResourceResult {
    ReadResourceResult::new(vec![contents])
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
            ResourceTemplate::new("test://template/{id}/data", "template")
                .with_description("Data for an id.")
                .with_mime_type("application/json"),
            |_, p: ReadResourceRequestParams, vars: UriVariables| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                let text = serde_json::json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string();
                contents(ResourceContents::text(p.uri, Some("application/json".into()), text))
            },
        )
}
