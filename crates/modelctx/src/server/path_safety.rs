//! Files under a root, from untrusted names: [`resolve_under`] maps a variable a resource
//! template matched (`file:///docs/{+path}` → `path`) to a file inside a root directory, and
//! refuses every way out of it.
//!
//! A matched variable is the client's text. Joined to a root as it is, `../../etc/passwd`, an
//! absolute `/etc/passwd`, `C:\Windows`, or a symlink inside the root that points elsewhere
//! would each serve a file the server never meant to publish. [`resolve_under`] refuses, before
//! touching the file system, a NUL, an absolute path or a Windows drive or UNC prefix, and any
//! `..` segment — with `\` taken as a separator on every OS, and a segment that still
//! percent-decodes to `..` (a doubly encoded `%252e%252e` arrives as `%2e%2e`) refused too.
//! Then it canonicalizes the joined path (following every symlink) and accepts it only if it
//! is still under the canonical root.
//!
//! ```
//! use modelctx::server::path_safety::{PathEscape, resolve_under};
//!
//! let root = std::env::temp_dir();
//! assert!(matches!(resolve_under(&root, "../etc/passwd"), Err(PathEscape::ParentSegment)));
//! assert!(matches!(resolve_under(&root, "/etc/passwd"), Err(PathEscape::Absolute)));
//! assert!(matches!(resolve_under(&root, "a\\..\\..\\b"), Err(PathEscape::ParentSegment)));
//! assert!(matches!(resolve_under(&root, "C:/Windows"), Err(PathEscape::Absolute)));
//! ```
//!
//! # A file-backed resource template
//!
//! `{+path}` may hold `/` (a simple `{path}` may not, but its `%2F` still decodes to one), so
//! the handler hands the matched value to [`resolve_under`] and reads only what comes back. An
//! escape is a failed read (a JSON-RPC error), never a file outside the root:
//!
//! ```
//! use std::path::PathBuf;
//! use std::sync::OnceLock;
//!
//! use modelctx::client::Client;
//! use modelctx::server::McpServer;
//! use modelctx::server::path_safety::resolve_under;
//! use modelctx::types::ResourceContents;
//! use modelctx::{memory, resource};
//!
//! /// The served directory (an application would keep it in its own state).
//! static DOCS: OnceLock<PathBuf> = OnceLock::new();
//!
//! /// A document under the served directory.
//! #[resource("file:///docs/{+path}", mime_type = "text/markdown")]
//! async fn doc(path: String) -> Result<String, String> {
//!     let root = DOCS.get().ok_or("no root")?;
//!     let file = resolve_under(root, &path).map_err(|refused| refused.to_string())?;
//!     tokio::fs::read_to_string(file).await.map_err(|e| e.to_string())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("modelctx-docs-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("docs/guide"))?;
//! std::fs::write(dir.join("docs/guide/intro.md"), "# Hello")?;
//! std::fs::write(dir.join("secret.txt"), "not for clients")?;
//! DOCS.set(dir.join("docs")).unwrap();
//!
//! let server = McpServer::builder("docs", "1.0.0").resource::<doc>().build()?;
//! let pipe = memory::pipe();
//! tokio::spawn(async move { server.serve_io(pipe.server.reader, pipe.server.writer).await });
//! let client = Client::builder()
//!     .connect_io(pipe.client.reader, pipe.client.writer)
//!     .await?;
//!
//! let read = client.read_resource("file:///docs/guide/intro.md").await?;
//! assert!(matches!(&read.contents[0], ResourceContents::Text(t) if t.text == "# Hello"));
//! for escape in [
//!     "file:///docs/../secret.txt",
//!     "file:///docs/guide/..%2F..%2Fsecret.txt",
//!     "file:///docs/%2e%2e/secret.txt",
//!     "file:///docs/..%5Csecret.txt",
//! ] {
//!     let refused = client.read_resource(escape).await.unwrap_err().to_string();
//!     assert!(refused.contains("the path has a `..` segment"), "{escape}: {refused}");
//! }
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! # What it does not protect against
//!
//! * **A race with a writer.** The check and the caller's `open` are two steps: a process that
//!   can write inside the root may swap a checked file for a symlink between them (a TOCTOU
//!   race). Serve only directories no untrusted party can write to, or open with the
//!   platform's no-follow flags (`openat2` with `RESOLVE_BENEATH` on Linux).
//! * **Hard links** inside the root to a file outside it: they are ordinary files.
//! * **What the root holds**: hidden files, editor backups and `.git` are served like any
//!   other file unless the caller filters names.
//! * **Windows' name tricks** beyond drive and UNC prefixes (alternate data streams
//!   `name:stream`, reserved device names such as `CON`, trailing dots): canonicalization
//!   catches those that leave the root, not those that stay in it.

use std::path::{Component, Path, PathBuf};

/// Why [`resolve_under`] refused a path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathEscape {
    /// The path has a NUL byte (which C APIs would cut it at).
    #[error("the path has a NUL byte")]
    Nul,
    /// The path is absolute: a leading `/` or `\`, a drive (`C:`) or UNC (`\\server`) prefix.
    #[error("the path is absolute")]
    Absolute,
    /// A `..` segment, as written or percent-encoded.
    #[error("the path has a `..` segment")]
    ParentSegment,
    /// The path leads outside the root once symlinks are followed.
    #[error("the path leads outside the root")]
    OutsideRoot,
    /// The root or the path could not be resolved (most often: the file does not exist).
    #[error("the path could not be resolved: {0}")]
    Unresolvable(#[from] std::io::Error),
}

/// Resolves `relative` (a matched URI variable, already percent-decoded once) to an existing
/// file or directory under `root`, following symlinks, or says why not: see the
/// [module](self) documentation for what is refused and what is not protected against.
///
/// The result is canonical (absolute, no `.`, `..` or symlinks). An empty `relative` (or
/// only `.` and empty segments) is the root itself. Canonicalizing is a blocking system call
/// per path component: quick on a local disk; on a slow or network file system call this from
/// `tokio::task::spawn_blocking`, as the read that follows would be.
///
/// # Errors
/// [`PathEscape`]: the refusals before the file system is touched, [`PathEscape::OutsideRoot`]
/// for a symlink out of the root, and [`PathEscape::Unresolvable`] when the root or the file
/// does not exist or cannot be read.
pub fn resolve_under(root: &Path, relative: &str) -> Result<PathBuf, PathEscape> {
    let segments = check_relative(relative)?;
    let root = root.canonicalize()?;
    let mut joined = root.clone();
    for segment in segments {
        joined.push(segment);
    }
    // The platform's own reading of what was pushed: anything but plain names (a prefix or
    // root a segment smuggled in on Windows) is an escape, whatever the checks above missed.
    if joined.strip_prefix(&root).map_or(true, |rest| {
        rest.components()
            .any(|c| !matches!(c, Component::Normal(_)))
    }) {
        return Err(PathEscape::Absolute);
    }
    let resolved = joined.canonicalize()?;
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(PathEscape::OutsideRoot)
    }
}

/// The segments of `relative` (split at `/` and `\`, without empty and `.` ones), after the
/// checks that need no file system.
fn check_relative(relative: &str) -> Result<Vec<&str>, PathEscape> {
    if relative.contains('\0') {
        return Err(PathEscape::Nul);
    }
    if relative.starts_with(['/', '\\']) || has_drive_prefix(relative) {
        return Err(PathEscape::Absolute);
    }
    let mut segments = Vec::new();
    for segment in relative.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => return Err(PathEscape::ParentSegment),
            _ if segment.contains('%') && decodes_to_dots(segment) => {
                return Err(PathEscape::ParentSegment);
            }
            _ => segments.push(segment),
        }
    }
    Ok(segments)
}

/// `C:`, `c:foo`: a drive, absolute or relative to that drive's current directory, on Windows.
fn has_drive_prefix(relative: &str) -> bool {
    let bytes = relative.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// Whether `segment`, percent-decoded once more, is `..` (or `.` followed by a separator
/// trick: `%2e%2e%2f`): a value some layer may decode again.
fn decodes_to_dots(segment: &str) -> bool {
    let mut decoded = Vec::with_capacity(segment.len());
    let bytes = segment.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let triplet = (bytes[i] == b'%')
            .then(|| segment.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match triplet {
            Some(byte) => {
                decoded.push(byte);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    decoded
        .split(|&b| b == b'/' || b == b'\\')
        .any(|piece| piece == b"..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh directory under the system's temporary one, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "modelctx-path-safety-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn kind(error: &PathEscape) -> &'static str {
        match error {
            PathEscape::Nul => "nul",
            PathEscape::Absolute => "absolute",
            PathEscape::ParentSegment => "parent",
            PathEscape::OutsideRoot => "outside",
            PathEscape::Unresolvable(_) => "unresolvable",
        }
    }

    /// `outside/secret.txt` beside `root/docs/guide/intro.md`.
    fn tree() -> (TempDir, PathBuf) {
        let dir = TempDir::new();
        let root = dir.0.join("root");
        std::fs::create_dir_all(root.join("docs/guide")).unwrap();
        std::fs::write(root.join("docs/guide/intro.md"), "hello").unwrap();
        std::fs::create_dir_all(dir.0.join("outside")).unwrap();
        std::fs::write(dir.0.join("outside/secret.txt"), "secret").unwrap();
        (dir, root)
    }

    #[test]
    fn resolves_files_under_the_root() {
        let (_dir, root) = tree();
        let canonical = root.canonicalize().unwrap();
        for relative in [
            "docs/guide/intro.md",
            "./docs//guide/./intro.md",
            "docs\\guide\\intro.md",
        ] {
            let found = resolve_under(&root, relative).unwrap();
            assert_eq!(found, canonical.join("docs/guide/intro.md"), "{relative}");
            assert_eq!(std::fs::read_to_string(&found).unwrap(), "hello");
        }
        assert_eq!(resolve_under(&root, "").unwrap(), canonical);
        // `..` inside a name is no segment.
        std::fs::write(root.join("v1..v2.txt"), "x").unwrap();
        assert!(resolve_under(&root, "v1..v2.txt").is_ok());
    }

    #[test]
    fn refuses_escapes_before_touching_the_file_system() {
        let (_dir, root) = tree();
        let cases = [
            ("../outside/secret.txt", "parent"),
            ("docs/../../outside/secret.txt", "parent"),
            ("docs/..", "parent"),
            ("docs\\..\\..\\outside", "parent"),
            ("%2e%2e/outside", "parent"),
            ("docs/%2E%2e%2Foutside", "parent"),
            ("/etc/passwd", "absolute"),
            ("\\\\server\\share", "absolute"),
            ("C:\\Windows", "absolute"),
            ("c:relative", "absolute"),
            ("docs/intro.md\0.txt", "nul"),
            ("missing.txt", "unresolvable"),
        ];
        for (relative, expected) in cases {
            let error = resolve_under(&root, relative).expect_err(relative);
            assert_eq!(kind(&error), expected, "{relative}: {error:?}");
        }
        assert!(matches!(
            resolve_under(&root.join("no-such-root"), "a"),
            Err(PathEscape::Unresolvable(_))
        ));
    }

    /// What a client can put in a URI, through the matcher (which decodes once) and then
    /// [`resolve_under`]: encoded dots, slashes, backslashes and NUL are refused as if written.
    #[test]
    fn matched_values_with_encoded_separators_are_refused() {
        use crate::uri_template::UriTemplate;
        let (_dir, root) = tree();
        let simple = UriTemplate::parse("file:///docs/{name}").unwrap();
        let reserved = UriTemplate::parse("file:///docs/{+path}").unwrap();
        let cases = [
            (
                &simple,
                "name",
                "file:///docs/..%2F..%2Foutside%2Fsecret.txt",
                "parent",
            ),
            (&simple, "name", "file:///docs/..%5C..%5Coutside", "parent"),
            (&simple, "name", "file:///docs/%2e%2e", "parent"),
            (
                &simple,
                "name",
                "file:///docs/%252e%252e%252foutside",
                "parent",
            ),
            (&simple, "name", "file:///docs/%2Fetc%2Fpasswd", "absolute"),
            (&simple, "name", "file:///docs/C%3A%5CWindows", "absolute"),
            (&simple, "name", "file:///docs/intro.md%00.txt", "nul"),
            (
                &reserved,
                "path",
                "file:///docs/../outside/secret.txt",
                "parent",
            ),
            (
                &reserved,
                "path",
                "file:///docs/guide/%2E%2E/../x",
                "parent",
            ),
            (&reserved, "path", "file:///docs//etc/passwd", "absolute"),
            (
                &reserved,
                "path",
                "file:///docs/\\\\host\\share",
                "absolute",
            ),
        ];
        for (template, name, uri, expected) in cases {
            let matched = template.matches(uri).expect(uri);
            let error = resolve_under(&root, &matched[name]).expect_err(uri);
            assert_eq!(kind(&error), expected, "{uri}: {error:?}");
        }
        let matched = reserved
            .matches("file:///docs/docs/guide/intro.md")
            .unwrap();
        assert!(resolve_under(&root, &matched["path"]).is_ok());
        // A `%` that is not a triplet never matches at all.
        assert_eq!(simple.matches("file:///docs/%2"), None);
    }

    #[cfg(unix)]
    #[test]
    fn refuses_symlinks_that_lead_outside() {
        use std::os::unix::fs::symlink;
        let (dir, root) = tree();
        symlink(dir.0.join("outside/secret.txt"), root.join("docs/leak.txt")).unwrap();
        symlink(dir.0.join("outside"), root.join("docs/out")).unwrap();
        symlink(root.join("docs/guide"), root.join("alias")).unwrap();
        for relative in ["docs/leak.txt", "docs/out/secret.txt", "docs/out"] {
            assert!(
                matches!(resolve_under(&root, relative), Err(PathEscape::OutsideRoot)),
                "{relative}"
            );
        }
        // A symlink that stays inside the root is followed.
        let found = resolve_under(&root, "alias/intro.md").unwrap();
        assert_eq!(
            found,
            root.canonicalize().unwrap().join("docs/guide/intro.md")
        );
        // A root reached through a symlink is compared canonically too.
        symlink(&root, dir.0.join("root-link")).unwrap();
        assert!(resolve_under(&dir.0.join("root-link"), "docs/guide/intro.md").is_ok());
        assert!(matches!(
            resolve_under(&dir.0.join("root-link"), "docs/leak.txt"),
            Err(PathEscape::OutsideRoot)
        ));
    }
}
