//! Params and results of `state/get` and `state/set`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::strict::present;

/// Params of `state/get`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StateGetParams {
    /// Components to return (all when absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub components: Option<Vec<String>>,
    /// Player for player-specific state.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub player_id: Option<String>,
}

/// Result of `state/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StateGetResult {
    /// The state, by component.
    pub state: Map<String, Value>,
    /// When it was captured, in Unix seconds.
    pub timestamp: u64,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl StateGetResult {
    /// The result holding `state`, captured at `timestamp` (Unix seconds).
    pub fn new(state: Map<String, Value>, timestamp: u64) -> Self {
        Self {
            state,
            timestamp,
            extra: Map::new(),
        }
    }
}

/// Params of `state/set`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StateSetParams {
    /// Updates to apply.
    pub updates: Map<String, Value>,
    /// Player for player-specific updates.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub player_id: Option<String>,
    /// Whether to validate the updates before applying them.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub validate: Option<bool>,
}

/// One failed update of `state/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StateSetError {
    /// The field that failed.
    pub field: String,
    /// Why.
    pub message: String,
    /// Machine-readable reason.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub code: Option<String>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Result of `state/set`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct StateSetResult {
    /// The updates that were applied.
    pub applied: Map<String, Value>,
    /// The updates that failed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub errors: Option<Vec<StateSetError>>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}
