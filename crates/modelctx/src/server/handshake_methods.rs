//! What the handshake era does with the server itself: `initialize` (the session's version,
//! capabilities and the server's identity), `resources/subscribe` (within the server's
//! subscription budget), and the pump that forwards the server's changes to a session as
//! plain notifications. The session's own state and its back-channel (`handshake.rs`) sit
//! below the server handle, which this module names: a request context holds a session.

use std::sync::Arc;

use modelctx_types::jsonrpc::encode_notification;
use modelctx_types::{
    ErrorObject, InitializeRequestParams, InitializeResult, NotificationMethod, ProtocolVersion,
};
use tokio_util::sync::CancellationToken;

use super::handle::Server;
use super::handshake::HandshakeSession;
use super::notifier::Notifier;
use super::subscription_budget::Client;
use crate::sync::lock;

/// `resources/subscribe`: makes `session` follow `uri`, a resource or a URI of a template
/// this server has (`exists`, which the router answers from the registry), within the
/// [`super::SubscriptionLimits`] (`-32602` otherwise: `Resource not found`, as
/// `resources/read` answers, or the limit passed), and while the server's budget for
/// subscriptions covers it (`-32603`).
pub(crate) fn subscribe(
    server: &Server,
    session: &HandshakeSession,
    uri: String,
    exists: impl FnOnce(&str) -> bool,
) -> Result<(), ErrorObject> {
    let budget = &server.inner.subscriptions;
    // Checked before the registry is searched, whose templates read the whole URI.
    budget.limits().check_uri_length(&uri)?;
    if !exists(&uri) {
        return Err(ErrorObject::resource_not_found(&uri));
    }
    budget.follow(&mut lock(&session.subscriptions), uri)
}

/// Answers `initialize`: the version the client asked for when this server speaks it, else
/// the newest handshake version; the session remembers the client's capabilities, and what
/// it holds is counted against `client` (`None`: against the server's budget only).
pub(crate) fn initialize(
    server: &Server,
    params: InitializeRequestParams,
    client: Option<Client>,
) -> (Arc<HandshakeSession>, InitializeResult) {
    let version = if ProtocolVersion::HANDSHAKE.contains(&params.protocol_version) {
        params.protocol_version
    } else {
        ProtocolVersion::LATEST_HANDSHAKE
    };
    let session = Arc::new(HandshakeSession::new(
        version.clone(),
        params.capabilities,
        Some(params.client_info),
        client,
    ));
    let mut result = InitializeResult::new(version, server.capabilities(), server.info().clone());
    result.instructions = server.inner.instructions.clone();
    (session, result)
}

/// Forwards the server's changes to a handshake-era session as plain notifications: list changes
/// always, resource updates for the URIs it subscribed to. Ends when `out` closes or `closing` is
/// cancelled (the server's shutdown, or the end of the session's stdio connection); `held` (what
/// the stream holds while it lasts: an HTTP session's use and budget share) goes with it.
pub(crate) fn forward_changes(
    server: &Server,
    session: Arc<HandshakeSession>,
    out: Notifier,
    closing: CancellationToken,
    held: impl Send + 'static,
) -> tokio::task::JoinHandle<()> {
    use modelctx_types::ResourceUpdatedNotificationParams;
    use modelctx_types::methods::{
        PromptListChanged, ResourceListChanged, ResourceUpdated, ToolListChanged,
    };
    use tokio::sync::broadcast::error::RecvError;

    use super::change::Change;

    let mut changes = server.inner.changes.subscribe();
    tokio::spawn(async move {
        let _held = held;
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                () = closing.cancelled() => return,
                () = out.closed() => return,
            };
            let lists = [
                ToolListChanged::NAME,
                PromptListChanged::NAME,
                ResourceListChanged::NAME,
            ];
            let updated = |uri| {
                encode_notification(
                    ResourceUpdated::NAME,
                    Some(&ResourceUpdatedNotificationParams::new(uri)),
                )
            };
            // A session that fell behind missed changes: it is resynced like after a bus outage.
            let change = match change {
                Err(RecvError::Lagged(_)) => Ok(Change::Resync),
                other => other,
            };
            let messages = match change {
                Ok(Change::ToolsListChanged) => vec![encode_notification::<()>(lists[0], None)],
                Ok(Change::PromptsListChanged) => vec![encode_notification::<()>(lists[1], None)],
                Ok(Change::ResourcesListChanged) => {
                    vec![encode_notification::<()>(lists[2], None)]
                }
                Ok(Change::ResourceUpdated(uri)) if session.is_subscribed(&uri) => {
                    vec![updated(uri)]
                }
                // Every list (the session may follow any) and every subscribed resource.
                Ok(Change::Resync) => lists
                    .into_iter()
                    .map(|list| encode_notification::<()>(list, None))
                    .chain(session.subscriptions().into_iter().map(updated))
                    .collect(),
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            for message in messages.into_iter().flatten() {
                if out.send(message).await.is_err() {
                    return;
                }
            }
        }
    })
}
