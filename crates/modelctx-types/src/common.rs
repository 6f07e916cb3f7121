//! Small types shared by many messages.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::Number;

use crate::Meta;

open_str! {
    /// The sender or recipient of a message. Open: an unknown role never fails a message.
    pub struct Role {
        /// The user.
        const USER = "user";
        /// The assistant (model).
        const ASSISTANT = "assistant";
    }
}

open_str! {
    /// Which theme an icon is designed for.
    pub struct IconTheme {
        /// For light backgrounds.
        const LIGHT = "light";
        /// For dark backgrounds.
        const DARK = "dark";
    }
}

/// A severity of log message, ordered from `Debug` (least severe) to `Emergency`.
///
/// A closed set: an unknown level in a request is an invalid parameter (`-32602`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug-level messages.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant conditions.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

wire_struct! {
    /// An icon for display in a user interface.
    pub struct Icon {
        /// A URI pointing to the icon (`https:` or a `data:` URI).
        req "src" => src: String,
        /// The icon's MIME type.
        opt "mimeType" => mime_type: String,
        /// Sizes, e.g. `"48x48"` or `"any"`.
        opt "sizes" => sizes: Vec<String>,
        /// The theme the icon is designed for.
        opt "theme" => theme: IconTheme,
    }
}

wire_struct! {
    /// Name and version of an MCP implementation (`clientInfo`, `serverInfo`).
    #[derive(Default)]
    pub struct Implementation {
        /// Programmatic name.
        req "name" => name: String,
        /// Version string.
        req "version" => version: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// Description.
        opt "description" => description: String,
        /// Icons.
        opt "icons" => icons: Vec<Icon>,
        /// The implementation's website.
        opt "websiteUrl" => website_url: String,
    }
}

wire_struct! {
    /// Hints for how a client should use or display an object.
    #[derive(Default)]
    pub struct Annotations {
        /// Who the content is intended for.
        opt "audience" => audience: Vec<Role>,
        /// Importance from 0 (least) to 1 (most).
        opt "priority" => priority: Number,
        /// ISO 8601 timestamp of the last modification.
        opt "lastModified" => last_modified: String,
    }
}

wire_struct! {
    /// Parameters that carry only `_meta`, used by notifications such as
    /// `notifications/tools/list_changed`.
    #[derive(Default)]
    pub struct NotificationParams {
        /// Metadata (on a listen stream: the subscription id).
        opt "_meta" => meta: Meta,
    }
}

/// Converts an `f64` to a JSON number, writing integral values as integers (`50`, not `50.0`).
/// Returns `None` for NaN and infinities, which JSON cannot carry.
pub fn number(value: f64) -> Option<Number> {
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        // Within ±2^53 the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        return Some(Number::from(value as i64));
    }
    Number::from_f64(value)
}

/// Compares two JSON numbers by value.
pub fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}
