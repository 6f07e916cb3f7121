//! What `mcp read` does with a resource's contents: prints text up to [`SHOWN_TEXT_MAX`] and sums
//! up the rest in one line each (a 218 KB HTML page filled the terminal), never prints binary
//! contents, and with `--output FILE` writes them all, as they are, to the file.
//!
//! The contents are the server's: the summary lines and the printed text go through
//! [`safe_text`](crate::safe_text); the file gets the bytes unchanged (the user asked for them,
//! and nothing interprets them on the way).

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::error::{CliError, Result};
use crate::safe_text::{block, line};

/// The longest text content printed without `--full` (bytes of UTF-8).
pub(crate) const SHOWN_TEXT_MAX: usize = 64 * 1024;

/// The entries of a `ReadResourceResult`.
fn entries(result: &Value) -> impl Iterator<Item = &Value> {
    result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn mime(entry: &Value) -> std::borrow::Cow<'_, str> {
    line(entry.get("mimeType").and_then(Value::as_str).unwrap_or("?"))
}

/// A size for people: bytes, KiB or MiB.
fn size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss, reason = "a size shown with one decimal")]
    let kib = bytes as f64 / 1024.0;
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{kib:.1} KiB"),
        _ => format!("{:.1} MiB", kib / 1024.0),
    }
}

/// The contents as printed: each text up to [`SHOWN_TEXT_MAX`] (any length with `full`), a
/// longer text or a blob as one line saying what it is and how to get it.
pub(crate) fn shown(result: &Value, full: bool) -> String {
    let mut out = Vec::new();
    for entry in entries(result) {
        let uri = line(entry.get("uri").and_then(Value::as_str).unwrap_or("?"));
        if let Some(text) = entry.get("text").and_then(Value::as_str) {
            if full || text.len() <= SHOWN_TEXT_MAX {
                out.push(block(text).into_owned());
            } else {
                out.push(format!(
                    "[text {uri} {}, {}: not shown; --output FILE saves it, --full prints it]",
                    mime(entry),
                    size(text.len())
                ));
            }
            continue;
        }
        let bytes = entry
            .get("blob")
            .and_then(Value::as_str)
            .map_or(0, |d| d.len() / 4 * 3);
        out.push(format!(
            "[blob {uri} {}, about {}: not shown; --output FILE saves it]",
            mime(entry),
            size(bytes)
        ));
    }
    out.join("\n")
}

/// Writes the contents to `path` (text as UTF-8, blobs decoded, one after the other) and
/// returns the line that says what was written.
///
/// # Errors
/// A blob that is not base64, or a file that cannot be written.
pub(crate) fn save(result: &Value, path: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    let mut kinds = Vec::new();
    for (index, entry) in entries(result).enumerate() {
        if let Some(text) = entry.get("text").and_then(Value::as_str) {
            bytes.extend_from_slice(text.as_bytes());
        } else if let Some(blob) = entry.get("blob").and_then(Value::as_str) {
            let decoded = STANDARD.decode(blob).map_err(|e| {
                CliError::failed(format!("contents {index}: the blob is not base64: {e}"))
            })?;
            bytes.extend_from_slice(&decoded);
        }
        kinds.push(mime(entry).into_owned());
    }
    std::fs::write(path, &bytes)
        .map_err(|e| CliError::failed(format!("--output {}: {e}", path.display())))?;
    let mut said = format!("wrote {} to {}", size(bytes.len()), path.display());
    match kinds.as_slice() {
        [one] => {
            let _ = write!(said, " ({one})");
        }
        several => {
            let _ = write!(
                said,
                " ({} contents: {})",
                several.len(),
                several.join(", ")
            );
        }
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn long_text_and_blobs_are_summed_up() {
        let long = "x".repeat(SHOWN_TEXT_MAX + 1);
        let result = json!({"contents": [
            {"uri": "a://short", "mimeType": "text/plain", "text": "hi \u{1b}[2J"},
            {"uri": "a://long", "mimeType": "text/html", "text": long},
            {"uri": "a://png", "mimeType": "image/png", "blob": "AAAA"},
        ]});
        assert_eq!(
            shown(&result, false),
            "hi \\u{1b}[2J\n\
             [text a://long text/html, 64.0 KiB: not shown; --output FILE saves it, --full prints it]\n\
             [blob a://png image/png, about 3 bytes: not shown; --output FILE saves it]"
        );
        assert!(shown(&result, true).contains(&long));
        assert_eq!(size(1_572_864), "1.5 MiB");
    }

    #[test]
    fn saved_as_they_are() {
        let dir = std::env::temp_dir().join(format!("mcp-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out");
        let result = json!({"contents": [
            {"uri": "a://t", "mimeType": "text/plain", "text": "é\u{1b}"},
            {"uri": "a://b", "mimeType": "application/octet-stream", "blob": "AP8="},
        ]});
        let said = save(&result, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"\xc3\xa9\x1b\x00\xff");
        assert!(
            said.ends_with("(2 contents: text/plain, application/octet-stream)"),
            "{said}"
        );
        let bad = json!({"contents": [{"uri": "a://b", "blob": "%%"}]});
        assert!(save(&bad, &path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
