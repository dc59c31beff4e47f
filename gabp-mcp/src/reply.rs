//! What a hub tool answers, and how its arguments are read: unknown arguments and wrong types are tool
//! errors that name the argument, as GABS has them.

use gabp_hub::HubError;
use gabp_session::Error as SessionError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use crate::catalog::HubTool;

/// A hub tool's answer: one text for people, the same as JSON for programs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub(crate) text: String,
    pub(crate) structured: Value,
    pub(crate) is_error: bool,
}

impl Reply {
    pub(crate) fn ok(text: impl Into<String>, structured: Value) -> Reply {
        Reply {
            text: text.into(),
            structured,
            is_error: false,
        }
    }

    /// A failure with a stable `code` and more members in `extra`.
    pub(crate) fn error(code: &str, text: impl Into<String>, extra: Value) -> Reply {
        let mut structured = json!({ "code": code });
        if let (Value::Object(into), Value::Object(more)) = (&mut structured, extra) {
            into.extend(more);
        }
        Reply {
            text: text.into(),
            structured,
            is_error: true,
        }
    }

    pub(crate) fn into_result(self) -> CallToolResult {
        let mut result = if self.is_error {
            CallToolResult::error(vec![ContentBlock::text(self.text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(self.text)])
        };
        result.structured_content = Some(self.structured);
        result
    }
}

impl From<HubError> for Reply {
    fn from(error: HubError) -> Reply {
        let code = error.code();
        match &error {
            HubError::Blocked(blocked) => {
                let a = &blocked.attention;
                let tool = blocked.tool.as_deref().unwrap_or(&blocked.method);
                Reply::error(
                    code,
                    format!(
                        "Tool call \"{tool}\" was not executed because important game information requires acknowledgement. Summary: {}. Review it with games_get_attention, acknowledge it with games_ack_attention {{\"attentionId\": \"{}\"}}, then retry the original call.",
                        a.summary.as_str().trim_end_matches('.'),
                        a.attention_id
                    ),
                    json!({
                        "executed": false,
                        "status": "blocked_by_attention",
                        "tool": tool,
                        "attention": a,
                    }),
                )
            }
            HubError::Bridge { game, source } => bridge_reply(game, source),
            HubError::ConfigInvalid(problem) => Reply::error(
                code,
                error.to_string(),
                json!({ "file": problem.path, "field": problem.pointer, "expected": problem.expected }),
            ),
            HubError::GameNotFound { candidates, .. } => {
                Reply::error(code, error.to_string(), json!({ "candidates": candidates }))
            }
            _ => Reply::error(code, error.to_string(), json!({})),
        }
    }
}

/// A GABP failure keeps the game's error code, message and data (the failing field).
fn bridge_reply(game: &str, error: &SessionError) -> Reply {
    let mut extra = json!({ "gameId": game });
    if let Some(object) = error.error_object() {
        extra["gabpError"] = json!({
            "code": object.code,
            "message": object.message,
            "data": object.data,
        });
    }
    Reply::error(
        "gabp_error",
        format!("GABP tool call failed: {error}"),
        extra,
    )
}

/// The arguments of one call, checked against the tool's list.
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
}

fn empty() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

impl<'a> Args<'a> {
    pub(crate) fn new(
        tool: &HubTool,
        map: Option<&'a Map<String, Value>>,
    ) -> Result<Args<'a>, Reply> {
        let map = map.unwrap_or_else(|| empty());
        let unknown: Vec<&String> = map
            .keys()
            .filter(|k| !tool.arg_names().any(|a| a == k.as_str()))
            .collect();
        if let Some(first) = unknown.first() {
            let mut allowed: Vec<&str> = tool.arg_names().collect();
            allowed.sort_unstable();
            return Err(Reply::error(
                "unknown_argument",
                format!(
                    "Unknown argument \"{first}\". Allowed arguments: {}",
                    if allowed.is_empty() {
                        "none".to_owned()
                    } else {
                        allowed.join(", ")
                    }
                ),
                json!({ "path": format!("/{first}"), "unknown": unknown, "allowed": allowed }),
            ));
        }
        for required in tool.required {
            if map.get(*required).is_none_or(Value::is_null) {
                return Err(missing(required));
            }
        }
        Ok(Args { map })
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    pub(crate) fn str(&self, name: &str) -> Result<Option<&'a str>, Reply> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(wrong_type(name, "a string")),
        }
    }

    pub(crate) fn required_str(&self, name: &str) -> Result<&'a str, Reply> {
        match self.str(name)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(missing(name)),
        }
    }

    /// An integer: a JSON integer, a float without fraction, or a numeric string (as GABS accepts).
    pub(crate) fn integer(&self, name: &str) -> Result<Option<i64>, Reply> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let parsed = match value {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            }),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        parsed
            .map(Some)
            .ok_or_else(|| wrong_type(name, "an integer"))
    }

    pub(crate) fn boolean(&self, name: &str) -> Result<Option<bool>, Reply> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(wrong_type(name, "a boolean")),
        }
    }

    pub(crate) fn object(&self, name: &str) -> Result<Option<&'a Value>, Reply> {
        match self.get(name) {
            None => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v)),
            Some(_) => Err(wrong_type(name, "an object")),
        }
    }

    pub(crate) fn strings(&self, name: &str) -> Result<Vec<String>, Reply> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| wrong_type(name, "an array of strings")),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(_) => Err(wrong_type(name, "an array of strings")),
        }
    }
}

fn missing(name: &str) -> Reply {
    Reply::error(
        "missing_argument",
        format!("Missing required argument: {name}"),
        json!({ "path": format!("/{name}") }),
    )
}

fn wrong_type(name: &str, expected: &str) -> Reply {
    Reply::error(
        "invalid_argument",
        format!("Argument '{name}' must be {expected}"),
        json!({ "path": format!("/{name}") }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tool: &str, value: Value) -> Result<(), Reply> {
        let tool = HubTool::find(tool).unwrap();
        Args::new(tool, value.as_object()).map(|_| ())
    }

    #[test]
    fn unknown_arguments_are_named_with_the_allowed_ones() {
        let err = args("games_show", json!({"gameId": "a", "gameid": "b"})).unwrap_err();
        assert!(err.is_error);
        assert_eq!(
            err.text,
            "Unknown argument \"gameid\". Allowed arguments: gameId"
        );
        assert_eq!(err.structured["code"], "unknown_argument");
        assert_eq!(err.structured["path"], "/gameid");
    }

    #[test]
    fn missing_required_arguments_are_named() {
        let err = args("games_call_tool", json!({"gameId": "a"})).unwrap_err();
        assert_eq!(err.text, "Missing required argument: tool");
        let err = args("games_show", json!({"gameId": null})).unwrap_err();
        assert_eq!(err.text, "Missing required argument: gameId");
    }

    #[test]
    fn types_are_read_as_gabs_reads_them() {
        let tool = HubTool::find("games_tool_names").unwrap();
        let map = json!({"limit": "7", "brief": "true", "query": "x"});
        let args = Args::new(tool, map.as_object()).unwrap();
        assert_eq!(args.integer("limit").unwrap(), Some(7));
        assert_eq!(args.boolean("brief").unwrap(), Some(true));
        let map = json!({"limit": 7.0});
        assert_eq!(
            Args::new(tool, map.as_object())
                .unwrap()
                .integer("limit")
                .unwrap(),
            Some(7)
        );
        for bad in [
            json!({"limit": 7.5}),
            json!({"limit": "x"}),
            json!({"limit": []}),
        ] {
            let err = Args::new(tool, bad.as_object())
                .unwrap()
                .integer("limit")
                .unwrap_err();
            assert_eq!(err.text, "Argument 'limit' must be an integer");
        }
        let map = json!({"query": 3});
        let err = Args::new(tool, map.as_object())
            .unwrap()
            .str("query")
            .unwrap_err();
        assert_eq!(err.text, "Argument 'query' must be a string");
    }
}
