//! Workload identity federation: where the identity token the platform issues to this workload
//! comes from.

use std::path::PathBuf;

use futures::future::BoxFuture;
use tokio::io::AsyncReadExt as _;

use super::error::AuthError;
use super::{AssertionProvider, AssertionRequest};

/// The largest identity token read (a Kubernetes service-account token is ~1 KiB).
const MAX_IDENTITY_TOKEN: u64 = 64 * 1024;

/// Where the workload's identity token is read, for every token request
/// ([`OAuthConfig::workload_identity`](super::OAuthConfig::workload_identity)).
///
/// Read again for each token request, so a token the platform rotates (Kubernetes rewrites
/// the projected token file before it expires) is picked up without a restart. Surrounding
/// whitespace is removed; an empty or oversized (over 64 KiB) token is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentityTokenSource {
    /// A file holding the token, e.g.
    /// `/var/run/secrets/kubernetes.io/serviceaccount/token`.
    File(PathBuf),
    /// An environment variable holding the token.
    Env(String),
}

impl IdentityTokenSource {
    /// The token in the file at `path`.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::File(path.into())
    }

    /// The token in the environment variable `name`.
    pub fn env(name: impl Into<String>) -> Self {
        Self::Env(name.into())
    }

    /// The current token.
    ///
    /// # Errors
    /// [`AuthError::InvalidConfig`] when the file or variable cannot be read, or holds an
    /// empty or oversized token.
    pub async fn read(&self) -> Result<String, AuthError> {
        let (text, from) = match self {
            Self::File(path) => {
                let from = format!("the identity token file {}", path.display());
                let unreadable =
                    |e: std::io::Error| AuthError::InvalidConfig(format!("{from}: {e}"));
                let file = tokio::fs::File::open(path).await.map_err(unreadable)?;
                let mut bytes = Vec::new();
                file.take(MAX_IDENTITY_TOKEN + 1)
                    .read_to_end(&mut bytes)
                    .await
                    .map_err(unreadable)?;
                if bytes.len() as u64 > MAX_IDENTITY_TOKEN {
                    return Err(AuthError::InvalidConfig(format!(
                        "{from} is larger than {MAX_IDENTITY_TOKEN} bytes"
                    )));
                }
                let text = String::from_utf8(bytes)
                    .map_err(|_| AuthError::InvalidConfig(format!("{from} is not UTF-8")))?;
                (text, from)
            }
            Self::Env(name) => {
                let from = format!("the identity token variable {name}");
                let text = std::env::var(name)
                    .map_err(|e| AuthError::InvalidConfig(format!("{from}: {e}")))?;
                if text.len() as u64 > MAX_IDENTITY_TOKEN {
                    return Err(AuthError::InvalidConfig(format!(
                        "{from} is larger than {MAX_IDENTITY_TOKEN} bytes"
                    )));
                }
                (text, from)
            }
        };
        let token = text.trim();
        if token.is_empty() {
            return Err(AuthError::InvalidConfig(format!("{from} is empty")));
        }
        Ok(token.to_owned())
    }
}

impl AssertionProvider for IdentityTokenSource {
    fn assertion<'a>(
        &'a self,
        _request: AssertionRequest,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(self.read())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_file_is_read_again_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let source = IdentityTokenSource::file(&path);
        assert!(matches!(
            source.read().await,
            Err(AuthError::InvalidConfig(_))
        ));
        std::fs::write(&path, "first\n").unwrap();
        assert_eq!(source.read().await.unwrap(), "first");
        std::fs::write(&path, "second").unwrap();
        assert_eq!(source.read().await.unwrap(), "second");
        std::fs::write(&path, "  \n").unwrap();
        assert!(source.read().await.is_err());
        std::fs::write(&path, vec![b'a'; 64 * 1024 + 1]).unwrap();
        assert!(source.read().await.is_err());
    }
}
