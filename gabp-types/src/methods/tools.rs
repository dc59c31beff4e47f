//! Params and results of `tools/list` and `tools/call`, and the payload of the `tools/changed` event.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::strict::{present, UniqueVec};
use crate::{MessageId, ToolDescriptor, ToolName};

/// Filter of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolFilter {
    /// Keep tools that carry any of these tags.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub tags: Option<Vec<String>>,
    /// Keep tools whose name matches this glob.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name_pattern: Option<String>,
}

/// Params of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsListParams {
    /// Optional filter.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub filter: Option<ToolFilter>,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ToolsListResult {
    /// The tools.
    pub tools: Vec<ToolDescriptor>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl ToolsListResult {
    /// The result listing `tools`.
    pub fn new(tools: Vec<ToolDescriptor>) -> Self {
        Self {
            tools,
            extra: Map::new(),
        }
    }
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsCallParams {
    /// The tool to invoke.
    pub name: ToolName,
    /// The tool's arguments (absent reads as `{}`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub arguments: Option<Map<String, Value>>,
    /// Request metadata: the progress token of the `progress` extension (SPEC/1.0 extensions.md §progress).
    #[serde(
        rename = "_meta",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub meta: Option<CallMeta>,
}

/// The `_meta` member of `tools/call` params. Members other than `progressToken` are allowed and ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallMeta {
    /// Asks for progress events about this call, carrying this token (SPEC/1.0 extensions.md §progress).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub progress_token: Option<ProgressToken>,
}

/// A progress token: a string or an integer, chosen by the bridge, unique among its calls in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ProgressToken {
    /// A string token.
    String(String),
    /// An integer token.
    Integer(i64),
}

impl std::fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProgressToken::String(s) => f.write_str(s),
            ProgressToken::Integer(i) => write!(f, "{i}"),
        }
    }
}

/// The key of the `progress` extension in `capabilities.extensions` (SPEC/1.0 extensions.md §progress).
pub const PROGRESS_EXTENSION: &str = "progress";

/// The channel of progress events (SPEC/1.0 extensions.md §progress).
pub const PROGRESS_CHANNEL: &str = "tools/progress";

/// The least time between two progress events of one call, in milliseconds.
pub const PROGRESS_MIN_INTERVAL_MS: u64 = 50;

/// Payload of a `tools/progress` event (SPEC/1.0 extensions.md §progress).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProgressPayload {
    /// The token of the call, as its request gave it.
    pub progress_token: ProgressToken,
    /// How much is done (grows from one event of a call to the next).
    #[schemars(range(min = 0))]
    pub progress: f64,
    /// How much there is to do, when known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(range(min = 0))]
    pub total: Option<f64>,
    /// What is being done, for people.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub message: Option<String>,
}

/// The key of the `cancel` extension in `capabilities.extensions` (SPEC/1.0 extensions.md §cancel).
pub const CANCEL_EXTENSION: &str = "cancel";

/// Params of `tools/cancel` (SPEC/1.0 extensions.md §cancel).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsCancelParams {
    /// The id of the `tools/call` request to cancel.
    pub id: MessageId,
}

/// Result of `tools/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ToolsCancelResult {
    /// Whether the call was still running here and is now cancelled (it is answered `-32404`); `false` for
    /// an unknown or finished call.
    pub cancelled: bool,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl ToolsCancelResult {
    /// The answer: `cancelled` or not.
    #[must_use]
    pub fn new(cancelled: bool) -> Self {
        ToolsCancelResult {
            cancelled,
            extra: Map::new(),
        }
    }
}

/// The key of the `tools-changed` extension in `capabilities.extensions` (SPEC/1.0 extensions.md
/// §tools-changed).
pub const TOOLS_CHANGED_EXTENSION: &str = "tools-changed";

/// The channel on which a mod with the `tools-changed` extension announces that its tools changed.
pub const TOOLS_CHANGED_CHANNEL: &str = "tools/changed";

/// Payload of a `tools/changed` event (SPEC/1.0 extensions.md §tools-changed): which tools one change added
/// and removed. Both lists may be empty, meaning "something changed, re-list"; a bridge re-lists with
/// `tools/list` for the details either way.
///
/// ```
/// use gabp_types::methods::ToolsChangedPayload;
/// use gabp_types::{ToolName, UniqueVec};
///
/// let payload = ToolsChangedPayload {
///     added: UniqueVec::new(vec![ToolName::new("world/fill")?])?,
///     removed: UniqueVec::default(),
/// };
/// assert_eq!(serde_json::to_value(&payload)?, serde_json::json!({"added": ["world/fill"], "removed": []}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsChangedPayload {
    /// Tools served since this change that were not served before it (no repeats).
    pub added: UniqueVec<ToolName>,
    /// Tools no longer served since this change (no repeats).
    pub removed: UniqueVec<ToolName>,
}

impl ToolsChangedPayload {
    /// Whether the payload names no tool.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}
