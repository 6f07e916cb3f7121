//! The deployment convention every `mcp` server binary shares: sealing configured through the
//! environment, so that the instances of a fleet get the same keys without code.
//!
//! * `MCP_REQUEST_STATE_KEYS`: comma-separated secrets (each ≥ 32 bytes); the first mints, all
//!   open — rotation is a rolling restart through `NEW,OLD` then `NEW`.
//! * `MCP_REQUEST_STATE_TTL`: the per-round lifetime in seconds (a positive number).

use std::time::Duration;

use crate::{ConfigError, RequestStateSecurity};

/// The environment variable holding the sealing secrets.
pub const KEYS_ENV: &str = "MCP_REQUEST_STATE_KEYS";

/// The environment variable holding the per-round lifetime, in seconds.
pub const TTL_ENV: &str = "MCP_REQUEST_STATE_TTL";

impl RequestStateSecurity {
    /// The policy the environment configures ([`KEYS_ENV`], [`TTL_ENV`]); `None` when neither
    /// is set, which leaves the server its default (a random per-process key).
    ///
    /// # Errors
    /// As [`Self::from_settings`].
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        let keys = std::env::var(KEYS_ENV).ok();
        let ttl = std::env::var(TTL_ENV).ok();
        Self::from_settings(keys.as_deref(), ttl.as_deref())
    }

    /// The policy of the two settings as text, in the environment's format; `None` when both
    /// are absent. Empty entries of the key list are skipped; keys without a TTL get
    /// [`crate::DEFAULT_TTL`], a TTL without keys a random per-process key.
    ///
    /// # Errors
    /// A key shorter than 32 bytes or a duplicate ([`ConfigError::KeyTooShort`],
    /// [`ConfigError::DuplicateKey`]), a list with no key, or a TTL that is not a positive
    /// number of seconds ([`ConfigError::InvalidTtl`]).
    pub fn from_settings(
        keys: Option<&str>,
        ttl: Option<&str>,
    ) -> Result<Option<Self>, ConfigError> {
        if keys.is_none() && ttl.is_none() {
            return Ok(None);
        }
        let policy = match keys {
            Some(list) => Self::with_keys(list.split(',').filter(|k| !k.is_empty()))?,
            None => Self::ephemeral(),
        };
        let Some(ttl) = ttl else {
            return Ok(Some(policy));
        };
        let seconds = ttl
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| ConfigError::InvalidTtl(ttl.to_owned()))?;
        policy.with_ttl(Duration::from_secs_f64(seconds)).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";

    #[test]
    fn nothing_set_is_the_default() {
        assert!(
            RequestStateSecurity::from_settings(None, None)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn keys_and_ttl() {
        let policy = RequestStateSecurity::from_settings(Some(&format!("{A},,{B}")), Some("1.5"))
            .unwrap()
            .unwrap();
        assert_eq!(policy.ttl(), Duration::from_millis(1500));
        assert!(
            RequestStateSecurity::from_settings(Some(A), None)
                .unwrap()
                .is_some()
        );
        assert!(
            RequestStateSecurity::from_settings(None, Some("30"))
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn bad_settings_are_errors() {
        assert!(matches!(
            RequestStateSecurity::from_settings(Some("short"), None),
            Err(ConfigError::KeyTooShort { index: 0, len: 5 })
        ));
        assert!(matches!(
            RequestStateSecurity::from_settings(Some(""), None),
            Err(ConfigError::NoKeys)
        ));
        assert!(matches!(
            RequestStateSecurity::from_settings(Some(&format!("{A},{A}")), None),
            Err(ConfigError::DuplicateKey { index: 1 })
        ));
        for ttl in ["0", "-3", "soon", "NaN", "inf"] {
            assert_eq!(
                RequestStateSecurity::from_settings(Some(A), Some(ttl)).err(),
                Some(ConfigError::InvalidTtl(ttl.to_owned())),
                "{ttl}"
            );
        }
    }
}
