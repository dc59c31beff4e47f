//! The attention object: a summary of what went wrong in the game that should stop an agent from acting on
//! stale state (schema line 1.1, additive to `gabp/1`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::strict::{present, NonEmptyString};
use crate::BoundedU64;

/// Severity of an attention item or of one sampled entry, from least to most severe.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational.
    Info,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A fatal error.
    Fatal,
}

/// Lifecycle state of an attention item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttentionState {
    /// The item is open.
    Open,
    /// The item was cleared (acknowledged or explicitly cleared).
    Cleared,
}

/// One representative entry of an attention item: similar entries fold into one sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct AttentionSample {
    /// Severity of the entry.
    pub level: Severity,
    /// Representative message text.
    pub message: NonEmptyString,
    /// How many similar entries this sample stands for (at least 1).
    pub repeat_count: BoundedU64<1>,
    /// Latest diagnostics sequence this sample represents.
    pub latest_sequence: u64,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// The summarized attention object carried by `attention/current`, `attention/ack` and the attention channels.
///
/// ```
/// use gabp_types::{Attention, AttentionState, Severity};
/// let json = serde_json::json!({
///     "attentionId": "attn_1", "state": "open", "severity": "error", "blocking": true,
///     "stateInvalidated": true, "summary": "Placing a block failed",
///     "openedAtSequence": 3, "latestSequence": 4, "totalUrgentEntries": 2
/// });
/// let attention: Attention = serde_json::from_value(json)?;
/// assert_eq!(attention.state, AttentionState::Open);
/// assert_eq!(attention.severity, Severity::Error);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
#[schemars(
    title = "GABP Attention Object",
    description = "A summarized attention item that gates game-bound execution while it is open and blocking."
)]
pub struct Attention {
    /// Stable identifier of this item.
    pub attention_id: NonEmptyString,
    /// Lifecycle state.
    pub state: AttentionState,
    /// Highest severity summarized by this item.
    pub severity: Severity,
    /// Whether bridges should gate game-bound execution while the item is open.
    pub blocking: bool,
    /// Whether earlier assumptions about game state should be treated as stale.
    pub state_invalidated: bool,
    /// Compact summary of what needs attention.
    pub summary: NonEmptyString,
    /// Operation associated with the item, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub causal_operation_id: Option<NonEmptyString>,
    /// Method, tool or capability associated with the item, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub causal_method: Option<NonEmptyString>,
    /// First diagnostics sequence associated with the item.
    pub opened_at_sequence: u64,
    /// Latest diagnostics sequence associated with the item.
    pub latest_sequence: u64,
    /// Cursor for inspecting more detailed diagnostics, if offered.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub diagnostics_cursor: Option<u64>,
    /// Total number of urgent entries this item summarizes.
    pub total_urgent_entries: u64,
    /// Representative sample of the summarized entries.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub sample: Option<Vec<AttentionSample>>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}
