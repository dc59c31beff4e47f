//! `gabp conformance`: the live conformance suite of gabp-testkit against a running mod.

use std::io::Write;
use std::process::Stdio;

use clap::Args;
use gabp_testkit::conformance::{
    self, CheckReport, EventTrigger, Options, Outcome, Profile, ToolCall,
};
use serde_json::{json, Value};

use crate::target::{Reach, Target, TargetArgs};
use crate::terminal::{Palette, Progress};

/// Long help of `gabp conformance`.
pub const EXAMPLES: &str = "\
Checks the mod over the wire: handshake and welcome, token refusal, -32100 before hello, method and tool
errors, argument validation, framing robustness (split, coalesced and interleaved frames, Content-Length in
bytes, unparseable bodies, oversized frames, bad headers), concurrency, response ids and members, event seq,
limits, ping and goodbye. One line per check: `ok   NAME [LEVEL]`, `FAIL NAME [LEVEL]: reason`, or
`skip NAME [LEVEL]: reason` when the mod offers nothing to check it with (a skip is not a failure). LEVEL is MUST
or SHOULD (GABP 1.x) or gabp-rs (a stricter rule of gabp-rs); --profile upstream skips the gabp-rs checks and
judges the rest by upstream's rules only (session/ping, session/goodbye and capabilities.limits optional, a wrong
token refused without closing), --profile gabp-rs (the default) runs all. Then `N passed, M failed` (and
`, K skipped`). Exit status 0 only when no check failed.
With --spawn, the command is started once per connection the suite opens.

Examples:
  gabp conformance --connect tcp://127.0.0.1:4711 --token $TOKEN
  gabp conformance --connect unix:///run/user/1000/gabp-game.sock --token $TOKEN
  gabp conformance --spawn 'gabp mod --stdio'
  gabp conformance --profile upstream --connect tcp://127.0.0.1:4711 --token $TOKEN
  gabp conformance --fast-tool world/time --slow-tool world/save --slow-args '{\"slot\":1}' \\
      --event-tool world/place_block --event-channel world/block_change \\
      --event-args '{\"x\":1}' --event-args '{\"x\":2}'";

/// Arguments of `gabp conformance`.
#[derive(Debug, Clone, Args)]
pub struct ConformanceArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Which rules to check: `upstream` (what GABP 1.x requires and recommends) or `gabp-rs` (also gabp-rs's
    /// stricter rules).
    #[arg(long, value_name = "PROFILE", default_value = "gabp-rs", value_parser = parse_profile)]
    pub profile: Profile,
    /// A tool that answers at once, for round trips (default: demo/echo when the mod lists it).
    #[arg(long, value_name = "NAME")]
    pub fast_tool: Option<String>,
    /// The arguments of --fast-tool, a JSON object.
    #[arg(long, value_name = "JSON", requires = "fast_tool", value_parser = parse_object)]
    pub fast_args: Option<Value>,
    /// A tool that takes a second or more, for the concurrency, progress and cancel checks (default:
    /// demo/sleep when the mod lists it).
    #[arg(long, value_name = "NAME")]
    pub slow_tool: Option<String>,
    /// The arguments of --slow-tool, a JSON object.
    #[arg(long, value_name = "JSON", requires = "slow_tool", value_parser = parse_object)]
    pub slow_args: Option<Value>,
    /// A tool whose calls publish one event each on --event-channel, for the seq check (default:
    /// player/teleport when the mod has it).
    #[arg(long, value_name = "NAME", requires = "event_channel")]
    pub event_tool: Option<String>,
    /// The channel --event-tool publishes on.
    #[arg(long, value_name = "CHANNEL", requires = "event_tool")]
    pub event_channel: Option<String>,
    /// The arguments of one call of --event-tool, a JSON object; repeat for each call (default: three calls
    /// with {}).
    #[arg(long, value_name = "JSON", requires = "event_tool", value_parser = parse_object)]
    pub event_args: Vec<Value>,
}

fn parse_object(s: &str) -> Result<Value, String> {
    match serde_json::from_str(s) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err("expected a JSON object".to_owned()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

impl ConformanceArgs {
    /// The suite's options from the flags.
    fn options(&self) -> Options {
        let mut options = Options::default().with_profile(self.profile);
        let object = |v: &Option<Value>| v.clone().unwrap_or_else(|| json!({}));
        if let Some(tool) = &self.fast_tool {
            options = options.with_fast_tool(ToolCall::new(tool, object(&self.fast_args)));
        }
        if let Some(tool) = &self.slow_tool {
            options = options.with_slow_tool(ToolCall::new(tool, object(&self.slow_args)));
        }
        if let (Some(tool), Some(channel)) = (&self.event_tool, &self.event_channel) {
            let calls = if self.event_args.is_empty() {
                vec![json!({}); 3]
            } else {
                self.event_args.clone()
            };
            options = options.with_event_trigger(EventTrigger::new(tool, channel, calls));
        }
        options
    }
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse()
        .map_err(|e: gabp_testkit::TestkitError| e.to_string())
}

/// Runs the suite; returns whether every check passed or was skipped.
///
/// # Errors
///
/// One line when the target cannot be resolved (an unreachable mod is a failed check, not an error).
pub async fn run(args: &ConformanceArgs, stdout: &mut dyn Write) -> Result<bool, String> {
    let Target { reach, token, .. } = args.target.resolve_from_env()?;
    let target = match &reach {
        Reach::Endpoint(endpoint) => conformance::Target::endpoint(endpoint.clone(), token),
        Reach::Spawn(command) => {
            let command = command.clone();
            let secret = token.clone();
            conformance::Target::spawn_with(token, format!("spawn: {command}"), move || {
                let mut cmd = Target::spawn_command(&command, &secret);
                cmd.stderr(Stdio::null());
                cmd
            })
        }
    };
    let palette = Palette::stdout();
    let total = conformance::checks().len() as u64;
    let mut progress = Progress::new(total, "checks");
    let mut done = 0;
    let mut write_error = None;
    let options = args.options();
    let report = conformance::run_with(&target, &options, |check| {
        done += 1;
        let written = progress
            .suspend(|| writeln!(stdout, "{}", line(check, palette)).and_then(|()| stdout.flush()));
        if let Err(e) = written {
            write_error.get_or_insert(e);
        }
        progress.set(done, check.name);
    })
    .await;
    progress.clear();
    if let Some(e) = write_error {
        return Err(format!("cannot write to stdout: {e}"));
    }
    for hint in report.hints() {
        writeln!(stdout, "{}", palette.event(hint))
            .map_err(|e| format!("cannot write to stdout: {e}"))?;
    }
    let summary = report.summary();
    let summary = if report.is_success() {
        palette.answer(&summary)
    } else {
        palette.error(&summary)
    };
    writeln!(stdout, "{summary}").map_err(|e| format!("cannot write to stdout: {e}"))?;
    Ok(report.is_success())
}

/// `ok   NAME [LEVEL]`, `FAIL NAME [LEVEL]: reason` or `skip NAME [LEVEL]: reason`, the status coloured.
fn line(check: &CheckReport, palette: Palette) -> String {
    let text = check.to_string();
    let (status, rest) = text.split_at(4);
    let status = match check.outcome {
        Outcome::Passed => palette.answer(status),
        Outcome::Failed(_) => palette.error(status),
        _ => palette.event(status),
    };
    format!("{status}{rest}")
}
