//! Notification parameters: cancellation, progress, log messages.

use serde_json::{Number, Value};

use crate::{LoggingLevel, Meta, ProgressToken, RequestId};

wire_struct! {
    /// Parameters of `notifications/cancelled`.
    pub struct CancelledNotificationParams {
        @own new;
        /// The request to cancel.
        req "requestId" => request_id: RequestId,
        /// Why.
        opt "reason" => reason: String,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl CancelledNotificationParams {
    /// Cancels `request_id`.
    pub fn new(request_id: RequestId, reason: Option<String>) -> Self {
        Self {
            request_id,
            reason,
            meta: None,
            extra: crate::Extra::new(),
        }
    }
}

wire_struct! {
    /// Parameters of `notifications/progress`.
    pub struct ProgressNotificationParams {
        @own new;
        /// The token from the request's `_meta.progressToken`.
        req "progressToken" => progress_token: ProgressToken,
        /// Progress so far; increases with every notification.
        req "progress" => progress: Number,
        /// The total, when known.
        opt "total" => total: Number,
        /// A message.
        opt "message" => message: String,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl ProgressNotificationParams {
    /// Progress for `token`; integral values are written as integers.
    pub fn new(
        token: ProgressToken,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Self {
        Self {
            progress_token: token,
            progress: crate::number(progress).unwrap_or_else(|| Number::from(0)),
            total: total.and_then(crate::number),
            message,
            meta: None,
            extra: crate::Extra::new(),
        }
    }
}

wire_struct! {
    /// Parameters of `notifications/message` (deprecated logging).
    pub struct LoggingMessageNotificationParams {
        @own new;
        /// Severity.
        req "level" => level: LoggingLevel,
        /// The logger's name.
        opt "logger" => logger: String,
        /// The message: any JSON.
        req "data" => data: Value,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

impl LoggingMessageNotificationParams {
    /// A log message.
    pub fn new(level: LoggingLevel, logger: Option<String>, data: Value) -> Self {
        Self {
            level,
            logger,
            data,
            meta: None,
            extra: crate::Extra::new(),
        }
    }
}
