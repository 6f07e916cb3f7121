//! The deployment convention every `mcp` server binary shares: sealing configured through the
//! environment, so that the instances of a fleet get the same keys without code.
//!
//! * `MCP_REQUEST_STATE_KEYS`: comma-separated secrets (each ≥ 32 bytes, surrounding whitespace
//!   trimmed); the first mints, all open — rotation is a rolling restart through `NEW,OLD` then
//!   `NEW`.
//! * `MCP_REQUEST_STATE_TTL`: the per-round lifetime in seconds (a positive number).
//!
//! A setting that is present but unusable is an error, never ignored: falling back to the
//! default would give each instance its own random key, and the fleet would reject every other
//! instance's state.

use std::ffi::OsString;
use std::time::Duration;

use crate::{ConfigError, RequestStateSecurity};

/// The environment variable holding the sealing secrets.
pub const KEYS_ENV: &str = "MCP_REQUEST_STATE_KEYS";

/// The environment variable holding the per-round lifetime, in seconds.
pub const TTL_ENV: &str = "MCP_REQUEST_STATE_TTL";

/// The secrets of a comma-separated key list: each entry trimmed, empty entries skipped.
pub fn key_list(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|key| !key.is_empty())
}

/// The environment variable `name` as text; `None` when it is unset.
///
/// # Errors
/// [`ConfigError::NotUnicode`] when it is set but not UTF-8: a setting is refused rather than
/// ignored.
pub fn env_text(name: &'static str) -> Result<Option<String>, ConfigError> {
    std::env::var_os(name)
        .map(OsString::into_string)
        .transpose()
        .map_err(|_| ConfigError::NotUnicode(name))
}

impl RequestStateSecurity {
    /// The policy the environment configures ([`KEYS_ENV`], [`TTL_ENV`]); `None` when neither
    /// is set, which leaves the server its default (a random per-process key).
    ///
    /// # Errors
    /// As [`Self::from_settings`], plus [`ConfigError::NotUnicode`] for a variable that is set
    /// but not UTF-8.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        let keys = env_text(KEYS_ENV)?;
        let ttl = env_text(TTL_ENV)?;
        Self::from_settings(keys.as_deref(), ttl.as_deref())
    }

    /// The policy of the two settings as text, in the environment's format; `None` when both
    /// are absent. Keys are trimmed and empty entries skipped ([`key_list`]); keys without a TTL
    /// get [`crate::DEFAULT_TTL`], a TTL without keys a random per-process key.
    ///
    /// # Errors
    /// A key shorter than 32 bytes or a duplicate ([`ConfigError::KeyTooShort`],
    /// [`ConfigError::DuplicateKey`]), a list with no key, or a TTL that is not a positive
    /// number of seconds a `Duration` holds ([`ConfigError::InvalidTtl`]).
    pub fn from_settings(
        keys: Option<&str>,
        ttl: Option<&str>,
    ) -> Result<Option<Self>, ConfigError> {
        if keys.is_none() && ttl.is_none() {
            return Ok(None);
        }
        let policy = match keys {
            Some(list) => Self::with_keys(key_list(list))?,
            None => Self::ephemeral(),
        };
        let Some(ttl) = ttl else {
            return Ok(Some(policy));
        };
        policy.with_ttl(parse_ttl(ttl)?).map(Some)
    }
}

/// A TTL in seconds: finite, positive, not rounding to zero, and small enough for a `Duration`
/// (`Duration::from_secs_f64` panics beyond ~1.8e19 s).
fn parse_ttl(text: &str) -> Result<Duration, ConfigError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|seconds| *seconds > 0.0)
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .filter(|ttl| !ttl.is_zero())
        .ok_or_else(|| ConfigError::InvalidTtl(text.to_owned()))
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
    fn keys_are_trimmed() {
        let spaced = RequestStateSecurity::from_settings(Some(&format!(" {A} ,\n{B}\n")), None)
            .unwrap()
            .unwrap();
        let exact = RequestStateSecurity::with_keys([A, B]).unwrap();
        let binding = crate::RequestBinding::resource_read("file:///a");
        let token = spaced.seal("state", &binding).unwrap();
        assert_eq!(exact.open(&token, &binding).unwrap(), "state");
        assert_eq!(key_list(" a ,, b,").collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn a_huge_ttl_is_an_error_not_a_panic() {
        assert_eq!(
            RequestStateSecurity::from_settings(Some(A), Some("1e300")).err(),
            Some(ConfigError::InvalidTtl("1e300".to_owned()))
        );
        // The largest whole number of seconds a Duration holds is still accepted.
        let policy = RequestStateSecurity::from_settings(Some(A), Some("1e19"))
            .unwrap()
            .unwrap();
        assert_eq!(
            policy.ttl(),
            Duration::from_secs(10_000_000_000_000_000_000)
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
        for ttl in [
            "0", "-3", "soon", "NaN", "inf", "-inf", "1e300", "1e-300", "", "-0",
        ] {
            assert_eq!(
                RequestStateSecurity::from_settings(Some(A), Some(ttl)).err(),
                Some(ConfigError::InvalidTtl(ttl.to_owned())),
                "{ttl}"
            );
        }
    }
}
