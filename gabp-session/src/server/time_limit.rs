//! [`Work`]: the answer to a request whose time limit passed (SPEC/1.0 gabp.md §7), one rule for the
//! timeout layer and the game's main thread.

use std::time::Duration;

use gabp_types::{ErrorCode, ErrorObject};
use serde_json::json;

/// What a time limit applies to: a tool (`tools/call`) or any other method.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Work<'a> {
    /// A `tools/call` of this tool.
    Tool(&'a str),
    /// Any other method, by name.
    Method(&'a str),
}

impl Work<'_> {
    /// The answer once its limit has passed (SPEC/1.0 gabp.md §7): `-32403` for a tool, `-32603` for any other
    /// method, both with `data.timeoutMs` and `data.retryable: true`. `happened` words what went over the limit.
    pub(crate) fn timed_out(self, happened: &str, limit: Duration) -> ErrorObject {
        let code = match self {
            Work::Tool(_) => ErrorCode::TOOL_TIMEOUT,
            Work::Method(_) => ErrorCode::INTERNAL_ERROR,
        };
        let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        ErrorObject::new(code, format!("{self} {happened} time limit of {ms} ms"))
            .with_data(json!({ "timeoutMs": ms, "retryable": true }))
    }
}

impl std::fmt::Display for Work<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Work::Tool(name) => write!(f, "tool {name}"),
            Work::Method(method) => f.write_str(method),
        }
    }
}
