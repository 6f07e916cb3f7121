//! `mcp listen`: follow a server's changes from the terminal, one line per notification.

use std::process::ExitCode;
use std::time::Duration;

use modelctx::client::{Client, ListenEvent, TaskSettings};
use modelctx::types::Method as _;
use modelctx::types::tasks::TaskIdsFilter as _;
use modelctx::types::{SubscriptionFilter, methods::SubscriptionsListen};
use serde_json::{Value, json};

use crate::cli::{ListKind, ListenArgs};
use crate::error::{CliError, Result};
use crate::safe_text::{json_line, line};
use crate::target::{Target, close, describe_server, explain, timeout};

/// The pause before listening again after a graceful close, doubled while closes follow each
/// other without an event in between (a server that closes every stream at once must not make
/// us spin), up to [`RELISTEN_MAX`].
const RELISTEN_MIN: Duration = Duration::from_millis(100);
const RELISTEN_MAX: Duration = Duration::from_secs(5);

/// `mcp listen [TARGET] [--resource URI]… [--lists …] [--task ID]… [-- CMD ARGS…]`.
pub(crate) async fn listen(args: ListenArgs) -> Result<ExitCode> {
    let (target, rest) = Target::split(&args.positional, &args.command)?;
    if let Some(extra) = rest.first() {
        return Err(CliError::usage(format!("unexpected argument {extra:?}")));
    }
    let filter = filter(&args)?;
    let mut builder = Client::builder();
    if !args.tasks.is_empty() {
        builder = builder.tasks(TaskSettings::new());
    }
    let client = tokio::select! {
        client = target.connect(builder, &args.connect) => client?,
        // Ctrl-C stops listening, even before it started.
        _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
    };
    let server = format!("{} ({target})", describe_server(&client));
    let follow = async {
        let mut pause = RELISTEN_MIN;
        loop {
            let mut subscription = client.listen(filter.clone()).await.map_err(|e| {
                CliError::failed(format!(
                    "{}: {}",
                    SubscriptionsListen::NAME,
                    explain(&e, false)
                ))
            })?;
            eprintln!(
                "listening to {}: {}",
                line(&server),
                describe(subscription.acknowledged())
            );
            let mut missed = 0;
            while let Some(event) = subscription.next().await {
                pause = RELISTEN_MIN;
                if subscription.missed() > missed {
                    missed = subscription.missed();
                    eprintln!(
                        "{missed} notifications dropped so far (mcp fell behind the server); \
                         what it follows is shown as changed"
                    );
                }
                println!("{}", show(&event, args.json));
            }
            if let Some(error) = subscription.error() {
                return Err(CliError::failed(format!(
                    "the listen stream failed: {}",
                    explain(error, false)
                )));
            }
            eprintln!(
                "the server closed the stream; listening again (changes may have been missed)"
            );
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RELISTEN_MAX);
        }
    };
    // `--timeout` counts from the connection on, as for the other commands.
    let stop = async {
        match timeout(&args.connect) {
            Some(after) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = tokio::time::sleep(after) => {}
            },
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    let outcome = tokio::select! {
        outcome = follow => outcome,
        () = stop => Ok(ExitCode::SUCCESS),
    };
    // The subscription is dropped: the server is told before the process exits.
    close(client).await;
    outcome
}

/// The filter the flags ask for; at least one thing to follow.
fn filter(args: &ListenArgs) -> Result<SubscriptionFilter> {
    let mut filter = SubscriptionFilter::new();
    for list in &args.lists {
        filter = match list {
            ListKind::Tools => filter.with_tools_list_changed(),
            ListKind::Prompts => filter.with_prompts_list_changed(),
            ListKind::Resources => filter.with_resources_list_changed(),
        };
    }
    for uri in &args.resources {
        filter = filter.with_resource(uri.clone());
    }
    if !args.tasks.is_empty() {
        filter.set_task_ids(Some(args.tasks.clone()));
    }
    if args.lists.is_empty() && args.resources.is_empty() && args.tasks.is_empty() {
        return Err(CliError::usage(
            "nothing to follow: give --lists tools,prompts,resources, --resource URI or --task ID",
        ));
    }
    Ok(filter)
}

/// What the server agreed to send, for the user.
fn describe(acknowledged: &SubscriptionFilter) -> String {
    let mut parts = Vec::new();
    for (wanted, name) in [
        (acknowledged.wants_tools_list_changed(), "tools"),
        (acknowledged.wants_prompts_list_changed(), "prompts"),
        (acknowledged.wants_resources_list_changed(), "resources"),
    ] {
        if wanted {
            parts.push(format!("{name} list"));
        }
    }
    parts.extend(
        acknowledged
            .resources()
            .iter()
            .map(|uri| line(uri).into_owned()),
    );
    parts.extend(
        acknowledged
            .task_ids()
            .unwrap_or_default()
            .iter()
            .map(|id| format!("task {}", line(id))),
    );
    if parts.is_empty() {
        "nothing the server offers (it honoured none of the filter)".to_owned()
    } else {
        parts.join(", ")
    }
}

/// One notification as one line: readable, or a JSON object (`--json`).
fn show(event: &ListenEvent, as_json: bool) -> String {
    let (method, params) = match event {
        ListenEvent::ToolsListChanged => ("notifications/tools/list_changed", None),
        ListenEvent::PromptsListChanged => ("notifications/prompts/list_changed", None),
        ListenEvent::ResourcesListChanged => ("notifications/resources/list_changed", None),
        ListenEvent::ResourceUpdated { uri } => {
            ("notifications/resources/updated", Some(json!({"uri": uri})))
        }
        ListenEvent::Other { method, params } => (method.as_str(), params.clone()),
        other => return line(&format!("{other:?}")).into_owned(),
    };
    if as_json {
        let mut object = json!({"method": method});
        if let Some(params) = params {
            object["params"] = params;
        }
        return json_line(&object);
    }
    let short = method.strip_prefix("notifications/").unwrap_or(method);
    match (short, &params) {
        (_, None) => line(short).into_owned(),
        // JSON-RPC params are an object or an array: a string is the text of params the client
        // could not parse (`ListenEvent::Other`), shown as it came, escaped.
        (_, Some(Value::String(raw))) => format!("{} {}", line(short), line(raw)),
        ("resources/updated", Some(params)) => {
            format!(
                "{short} {}",
                line(params["uri"].as_str().unwrap_or_default())
            )
        }
        ("tasks", Some(params)) => {
            let text = |key: &str| params[key].as_str().map(|s| line(s).into_owned());
            let mut shown = format!(
                "task {} {}",
                text("taskId").unwrap_or_default(),
                text("status").unwrap_or_default()
            );
            if let Some(message) = text("statusMessage") {
                shown.push_str(": ");
                shown.push_str(&message);
            }
            shown
        }
        (_, Some(params)) => format!("{} {}", line(short), json_line(params)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(
            show(&ListenEvent::ToolsListChanged, false),
            "tools/list_changed"
        );
        let updated = ListenEvent::ResourceUpdated {
            uri: "report://q3\u{1b}[2J".into(),
        };
        assert_eq!(
            show(&updated, false),
            "resources/updated report://q3\\u{1b}[2J"
        );
        assert_eq!(
            show(&updated, true),
            r#"{"method":"notifications/resources/updated","params":{"uri":"report://q3\u001b[2J"}}"#
        );
        let task = ListenEvent::Other {
            method: "notifications/tasks".into(),
            params: Some(json!({"taskId": "t1", "status": "working", "statusMessage": "step 1"})),
        };
        assert_eq!(show(&task, false), "task t1 working: step 1");
        let other = ListenEvent::Other {
            method: "notifications/x".into(),
            params: Some(Value::Bool(true)),
        };
        assert_eq!(show(&other, false), "x true");
        let bare = ListenEvent::Other {
            method: "notifications/x\u{1b}[2J".into(),
            params: None,
        };
        assert_eq!(show(&bare, false), "x\\u{1b}[2J");
        let raw = ListenEvent::Other {
            method: "notifications/x".into(),
            params: Some(Value::String("[[\"\u{9b}\"]]".into())),
        };
        assert_eq!(show(&raw, false), "x [[\"\\u{9b}\"]]");
    }
}
