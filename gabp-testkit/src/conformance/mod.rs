//! The live conformance suite: [`run`] checks a running mod over the wire and returns a [`Report`].
//!
//! The suite talks to the mod with a raw, frame-level client of its own (not the `gabp-session` bridge), so
//! it tests the mod independently and can send what no conformant bridge would: split and coalesced frames,
//! unparseable bodies, oversized frames, malformed headers, wrong tokens, requests before `session/hello`.
//! Every message the mod sends is checked with the strict decoder, and every success response against the
//! result schema of the method it answers.
//!
//! Each check has a stable name and a time limit; a check that fails says why in one line, and a check the
//! mod gives no material for (no slow tool to test concurrency with, no channel) is skipped with a reason.
//! The checks, in run order, are listed by [`checks`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use gabp_testkit::conformance::{self, Target};
//! use gabp_testkit::MockMod;
//!
//! // A mod on loopback TCP, as `gabp conformance --connect tcp://127.0.0.1:PORT --token T` would test it.
//! let mock = MockMod::demo()?;
//! let served = mock.serve_tcp().await?;
//! let target = Target::endpoint(served.endpoint().clone(), mock.token().clone());
//!
//! let report = conformance::run(&target).await;
//! print!("{report}"); // "ok   transport.connect [MUST]" ... "33 passed, 0 failed, 2 skipped"
//! assert!(report.is_success());
//! // The mock has no game clock and no picture: the time-control and content checks are skipped.
//! assert_eq!(report.passed() + 2, conformance::checks().len());
//! # served.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod checks;
mod report;
mod target;
mod wire;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::TestkitError;

pub use report::{nagle_hint, CheckReport, Outcome, Report};
pub use target::Target;

/// A check of the suite: its stable name and what it verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckInfo {
    /// The stable name, such as `framing.oversized_refused`.
    pub name: &'static str,
    /// How binding the rule it checks is.
    pub level: Level,
    /// What the check verifies, in one line.
    pub description: &'static str,
}

/// How binding a check's rule is: a MUST or a SHOULD of GABP 1.x, or one of gabp-rs's stricter choices.
///
/// Shown as `MUST`, `SHOULD` or `gabp-rs` in report lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Level {
    /// Required of every GABP 1.x mod.
    Must,
    /// Recommended by GABP 1.x.
    Should,
    /// A stricter rule of gabp-rs (its error data, recovery from bad frames, strict envelopes, extensions).
    GabpRs,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::GabpRs => "gabp-rs",
        })
    }
}

/// Which rules a run checks.
///
/// ```
/// use gabp_testkit::conformance::{Level, Profile};
///
/// let upstream: Profile = "upstream".parse().unwrap();
/// assert!(upstream.includes(Level::Should));
/// assert!(!upstream.includes(Level::GabpRs));
/// assert_eq!(Profile::default(), Profile::GabpRs);
/// let unknown = "strict".parse::<Profile>().unwrap_err();
/// assert_eq!(unknown.to_string(), r#"unknown profile "strict" (expected upstream or gabp-rs)"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Profile {
    /// What GABP 1.x requires and recommends: the MUST and SHOULD checks, without gabp-rs's stricter details
    /// (`session/ping` is optional, error data is not required).
    Upstream,
    /// Everything, with gabp-rs's stricter rules (the default).
    #[default]
    GabpRs,
}

impl Profile {
    /// Whether checks of `level` run under this profile.
    #[must_use]
    pub fn includes(self, level: Level) -> bool {
        self == Profile::GabpRs || level != Level::GabpRs
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Profile::Upstream => "upstream",
            Profile::GabpRs => "gabp-rs",
        })
    }
}

impl FromStr for Profile {
    type Err = TestkitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "upstream" => Ok(Profile::Upstream),
            "gabp-rs" => Ok(Profile::GabpRs),
            other => Err(TestkitError::UnknownProfile(other.to_owned())),
        }
    }
}

/// Every check of the suite, in run order.
///
/// ```
/// let names: Vec<&str> = gabp_testkit::conformance::checks().iter().map(|c| c.name).collect();
/// assert_eq!(names[0], "transport.connect");
/// assert!(names.contains(&"auth.wrong_token_refused"));
/// ```
#[must_use]
pub fn checks() -> &'static [CheckInfo] {
    checks::INFO
}

/// What a run needs to know beyond the target: time limits and how to make the mod publish events.
///
/// ```
/// use std::time::Duration;
/// use gabp_testkit::conformance::{EventTrigger, Options};
/// use serde_json::json;
///
/// let options = Options::default()
///     .with_answer_timeout(Duration::from_secs(10))
///     .with_event_trigger(EventTrigger::new(
///         "world/place_block",
///         "world/block_change",
///         [json!({"x": 1, "y": 1, "z": 1, "blockType": "stone"}), json!({"x": 2, "y": 1, "z": 1, "blockType": "stone"})],
///     ));
/// assert_eq!(options.answer_timeout, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// How long to wait for an answer (default 5 s).
    pub answer_timeout: Duration,
    /// How long a mod may take to close a connection it must close (after a wrong token, a malformed header
    /// or `session/goodbye`) before it counts as stalled (default 3 s).
    pub stall_timeout: Duration,
    /// The time limit of one check, whatever it waits for (default 30 s).
    pub check_timeout: Duration,
    /// How long the slow call of the concurrency check sleeps (default 800 ms).
    pub slow_call: Duration,
    /// The tool that makes the mod publish events, for the `seq` check (default: `player/teleport`, three
    /// times, publishing on `player/move`, when the mod advertises both).
    pub event_trigger: Option<EventTrigger>,
    /// Without a trigger, how long to listen for events the mod publishes by itself (default 1 s).
    pub event_listen: Duration,
    /// The largest frame the suite sends to probe `maxMessageSize` (default 64 MiB); above it, the size
    /// checks are skipped.
    pub max_probe_size: u64,
    /// Which rules to check (default [`Profile::GabpRs`]).
    pub profile: Profile,
    /// A tool that answers at once, for the concurrency and progress checks (default: `demo/echo` with a
    /// `value`, when the mod lists it).
    pub fast_tool: Option<ToolCall>,
    /// A tool that takes a while (a second or more), for the concurrency, progress and cancel checks
    /// (default: `demo/sleep` with `ms`, when the mod lists it).
    pub slow_tool: Option<ToolCall>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            answer_timeout: Duration::from_secs(5),
            stall_timeout: Duration::from_secs(3),
            check_timeout: Duration::from_secs(30),
            slow_call: Duration::from_millis(800),
            event_trigger: None,
            event_listen: Duration::from_secs(1),
            max_probe_size: 64 * 1024 * 1024,
            profile: Profile::GabpRs,
            fast_tool: None,
            slow_tool: None,
        }
    }
}

impl Options {
    /// Sets [`Options::answer_timeout`].
    #[must_use]
    pub fn with_answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// Sets [`Options::stall_timeout`].
    #[must_use]
    pub fn with_stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = timeout;
        self
    }

    /// Sets [`Options::check_timeout`].
    #[must_use]
    pub fn with_check_timeout(mut self, timeout: Duration) -> Self {
        self.check_timeout = timeout;
        self
    }

    /// Sets [`Options::slow_call`].
    #[must_use]
    pub fn with_slow_call(mut self, sleep: Duration) -> Self {
        self.slow_call = sleep;
        self
    }

    /// Sets [`Options::event_trigger`].
    #[must_use]
    pub fn with_event_trigger(mut self, trigger: EventTrigger) -> Self {
        self.event_trigger = Some(trigger);
        self
    }

    /// Sets [`Options::event_listen`].
    #[must_use]
    pub fn with_event_listen(mut self, listen: Duration) -> Self {
        self.event_listen = listen;
        self
    }

    /// Sets [`Options::profile`].
    #[must_use]
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets [`Options::fast_tool`].
    #[must_use]
    pub fn with_fast_tool(mut self, call: ToolCall) -> Self {
        self.fast_tool = Some(call);
        self
    }

    /// Sets [`Options::slow_tool`].
    #[must_use]
    pub fn with_slow_tool(mut self, call: ToolCall) -> Self {
        self.slow_tool = Some(call);
        self
    }

    /// Sets [`Options::max_probe_size`].
    #[must_use]
    pub fn with_max_probe_size(mut self, bytes: u64) -> Self {
        self.max_probe_size = bytes;
        self
    }
}

/// A call of a tool with fixed arguments, for checks that need a fast or a slow tool of the mod.
///
/// ```
/// use gabp_testkit::conformance::{Options, ToolCall};
/// use serde_json::json;
///
/// let options = Options::default()
///     .with_fast_tool(ToolCall::new("world/time", json!({})))
///     .with_slow_tool(ToolCall::new("world/save", json!({"slot": 1})));
/// assert_eq!(options.slow_tool.unwrap().arguments["slot"], 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool to call.
    pub tool: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
}

impl ToolCall {
    /// A call of `tool` with `arguments` (a JSON object; anything else counts as no arguments).
    #[must_use]
    pub fn new(tool: impl Into<String>, arguments: Value) -> Self {
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        ToolCall {
            tool: tool.into(),
            arguments,
        }
    }
}

/// A tool whose calls make the mod publish events on a channel: the `seq` check subscribes to every
/// advertised channel, calls the tool once per argument object, and expects one event per call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EventTrigger {
    /// The tool to call.
    pub tool: String,
    /// The channel its calls publish on.
    pub channel: String,
    /// The arguments of each call (at least two calls make a sequence worth checking).
    pub arguments: Vec<Map<String, Value>>,
}

impl EventTrigger {
    /// A trigger calling `tool` with each of `arguments` (JSON objects; anything else is skipped), each call
    /// publishing one event on `channel`.
    #[must_use]
    pub fn new(
        tool: impl Into<String>,
        channel: impl Into<String>,
        arguments: impl IntoIterator<Item = Value>,
    ) -> Self {
        EventTrigger {
            tool: tool.into(),
            channel: channel.into(),
            arguments: arguments
                .into_iter()
                .filter_map(|a| match a {
                    Value::Object(map) => Some(map),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// Runs every check against `target` with the default [`Options`].
///
/// Never fails as a whole: an unreachable mod shows as a failed `transport.connect` and skipped checks.
/// Must be called within a Tokio runtime with I/O and time enabled.
pub async fn run(target: &Target) -> Report {
    run_with(target, &Options::default(), |_| {}).await
}

/// Runs every check against `target` with `options`, calling `progress` after each check (for a progress bar:
/// there are [`checks`]`().len()` of them).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gabp_testkit::conformance::{self, Options};
///
/// let mock = gabp_testkit::MockMod::demo()?;
/// let mut done = 0;
/// let report = conformance::run_with(&mock.conformance_target(), &Options::default(), |check| {
///     done += 1;
///     eprintln!("[{done}/{}] {check}", conformance::checks().len());
/// })
/// .await;
/// assert_eq!(done, report.checks().len());
/// # Ok(())
/// # }
/// ```
pub async fn run_with(
    target: &Target,
    options: &Options,
    mut progress: impl FnMut(&CheckReport),
) -> Report {
    let started = Instant::now();
    let mut ctx = checks::Ctx::new(target.clone(), options.clone());
    let mut results = Vec::with_capacity(checks::CHECKS.len());
    for check in checks::CHECKS {
        let start = Instant::now();
        let outcome = ctx.run(check).await;
        let report = CheckReport::new(check.info.name, outcome, start.elapsed());
        debug_assert_eq!(report.level, check.info.level);
        progress(&report);
        results.push(report);
    }
    Report::new(target.to_string(), results, ctx.hints(), started.elapsed())
}
