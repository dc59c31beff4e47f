//! Params and results of `attention/current` and `attention/ack`.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::strict::NonEmptyString;
use crate::Attention;

/// Params of `attention/current` (none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttentionCurrentParams {}

/// Result of `attention/current`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AttentionCurrentResult {
    /// The open item, or `null` when none is open.
    #[serde(deserialize_with = "nullable")]
    #[schemars(required, schema_with = "crate::strict::nullable_schema::<Attention>")]
    pub attention: Option<Attention>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Params of `attention/ack`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttentionAckParams {
    /// The item to acknowledge.
    pub attention_id: NonEmptyString,
}

/// Result of `attention/ack`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct AttentionAckResult {
    /// Whether the item was acknowledged (false when the id is not the open item's).
    pub acknowledged: bool,
    /// The id that was requested.
    pub attention_id: NonEmptyString,
    /// The item still open after the ack, or `null`.
    #[serde(deserialize_with = "nullable")]
    #[schemars(required, schema_with = "crate::strict::nullable_schema::<Attention>")]
    pub current_attention: Option<Attention>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// A required field whose value may be `null` (unlike serde's default for `Option`, absence is an error).
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}
