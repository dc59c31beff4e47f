//! `gabp tools`: the mod's tools as a table.

use std::io::Write;

use clap::Args;
use gabp_session::bridge::Bridge;
use gabp_types::ToolDescriptor;
use serde_json::Value;

use crate::target::{describe_call_error, TargetArgs};

/// Long help of `gabp tools`.
pub const EXAMPLES: &str = "\
One line per tool: its name, title, tags and required arguments (from its inputSchema), in the mod's order.

Examples:
  gabp tools --connect tcp://127.0.0.1:4711 --token $TOKEN
  gabp tools --spawn 'gabp mod --stdio'
  gabp tools            # the endpoint and token from bridge.json";

/// Arguments of `gabp tools`.
#[derive(Debug, Clone, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub target: TargetArgs,
}

/// Runs `gabp tools`.
///
/// # Errors
///
/// One line: an unreachable mod, a refused token, or the mod's error answer to `tools/list`.
pub async fn run(args: &ToolsArgs, stdout: &mut dyn Write) -> Result<(), String> {
    let target = args.target.resolve_from_env()?;
    let session = target
        .open(Bridge::builder(target.token.clone()).check_advertised(false))
        .await?;
    let outcome = session.bridge.list_tools().await;
    session.finish().await;
    let tools = outcome.map_err(|e| format!("tools/list: {}", describe_call_error(&e)))?;
    stdout
        .write_all(table(&tools).as_bytes())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

/// The required arguments of a tool, from its `inputSchema`'s `required` list.
pub fn required_arguments(tool: &ToolDescriptor) -> Vec<String> {
    tool.input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The table: a header, then one row per tool, columns padded to their widest cell.
pub fn table(tools: &[ToolDescriptor]) -> String {
    let dash = || "-".to_owned();
    let mut rows: Vec<[String; 4]> = vec![[
        "NAME".into(),
        "TITLE".into(),
        "TAGS".into(),
        "REQUIRED".into(),
    ]];
    for tool in tools {
        let tags = tool
            .tags
            .as_ref()
            .map(|tags| tags.iter().cloned().collect::<Vec<_>>().join(","))
            .filter(|t| !t.is_empty())
            .unwrap_or_else(dash);
        let required = required_arguments(tool).join(",");
        rows.push([
            tool.name.to_string(),
            tool.title.to_string(),
            tags,
            if required.is_empty() {
                dash()
            } else {
                required
            },
        ]);
    }
    let mut widths = [0usize; 4];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(width - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if tools.is_empty() {
        out.push_str("(the mod has no tools)\n");
    }
    out
}
