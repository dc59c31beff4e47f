//! Params and results of `events/subscribe` and `events/unsubscribe`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::strict::{NonEmptyString, UniqueVec};

/// Params of `events/subscribe` and `events/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelsParams {
    /// The channels (at least one, no repeats).
    pub channels: UniqueVec<NonEmptyString, 1>,
}

/// Result of `events/subscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SubscribeResult {
    /// The channels now subscribed (unknown ones are left out).
    pub subscribed: Vec<String>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl SubscribeResult {
    /// The result naming the channels now subscribed.
    pub fn new(subscribed: Vec<String>) -> Self {
        Self {
            subscribed,
            extra: Map::new(),
        }
    }
}

/// Result of `events/unsubscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UnsubscribeResult {
    /// The channels no longer subscribed.
    pub unsubscribed: Vec<String>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl UnsubscribeResult {
    /// The result naming the channels no longer subscribed.
    pub fn new(unsubscribed: Vec<String>) -> Self {
        Self {
            unsubscribed,
            extra: Map::new(),
        }
    }
}
