//! The time limits of the configuration: `timeouts.startup` (GABS's) and `timeouts.toolCallSeconds` (ours).

use std::time::Duration;

use serde_json::{Map, Value};

use super::{field, object};
use crate::error::HubError;

/// How long a game tool call may take when neither `timeouts.toolCallSeconds` nor the call says.
pub const DEFAULT_TOOL_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest tool call time limit accepted, in seconds.
pub const MAX_TOOL_CALL_SECONDS: f64 = 3600.0;

/// What a tool call time limit must be, for error texts.
pub const TOOL_CALL_SECONDS_EXPECTED: &str =
    "expected a number of seconds greater than 0 and at most 3600";

/// A tool call time limit in seconds (`timeouts.toolCallSeconds`, `_meta` `gabp/timeoutSeconds`): a JSON
/// number greater than 0 and at most [`MAX_TOOL_CALL_SECONDS`]; `None` otherwise.
#[must_use]
pub fn tool_call_seconds(value: &Value) -> Option<Duration> {
    let seconds = value.as_f64()?;
    (seconds > 0.0 && seconds <= MAX_TOOL_CALL_SECONDS).then(|| Duration::from_secs_f64(seconds))
}

/// Startup time limits (`timeouts.startup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StartupTimeouts {
    /// How long a started process has to show up (default 10 s).
    pub process_start: Duration,
    /// How long the hub keeps trying to connect to a started game over GABP (default 60 s).
    pub gabp_connect: Duration,
}

impl Default for StartupTimeouts {
    fn default() -> Self {
        StartupTimeouts {
            process_start: Duration::from_secs(10),
            gabp_connect: Duration::from_secs(60),
        }
    }
}

fn seconds(obj: &Map<String, Value>, at: &str, key: &str) -> Result<Option<Duration>, HubError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            // GABS replaces values <= 0 with the default.
            Some(0) => Ok(None),
            Some(s) if s <= 3600 => Ok(Some(Duration::from_secs(s))),
            _ => Err(field(
                format!("{at}/{key}"),
                "a whole number of seconds from 0 to 3600",
            )),
        },
    }
}

pub(super) fn read_timeouts(
    top: &Map<String, Value>,
) -> Result<(StartupTimeouts, Option<Duration>), HubError> {
    let mut startup = StartupTimeouts::default();
    let Some(timeouts) = top.get("timeouts").filter(|v| !v.is_null()) else {
        return Ok((startup, None));
    };
    let timeouts = object(timeouts, "/timeouts")?;
    let tool_call = match timeouts.get("toolCallSeconds") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            tool_call_seconds(v)
                .ok_or_else(|| field("/timeouts/toolCallSeconds", TOOL_CALL_SECONDS_EXPECTED))?,
        ),
    };
    let Some(s) = timeouts.get("startup").filter(|v| !v.is_null()) else {
        return Ok((startup, tool_call));
    };
    let s = object(s, "/timeouts/startup")?;
    if let Some(d) = seconds(s, "/timeouts/startup", "processStartSeconds")? {
        startup.process_start = d;
    }
    if let Some(d) = seconds(s, "/timeouts/startup", "gabpConnectSeconds")? {
        startup.gabp_connect = d;
    }
    Ok((startup, tool_call))
}
