//! A custom request-state codec installed in a server: ChaCha20-Poly1305 instead of the
//! built-in AES-256-GCM, with its own token prefix. The policy around the codec is unchanged —
//! `RequestStateSecurity::with_codec` still stamps and checks expiry, the request binding and
//! the audience — so a custom codec only decides how bytes are encrypted.
//!
//! ```sh
//! cargo run -p modelctx-examples --example custom_codec
//! ```
//!
//! For a KMS (envelope encryption, the key unwrapped once per process) see
//! `crates/modelctx-seal/examples/envelope_codec.rs`.

#![allow(clippy::print_stdout, reason = "an example shows what happens")]

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use modelctx::client::{Client, RoundOutcome};
use modelctx::memory;
use modelctx::seal::{Codec, InvalidRequestState, Reason, RequestStateSecurity, SealError};
use modelctx::types::CallToolRequestParams;
use modelctx_examples::provision;
use serde_json::json;

/// Tokens: `cc1.` + base64url(nonce ‖ ciphertext ‖ tag). The prefix is the associated data, so
/// a token never opens under another format version.
const PREFIX: &str = "cc1.";
const TAG_LEN: usize = 16;

/// ChaCha20-Poly1305 under one key (load it from your secret store).
struct ChaChaCodec {
    key: LessSafeKey,
}

impl ChaChaCodec {
    fn new(secret: &[u8; 32]) -> Result<Self, Box<dyn std::error::Error>> {
        let key = UnboundKey::new(&CHACHA20_POLY1305, secret).map_err(|_| "bad key")?;
        Ok(Self {
            key: LessSafeKey::new(key),
        })
    }
}

impl fmt::Debug for ChaChaCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChaChaCodec")
            .field("key", &"<redacted>")
            .finish()
    }
}

impl Codec for ChaChaCodec {
    fn seal(&self, payload: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::fill(&mut nonce).map_err(|_| SealError::Random)?;
        let mut raw = Vec::with_capacity(NONCE_LEN + payload.len() + TAG_LEN);
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(payload);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(PREFIX.as_bytes()),
                &mut raw[NONCE_LEN..],
            )
            .map_err(|_| SealError::Crypto)?;
        raw.extend_from_slice(tag.as_ref());
        Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw)))
    }

    fn unseal(&self, token: &str) -> Result<Vec<u8>, InvalidRequestState> {
        let malformed = InvalidRequestState::new(Reason::Malformed);
        let body = token.strip_prefix(PREFIX).ok_or(malformed)?;
        let mut raw = URL_SAFE_NO_PAD.decode(body).map_err(|_| malformed)?;
        if raw.len() < NONCE_LEN + TAG_LEN {
            return Err(malformed);
        }
        let nonce = Nonce::try_assume_unique_for_key(&raw[..NONCE_LEN]).map_err(|_| malformed)?;
        let plain_len = self
            .key
            .open_in_place(nonce, Aad::from(PREFIX.as_bytes()), &mut raw[NONCE_LEN..])
            .map_err(|_| InvalidRequestState::new(Reason::Seal))?
            .len();
        raw.copy_within(NONCE_LEN..NONCE_LEN + plain_len, 0);
        raw.truncate(plain_len);
        Ok(raw)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut secret = [0u8; 32];
    rand::fill(&mut secret).map_err(|_| "no randomness")?;
    let policy = RequestStateSecurity::with_codec(Arc::new(ChaChaCodec::new(&secret)?));
    let server = provision::server(policy)?;
    let pipe = memory::pipe();
    tokio::spawn(async move {
        server
            .serve_io(pipe.server.reader, pipe.server.writer)
            .await
    });

    let client = Client::builder()
        .on_elicitation(provision::answer_region("eu-west-1"))
        .connect_io(pipe.client.reader, pipe.client.writer)
        .await?;

    // Look at one round: the state on the wire is the custom codec's token.
    let params =
        CallToolRequestParams::new("provision", json!({"name": "orders"}).as_object().cloned());
    let RoundOutcome::InputRequired(asked) = client.session().call_tool(params, true).await? else {
        return Err("provision did not ask".into());
    };
    let token = asked.request_state.unwrap_or_default();
    println!(
        "requestState on the wire: {}… ({} chars)",
        &token[..token.len().min(24)],
        token.len()
    );

    // The whole loop, through the custom codec.
    let result = client
        .call_tool("provision", json!({"name": "orders"}))
        .await?;
    let text = result.first_text().unwrap_or_default().to_owned();
    println!("{text}");
    client.close().await?;
    if !token.starts_with(PREFIX) || !text.contains("state seen by handler: 'provision-v1'") {
        return Err("the custom codec was not used".into());
    }
    Ok(())
}
