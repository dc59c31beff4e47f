//! `gabp call`: handshake, one request, the result as pretty JSON.

use std::io::Write;

use clap::Args;
use gabp_session::bridge::Bridge;
use gabp_types::methods::CORE_METHODS;
use serde_json::Value;

use crate::target::{describe_call_error, TargetArgs};

/// Long help of `gabp call`.
pub const EXAMPLES: &str = "\
The result is printed as pretty JSON on stdout. An error answer is one line on stderr
(`error: METHOD: CODE MESSAGE (data: ...)`) and exit status 1. The method is sent even if the mod does not
advertise it, so that you see the mod's own answer; but a METHOD that is neither a core method nor advertised,
and is the name of one of the mod's tools, calls that tool with PARAMS_JSON as its arguments.

Examples:
  # A tool of the demo game, started with `gabp mod` (which writes bridge.json for us)
  gabp call demo/echo '{\"value\": 1}'

  # A tool call spelled out, with the endpoint and token given
  gabp call --connect tcp://127.0.0.1:4711 --token $TOKEN tools/call \\
      '{\"name\": \"world/get_block\", \"arguments\": {\"x\": 3, \"y\": 4, \"z\": 3}}'

  # The endpoint and token from bridge.json
  gabp call tools/list

  # A mod over stdio, started for this one call (it gets a fresh token in GABP_TOKEN)
  gabp call --spawn 'gabp mod --stdio' state/get '{\"components\": [\"player\"]}'";

/// Arguments of `gabp call`.
#[derive(Debug, Clone, Args)]
pub struct CallArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The method, such as tools/list, tools/call or state/get.
    #[arg(value_name = "METHOD")]
    pub method: String,
    /// The params, a JSON object (default: none).
    #[arg(value_name = "PARAMS_JSON")]
    pub params: Option<String>,
}

/// Runs `gabp call`.
///
/// # Errors
///
/// One line: bad arguments, an unreachable mod, a refused token, or the mod's error answer.
pub async fn run(args: &CallArgs, stdout: &mut dyn Write) -> Result<(), String> {
    let params = match &args.params {
        None => Value::Null,
        Some(text) => {
            let value: Value =
                serde_json::from_str(text).map_err(|e| format!("PARAMS_JSON is not JSON: {e}"))?;
            if !value.is_object() && !value.is_null() {
                return Err("PARAMS_JSON must be a JSON object".into());
            }
            value
        }
    };
    let target = args.target.resolve_from_env()?;
    let session = target
        .open(Bridge::builder(target.token.clone()).check_advertised(false))
        .await?;
    let outcome = match tool_named(&session.bridge, &args.method).await {
        Some(tool) => {
            let arguments = if params.is_null() {
                Value::Object(serde_json::Map::new())
            } else {
                params
            };
            session.bridge.call_tool(&tool, arguments).await
        }
        None => session.bridge.request(&args.method, params).await,
    };
    // Whatever the answer, leave politely.
    session.finish().await;
    let result = outcome.map_err(|e| format!("{}: {}", args.method, describe_call_error(&e)))?;
    let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    writeln!(stdout, "{text}").map_err(|e| format!("cannot write to stdout: {e}"))?;
    Ok(())
}

/// `METHOD` read as a tool name: not a core method, not a method the mod advertises, but one of its tools.
async fn tool_named(bridge: &Bridge, method: &str) -> Option<String> {
    if CORE_METHODS.contains(&method) {
        return None;
    }
    let advertises = bridge
        .welcome()
        .capabilities
        .methods
        .as_ref()
        .is_some_and(|methods| methods.iter().any(|m| m.as_str() == method));
    if advertises {
        return None;
    }
    let tools = bridge.list_tools().await.ok()?;
    tools
        .iter()
        .any(|tool| tool.name.as_str() == method)
        .then(|| method.to_owned())
}
