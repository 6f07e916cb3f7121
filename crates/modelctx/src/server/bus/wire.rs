//! The bus's message format: one small JSON object per change, decoded strictly. Anything that
//! can publish on the channel can send us bytes, so a message is hostile input like a request:
//! bounded in size before it is parsed, every field checked, unknown fields refused.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::server::Change;

/// The largest message accepted (and sent: a change whose message would be larger, a resource
/// URI of more than ~16 KiB, is announced locally only).
pub(crate) const MAX_MESSAGE: usize = 16 * 1024;
/// The longest instance id accepted (ours are 32 hex digits).
const MAX_INSTANCE: usize = 64;
/// The longest task id accepted (the runtime's are 32 hex digits; stores of one's own may differ).
const MAX_TASK_ID: usize = 256;
/// The format's version; a message of another version is refused, not guessed at.
const VERSION: u32 = 1;

/// What one message announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// A change for listen streams and handshake-era sessions. `Change::Resync` is sent by an
    /// application that wants every listener to refetch, and by a publisher whose queue
    /// overflowed while the bus was down (every instance then resyncs its listeners).
    Change(Change),
    /// A task's visible state changed: watchers of this id read it from the store.
    Task(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Tools,
    Prompts,
    Resources,
    Resource,
    Task,
    Resync,
}

/// The JSON shape: `{"v":1,"from":"<instance>","kind":"resource","uri":"…"}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire<'a> {
    v: u32,
    #[serde(borrow)]
    from: Cow<'a, str>,
    kind: Kind,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    uri: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    task: Option<Cow<'a, str>>,
}

/// Why a message was refused (logged, never answered: a bus has no one to answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("{0} bytes, more than the {MAX_MESSAGE} accepted")]
    TooLarge(usize),
    #[error("not a change message: {0}")]
    Malformed(String),
    #[error("version {0}, not {VERSION}")]
    Version(u32),
    #[error("the sender's instance id is empty, too long or not printable")]
    Sender,
    #[error("fields that do not fit kind {0:?}")]
    Fields(&'static str),
}

/// Encodes `event` as sent by `instance`; `None` when the message would exceed [`MAX_MESSAGE`].
pub(crate) fn encode(instance: &str, event: &Event) -> Option<Vec<u8>> {
    let (kind, uri, task) = match event {
        Event::Change(Change::ToolsListChanged) => (Kind::Tools, None, None),
        Event::Change(Change::PromptsListChanged) => (Kind::Prompts, None, None),
        Event::Change(Change::ResourcesListChanged) => (Kind::Resources, None, None),
        Event::Change(Change::ResourceUpdated(uri)) => (Kind::Resource, Some(uri.as_str()), None),
        Event::Change(Change::Resync) => (Kind::Resync, None, None),
        Event::Task(id) => (Kind::Task, None, Some(id.as_str())),
    };
    let wire = Wire {
        v: VERSION,
        from: Cow::Borrowed(instance),
        kind,
        uri: uri.map(Cow::Borrowed),
        task: task.map(Cow::Borrowed),
    };
    let bytes = serde_json::to_vec(&wire).ok()?;
    (bytes.len() <= MAX_MESSAGE).then_some(bytes)
}

/// Decodes a message: the sender's instance id and the event.
///
/// # Errors
/// Anything but a message [`encode`] could have written.
pub(crate) fn decode(bytes: &[u8]) -> Result<(String, Event), Refused> {
    if bytes.len() > MAX_MESSAGE {
        return Err(Refused::TooLarge(bytes.len()));
    }
    let wire: Wire<'_> =
        serde_json::from_slice(bytes).map_err(|e| Refused::Malformed(e.to_string()))?;
    if wire.v != VERSION {
        return Err(Refused::Version(wire.v));
    }
    if !is_printable_id(&wire.from, MAX_INSTANCE) {
        return Err(Refused::Sender);
    }
    let event = match (wire.kind, wire.uri, wire.task) {
        (Kind::Tools, None, None) => Event::Change(Change::ToolsListChanged),
        (Kind::Prompts, None, None) => Event::Change(Change::PromptsListChanged),
        (Kind::Resources, None, None) => Event::Change(Change::ResourcesListChanged),
        (Kind::Resync, None, None) => Event::Change(Change::Resync),
        (Kind::Resource, Some(uri), None) if !uri.is_empty() && !has_control(&uri) => {
            Event::Change(Change::ResourceUpdated(uri.into_owned()))
        }
        (Kind::Task, None, Some(task)) if is_printable_id(&task, MAX_TASK_ID) => {
            Event::Task(task.into_owned())
        }
        (kind, _, _) => return Err(Refused::Fields(kind_name(kind))),
    };
    Ok((wire.from.into_owned(), event))
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Tools => "tools",
        Kind::Prompts => "prompts",
        Kind::Resources => "resources",
        Kind::Resource => "resource",
        Kind::Task => "task",
        Kind::Resync => "resync",
    }
}

fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

fn is_printable_id(id: &str, max: usize) -> bool {
    !id.is_empty() && id.len() <= max && id.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips() {
        for event in [
            Event::Change(Change::ToolsListChanged),
            Event::Change(Change::PromptsListChanged),
            Event::Change(Change::ResourcesListChanged),
            Event::Change(Change::ResourceUpdated("report://2026-q3".into())),
            Event::Change(Change::Resync),
            Event::Task("0123abcd".into()),
        ] {
            let bytes = encode("a1", &event).unwrap();
            assert_eq!(decode(&bytes).unwrap(), ("a1".to_owned(), event));
        }
    }

    #[test]
    fn hostile_messages_are_refused() {
        let refused = |text: &str| decode(text.as_bytes()).unwrap_err();
        assert!(matches!(refused("garbage"), Refused::Malformed(_)));
        assert!(matches!(refused("{}"), Refused::Malformed(_)));
        assert!(matches!(
            refused(r#"{"v":1,"from":"a","kind":"tools","extra":1}"#),
            Refused::Malformed(_)
        ));
        assert!(matches!(
            refused(r#"{"v":1,"from":"a","kind":"reboot"}"#),
            Refused::Malformed(_)
        ));
        assert_eq!(
            refused(r#"{"v":2,"from":"a","kind":"tools"}"#),
            Refused::Version(2)
        );
        assert_eq!(
            refused(r#"{"v":1,"from":"","kind":"tools"}"#),
            Refused::Sender
        );
        assert_eq!(
            refused(r#"{"v":1,"from":"a b","kind":"tools"}"#),
            Refused::Sender
        );
        // A kind with the wrong fields.
        assert_eq!(
            refused(r#"{"v":1,"from":"a","kind":"resource"}"#),
            Refused::Fields("resource")
        );
        assert_eq!(
            refused(r#"{"v":1,"from":"a","kind":"resource","uri":"x\ny"}"#),
            Refused::Fields("resource")
        );
        assert_eq!(
            refused(r#"{"v":1,"from":"a","kind":"tools","task":"t"}"#),
            Refused::Fields("tools")
        );
        let long = format!(
            r#"{{"v":1,"from":"a","kind":"task","task":"{}"}}"#,
            "t".repeat(MAX_TASK_ID + 1)
        );
        assert_eq!(refused(&long), Refused::Fields("task"));
        let huge = vec![b' '; MAX_MESSAGE + 1];
        assert_eq!(
            decode(&huge).unwrap_err(),
            Refused::TooLarge(MAX_MESSAGE + 1)
        );
    }

    #[test]
    fn an_oversized_change_is_not_encoded() {
        let uri = format!("file:///{}", "x".repeat(MAX_MESSAGE));
        assert_eq!(
            encode("a", &Event::Change(Change::ResourceUpdated(uri))),
            None
        );
    }
}
