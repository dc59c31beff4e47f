//! Params and results of `events/subscribe` and `events/unsubscribe`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
#[serde(deny_unknown_fields)]
pub struct SubscribeResult {
    /// The channels now subscribed (unknown ones are left out).
    pub subscribed: Vec<String>,
}

/// Result of `events/unsubscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeResult {
    /// The channels no longer subscribed.
    pub unsubscribed: Vec<String>,
}
