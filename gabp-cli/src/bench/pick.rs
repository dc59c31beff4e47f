//! What `gabp bench` calls when no `--tool` is given.

use gabp_types::ToolDescriptor;
use serde_json::{json, Value};

use super::Invocation;

/// Without `--tool`: `demo/echo` when the mod has it, else `session/ping` when its welcome lists it, else a tool
/// tagged `read-only` that needs no arguments. Otherwise an error that names `--tool` and the tools that need
/// no arguments (or, when none does, every tool), before any call is made.
pub(super) fn default_invocation(
    tools: &[ToolDescriptor],
    serves_ping: bool,
) -> Result<Invocation, String> {
    if tools.iter().any(|t| t.name.as_str() == "demo/echo") {
        return Ok(Invocation::Tool {
            name: "demo/echo".into(),
            arguments: json!({ "value": "gabp" }),
        });
    }
    if serves_ping {
        return Ok(Invocation::Ping);
    }
    let bare: Vec<&ToolDescriptor> = tools.iter().filter(|t| needs_no_arguments(t)).collect();
    if let Some(tool) = bare.iter().find(|t| t.has_tag("read-only")) {
        return Ok(Invocation::Tool {
            name: tool.name.as_str().to_owned(),
            arguments: json!({}),
        });
    }
    let (which, names): (&str, Vec<&str>) = if bare.is_empty() {
        ("its tools", tools.iter().map(|t| t.name.as_str()).collect())
    } else {
        (
            "tools that need no arguments",
            bare.iter().map(|t| t.name.as_str()).collect(),
        )
    };
    let listed = if names.is_empty() {
        "the mod lists no tools".to_owned()
    } else {
        format!("{which}: {}", names.join(", "))
    };
    Err(format!(
        "the mod serves neither demo/echo nor session/ping, and no read-only tool that needs no arguments: \
         choose what to measure with --tool NAME (and --args JSON); {listed}"
    ))
}

/// Whether `tool`'s input schema requires no argument.
fn needs_no_arguments(tool: &ToolDescriptor) -> bool {
    tool.input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, required: &[&str], tags: &[&str]) -> ToolDescriptor {
        let mut value = json!({
            "name": name, "title": name, "description": name,
            "inputSchema": {"type": "object", "required": required}, "outputSchema": {}
        });
        if !tags.is_empty() {
            value["tags"] = json!(tags);
        }
        serde_json::from_value(value).expect("a tool")
    }

    fn label(picked: &Result<Invocation, String>) -> String {
        match picked {
            Ok(invocation) => invocation.label(),
            Err(e) => e.clone(),
        }
    }

    #[test]
    fn echo_then_ping_then_a_read_only_tool_without_arguments() {
        let echo = [tool("demo/echo", &["value"], &[]), tool("a/b", &[], &[])];
        assert_eq!(label(&default_invocation(&echo, true)), "demo/echo");
        let plain = [tool("a/b", &[], &[])];
        assert_eq!(label(&default_invocation(&plain, true)), "session/ping");
        let read_only = [
            tool("a/write", &[], &[]),
            tool("a/needs", &["x"], &["read-only"]),
            tool("a/read", &[], &["read-only"]),
        ];
        assert_eq!(label(&default_invocation(&read_only, false)), "a/read");
    }

    /// Lib.GAB 1.0.3's example: no ping, no echo, no tags. Nothing is called; the error names `--tool` and
    /// the candidates.
    #[test]
    fn otherwise_it_stops_naming_tool_and_the_candidates() {
        let libgab = [
            tool("hello/echo", &[], &[]),
            tool("hello/ping", &[], &[]),
            tool("hello/greet", &["name"], &[]),
        ];
        let e = default_invocation(&libgab, false).expect_err("stops");
        assert!(e.contains("--tool NAME"), "{e}");
        assert!(
            e.ends_with("tools that need no arguments: hello/echo, hello/ping"),
            "{e}"
        );
        let needy = [tool("a/b", &["x"], &[])];
        let e = default_invocation(&needy, false).expect_err("stops");
        assert!(e.ends_with("its tools: a/b"), "{e}");
        let e = default_invocation(&[], false).expect_err("stops");
        assert!(e.ends_with("the mod lists no tools"), "{e}");
    }
}
