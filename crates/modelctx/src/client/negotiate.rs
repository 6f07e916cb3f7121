//! Choosing the era when connecting.
//!
//! * [`Mode::Auto`]: probe `server/discover` at 2026-07-28. A `DiscoverResult` naming a
//!   2026 version we speak adopts it. A `-32022` naming one re-probes once at that version.
//!   Everything else that is not a transport failure — any other JSON-RPC error, an HTTP error
//!   status, an unreadable result, a probe timeout — means a handshake-era server: fall back to
//!   `initialize`. The fallback is deliberately not keyed to one error code. Only a `-32022`
//!   whose `supported` list is 2026-only and disjoint from ours fails the connection.
//! * [`Mode::Pinned`]: no traffic; requests carry the pinned version from the start.
//! * [`Mode::Handshake`]: `initialize` + `notifications/initialized`.

use modelctx_types::methods::{Discover, Initialize, Initialized};
use modelctx_types::{
    DiscoverResult, EmptyParams, Era, ErrorCode, InitializeRequestParams, InitializeResult,
    ProtocolVersion,
};

use super::error::ClientError;
use super::session::{Envelope, RequestOptions, RoundOutcome, Session, mutual_modern};

/// How the client picks the protocol era.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Probe with `server/discover`; fall back to the `initialize` handshake for servers that
    /// do not speak 2026-07-28. The default.
    #[default]
    Auto,
    /// Speak this 2026-era version without probing (`Mode::Pinned(ProtocolVersion::V2026_07_28)`).
    Pinned(ProtocolVersion),
    /// Always use the `initialize` handshake (2025-11-25 and earlier).
    Handshake,
}

/// Settings negotiation needs.
#[derive(Debug, Clone)]
pub(crate) struct NegotiationConfig {
    pub(crate) mode: Mode,
    pub(crate) handshake_version: ProtocolVersion,
    pub(crate) probe_timeout: std::time::Duration,
}

/// Runs the negotiation `config.mode` asks for.
pub(crate) async fn negotiate(
    session: &Session,
    config: &NegotiationConfig,
) -> Result<(), ClientError> {
    match &config.mode {
        Mode::Auto => auto(session, config).await?,
        Mode::Pinned(version) => {
            if !version.is_modern() {
                return Err(ClientError::InvalidArgument(format!(
                    "{version} is not a 2026-era version; use Mode::Handshake for the handshake era"
                )));
            }
            session.inner.shared.update(|n| {
                n.version = Some(version.clone());
                n.era = Some(Era::Modern);
            });
        }
        Mode::Handshake => initialize(session, config).await?,
    }
    session.inner.transport.on_negotiated().await;
    Ok(())
}

async fn auto(session: &Session, config: &NegotiationConfig) -> Result<(), ClientError> {
    let mut version = ProtocolVersion::LATEST;
    for attempt in 0..2 {
        let probe_error = match probe(session, &version, config).await {
            Ok(result) => {
                return match mutual_modern(&result.supported_versions) {
                    Some(mutual) => {
                        adopt(session, result, mutual);
                        Ok(())
                    }
                    // A server that answers discover but lists no 2026 version advertises the
                    // handshake era.
                    None => initialize(session, config).await,
                };
            }
            Err(error) => error,
        };
        if matches!(
            probe_error,
            ClientError::Transport(_) | ClientError::InvalidArgument(_)
        ) {
            // An outage is not an era verdict.
            return Err(probe_error);
        }
        #[cfg(feature = "auth-client")]
        if matches!(probe_error, ClientError::Auth(_)) {
            // Neither is a failed sign-in: `initialize` would only ask the user again.
            return Err(probe_error);
        }
        if let Some(supported) = probe_error.rpc_error().and_then(|e| e.supported_versions()) {
            if let Some(mutual) = mutual_modern(&supported)
                && attempt == 0
            {
                version = mutual;
                continue;
            }
            if !supported.iter().any(ProtocolVersion::is_handshake) {
                return Err(ClientError::Negotiation(format!(
                    "the server speaks only {supported:?}, none of which this client supports"
                )));
            }
        }
        tracing::debug!(error = %probe_error, "server/discover failed; falling back to initialize");
        match initialize(session, config).await {
            Err(ClientError::Rpc(error))
                if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION && attempt == 0 =>
            {
                // The handshake was refused by a 2026 server (e.g. a probe that timed out here
                // but locked the connection modern there): re-probe at a version it names.
                match error.supported_versions().and_then(|s| mutual_modern(&s)) {
                    Some(mutual) => version = mutual,
                    None => return Err(ClientError::Rpc(error)),
                }
            }
            other => return other,
        }
    }
    Err(ClientError::Negotiation(
        "server/discover and initialize both failed".to_owned(),
    ))
}

async fn probe(
    session: &Session,
    version: &ProtocolVersion,
    config: &NegotiationConfig,
) -> Result<DiscoverResult, ClientError> {
    let envelope = Envelope {
        era: Some(Era::Modern),
        version: Some(version.clone()),
        timeout: Some(config.probe_timeout),
    };
    let reply = session
        .send_once::<Discover>(
            &mut EmptyParams::default(),
            &envelope,
            &RequestOptions::new(),
            &[],
        )
        .await
        .map_err(|error| match error {
            ClientError::Timeout { after, .. } => ClientError::Timeout {
                operation: "server/discover probe",
                after,
            },
            other => other,
        })?
        .map_err(ClientError::Rpc)?;
    match session.decode::<Discover>(&reply)? {
        RoundOutcome::Complete(result) => Ok(result),
        RoundOutcome::InputRequired(_) => Err(ClientError::Protocol(
            "server/discover answered input_required".to_owned(),
        )),
    }
}

fn adopt(session: &Session, result: DiscoverResult, version: ProtocolVersion) {
    // The server's identity travels in `_meta`; some servers (and the conformance mocks) also
    // put a top-level `serverInfo`.
    let server_info = result
        .meta
        .as_ref()
        .and_then(modelctx_types::Meta::server_info)
        .or_else(|| {
            result
                .extra
                .get("serverInfo")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
        });
    session.inner.shared.update(|n| {
        n.version = Some(version);
        n.era = Some(Era::Modern);
        n.server_capabilities = Some(result.capabilities);
        n.server_info = server_info;
        n.instructions = result.instructions;
    });
}

/// The handshake: `initialize`, then `notifications/initialized`.
async fn initialize(session: &Session, config: &NegotiationConfig) -> Result<(), ClientError> {
    let mut capabilities = session.inner.config.capabilities.clone();
    // 2025-11-25's experimental tasks exist only in the handshake era.
    capabilities
        .tasks
        .clone_from(&session.inner.config.tasks_2025_capability);
    let mut params = InitializeRequestParams::new(
        config.handshake_version.clone(),
        capabilities,
        session.inner.config.client_info.clone(),
    );
    let envelope = Envelope {
        era: Some(Era::Handshake),
        version: None,
        timeout: None,
    };
    let reply = session
        .send_once::<Initialize>(&mut params, &envelope, &RequestOptions::new(), &[])
        .await?
        .map_err(ClientError::Rpc)?;
    let result: InitializeResult = match session.decode::<Initialize>(&reply)? {
        RoundOutcome::Complete(result) => result,
        RoundOutcome::InputRequired(_) => {
            return Err(ClientError::Protocol(
                "initialize answered input_required".to_owned(),
            ));
        }
    };
    if !result.protocol_version.is_handshake() {
        return Err(ClientError::Negotiation(format!(
            "the server chose {} in initialize, which is not a handshake-era version",
            result.protocol_version
        )));
    }
    session.inner.shared.update(|n| {
        n.version = Some(result.protocol_version);
        n.era = Some(Era::Handshake);
        n.server_capabilities = Some(result.capabilities);
        n.server_info = Some(result.server_info);
        n.instructions = result.instructions;
    });
    session.notify::<Initialized>(None).await
}
