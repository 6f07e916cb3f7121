//! `mcp keys generate` and `mcp state inspect`.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx::seal::{
    AesGcmCodec, Codec as _, KEYS_ENV, KID_LEN, Reason, arguments_digest, env_text, key_list,
};
use serde_json::Value;

use crate::cli::InspectArgs;
use crate::error::{CliError, Result};
use crate::render;

/// A fresh random 32-byte key as 64 hex digits (as Python's `secrets.token_hex(32)`).
pub(crate) fn generate() -> Result<String> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key)
        .map_err(|e| CliError::failed(format!("no randomness available: {e}")))?;
    Ok(hex(&key))
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// `mcp state inspect`.
pub(crate) fn inspect(args: &InspectArgs) -> Result<ExitCode> {
    let secrets: Vec<String> = if args.keys.is_empty() {
        env_text(KEYS_ENV)
            .map_err(|e| CliError::usage(e.to_string()))?
            .as_deref()
            .map(split_keys)
            .unwrap_or_default()
    } else {
        args.keys.iter().flat_map(|k| split_keys(k)).collect()
    };
    if secrets.is_empty() {
        return Err(CliError::usage(
            "no key: pass --key K (repeatable) or set MCP_REQUEST_STATE_KEYS",
        ));
    }
    let codec = AesGcmCodec::new(&secrets).map_err(|e| CliError::usage(format!("--key: {e}")))?;
    let token = args.token.trim();
    let kid = token_kid(token);
    let ring: Vec<String> = codec.keyring().kids().map(|k| hex(&k)).collect();
    let claims = match codec.unseal(token) {
        Ok(claims) => claims,
        Err(error) => {
            let why = match error.reason() {
                Reason::UnknownKey => format!(
                    "its key id {} is not in the ring (key ids {}): it was minted under \
                     another key, or the key was rotated out",
                    kid.as_deref().unwrap_or("?"),
                    ring.join(", ")
                ),
                Reason::Seal => "the tag does not verify: the token was altered, or minted \
                                 under another key with the same id"
                    .to_owned(),
                Reason::Malformed => "it is not a v1 token (`v1.` + canonical unpadded \
                                      base64url of at least 32 bytes)"
                    .to_owned(),
                other => other.as_str().to_owned(),
            };
            return Err(CliError::failed(format!(
                "cannot open the token ({}): {why}",
                error.reason().as_str()
            )));
        }
    };
    let claims: Value = serde_json::from_slice(&claims).map_err(|e| {
        CliError::failed(format!(
            "the token opened, but its claims are not JSON ({e}): was it minted by a custom \
             codec's format?"
        ))
    })?;
    if args.json {
        println!("{}", render::json(&claims));
        return Ok(ExitCode::SUCCESS);
    }
    let kid = kid.unwrap_or_default();
    let slot = ring
        .iter()
        .position(|k| *k == kid)
        .map_or_else(String::new, |i| {
            if i == 0 {
                format!(" (key 1 of {}, the minting key)", ring.len())
            } else {
                format!(" (key {} of {})", i + 1, ring.len())
            }
        });
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let text = |key: &str| claims.get(key).and_then(Value::as_str);
    let number = |key: &str| claims.get(key).and_then(Value::as_f64);
    println!("key id:    {kid}{slot}");
    println!(
        "version:   {}",
        claims
            .get("v")
            .map_or_else(|| "?".to_owned(), Value::to_string)
    );
    if let Some(iat) = number("iat") {
        println!("issued:    {} ({})", utc(iat), relative(iat - now));
    }
    if let Some(exp) = number("exp") {
        let verdict = if exp < now { "  EXPIRED" } else { "" };
        println!("expires:   {} ({}){verdict}", utc(exp), relative(exp - now));
    }
    println!("method:    {}", text("m").unwrap_or("?"));
    println!("target:    {}", text("t").unwrap_or("?"));
    let digest = text("a").unwrap_or("?");
    match &args.args {
        Some(raw) => {
            let arguments: Value = serde_json::from_str(raw)
                .map_err(|e| CliError::usage(format!("--args: not JSON: {e}")))?;
            let expected = arguments_digest(Some(&arguments));
            let verdict = if expected == digest {
                "matches --args".to_owned()
            } else {
                format!("does NOT match --args (their digest is {expected})")
            };
            println!("arguments: {digest} ({verdict})");
        }
        None => println!("arguments: {digest} (digest; check with --args JSON)"),
    }
    println!("audience:  {}", text("aud").unwrap_or("(none)"));
    println!(
        "principal: {}",
        if claims.get("p").is_some_and(|p| !p.is_null()) {
            "bound"
        } else {
            "(none)"
        }
    );
    match text("s") {
        Some(state) => match serde_json::from_str::<Value>(state) {
            Ok(structured @ Value::Object(_)) => {
                println!("state:     {}", render::json(&structured));
            }
            _ => println!("state:     {state}"),
        },
        None => println!("state:     ?"),
    }
    Ok(ExitCode::SUCCESS)
}

fn split_keys(value: &str) -> Vec<String> {
    key_list(value).map(str::to_owned).collect()
}

/// The key id a token names, in hex.
fn token_kid(token: &str) -> Option<String> {
    let body = token.strip_prefix("v1.")?;
    // The first 8 characters carry the 4-byte kid (and two bits of the nonce).
    let raw = URL_SAFE_NO_PAD.decode(body.get(..8)?).ok()?;
    raw.get(..KID_LEN).map(hex)
}

/// `2026-11-30T12:00:00Z` for seconds since the epoch; "out of range" and the number when RFC 3339
/// cannot write it (before 1970, after 9999, not a number: the token is the user's, its claims may be
/// anything).
fn utc(seconds: f64) -> String {
    // 10000-01-01T00:00:00Z
    const END: f64 = 253_402_300_800.0;
    if (0.0..END).contains(&seconds) {
        let time = UNIX_EPOCH + Duration::from_secs_f64(seconds.floor());
        humantime::format_rfc3339_seconds(time).to_string()
    } else {
        format!("out of range ({seconds:e} s)")
    }
}

fn relative(delta: f64) -> String {
    if delta >= 0.0 {
        format!("in {delta:.0} s")
    } else {
        format!("{:.0} s ago", -delta)
    }
}

#[cfg(test)]
mod tests {
    use modelctx::seal::{RequestBinding, RequestStateSecurity};
    use serde_json::json;

    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_796_005_576.9), "2026-11-30T02:26:16Z");
        assert_eq!(utc(951_782_400.0), "2000-02-29T00:00:00Z");
        assert_eq!(utc(253_402_300_799.5), "9999-12-31T23:59:59Z");
        // A token's claims are whatever its sealer wrote: out of range is a number, not a panic.
        assert_eq!(utc(253_402_300_800.0), "out of range (2.534023008e11 s)");
        assert_eq!(utc(-1.0), "out of range (-1e0 s)");
        assert_eq!(utc(f64::NAN), "out of range (NaN s)");
        assert_eq!(utc(1e300), "out of range (1e300 s)");
    }

    #[test]
    fn keys_are_fresh_hex() {
        let (a, b) = (generate().unwrap(), generate().unwrap());
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        // A generated key is a valid secret.
        assert!(AesGcmCodec::new([a.as_bytes()]).is_ok());
    }

    #[test]
    fn kid_of_a_token() {
        let key = generate().unwrap();
        let security = RequestStateSecurity::with_keys([key.as_bytes()]).unwrap();
        let args = json!({"name": "orders"});
        let token = security
            .seal("s", &RequestBinding::tool_call("provision", Some(&args)))
            .unwrap();
        let codec = AesGcmCodec::new([key.as_bytes()]).unwrap();
        assert_eq!(
            token_kid(&token).unwrap(),
            hex(&codec.keyring().minting_kid())
        );
        let claims: Value = serde_json::from_slice(&codec.unseal(&token).unwrap()).unwrap();
        assert_eq!(claims["t"], "provision");
        assert_eq!(claims["a"], arguments_digest(Some(&args)));
    }
}
