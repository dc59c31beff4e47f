//! The tool checks: `tools/list`, unknown tools and tool arguments (SPEC/1.0/gabp.md §4.4, §4.5).

use gabp_types::decode::check_result;
use gabp_types::ErrorCode;
use serde_json::{json, Map, Value};

use super::{expect_error, expect_error_list, expect_result, kept_open, CheckResult, Ctx, Verdict};

pub(super) async fn tools_list_valid(ctx: &mut Ctx) -> CheckResult {
    if !ctx.advertises("tools/list") {
        skip!("the mod does not advertise tools/list");
    }
    let mut wire = ctx.session().await?;
    let r = wire
        .call("tools/list", Some(json!({})), ctx.answer())
        .await?;
    let result = expect_result(&r, "tools/list")?;
    ctx.tools = result["tools"].as_array().cloned().unwrap_or_default();
    if let Err(e) = check_result("tools/list", result) {
        fail!("the tools/list result does not match its schema: {e}");
    }
    Ok(())
}

pub(super) async fn errors_tool_not_found(ctx: &mut Ctx) -> CheckResult {
    if !ctx.advertises("tools/call") {
        skip!("the mod does not advertise tools/call");
    }
    let mut wire = ctx.session().await?;
    let what = "tools/call of an unknown tool";
    let params = json!({ "name": "conformance/no_such_tool", "arguments": {} });
    let r = wire
        .call("tools/call", Some(params), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    expect_error(&r, ErrorCode::TOOL_NOT_FOUND, what)?;
    Ok(())
}

/// Arguments that `schema` rejects, and why, when the schema says enough to build some.
pub(super) fn invalid_arguments(schema: &Value) -> Option<(Value, String)> {
    if let Some(first) = schema["required"]
        .as_array()
        .and_then(|r| r.first())
        .and_then(Value::as_str)
    {
        return Some((
            json!({}),
            format!("without its required argument {first:?}"),
        ));
    }
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let wrong = match property["type"].as_str() {
                Some("string") => json!(12345),
                Some("number" | "integer") => json!("not a number"),
                Some("boolean") => json!("not a boolean"),
                Some("object" | "array") => json!(12345),
                _ => continue,
            };
            let mut args = Map::new();
            args.insert(name.clone(), wrong);
            return Some((
                Value::Object(args),
                format!("with {name:?} of the wrong type"),
            ));
        }
    }
    if schema["additionalProperties"] == json!(false) {
        return Some((
            json!({ "conformance_unknown_argument": 1 }),
            "with an argument it does not define".to_owned(),
        ));
    }
    None
}

pub(super) async fn tools_arguments_validated(ctx: &mut Ctx) -> CheckResult {
    if !ctx.advertises("tools/call") {
        skip!("the mod does not advertise tools/call");
    }
    // Prefer tools without side effects, although refused arguments must never run a tool at all.
    let mut tools = ctx.tools.clone();
    tools.sort_by_key(|t| {
        let read_only = t["tags"]
            .as_array()
            .is_some_and(|tags| tags.iter().any(|tag| tag == "read-only"));
        !read_only
    });
    let probe = tools.iter().find_map(|t| {
        let name = t["name"].as_str()?;
        let (args, why) = invalid_arguments(&t["inputSchema"])?;
        Some((name.to_owned(), args, why))
    });
    let Some((tool, args, why)) = probe else {
        skip!("no advertised tool has an inputSchema that rejects some arguments");
    };
    let mut wire = ctx.session().await?;
    let what = format!("tools/call of {tool} {why}");
    let params = json!({ "name": tool, "arguments": args });
    let r = wire
        .call("tools/call", Some(params), ctx.answer())
        .await
        .map_err(|e| kept_open(e, &what))?;
    let e = expect_error(&r, ErrorCode::INVALID_PARAMS, &what)?;
    expect_error_list(ctx, e, &what)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::invalid_arguments;

    #[test]
    fn invalid_arguments_follow_the_schema() {
        let required =
            json!({"type": "object", "required": ["x"], "properties": {"x": {"type": "number"}}});
        assert_eq!(invalid_arguments(&required).map(|a| a.0), Some(json!({})));
        let typed = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        assert_eq!(
            invalid_arguments(&typed).map(|a| a.0),
            Some(json!({"name": 12345}))
        );
        let closed = json!({"type": "object", "additionalProperties": false});
        assert_eq!(
            invalid_arguments(&closed).map(|a| a.0),
            Some(json!({"conformance_unknown_argument": 1}))
        );
        assert_eq!(invalid_arguments(&json!({"type": "object"})), None);
    }
}
