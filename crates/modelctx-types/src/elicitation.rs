//! Elicitation: asking the user through a form (with a restricted JSON Schema) or a URL.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use serde_json::{Number, Value};

use crate::{Extra, Meta};

open_str! {
    /// The elicitation mode.
    pub struct ElicitationMode {
        /// An in-client form described by a restricted JSON Schema.
        const FORM = "form";
        /// An out-of-band URL the user opens after consenting.
        const URL = "url";
    }
}

open_str! {
    /// The `format` of a string field.
    pub struct StringFormat {
        /// An e-mail address.
        const EMAIL = "email";
        /// A URI.
        const URI = "uri";
        /// A date (`YYYY-MM-DD`).
        const DATE = "date";
        /// A date and time (RFC 3339).
        const DATE_TIME = "date-time";
    }
}

wire_struct! {
    /// A string field.
    #[derive(Default)]
    pub struct StringSchema {
        @tag "type" = "string";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// Minimum length.
        opt "minLength" => min_length: u64,
        /// Maximum length.
        opt "maxLength" => max_length: u64,
        /// Format.
        opt "format" => format: StringFormat,
        /// Default value.
        opt "default" => default: String,
    }
}

open_str! {
    /// `"number"` or `"integer"`.
    pub struct NumberType {
        /// Any number.
        const NUMBER = "number";
        /// An integer.
        const INTEGER = "integer";
    }
}

wire_struct! {
    /// A number or integer field.
    pub struct NumberSchema {
        /// `"number"` or `"integer"`.
        req "type" => kind: NumberType,
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// Minimum.
        opt "minimum" => minimum: Number,
        /// Maximum.
        opt "maximum" => maximum: Number,
        /// Default value.
        opt "default" => default: Number,
    }
}

wire_struct! {
    /// A boolean field.
    #[derive(Default)]
    pub struct BooleanSchema {
        @tag "type" = "boolean";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// Default value.
        opt "default" => default: bool,
    }
}

wire_struct! {
    /// One option of a titled enum: a value and its display label.
    #[derive(Default)]
    pub struct EnumOption {
        /// The value.
        req "const" => value: String,
        /// The label.
        req "title" => title: String,
    }
}

wire_struct! {
    /// Single choice from plain values (`enum`).
    #[derive(Default)]
    pub struct UntitledSingleSelectEnumSchema {
        @tag "type" = "string";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// The values.
        req "enum" => values: Vec<String>,
        /// Default value.
        opt "default" => default: String,
    }
}

wire_struct! {
    /// Single choice from labelled values (`oneOf` of `{const, title}`).
    #[derive(Default)]
    pub struct TitledSingleSelectEnumSchema {
        @tag "type" = "string";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// The options.
        req "oneOf" => options: Vec<EnumOption>,
        /// Default value.
        opt "default" => default: String,
    }
}

wire_struct! {
    /// Items of an untitled multi-select.
    #[derive(Default)]
    pub struct UntitledEnumItems {
        @tag "type" = "string";
        /// The values.
        req "enum" => values: Vec<String>,
    }
}

wire_struct! {
    /// Items of a titled multi-select.
    #[derive(Default)]
    pub struct TitledEnumItems {
        /// The options.
        req "anyOf" => options: Vec<EnumOption>,
    }
}

wire_struct! {
    /// Several choices from plain values.
    #[derive(Default)]
    pub struct UntitledMultiSelectEnumSchema {
        @tag "type" = "array";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// Minimum number of choices.
        opt "minItems" => min_items: u64,
        /// Maximum number of choices.
        opt "maxItems" => max_items: u64,
        /// The values.
        req "items" => items: UntitledEnumItems,
        /// Default choices.
        opt "default" => default: Vec<String>,
    }
}

wire_struct! {
    /// Several choices from labelled values.
    #[derive(Default)]
    pub struct TitledMultiSelectEnumSchema {
        @tag "type" = "array";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// Minimum number of choices.
        opt "minItems" => min_items: u64,
        /// Maximum number of choices.
        opt "maxItems" => max_items: u64,
        /// The options.
        req "items" => items: TitledEnumItems,
        /// Default choices.
        opt "default" => default: Vec<String>,
    }
}

wire_struct! {
    /// Single choice with labels in a parallel `enumNames` array (deprecated form).
    #[derive(Default)]
    pub struct LegacyTitledEnumSchema {
        @tag "type" = "string";
        /// Label.
        opt "title" => title: String,
        /// Help text.
        opt "description" => description: String,
        /// The values.
        req "enum" => values: Vec<String>,
        /// The labels, parallel to `enum`.
        opt "enumNames" => names: Vec<String>,
        /// Default value.
        opt "default" => default: String,
    }
}

/// One field of an elicitation form.
///
/// The schema gives these shapes no discriminator of their own, so they are told apart by an
/// explicit rule on `type` and on which of `enum` / `oneOf` / `enumNames` / `items.anyOf` are
/// present, never by trying each shape in turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PrimitiveSchema {
    /// Free text.
    String(StringSchema),
    /// A number or integer.
    Number(NumberSchema),
    /// A boolean.
    Boolean(BooleanSchema),
    /// Single choice, plain values.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// Single choice, labelled values.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// Several choices, plain values.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Several choices, labelled values.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// Single choice with `enumNames` (deprecated).
    LegacyTitledEnum(LegacyTitledEnumSchema),
    /// A shape this SDK does not know, kept as is.
    Unknown(Extra),
}

impl PrimitiveSchema {
    /// The `title`, when set.
    pub fn title(&self) -> Option<&str> {
        match self {
            Self::String(s) => s.title.as_deref(),
            Self::Number(s) => s.title.as_deref(),
            Self::Boolean(s) => s.title.as_deref(),
            Self::UntitledSingleSelect(s) => s.title.as_deref(),
            Self::TitledSingleSelect(s) => s.title.as_deref(),
            Self::UntitledMultiSelect(s) => s.title.as_deref(),
            Self::TitledMultiSelect(s) => s.title.as_deref(),
            Self::LegacyTitledEnum(s) => s.title.as_deref(),
            Self::Unknown(map) => map.get("title").and_then(Value::as_str),
        }
    }

    /// The `description`, when set.
    pub fn description(&self) -> Option<&str> {
        match self {
            Self::String(s) => s.description.as_deref(),
            Self::Number(s) => s.description.as_deref(),
            Self::Boolean(s) => s.description.as_deref(),
            Self::UntitledSingleSelect(s) => s.description.as_deref(),
            Self::TitledSingleSelect(s) => s.description.as_deref(),
            Self::UntitledMultiSelect(s) => s.description.as_deref(),
            Self::TitledMultiSelect(s) => s.description.as_deref(),
            Self::LegacyTitledEnum(s) => s.description.as_deref(),
            Self::Unknown(map) => map.get("description").and_then(Value::as_str),
        }
    }
}

impl Serialize for PrimitiveSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::String(s) => s.serialize(serializer),
            Self::Number(s) => s.serialize(serializer),
            Self::Boolean(s) => s.serialize(serializer),
            Self::UntitledSingleSelect(s) => s.serialize(serializer),
            Self::TitledSingleSelect(s) => s.serialize(serializer),
            Self::UntitledMultiSelect(s) => s.serialize(serializer),
            Self::TitledMultiSelect(s) => s.serialize(serializer),
            Self::LegacyTitledEnum(s) => s.serialize(serializer),
            Self::Unknown(map) => map.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for PrimitiveSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fn decode<T: for<'a> Deserialize<'a>, E: de::Error>(map: Extra) -> Result<T, E> {
            T::deserialize(Value::Object(map)).map_err(E::custom)
        }
        let map = Extra::deserialize(deserializer)?;
        let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
        let items_titled = map.get("items").and_then(|i| i.get("anyOf")).is_some();
        match kind {
            "string" if map.contains_key("oneOf") => decode(map).map(Self::TitledSingleSelect),
            "string" if map.contains_key("enumNames") => decode(map).map(Self::LegacyTitledEnum),
            "string" if map.contains_key("enum") => decode(map).map(Self::UntitledSingleSelect),
            "string" => decode(map).map(Self::String),
            "number" | "integer" => decode(map).map(Self::Number),
            "boolean" => decode(map).map(Self::Boolean),
            "array" if items_titled => decode(map).map(Self::TitledMultiSelect),
            "array" => decode(map).map(Self::UntitledMultiSelect),
            _ => Ok(Self::Unknown(map)),
        }
    }
}

wire_struct! {
    /// The restricted schema of an elicitation form: a flat object of primitive fields.
    #[derive(Default)]
    pub struct ElicitationSchema {
        @tag "type" = "object";
        /// `$schema`, when the server names a dialect.
        opt "$schema" => dialect: String,
        /// The fields.
        req "properties" => properties: BTreeMap<String, PrimitiveSchema>,
        /// The names of required fields.
        opt "required" => required: Vec<String>,
    }
}

wire_struct! {
    /// Parameters of a form-mode elicitation.
    pub struct ElicitRequestFormParams {
        @own new;
        /// `"form"`; a missing mode means form.
        opt "mode" => mode: ElicitationMode,
        /// What is being asked, for the user.
        req "message" => message: String,
        /// The form.
        req "requestedSchema" => requested_schema: ElicitationSchema,
        /// Metadata (handshake era only).
        opt "_meta" => meta: Meta,
    }
}

impl ElicitRequestFormParams {
    /// A form-mode elicitation (with `mode: "form"` explicit, as the 2026 examples write it).
    pub fn new(message: impl Into<String>, requested_schema: ElicitationSchema) -> Self {
        Self {
            mode: Some(ElicitationMode::FORM),
            message: message.into(),
            requested_schema,
            meta: None,
            extra: Extra::new(),
        }
    }
}

wire_struct! {
    /// Parameters of a URL-mode elicitation.
    pub struct ElicitRequestUrlParams {
        @tag "mode" = "url";
        /// What the user is asked to do, for display.
        req "message" => message: String,
        /// The URL to open (after consent; never prefetched).
        req "url" => url: String,
        /// Handshake era only: correlates `notifications/elicitation/complete`.
        opt "elicitationId" => elicitation_id: String,
        /// Metadata (handshake era only).
        opt "_meta" => meta: Meta,
    }
}

/// Parameters of an elicitation: form or URL, by `mode` (absent means form).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(ElicitRequestFormParams),
    /// URL mode.
    Url(ElicitRequestUrlParams),
}

impl ElicitRequestParams {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(f) => &f.message,
            Self::Url(u) => &u.message,
        }
    }

    /// The client capabilities a client must declare before it may be asked this: the
    /// elicitation mode.
    pub fn required_capabilities(&self) -> crate::ClientCapabilities {
        match self {
            Self::Form(_) => crate::ClientCapabilities::new().with_elicitation_form(),
            Self::Url(_) => crate::ClientCapabilities::new().with_elicitation_url(),
        }
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(value: ElicitRequestFormParams) -> Self {
        Self::Form(value)
    }
}

impl From<ElicitRequestUrlParams> for ElicitRequestParams {
    fn from(value: ElicitRequestUrlParams) -> Self {
        Self::Url(value)
    }
}

impl Serialize for ElicitRequestParams {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Form(f) => f.serialize(serializer),
            Self::Url(u) => u.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use de::Error as _;
        let map = Extra::deserialize(deserializer)?;
        let mode = match map.get("mode") {
            None => "form",
            Some(Value::String(mode)) => mode.as_str(),
            Some(_) => return Err(D::Error::custom("elicitation `mode` must be a string")),
        };
        match mode {
            "form" => ElicitRequestFormParams::deserialize(Value::Object(map))
                .map(Self::Form)
                .map_err(D::Error::custom),
            "url" => ElicitRequestUrlParams::deserialize(Value::Object(map))
                .map(Self::Url)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format_args!(
                "unknown elicitation mode {other:?}"
            ))),
        }
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form, or consented to open the URL.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

wire_struct! {
    /// The user's answer to an elicitation.
    pub struct ElicitResult {
        /// What the user did.
        req "action" => action: ElicitAction,
        /// The form data (accepted form mode only): strings, numbers, booleans, string arrays.
        opt "content" => content: Extra,
        /// Metadata (handshake era only).
        opt "_meta" => meta: Meta,
    }
}

impl ElicitResult {
    /// An accepted form with `content`.
    pub fn accept(content: Extra) -> Self {
        Self {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
            extra: Extra::new(),
        }
    }

    /// An accepted URL elicitation (consent, no content).
    pub fn accept_url() -> Self {
        Self {
            action: ElicitAction::Accept,
            content: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// A decline.
    pub fn decline() -> Self {
        Self {
            action: ElicitAction::Decline,
            content: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// A cancel.
    pub fn cancel() -> Self {
        Self {
            action: ElicitAction::Cancel,
            content: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}
