//! Content items in tool results: pictures and sound beside a tool's JSON value, the `content` extension
//! (SPEC/1.0 extensions.md §content).

use std::borrow::Cow;

use base64::Engine as _;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The key of the `content` extension in `capabilities.extensions`.
pub const CONTENT_EXTENSION: &str = "content";

/// The member of a `tools/call` result object that holds its content items.
pub const CONTENT_MEMBER: &str = "_content";

/// One content item: binary data, base64 in the standard alphabet with padding, and its media type.
///
/// ```
/// use gabp_types::methods::ContentItem;
///
/// let item = ContentItem::image("image/png", &[0x89, b'P', b'N', b'G']);
/// assert_eq!(
///     serde_json::to_value(&item)?,
///     serde_json::json!({"type": "image", "mimeType": "image/png", "data": "iVBORw=="})
/// );
/// assert_eq!(item.decoded_len(), Some(4));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum ContentItem {
    /// A picture: `mimeType` starts with `image/`.
    Image {
        /// The media type, `image/png` for instance.
        #[serde(rename = "mimeType")]
        #[schemars(regex(pattern = r"^image/[!-~]+$"))]
        mime_type: String,
        /// The bytes, base64 (RFC 4648 §4, with padding).
        #[schemars(regex(pattern = r"^[A-Za-z0-9+/]*={0,2}$"))]
        data: String,
    },
    /// A sound: `mimeType` starts with `audio/`.
    Audio {
        /// The media type, `audio/wav` for instance.
        #[serde(rename = "mimeType")]
        #[schemars(regex(pattern = r"^audio/[!-~]+$"))]
        mime_type: String,
        /// The bytes, base64 (RFC 4648 §4, with padding).
        #[schemars(regex(pattern = r"^[A-Za-z0-9+/]*={0,2}$"))]
        data: String,
    },
}

impl ContentItem {
    /// A picture of type `mime_type` made of `bytes`.
    #[must_use]
    pub fn image(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        ContentItem::Image {
            mime_type: mime_type.into(),
            data: encode_base64(bytes),
        }
    }

    /// A sound of type `mime_type` made of `bytes`.
    #[must_use]
    pub fn audio(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        ContentItem::Audio {
            mime_type: mime_type.into(),
            data: encode_base64(bytes),
        }
    }

    /// `image` or `audio`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            ContentItem::Image { .. } => "image",
            ContentItem::Audio { .. } => "audio",
        }
    }

    /// The media type.
    #[must_use]
    pub fn mime_type(&self) -> &str {
        match self {
            ContentItem::Image { mime_type, .. } | ContentItem::Audio { mime_type, .. } => {
                mime_type
            }
        }
    }

    /// The base64 text of the bytes.
    #[must_use]
    pub fn data(&self) -> &str {
        match self {
            ContentItem::Image { data, .. } | ContentItem::Audio { data, .. } => data,
        }
    }

    /// How many bytes the data decodes to, or `None` when it is not valid padded base64.
    #[must_use]
    pub fn decoded_len(&self) -> Option<usize> {
        base64_decoded_len(self.data())
    }

    /// The decoded bytes, or `None` when the data is not valid padded base64.
    #[must_use]
    pub fn decode(&self) -> Option<Vec<u8>> {
        decode_base64(self.data())
    }

    /// What makes this item invalid beyond its JSON shape: `(member, reason)`.
    pub(crate) fn problem(&self) -> Option<(&'static str, String)> {
        let prefix = match self {
            ContentItem::Image { .. } => "image/",
            ContentItem::Audio { .. } => "audio/",
        };
        let mime = self.mime_type();
        if !mime.starts_with(prefix) || mime.len() == prefix.len() {
            return Some((
                "mimeType",
                format!(
                    "a {} item needs a mimeType starting with {prefix}",
                    self.kind()
                ),
            ));
        }
        if self.decoded_len().is_none() {
            return Some(("data", "not valid base64 with padding".to_owned()));
        }
        None
    }
}

/// A `tools/call` result: the tool's own value and, with the `content` extension, its content items, which
/// travel in the member `_content` of the result object.
///
/// ```
/// use gabp_types::methods::{ContentItem, ToolResult};
/// use serde_json::json;
///
/// let result = ToolResult::new(json!({"width": 1}))
///     .with_content(vec![ContentItem::image("image/png", b"png")]);
/// let wire = serde_json::to_value(&result)?;
/// assert_eq!(wire["_content"][0]["type"], "image");
/// let read: ToolResult = serde_json::from_value(wire)?;
/// assert_eq!(read.value, json!({"width": 1}));
/// assert_eq!(read.content.len(), 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolResult {
    /// The tool's value, described by its `outputSchema`.
    pub value: Value,
    /// The content items, in order.
    pub content: Vec<ContentItem>,
}

impl ToolResult {
    /// A result without content items.
    #[must_use]
    pub fn new(value: Value) -> Self {
        ToolResult {
            value,
            content: Vec::new(),
        }
    }

    /// The same result with `content`.
    #[must_use]
    pub fn with_content(mut self, content: Vec<ContentItem>) -> Self {
        self.content = content;
        self
    }

    /// Splits a result as received: `_content`, when it is an array of content items, is taken out of the
    /// value; anything else is left in the value as it came.
    #[must_use]
    pub fn from_value(mut value: Value) -> Self {
        let content = match value.as_object_mut() {
            Some(map) => match map.remove(CONTENT_MEMBER) {
                Some(items) => match serde_json::from_value::<Vec<ContentItem>>(items.clone()) {
                    Ok(content) => content,
                    Err(_) => {
                        map.insert(CONTENT_MEMBER.to_owned(), items);
                        Vec::new()
                    }
                },
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        ToolResult { value, content }
    }

    /// The result as sent: the value, with `_content` added when there are items. A value that is not an
    /// object is wrapped as `{"value": ...}` first, since only an object can carry `_content`.
    #[must_use]
    pub fn into_value(self) -> Value {
        if self.content.is_empty() {
            return self.value;
        }
        let mut map = match self.value {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => Map::from_iter([("value".to_owned(), other)]),
        };
        let items = self
            .content
            .iter()
            .filter_map(|item| serde_json::to_value(item).ok())
            .collect();
        map.insert(CONTENT_MEMBER.to_owned(), Value::Array(items));
        Value::Object(map)
    }

    /// The decoded size of every item together (invalid base64 counts its text length).
    #[must_use]
    pub fn content_bytes(&self) -> usize {
        self.content
            .iter()
            .map(|c| c.decoded_len().unwrap_or(c.data().len()))
            .sum()
    }
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.clone().into_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(ToolResult::from_value)
    }
}

impl JsonSchema for ToolResult {
    fn schema_name() -> Cow<'static, str> {
        "ToolResult".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<ContentItem>();
        schemars::json_schema!({
            "description": "The tool's own value, described by its outputSchema; an object result may carry content items in `_content` (the content extension).",
            "if": { "type": "object", "required": [CONTENT_MEMBER] },
            "then": { "properties": { CONTENT_MEMBER: { "type": "array", "items": item } } }
        })
    }
}

/// A tool's typed value with content items: what a tool handler returns to send a picture beside its JSON.
/// It serializes like [`ToolResult`] and has the schema of `T` alone (`_content` is never part of a tool's
/// `outputSchema`).
///
/// ```
/// use gabp_types::methods::{ContentItem, WithContent};
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Rendered { width: u32 }
///
/// let out = WithContent::new(Rendered { width: 128 }, vec![ContentItem::image("image/png", b"...")]);
/// let wire = serde_json::to_value(&out)?;
/// assert_eq!(wire["width"], 128);
/// assert_eq!(wire["_content"][0]["mimeType"], "image/png");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct WithContent<T> {
    /// The tool's value.
    pub value: T,
    /// The content items.
    pub content: Vec<ContentItem>,
}

impl<T> WithContent<T> {
    /// `value` with `content`.
    pub fn new(value: T, content: Vec<ContentItem>) -> Self {
        WithContent { value, content }
    }
}

impl<T: Serialize> Serialize for WithContent<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = serde_json::to_value(&self.value).map_err(serde::ser::Error::custom)?;
        ToolResult::new(value)
            .with_content(self.content.clone())
            .into_value()
            .serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for WithContent<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// The decoded length of padded standard base64, or `None` when `text` is not that.
fn base64_decoded_len(text: &str) -> Option<usize> {
    decode_base64(text).map(|bytes| bytes.len())
}

fn decode_base64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn base64_known_answers() {
        for (plain, encoded) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\xff\xfe\xfd", "//79"),
        ] {
            assert_eq!(encode_base64(plain), encoded);
            assert_eq!(decode_base64(encoded).as_deref(), Some(plain));
        }
        for bad in ["Zg=", "Zg===", "Z!==", "Zm9v\n", "=Zm9"] {
            assert_eq!(base64_decoded_len(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn base64_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let text = encode_base64(&bytes);
            prop_assert_eq!(base64_decoded_len(&text), Some(bytes.len()));
            prop_assert_eq!(decode_base64(&text), Some(bytes));
        }
    }

    #[test]
    fn items_name_their_problem() {
        assert_eq!(ContentItem::image("image/png", b"x").problem(), None);
        let wrong_type = ContentItem::image("audio/wav", b"x");
        assert_eq!(wrong_type.problem().unwrap().0, "mimeType");
        let bad_data = ContentItem::Audio {
            mime_type: "audio/wav".into(),
            data: "%%%".into(),
        };
        assert_eq!(bad_data.problem().unwrap().0, "data");
        assert!(serde_json::from_value::<ContentItem>(
            json!({"type": "video", "mimeType": "video/mp4", "data": ""})
        )
        .is_err());
    }

    #[test]
    fn results_split_and_join() {
        let plain = ToolResult::from_value(json!([1, 2]));
        assert_eq!(plain, ToolResult::new(json!([1, 2])));
        // A `_content` that is not content items stays in the value.
        let odd = ToolResult::from_value(json!({"_content": 5}));
        assert!(odd.content.is_empty());
        assert_eq!(odd.value, json!({"_content": 5}));
        let item = ContentItem::image("image/png", b"abc");
        let wrapped = ToolResult::new(json!(7)).with_content(vec![item.clone()]);
        assert_eq!(
            wrapped.into_value(),
            json!({"value": 7, "_content": [{"type": "image", "mimeType": "image/png", "data": "YWJj"}]})
        );
        let joined = ToolResult::new(json!({"w": 1})).with_content(vec![item]);
        assert_eq!(joined.content_bytes(), 3);
        assert_eq!(ToolResult::from_value(joined.clone().into_value()), joined);
    }
}
