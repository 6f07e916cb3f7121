//! Results for people (the default) and for scripts (`--json`). Everything here comes from the
//! server, so every string goes through [`safe_text`] (JSON too: escaped, still valid).

use std::fmt::Write as _;

use console::style;
use serde_json::Value;

use crate::safe_text::{self, block, line};

/// Pretty JSON, with control and invisible characters escaped.
pub(crate) fn json(value: &Value) -> String {
    safe_text::json(value)
}

/// `name(arg: type*, …)` for an input schema.
fn signature(name: &str, schema: Option<&Value>) -> String {
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let args: Vec<String> = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(arg, property)| {
                    let kind = property
                        .get("type")
                        .map(|t| match t {
                            Value::String(t) => line(t).into_owned(),
                            other => json_line(other),
                        })
                        .unwrap_or_else(|| "any".to_owned());
                    let mark = if required.contains(&arg.as_str()) {
                        "*"
                    } else {
                        ""
                    };
                    format!("{}: {kind}{mark}", line(arg))
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{}({})", style(line(name)).bold(), args.join(", "))
}

/// Compact JSON on one line, escaped.
fn json_line(value: &Value) -> String {
    line(&value.to_string()).into_owned()
}

fn description(item: &Value) -> String {
    item.get("description")
        .and_then(Value::as_str)
        .map(|d| format!("\n    {}", block(d).replace('\n', "\n    ")))
        .unwrap_or_default()
}

/// A tool list.
pub(crate) fn tools(tools: &[Value]) -> String {
    let mut out = String::new();
    for tool in tools {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(
            out,
            "{}{}",
            signature(name, tool.get("inputSchema")),
            description(tool)
        );
    }
    if tools.is_empty() {
        out.push_str("(no tools)\n");
    }
    out
}

/// A prompt list.
pub(crate) fn prompts(prompts: &[Value]) -> String {
    let mut out = String::new();
    for prompt in prompts {
        let name = prompt.get("name").and_then(Value::as_str).unwrap_or("?");
        let args: Vec<String> = prompt
            .get("arguments")
            .and_then(Value::as_array)
            .map(|args| {
                args.iter()
                    .map(|a| {
                        let arg = a.get("name").and_then(Value::as_str).unwrap_or("?");
                        let required = a.get("required").and_then(Value::as_bool) == Some(true);
                        format!("{}{}", line(arg), if required { "*" } else { "" })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}({}){}",
            style(line(name)).bold(),
            args.join(", "),
            description(prompt)
        );
    }
    if prompts.is_empty() {
        out.push_str("(no prompts)\n");
    }
    out
}

/// Resources and templates.
pub(crate) fn resources(resources: &[Value], templates: &[Value]) -> String {
    let mut out = String::new();
    for (items, key) in [(resources, "uri"), (templates, "uriTemplate")] {
        for item in items {
            let uri = item.get(key).and_then(Value::as_str).unwrap_or("?");
            let mime = item
                .get("mimeType")
                .and_then(Value::as_str)
                .map(|m| format!(" ({})", line(m)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{}{mime}{}",
                style(line(uri)).bold(),
                description(item)
            );
        }
    }
    if resources.is_empty() && templates.is_empty() {
        out.push_str("(no resources)\n");
    }
    out
}

/// One content block (tool results, prompt messages, embedded resources).
fn content(item: &Value) -> String {
    match item.get("type").and_then(Value::as_str) {
        Some("text") => {
            block(item.get("text").and_then(Value::as_str).unwrap_or_default()).into_owned()
        }
        Some("resource") => item.get("resource").map(contents).unwrap_or_default(),
        Some("resource_link") => format!(
            "[resource link] {}",
            line(item.get("uri").and_then(Value::as_str).unwrap_or("?"))
        ),
        Some(kind @ ("image" | "audio")) => {
            let bytes = item
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, |d| d.len() / 4 * 3);
            let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("?");
            format!("[{kind} {}, about {bytes} bytes]", line(mime))
        }
        _ => json(item),
    }
}

/// One entry of a resource's contents.
fn contents(entry: &Value) -> String {
    if let Some(text) = entry.get("text").and_then(Value::as_str) {
        return block(text).into_owned();
    }
    let uri = entry.get("uri").and_then(Value::as_str).unwrap_or("?");
    let mime = entry.get("mimeType").and_then(Value::as_str).unwrap_or("?");
    let bytes = entry
        .get("blob")
        .and_then(Value::as_str)
        .map_or(0, |d| d.len() / 4 * 3);
    format!("[blob {} {}, about {bytes} bytes]", line(uri), line(mime))
}

/// A `CallToolResult`.
pub(crate) fn tool_result(result: &Value) -> String {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut parts: Vec<String> = blocks.iter().map(content).collect();
    if let Some(structured) = result.get("structuredContent")
        && !blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("text"))
    {
        parts.push(json(structured));
    }
    parts.join("\n")
}

/// A `GetPromptResult`.
pub(crate) fn prompt_result(result: &Value) -> String {
    let mut out = String::new();
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        let _ = writeln!(out, "{}", style(block(description)).dim());
    }
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let text = message.get("content").map(content).unwrap_or_default();
        let _ = writeln!(out, "[{}] {text}", line(role));
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn human_forms() {
        console::set_colors_enabled(false);
        let tool = json!({"name": "provision", "description": "Provision a database.",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                            "required": ["name"]}});
        assert_eq!(
            tools(&[tool]),
            "provision(name: string*)\n    Provision a database.\n"
        );
        let result = json!({"content": [{"type": "text", "text": "ok"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}]});
        assert_eq!(tool_result(&result), "ok\n[image image/png, about 3 bytes]");
        let structured = json!({"content": [], "structuredContent": {"a": 1}});
        assert_eq!(tool_result(&structured), "{\n  \"a\": 1\n}");
        let prompt = json!({"messages": [{"role": "user",
            "content": {"type": "text", "text": "Brief the board."}}]});
        assert_eq!(prompt_result(&prompt), "[user] Brief the board.");
    }
}
