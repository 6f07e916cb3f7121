//! Sealing of the MCP 2026-07-28 multi-round-trip `requestState`.
//!
//! A server that needs user input answers `InputRequiredResult { inputRequests, requestState }`
//! and the client retries the same request echoing `requestState` byte for byte. That echo is
//! attacker-controlled input, so the SDK never hands it to a handler unverified: this crate seals
//! the handler's plaintext state into an encrypted, authenticated claims envelope and opens it
//! again on the retry, byte-compatible with the Python SDK 2.3.0 (`mcp.server.request_state`).
//!
//! # Layers
//!
//! * [`Codec`] — authenticated encryption of an opaque payload. [`AesGcmCodec`] is the built-in
//!   one (AES-256-GCM over a [`Keyring`], token `v1.` + base64url(kid ‖ nonce ‖ ct ‖ tag)); plug
//!   in your own for a KMS or HSM (see `examples/envelope_codec.rs`).
//! * [`RequestStateSecurity`] — the policy around any codec: it stamps `iat`/`exp` (TTL), binds
//!   the token to the [`RequestBinding`] (method, target, [`arguments_digest`], [`Principal`])
//!   and the audience, and verifies all of it in [`RequestStateSecurity::open`], in the Python
//!   SDK's order.
//! * [`InvalidRequestState`] — every rejection, whatever its internal [`Reason`], is the same
//!   wire error: [`WIRE_CODE`] `-32602`, [`WIRE_MESSAGE`] and `data`
//!   [`InvalidRequestState::wire_data`] (all at once: [`InvalidRequestState::wire_error`]).
//!   Sealing failures ([`SealError`]) answer [`SEAL_FAILURE_CODE`] / [`SEAL_FAILURE_MESSAGE`].
//! * [`canonical_json`], [`arguments_digest`], [`question_digest`] — the Python-compatible JSON
//!   and digests, for the resolver state of the high-level server as well.
//!
//! # Server integration
//!
//! * Install [`RequestStateSecurity::for_server`]`(configured, server_name)`: no policy means an
//!   ephemeral key with the server name as audience; an explicit policy needs a server name or
//!   its own audience ([`ConfigError::MissingAudience`]).
//! * Only for [`INPUT_REQUIRED_METHODS`], build one [`RequestBinding`] per request. If
//!   `params.requestState` is present, [`RequestStateSecurity::open_value`] it (JSON `null`
//!   counts as absent) and hand the plaintext to the handler; on error log
//!   `err.reason()` at WARN (tampering must show at the default level; the reasons are fixed
//!   codes, so the line stays bounded) and answer `err.wire_error()` (HTTP 400). If the handler
//!   answers `input_required` with a string `requestState`, replace it with
//!   [`RequestStateSecurity::seal`] for the same binding.
//!
//! # Replay window and single use
//!
//! A sealed state can be **replayed until it expires** (`exp`, one [`DEFAULT_TTL`] of ten
//! minutes after it was minted), exactly as in the Python SDK. What limits a replay is the
//! binding: the same method, target, argument digest, audience and principal — so a replay can
//! only repeat the caller's own request, with answers of its choosing. For reads that is
//! harmless; for a tool that deletes, pays or sends, it is a second execution. The spec leaves
//! at-most-once consumption to the server ("servers that need it MUST enforce it server-side").
//!
//! [`RequestStateSecurity::open_single_use`] performs the same checks as
//! [`RequestStateSecurity::open`] and also returns the token's [`ReplayKey`] (the built-in
//! codec's `kid ‖ nonce`; a digest of the token for a custom codec, see [`Codec::replay_key`])
//! and its expiry. The server records the key — before the handler runs — in a store shared by
//! every instance holding the keys, until the expiry (plus the clock skew tolerated between
//! instances); a key already recorded is a replay ([`Reason::Replayed`], the same wire error).
//! This crate has no runtime, so the stores live in the `modelctx` crate (`modelctx::server::single_use`:
//! an in-memory and a Redis replay guard, opt-in per server for tools annotated
//! `destructiveHint: true` or for every round). Plain `open` does no extra work. Single use
//! trades a retry: a client whose answer was lost after the server redeemed the token must start
//! the request again.
//!
//! # Sealing and opening a round
//!
//! ```
//! use modelctx_seal::{InvalidRequestState, Principal, RequestBinding, RequestStateSecurity};
//! use serde_json::json;
//!
//! // Shared secrets (≥ 32 bytes each) let every instance open every other's tokens; the server
//! // name is the default audience.
//! let security = RequestStateSecurity::with_keys([b"a 32+ byte secret from the vault!"])?;
//! let security = RequestStateSecurity::for_server(Some(security), Some("bookshop"))?;
//!
//! let args = json!({"title": "Dune"});
//! let alice = Principal::from_oauth("shop-app", Some("https://id.example"), Some("alice"));
//! let binding = RequestBinding::tool_call("order_book", Some(&args)).with_principal(Some(&alice));
//!
//! // Round 1: the handler asks for input and returns its plaintext state; the server seals it.
//! let token = security.seal(r#"{"step":1}"#, &binding).expect("sealing");
//!
//! // Round 2: the client echoes the token; the server opens it for the *retried* request.
//! assert_eq!(security.open(&token, &binding)?, r#"{"step":1}"#);
//!
//! // Anything else is the one frozen wire error.
//! let mallory = Principal::from_oauth("shop-app", Some("https://id.example"), Some("mallory"));
//! let err = security.open(&token, &binding.with_principal(Some(&mallory))).unwrap_err();
//! assert_eq!(err.to_string(), "requestState rejected: principal"); // for the log
//! assert_eq!(InvalidRequestState::MESSAGE, "Invalid or expired requestState"); // for the wire
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Testing expiry without sleeping
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, SystemTime};
//! use modelctx_seal::{ManualClock, Reason, RequestBinding, RequestStateSecurity};
//!
//! let clock = Arc::new(ManualClock::new(SystemTime::now()));
//! let security = RequestStateSecurity::ephemeral()
//!     .with_ttl(Duration::from_secs(2))?
//!     .with_clock(clock.clone());
//! let binding = RequestBinding::resource_read("file:///report.csv");
//! let token = security.seal("state", &binding).expect("sealing");
//! clock.advance(Duration::from_secs(3));
//! assert_eq!(security.open(&token, &binding).unwrap_err().reason(), Reason::Expired);
//! # Ok::<(), modelctx_seal::ConfigError>(())
//! ```
//!
//! # Key rotation
//!
//! `keys[0]` mints, every key verifies. Roll out `[OLD, NEW]`, then `[NEW, OLD]`, then — after
//! one TTL — `[NEW]`; each phase must be everywhere before the next starts.

// On docs.rs (nightly, `--cfg docsrs`), each item behind a `cfg` says which feature or
// platform it needs; a stable `cargo doc` never sets the cfg.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod binding;
pub mod canonical_json;
mod claims;
mod clock;
mod codec;
mod digest;
mod env;
mod error;
mod keyring;
mod lineage;
mod policy;
mod principal;
mod single_use;

pub use binding::RequestBinding;
pub use clock::{Clock, ManualClock, SystemClock};
pub use codec::{AesGcmCodec, Codec};
pub use digest::{DIGEST_LEN, arguments_digest, question_digest};
pub use env::{KEYS_ENV, TTL_ENV, env_text, key_list};
pub use error::{
    ConfigError, InvalidRequestState, Reason, SEAL_FAILURE_CODE, SEAL_FAILURE_MESSAGE, SealError,
    WIRE_CODE, WIRE_DATA_REASON, WIRE_MESSAGE,
};
pub use keyring::{KID_LEN, Keyring, MIN_SECRET_LEN};
pub use lineage::{MAX_TRACE_CONTEXT_LEN, RoundLineage};
pub use policy::{DEFAULT_TTL, FUTURE_SKEW, INPUT_REQUIRED_METHODS, RequestStateSecurity};
pub use principal::Principal;
pub use single_use::{REPLAY_KEY_LEN, ReplayKey, SingleUseState};
