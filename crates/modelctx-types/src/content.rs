//! Content blocks and resource contents.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use serde_json::Value;

use crate::{Annotations, Extra, Icon, Meta};

wire_struct! {
    /// Text content.
    #[derive(Default)]
    pub struct TextContent {
        @tag "type" = "text";
        /// The text.
        req "text" => text: String,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// An image, base64-encoded.
    #[derive(Default)]
    pub struct ImageContent {
        @tag "type" = "image";
        /// Base64 image data.
        req "data" => data: String,
        /// MIME type, e.g. `image/png`.
        req "mimeType" => mime_type: String,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// Audio, base64-encoded.
    #[derive(Default)]
    pub struct AudioContent {
        @tag "type" = "audio";
        /// Base64 audio data.
        req "data" => data: String,
        /// MIME type, e.g. `audio/wav`.
        req "mimeType" => mime_type: String,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// A link to a resource the client may read.
    #[derive(Default)]
    pub struct ResourceLink {
        @tag "type" = "resource_link";
        /// The resource URI.
        req "uri" => uri: String,
        /// Programmatic name.
        req "name" => name: String,
        /// Human-readable name.
        opt "title" => title: String,
        /// Description.
        opt "description" => description: String,
        /// MIME type.
        opt "mimeType" => mime_type: String,
        /// Size in bytes.
        opt "size" => size: u64,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Icons.
        opt "icons" => icons: Vec<Icon>,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// A resource embedded in a message.
    pub struct EmbeddedResource {
        @tag "type" = "resource";
        /// The contents.
        req "resource" => resource: ResourceContents,
        /// Display hints.
        opt "annotations" => annotations: Annotations,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// A tool call requested by a model during sampling (deprecated with sampling).
    #[derive(Default)]
    pub struct ToolUseContent {
        @tag "type" = "tool_use";
        /// Identifier the matching `tool_result` refers to.
        req "id" => id: String,
        /// Tool name.
        req "name" => name: String,
        /// Tool arguments.
        req "input" => input: Extra,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// The result of a tool call, sent back to the model during sampling.
    #[derive(Default)]
    pub struct ToolResultContent {
        @tag "type" = "tool_result";
        /// The `id` of the `tool_use` this answers.
        req "toolUseId" => tool_use_id: String,
        /// Unstructured result.
        req "content" => content: Vec<ContentBlock>,
        /// Structured result.
        opt "structuredContent" => structured_content: Value,
        /// Whether the tool call failed.
        opt "isError" => is_error: bool,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

tagged_union! {
    /// A piece of content in a tool result or a prompt message.
    #[non_exhaustive]
    pub enum ContentBlock by "type" {
        /// Text.
        "text" => Text(TextContent),
        /// An image.
        "image" => Image(ImageContent),
        /// Audio.
        "audio" => Audio(AudioContent),
        /// A link to a resource.
        "resource_link" => ResourceLink(ResourceLink),
        /// An embedded resource.
        "resource" => Resource(EmbeddedResource),
    }
    unknown:
    /// A content type this SDK does not know, kept as is.
    Unknown;
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// An image block.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..ImageContent::default()
        })
    }

    /// An audio block.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..AudioContent::default()
        })
    }

    /// An embedded resource block.
    pub fn resource(resource: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
            extra: Extra::new(),
        })
    }

    /// The text, for text blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

tagged_union! {
    /// A piece of content in a sampling message (deprecated with sampling).
    #[non_exhaustive]
    pub enum SamplingContent by "type" {
        /// Text.
        "text" => Text(TextContent),
        /// An image.
        "image" => Image(ImageContent),
        /// Audio.
        "audio" => Audio(AudioContent),
        /// A tool call requested by the model.
        "tool_use" => ToolUse(ToolUseContent),
        /// A tool result for the model.
        "tool_result" => ToolResult(ToolResultContent),
    }
    unknown:
    /// A content type this SDK does not know, kept as is.
    Unknown;
}

impl SamplingContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// The text, for text blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

wire_struct! {
    /// The text contents of a resource.
    #[derive(Default)]
    pub struct TextResourceContents {
        /// The resource URI.
        req "uri" => uri: String,
        /// MIME type.
        opt "mimeType" => mime_type: String,
        /// The text.
        req "text" => text: String,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

wire_struct! {
    /// The binary contents of a resource, base64-encoded.
    #[derive(Default)]
    pub struct BlobResourceContents {
        /// The resource URI.
        req "uri" => uri: String,
        /// MIME type.
        opt "mimeType" => mime_type: String,
        /// Base64 data.
        req "blob" => blob: String,
        /// Metadata.
        opt "_meta" => meta: Meta,
    }
}

/// Resource contents: text or binary, told apart by which of `text` / `blob` is present.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents.
    pub fn text(
        uri: impl Into<String>,
        mime_type: Option<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::Text(TextResourceContents {
            uri: uri.into(),
            mime_type,
            text: text.into(),
            ..TextResourceContents::default()
        })
    }

    /// Binary contents (`blob` is base64).
    pub fn blob(
        uri: impl Into<String>,
        mime_type: Option<String>,
        blob: impl Into<String>,
    ) -> Self {
        Self::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type,
            blob: blob.into(),
            ..BlobResourceContents::default()
        })
    }

    /// The resource URI.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text(t) => &t.uri,
            Self::Blob(b) => &b.uri,
        }
    }
}

impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => t.serialize(serializer),
            Self::Blob(b) => b.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use de::Error as _;
        let map = Extra::deserialize(deserializer)?;
        let (has_text, has_blob) = (map.contains_key("text"), map.contains_key("blob"));
        let value = Value::Object(map);
        match (has_text, has_blob) {
            (true, false) => TextResourceContents::deserialize(value)
                .map(Self::Text)
                .map_err(D::Error::custom),
            (false, true) => BlobResourceContents::deserialize(value)
                .map(Self::Blob)
                .map_err(D::Error::custom),
            (true, true) => Err(D::Error::custom(
                "resource contents carry both `text` and `blob`",
            )),
            (false, false) => Err(D::Error::custom("resource contents need `text` or `blob`")),
        }
    }
}

/// One value or an array of values (sampling message content).
#[derive(Debug, Clone, PartialEq)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// An array.
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// The values as a slice.
    pub fn as_slice(&self) -> &[T] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(many) => many,
        }
    }
}

impl<T: Serialize> Serialize for OneOrMany<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::One(one) => one.serialize(serializer),
            Self::Many(many) => many.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Dispatch on the JSON token (array or object), not by trial decoding.
        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for Visitor<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object or an array of objects")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(OneOrMany::Many)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(OneOrMany::One)
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}
