//! Params and results of `resources/list` and `resources/read`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::strict::{present, Uri};

/// Params of `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesListParams {
    /// Keep resources whose URI matches this glob.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub pattern: Option<String>,
    /// Keep resources in this namespace (`gabp://NAMESPACE/...`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub namespace: Option<String>,
}

/// One resource of `resources/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ResourceInfo {
    /// The resource's URI.
    pub uri: Uri,
    /// Human-readable name.
    pub name: String,
    /// Description.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub description: Option<String>,
    /// MIME type hint.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub size: Option<u64>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Result of `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ResourcesListResult {
    /// The resources.
    pub resources: Vec<ResourceInfo>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl ResourcesListResult {
    /// The result listing `resources`.
    pub fn new(resources: Vec<ResourceInfo>) -> Self {
        Self {
            resources,
            extra: Map::new(),
        }
    }
}

/// Params of `resources/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesReadParams {
    /// The resource to read.
    pub uri: Uri,
}

/// How resource content is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ContentEncoding {
    /// UTF-8 text.
    #[serde(rename = "utf-8")]
    Utf8,
    /// Base64 of binary data.
    #[serde(rename = "base64")]
    Base64,
    /// ASCII text.
    #[serde(rename = "ascii")]
    Ascii,
    /// Binary (implementation-defined representation).
    #[serde(rename = "binary")]
    Binary,
}

/// Result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct ResourcesReadResult {
    /// The content (text, or base64 for binary).
    #[schemars(schema_with = "crate::strict::any_value")]
    pub content: Value,
    /// MIME type of the content.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub mime_type: Option<String>,
    /// Encoding of the content.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub encoding: Option<ContentEncoding>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}
