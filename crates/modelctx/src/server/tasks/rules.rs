//! The small rules of the runtime: time, what an input request needs, and the terminal
//! transitions.

use std::time::{Duration, UNIX_EPOCH};

use modelctx_types::tasks::TaskStatus;
use modelctx_types::{ClientCapabilities, ErrorObject, Extra, InputRequest, InputRequests};

use super::store::TaskRecord;

pub(crate) use crate::store::now_ms;

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// ISO 8601 (UTC, millisecond precision) of a Unix-milliseconds time; times past the year 9999
/// (which RFC 3339 cannot write) are written as its last millisecond.
pub(crate) fn iso8601(ms: u64) -> String {
    // 9999-12-31T23:59:59.999Z
    const LAST: u64 = 253_402_300_799_999;
    let time = UNIX_EPOCH + Duration::from_millis(ms.min(LAST));
    humantime::format_rfc3339_millis(time).to_string()
}

/// The client capabilities an input request needs.
pub(super) fn required_capabilities(request: &InputRequest) -> ClientCapabilities {
    match request {
        InputRequest::Elicit(elicit) => elicit.params.required_capabilities(),
        InputRequest::CreateMessage(sample)
            if sample.params.tools.is_some() || sample.params.tool_choice.is_some() =>
        {
            ClientCapabilities::new().with_sampling_tools()
        }
        InputRequest::CreateMessage(_) => ClientCapabilities::new().with_sampling(),
        InputRequest::ListRoots(_) => ClientCapabilities::new().with_roots(),
        #[allow(unreachable_patterns)]
        _ => ClientCapabilities::new(),
    }
}

/// Keys are unique over the task's life, and the client must have declared what is asked.
pub(super) fn check_questions(
    record: &TaskRecord,
    requests: &InputRequests,
) -> Result<(), ErrorObject> {
    if requests.is_empty() {
        tracing::error!(task = %record.task_id, "a task handler asked nothing");
        return Err(ErrorObject::internal("Internal error"));
    }
    if let Some(key) = requests.keys().find(|k| record.issued_keys.contains(*k)) {
        tracing::error!(task = %record.task_id, key = %key, "input request key reused within a task");
        return Err(ErrorObject::internal("Internal error"));
    }
    let mut missing = ClientCapabilities::new();
    let mut lacking = false;
    for request in requests.values() {
        let required = required_capabilities(request);
        if !record.client_capabilities.satisfies(&required) {
            lacking = true;
            merge(&mut missing, &required);
        }
    }
    if lacking {
        return Err(ErrorObject::missing_required_client_capability(
            "The task needs input the client did not declare it can give",
            &missing,
        ));
    }
    Ok(())
}

pub(super) fn merge(into: &mut ClientCapabilities, other: &ClientCapabilities) {
    if let Some(e) = &other.elicitation {
        let target = into.elicitation.get_or_insert_with(Default::default);
        if e.form.is_some() {
            target.form = Some(Extra::new());
        }
        if e.url.is_some() {
            target.url = Some(Extra::new());
        }
    }
    if let Some(s) = &other.sampling {
        let target = into.sampling.get_or_insert_with(Default::default);
        if s.tools.is_some() {
            target.tools = Some(Extra::new());
        }
    }
    if other.roots.is_some() {
        into.roots.get_or_insert_with(Default::default);
    }
}

pub(super) fn failed(record: &mut TaskRecord, error: ErrorObject) {
    record.status = TaskStatus::FAILED;
    if record.status_message.is_none() {
        record.status_message = Some(error.message.clone());
    }
    record.error = Some(error);
    record.pending.clear();
}

pub(super) fn cancelled(record: &mut TaskRecord) {
    record.status = TaskStatus::CANCELLED;
    record.status_message = Some("Cancelled at the client's request".to_owned());
    record.pending.clear();
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn iso8601_is_utc_with_milliseconds() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_785_233_400_000), "2026-07-28T10:10:00.000Z");
        assert_eq!(iso8601(u64::MAX), "9999-12-31T23:59:59.999Z");
    }
}
