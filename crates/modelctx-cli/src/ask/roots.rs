//! Roots: the directories offered to a server that lists them (`--root`, else the current
//! directory), as `file://` URIs, or the roots an `--answer` names instead.

use std::path::{Path, PathBuf};

use modelctx::client::CallbackContext;
use modelctx::types::{ListRootsResult, Root};
use serde_json::Value;

use super::terminal::Terminal;
use crate::answers::Answers;

/// The roots offered to the server.
#[derive(Debug)]
pub(super) struct Roots {
    offered: Vec<Root>,
}

impl Roots {
    /// A root for each of `paths` (`--root`), or for the current directory when none is given.
    pub(super) fn offered(paths: &[PathBuf]) -> std::io::Result<Self> {
        let paths: Vec<PathBuf> = if paths.is_empty() {
            vec![std::env::current_dir()?]
        } else {
            paths.to_vec()
        };
        let offered = paths
            .iter()
            .map(|path| root_for(path))
            .collect::<std::io::Result<_>>()?;
        Ok(Self { offered })
    }

    /// Answers `roots/list`: the roots an `--answer` names (URIs, or directories made `file://`
    /// URIs), else the offered ones, with a line saying the server listed them.
    pub(super) async fn answer(
        &self,
        terminal: &Terminal,
        answers: &Answers,
        context: &CallbackContext,
    ) -> ListRootsResult {
        let key = context.key().unwrap_or(CallbackContext::ROOTS_KEY);
        if let Some(Value::Array(items)) = answers.for_question(key, CallbackContext::ROOTS_KEY) {
            let roots: Vec<_> = items
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|item| {
                    if item.contains("://") {
                        Some(Root::new(item, None))
                    } else {
                        root_for(Path::new(item)).ok()
                    }
                })
                .collect();
            return ListRootsResult::new(roots);
        }
        let _terminal = terminal.hold().await;
        let uris: Vec<&str> = self.offered.iter().map(|r| r.uri.as_str()).collect();
        terminal.note(&format!(
            "{} lists roots: {}",
            terminal.server(),
            uris.join(", ")
        ));
        ListRootsResult::new(self.offered.clone())
    }
}

/// A `file://` root for a directory.
fn root_for(path: &Path) -> std::io::Result<Root> {
    let path = std::path::absolute(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .or_else(|| Some("/".to_owned()));
    Ok(Root::new(file_uri(&path), name))
}

/// `file://` + the path, percent-encoding what a URI path may not hold.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_encoded() {
        assert_eq!(
            file_uri(Path::new("/tmp/a b/ü")),
            "file:///tmp/a%20b/%C3%BC"
        );
    }
}
