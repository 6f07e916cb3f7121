//! Which UI a tool names, which tools an app may call, and the app's HTML document: the
//! server's metadata, read as the MCP Apps extension (`io.modelcontextprotocol/ui`) defines it.
//!
//! A tool names its UI in `_meta.ui.resourceUri`, or in the older flat key
//! `_meta["ui/resourceUri"]` that some servers still send alone. The URI must be a `ui://`
//! resource, and what `resources/read` returns for it must be `text/html;profile=mcp-app`
//! (text, or a base64 blob of UTF-8) of at most [`MAX_APP_HTML`] bytes; anything else is refused
//! with an error that says what was found. The resource's `_meta.ui` (its sandbox: `csp`,
//! `permissions`; `prefersBorder`) may sit on its `resources/list` entry and on the content
//! item; the content item's fields win.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::safe_text::line;

/// The MIME type of an MCP App's HTML document.
pub(crate) const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The largest app document served (the official examples are about 220 KB).
pub(crate) const MAX_APP_HTML: usize = 4 << 20;

/// The longest `ui://` URI accepted.
const MAX_URI_LEN: usize = 2048;

/// The tool's `_meta` object, if it has one.
fn meta(tool: &Value) -> Option<&Map<String, Value>> {
    tool.get("_meta").and_then(Value::as_object)
}

/// The `ui://` resource `tool` names: `_meta.ui.resourceUri`, else `_meta["ui/resourceUri"]`.
/// An error when it names none, or something that is not a `ui://` URI.
pub(crate) fn resource_uri(tool: &Value) -> Result<String, String> {
    let meta = meta(tool);
    let nested = meta
        .and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("resourceUri"));
    let flat = meta.and_then(|m| m.get("ui/resourceUri"));
    let Some(uri) = nested.or(flat) else {
        return Err("the tool has no UI: its _meta names no ui.resourceUri".to_owned());
    };
    let Some(uri) = uri.as_str() else {
        return Err(format!(
            "the tool's UI resource URI is not a string: {}",
            line(&crate::safe_text::json_line(uri))
        ));
    };
    let is_ui = uri
        .get(..5)
        .is_some_and(|s| s.eq_ignore_ascii_case("ui://"));
    if !is_ui || uri.len() > MAX_URI_LEN || uri.len() == 5 {
        return Err(format!(
            "the tool's UI resource {} is not a ui:// URI; MCP Apps are ui:// resources",
            line(&format!("{uri:?}"))
        ));
    }
    Ok(uri.to_owned())
}

/// Whether an app may call `tool`: its `_meta.ui.visibility` includes `"app"`, or it has none
/// (the default is `["model", "app"]`). A visibility that is not a list of strings allows
/// nothing.
pub(crate) fn visible_to_apps(tool: &Value) -> bool {
    let visibility = meta(tool)
        .and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("visibility"));
    match visibility {
        None | Some(Value::Null) => true,
        Some(Value::Array(scopes)) => scopes.iter().any(|scope| scope == "app"),
        Some(_) => false,
    }
}

/// The app's document, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppDocument {
    /// The HTML.
    pub(crate) html: String,
    /// `_meta.ui` of the resource: its listing's, overridden field by field by the content
    /// item's.
    pub(crate) ui: Map<String, Value>,
}

/// Whether `mime_type` is [`APP_MIME_TYPE`] (case and spaces aside).
fn is_app_mime_type(mime_type: &str) -> bool {
    let compact: String = mime_type
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    compact == APP_MIME_TYPE
}

/// The document in `read` (a `resources/read` result for `uri`), with `listing` (its
/// `resources/list` entry, when the server lists it).
pub(crate) fn app_document(
    uri: &str,
    listing: Option<&Value>,
    read: &Value,
) -> Result<AppDocument, String> {
    let contents = read
        .get("contents")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let content = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| contents.first())
        .ok_or_else(|| format!("reading {} returned no contents", line(uri)))?;
    let mime_type = content
        .get("mimeType")
        .or_else(|| listing.and_then(|l| l.get("mimeType")))
        .and_then(Value::as_str);
    match mime_type {
        Some(mime_type) if is_app_mime_type(mime_type) => {}
        Some(other) => {
            return Err(format!(
                "{} is of type {}, not {APP_MIME_TYPE}: not an MCP App",
                line(uri),
                line(other)
            ));
        }
        None => {
            return Err(format!(
                "{} has no MIME type; an MCP App is {APP_MIME_TYPE}",
                line(uri)
            ));
        }
    }
    let too_big = || {
        format!(
            "{} is larger than {} MiB; refusing to serve it",
            line(uri),
            MAX_APP_HTML >> 20
        )
    };
    let html = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), _) => {
            if text.len() > MAX_APP_HTML {
                return Err(too_big());
            }
            text.clone()
        }
        (None, Some(Value::String(blob))) => {
            if blob.len() > MAX_APP_HTML / 3 * 4 + 4 {
                return Err(too_big());
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| format!("{}: its blob is not base64: {e}", line(uri)))?;
            String::from_utf8(bytes).map_err(|_| format!("{}: its HTML is not UTF-8", line(uri)))?
        }
        _ => return Err(format!("{} has neither text nor blob", line(uri))),
    };
    let ui_of = |holder: Option<&Value>| {
        holder
            .and_then(|h| h.get("_meta"))
            .and_then(|m| m.get("ui"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut ui = ui_of(listing);
    ui.extend(ui_of(Some(content)));
    Ok(AppDocument { html, ui })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_ui_is_named_nested_or_flat() {
        let nested = json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://a/app.html"}}});
        assert_eq!(resource_uri(&nested).unwrap(), "ui://a/app.html");
        let flat = json!({"name": "t", "_meta": {"ui/resourceUri": "ui://flat"}});
        assert_eq!(resource_uri(&flat).unwrap(), "ui://flat");
        // The nested key wins when both are there.
        let both =
            json!({"_meta": {"ui/resourceUri": "ui://old", "ui": {"resourceUri": "ui://new"}}});
        assert_eq!(resource_uri(&both).unwrap(), "ui://new");
        assert!(
            resource_uri(&json!({"name": "t"}))
                .unwrap_err()
                .contains("no UI")
        );
        for bad in [
            json!("https://evil.example/app.html"),
            json!("file:///etc/passwd"),
            json!("ui:/x"),
            json!("ui://"),
            json!(format!("ui://{}", "a".repeat(MAX_URI_LEN))),
        ] {
            let tool = json!({"_meta": {"ui": {"resourceUri": bad}}});
            let error = resource_uri(&tool).unwrap_err();
            assert!(error.contains("not a ui:// URI"), "{error}");
        }
        assert!(
            resource_uri(&json!({"_meta": {"ui": {"resourceUri": 3}}}))
                .unwrap_err()
                .contains("not a string")
        );
        // The URI is quoted escaped.
        let error = resource_uri(&json!({"_meta": {"ui/resourceUri": "x\u{1b}[2J"}})).unwrap_err();
        assert!(!error.contains('\u{1b}'), "{error}");
    }

    #[test]
    fn visibility_defaults_to_model_and_app() {
        assert!(visible_to_apps(&json!({"name": "t"})));
        assert!(visible_to_apps(
            &json!({"_meta": {"ui": {"resourceUri": "ui://x"}}})
        ));
        assert!(visible_to_apps(
            &json!({"_meta": {"ui": {"visibility": ["app"]}}})
        ));
        assert!(visible_to_apps(
            &json!({"_meta": {"ui": {"visibility": ["model", "app"]}}})
        ));
        assert!(!visible_to_apps(
            &json!({"_meta": {"ui": {"visibility": ["model"]}}})
        ));
        assert!(!visible_to_apps(
            &json!({"_meta": {"ui": {"visibility": []}}})
        ));
        assert!(!visible_to_apps(
            &json!({"_meta": {"ui": {"visibility": "app"}}})
        ));
    }

    fn read(content: Value) -> Value {
        let mut result = Map::new();
        result.insert("contents".to_owned(), Value::Array(vec![content]));
        Value::Object(result)
    }

    #[test]
    fn the_document_must_be_an_mcp_app() {
        let ok = read(
            json!({"uri": "ui://a", "mimeType": "text/html;profile=mcp-app",
            "text": "<p>hi</p>", "_meta": {"ui": {"prefersBorder": true}}}),
        );
        let listing = json!({"uri": "ui://a", "name": "a",
            "_meta": {"ui": {"prefersBorder": false, "csp": {"connectDomains": ["https://x.example"]}}}});
        let document = app_document("ui://a", Some(&listing), &ok).unwrap();
        assert_eq!(document.html, "<p>hi</p>");
        assert_eq!(document.ui["prefersBorder"], json!(true));
        assert_eq!(
            document.ui["csp"],
            json!({"connectDomains": ["https://x.example"]})
        );
        // Spaces and case in the MIME type.
        let spaced =
            read(json!({"uri": "ui://a", "mimeType": "Text/HTML; profile=mcp-app", "text": "x"}));
        assert!(app_document("ui://a", None, &spaced).is_ok());
        // A blob of UTF-8.
        let blob =
            read(json!({"uri": "ui://a", "mimeType": APP_MIME_TYPE, "blob": "PHA+aGk8L3A+"}));
        assert_eq!(
            app_document("ui://a", None, &blob).unwrap().html,
            "<p>hi</p>"
        );

        let plain = read(json!({"uri": "ui://a", "mimeType": "text/html", "text": "x"}));
        let error = app_document("ui://a", None, &plain).unwrap_err();
        assert!(
            error.contains("of type text/html, not text/html;profile=mcp-app"),
            "{error}"
        );
        let untyped = read(json!({"uri": "ui://a", "text": "x"}));
        assert!(
            app_document("ui://a", None, &untyped)
                .unwrap_err()
                .contains("no MIME type")
        );
        let empty = json!({"contents": []});
        assert!(
            app_document("ui://a", None, &empty)
                .unwrap_err()
                .contains("no contents")
        );
        let huge = read(json!({"uri": "ui://a", "mimeType": APP_MIME_TYPE,
            "text": "x".repeat(MAX_APP_HTML + 1)}));
        assert!(
            app_document("ui://a", None, &huge)
                .unwrap_err()
                .contains("larger than 4 MiB")
        );
        let binary = read(json!({"uri": "ui://a", "mimeType": APP_MIME_TYPE, "blob": "/w=="}));
        assert!(
            app_document("ui://a", None, &binary)
                .unwrap_err()
                .contains("not UTF-8")
        );
        let neither = read(json!({"uri": "ui://a", "mimeType": APP_MIME_TYPE}));
        assert!(app_document("ui://a", None, &neither).is_err());
    }
}
