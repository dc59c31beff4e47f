//! `gabp call`: handshake, one request or tool call, the result as pretty JSON.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use futures::StreamExt;
use gabp_session::bridge::Bridge;
use gabp_session::Error as SessionError;
use gabp_types::methods::{Method, ToolsCall, ToolsCancel, CORE_METHODS};
use serde_json::{Map, Value};

use crate::call_args;
use crate::call_content;
use crate::signals::Signals;
use crate::target::{describe_call_error, TargetArgs};
use crate::terminal::CallProgress;

/// Long help of `gabp call`.
pub const EXAMPLES: &str = "\
The result is printed as pretty JSON on stdout. An error answer is one line on stderr
(`error: METHOD: CODE MESSAGE (data: ...)`, with a suggestion when the name looks like a typo of a known one)
and exit status 1. METHOD is a method such as tools/list, or the name of one of the mod's tools, which calls
that tool. The params are one JSON object, or KEY=VALUE pairs whose VALUE is read as JSON when it parses
(x=1, tags='[\"a\"]', on=true) and else taken as a string (name=steve); --args gives a JSON object that
the pairs go on top of. A tool call shows the mod's progress reports as a bar on stderr when it is a
terminal; Ctrl-C cancels the call (the mod is sent tools/cancel when it offers it) and exits with status 130.

Examples:
  # A tool of the demo game, started with `gabp mod` (which writes bridge.json for us)
  gabp call world/get_block x=3 y=4 z=3
  gabp call demo/echo '{\"value\": 1}'
  gabp call --args '{\"x\": 3, \"y\": 4}' world/get_block z=3

  # A slow tool with a progress bar, given at most 10 seconds
  gabp call --timeout 10s demo/sleep ms=3000

  # A picture of the world, written to shots/world_render-1.png
  gabp call --save-images shots world/render scale=4

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
    /// The method, such as tools/list, tools/call or state/get, or the name of one of the mod's tools.
    #[arg(value_name = "METHOD")]
    pub method: String,
    /// The params: one JSON object, or KEY=VALUE pairs (VALUE read as JSON, else as a string).
    #[arg(value_name = "PARAMS_JSON | KEY=VALUE")]
    pub params: Vec<String>,
    /// The params (a tool's arguments) as a JSON object; KEY=VALUE pairs go on top.
    #[arg(long = "args", value_name = "JSON")]
    pub args_json: Option<String>,
    /// How long to wait for the answer: 500ms, 5s, 2m, or seconds (default: 30s).
    #[arg(long, value_name = "DURATION", value_parser = call_args::parse_timeout)]
    pub timeout: Option<Duration>,
    /// Write each image of the result to DIR (created if needed) as TOOL-N.png (or .jpg, .gif, .webp, .bin),
    /// and print the result with a note instead of the image data.
    #[arg(long, value_name = "DIR")]
    pub save_images: Option<PathBuf>,
}

/// The exit status of a call cut short by Ctrl-C.
pub const INTERRUPTED: u8 = 130;

/// What is sent.
enum Call {
    Tool { name: String, arguments: Value },
    Raw { method: String, params: Value },
}

/// Runs `gabp call`; returns the exit status (0, or [`INTERRUPTED`] after Ctrl-C).
///
/// # Errors
///
/// One line: bad arguments, an unreachable mod, a refused token, or the mod's error answer.
pub async fn run(
    args: &CallArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<u8, String> {
    call_args::check_name(&args.method)?;
    let params = call_args::params(&args.params, args.args_json.as_deref())?;
    let mut signals = Signals::new()?;
    let target = args.target.resolve_from_env()?;
    let mut builder = Bridge::builder(target.token.clone()).check_advertised(false);
    if let Some(timeout) = args.timeout {
        builder = builder.request_timeout(timeout);
    }
    let session = target.open(builder).await?;
    let bridge = session.bridge.clone();
    let mut tools = None;
    let call = if args.method == ToolsCall::NAME {
        match tool_call_params(&params) {
            Some((name, arguments)) => Call::Tool { name, arguments },
            None => Call::Raw {
                method: args.method.clone(),
                params,
            },
        }
    } else if may_be_tool(&bridge, &args.method) {
        tools = tool_names(&bridge).await;
        if tools.as_ref().is_some_and(|t| t.contains(&args.method)) {
            Call::Tool {
                name: args.method.clone(),
                arguments: if params.is_null() {
                    Value::Object(Map::new())
                } else {
                    params
                },
            }
        } else {
            Call::Raw {
                method: args.method.clone(),
                params,
            }
        }
    } else {
        Call::Raw {
            method: args.method.clone(),
            params,
        }
    };

    let outcome = match &call {
        Call::Tool { name, arguments } => {
            let (mut updates, answer) = bridge.call_tool_with_progress(name, arguments.clone());
            let mut progress = CallProgress::new(name);
            tokio::pin!(answer);
            loop {
                tokio::select! {
                    outcome = &mut answer => break Some(outcome),
                    Some(p) = updates.next() => {
                        progress.report(p.progress, p.total, p.message.as_deref());
                    }
                    _ = signals.recv() => break None,
                }
            }
        }
        Call::Raw { method, params } => tokio::select! {
            outcome = bridge.request(method, params.clone()) => Some(outcome),
            _ = signals.recv() => None,
        },
    };
    let Some(outcome) = outcome else {
        // The call's future is gone: the bridge has queued tools/cancel, which the goodbye follows.
        let note = match &call {
            Call::Tool { .. } if advertises(&bridge, ToolsCancel::NAME) => "tools/cancel sent",
            Call::Tool { .. } => "the mod does not offer tools/cancel; it may finish the call",
            Call::Raw { .. } => "the mod may still answer it",
        };
        session.finish().await;
        let _ = writeln!(stderr, "cancelled: {} ({note})", args.method);
        return Ok(INTERRUPTED);
    };
    let outcome = match outcome {
        Ok(result) => Ok(result),
        Err(e) => {
            let mut line = format!("{}: {}", args.method, describe(&e));
            if let Some(unknown) = unknown_name(&e) {
                if tools.is_none() {
                    tools = tool_names(&bridge).await;
                }
                let known = known_names(&bridge, tools.as_deref().unwrap_or_default());
                if let Some(name) =
                    call_args::did_you_mean(&unknown, known.iter().map(String::as_str))
                {
                    line.push_str(&format!("; did you mean {name}?"));
                }
            }
            Err(line)
        }
    };
    // Whatever the answer, leave politely.
    session.finish().await;
    let result = outcome?;
    let shown_name = match &call {
        Call::Tool { name, .. } => name.as_str(),
        Call::Raw { method, .. } => method.as_str(),
    };
    let shown = call_content::show(
        shown_name,
        result,
        args.save_images.as_deref(),
        std::io::stdout().is_terminal(),
    )?;
    for (path, bytes) in &shown.saved {
        let _ = writeln!(stderr, "saved {} ({bytes} bytes)", path.display());
    }
    let text = serde_json::to_string_pretty(&shown.result).map_err(|e| e.to_string())?;
    writeln!(stdout, "{text}").map_err(|e| format!("cannot write to stdout: {e}"))?;
    Ok(0)
}

/// One line for a failed call; a local timeout says how to wait longer.
fn describe(e: &SessionError) -> String {
    match e {
        SessionError::Timeout { after, .. } => {
            format!("no answer within {after:?} (--timeout sets how long to wait)")
        }
        other => describe_call_error(other),
    }
}

/// The name the mod did not know: a method (-32601) or a tool (-32400).
fn unknown_name(e: &SessionError) -> Option<String> {
    match e {
        SessionError::MethodNotFound { method, .. } => Some(method.clone()),
        SessionError::ToolNotFound { tool, .. } => Some(tool.clone()),
        _ => None,
    }
}

/// `{"name": ..., "arguments": {...}}` as a tool and its arguments (nothing else in it).
fn tool_call_params(params: &Value) -> Option<(String, Value)> {
    let object = params.as_object()?;
    if object.keys().any(|k| k != "name" && k != "arguments") {
        return None;
    }
    let name = object.get("name")?.as_str()?.to_owned();
    let arguments = match object.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return None,
    };
    Some((name, arguments))
}

fn advertises(bridge: &Bridge, method: &str) -> bool {
    bridge
        .welcome()
        .capabilities
        .methods
        .as_ref()
        .is_some_and(|methods| methods.iter().any(|m| m.as_str() == method))
}

/// Whether `method` may be a tool's name: neither a core method nor one the mod advertises.
fn may_be_tool(bridge: &Bridge, method: &str) -> bool {
    !CORE_METHODS.contains(&method) && !advertises(bridge, method)
}

async fn tool_names(bridge: &Bridge) -> Option<Vec<String>> {
    let tools = bridge.list_tools().await.ok()?;
    Some(tools.iter().map(|t| t.name.to_string()).collect())
}

/// Every name a call could mean: the core methods, the advertised ones, the tools.
fn known_names(bridge: &Bridge, tools: &[String]) -> Vec<String> {
    let mut known: Vec<String> = CORE_METHODS.iter().map(|m| (*m).to_owned()).collect();
    if let Some(methods) = &bridge.welcome().capabilities.methods {
        known.extend(methods.iter().map(|m| m.to_string()));
    }
    known.extend(tools.iter().cloned());
    known
}
