//! The one error of a limit that a later request may fit: the task limits (`tasks`) and the
//! subscription limits (`subscription_limits`) answer with it alike.

use modelctx_types::ErrorObject;

/// `-32603` with `data: {"reason", "scope", "limit"}` and a message for people: the params are
/// valid and the same request succeeds once something ends, so neither `-32602` nor a code of
/// the spec's reserved ranges (DESIGN.md, "Tasks", "Which error"). `reason` names the family
/// of limits (`task_limit`, `subscription_limit`), `scope` whose limit was reached.
pub(crate) fn limit_reached(
    reason: &str,
    scope: &str,
    limit: usize,
    message: String,
) -> ErrorObject {
    ErrorObject::internal(message)
        .with_data(serde_json::json!({"reason": reason, "scope": scope, "limit": limit}))
}
