//! One host request relayed upstream, one round at a time.
//!
//! A `tools/call`, `prompts/get` or `resources/read` goes upstream once per round the host
//! plays. When the upstream answers `InputRequiredResult`, the handler returns it as it came:
//! a 2026-07-28 host retries with its answers itself, and for a 2025-11-25 host the SDK's
//! server plays the client's part (`server::bridge`): each question goes to the host over the
//! back-channel (`elicitation/create` in form or URL mode, `sampling/createMessage`,
//! `roots/list`), checked against the capabilities the host declared, and the handler runs
//! again with the answers and the upstream's `requestState`, which this module forwards
//! verbatim. So the upstream's state never needs opening here, and one code path serves both
//! host eras.
//!
//! The upstream request lives inside the handler's future: when the host cancels
//! (`notifications/cancelled`), the relay drops it and the client abandons the upstream
//! request (a 2026-07-28 server sees its response stream close; a 2025-11-25 one gets
//! `notifications/cancelled`). Progress the upstream reports goes to the host under the host's
//! own token, and its log messages through the request (`Relay::logs`).

use std::sync::Arc;

use futures::future::BoxFuture;
use modelctx::client::{Client, ClientError, RequestOptions, RoundOutcome};
use modelctx::server::RequestContext;
use modelctx::types::methods::{CallTool, GetPrompt, ReadResource};
use modelctx::types::{
    CallToolRequestParams, CallToolResult, Era, ErrorObject, GetPromptRequestParams,
    GetPromptResult, LoggingMessageNotificationParams, Method, Outcome, ProgressNotificationParams,
    ReadResourceRequestParams, ReadResourceResult, RequestParams,
};
use tokio::sync::mpsc;

use super::host_requests::HostRequests;

/// What a relaying handler needs: the upstream connection, the host's requests in flight (for
/// a 2025-11-25 upstream's questions), and the upstream's log messages waiting for the host.
#[derive(Clone)]
pub(crate) struct Relay {
    pub(crate) client: Client,
    pub(crate) host_requests: HostRequests,
    pub(crate) logs: UpstreamLogs,
    /// `--timeout`: the bound of each request sent upstream (a round, or a 2025-11-25 call).
    pub(crate) timeout: Option<std::time::Duration>,
}

/// The upstream's log messages, queued by the client's notification callback (bounded: a host
/// slower than the upstream loses the excess). Whichever relay is running passes them on, each
/// through its own request, whose level filters them; with no relay running nothing could carry
/// them to a 2025-11-25 host's request, and they wait for the next.
pub(crate) type UpstreamLogs =
    Arc<tokio::sync::Mutex<mpsc::Receiver<LoggingMessageNotificationParams>>>;

/// A method the bridge relays, and how it goes through the client's whole call (for a
/// 2025-11-25 upstream).
pub(crate) trait Relayed:
    Method<Params: RequestParams + Send + 'static, Result: Send + 'static>
{
    fn through_client(
        client: Client,
        params: Self::Params,
        options: RequestOptions,
    ) -> BoxFuture<'static, Result<Self::Result, ClientError>>;
}

impl Relayed for CallTool {
    fn through_client(
        client: Client,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> BoxFuture<'static, Result<CallToolResult, ClientError>> {
        Box::pin(async move { client.call_tool_with(params, options).await })
    }
}

impl Relayed for GetPrompt {
    fn through_client(
        client: Client,
        params: GetPromptRequestParams,
        options: RequestOptions,
    ) -> BoxFuture<'static, Result<GetPromptResult, ClientError>> {
        Box::pin(async move { client.get_prompt_with(params, options).await })
    }
}

impl Relayed for ReadResource {
    fn through_client(
        client: Client,
        params: ReadResourceRequestParams,
        options: RequestOptions,
    ) -> BoxFuture<'static, Result<ReadResourceResult, ClientError>> {
        Box::pin(async move { client.read_resource_with(params, options).await })
    }
}

/// How many progress notifications may wait for the host before newer ones are dropped (the
/// upstream decides the pace; the host's pipe may be slower).
const PROGRESS_BACKLOG: usize = 64;

/// Sends one round of `M` (`tools/call`, `prompts/get`, `resources/read`) upstream, relaying
/// its progress to the host meanwhile.
pub(crate) async fn relay_round<M: Relayed>(
    relay: Relay,
    ctx: RequestContext,
    mut params: M::Params,
) -> Result<Outcome<M::Result>, ErrorObject> {
    // The host's envelope and progress token are the host's: the client stamps its own.
    strip_host_meta(&mut params);
    if let Some(level) = ctx.log_level() {
        params.meta_mut().get_or_insert_with(Box::default).log_level = Some(level);
    }
    let (progress_tx, mut progress_rx) =
        mpsc::channel::<ProgressNotificationParams>(PROGRESS_BACKLOG);
    let mut options = RequestOptions::new();
    if let Some(timeout) = relay.timeout {
        options = options.timeout(timeout);
    }
    if ctx.progress_token().is_some() {
        options = options.on_progress(move |progress| {
            // Full: the host is behind; a later notification supersedes this one.
            let _ = progress_tx.try_send(progress);
        });
    }
    let _in_flight = relay.host_requests.enter(&ctx);
    let request = async {
        if relay.client.era() == Era::Handshake {
            // A 2025-11-25 upstream asks on the back-channel while the call runs: the client's
            // own call answers (and budgets) those questions; it never returns input_required.
            M::through_client(relay.client.clone(), params, options.clone())
                .await
                .map(RoundOutcome::Complete)
        } else {
            relay.client.session().request::<M>(params, &options).await
        }
    };
    // The server only signals a cancelled request: the relay stops there, and dropping the
    // request abandons it upstream. A notification is sent in full once taken (in the arm's
    // body, never raced against the answer), so none is lost when the answer comes meanwhile.
    tokio::pin!(request);
    let outcome = loop {
        tokio::select! {
            outcome = &mut request => break outcome,
            () = ctx.cancelled() => {
                return Err(ErrorObject::internal("the host cancelled the request"));
            }
            Some(progress) = progress_rx.recv() => send_progress(&ctx, progress).await,
            Some(message) = async { relay.logs.lock().await.recv().await } => {
                send_log(&ctx, message).await;
            }
        }
    };
    // What the upstream sent before its answer was queued before the answer came: it reaches
    // the host before the answer too.
    while let Ok(progress) = progress_rx.try_recv() {
        send_progress(&ctx, progress).await;
    }
    if let Ok(mut logs) = relay.logs.try_lock() {
        while let Ok(message) = logs.try_recv() {
            send_log(&ctx, message).await;
        }
    }
    match outcome {
        Ok(RoundOutcome::Complete(result)) => Ok(Outcome::Complete(result)),
        Ok(RoundOutcome::InputRequired(asked)) => Ok(Outcome::InputRequired(asked)),
        Err(error) => Err(upstream_error(error)),
    }
}

async fn send_progress(ctx: &RequestContext, progress: ProgressNotificationParams) {
    ctx.progress(
        progress.progress.as_f64().unwrap_or_default(),
        progress.total.as_ref().and_then(serde_json::Number::as_f64),
        progress.message.as_deref(),
    )
    .await;
}

async fn send_log(ctx: &RequestContext, message: LoggingMessageNotificationParams) {
    ctx.log(message.level, message.logger.as_deref(), message.data)
        .await;
}

/// Drops what the host put in `_meta` that belongs to the host's hop: its progress token (the
/// client asks for progress with its own) and the 2026-07-28 envelope (the client writes the
/// upstream's), but the log level the host asked for, which the upstream is asked for too.
fn strip_host_meta<P: RequestParams>(params: &mut P) {
    if let Some(meta) = params.meta_mut() {
        meta.progress_token = None;
        meta.protocol_version = None;
        meta.client_capabilities = None;
        meta.client_info = None;
    }
}

/// The host's view of an upstream failure: the upstream's own JSON-RPC error as it came;
/// anything else (the connection, a timeout, sign-in) as an internal error saying so.
pub(crate) fn upstream_error(error: ClientError) -> ErrorObject {
    match error {
        ClientError::Rpc(error) => error,
        other => ErrorObject::internal(format!("the upstream server: {other}")),
    }
}
