//! The checks of the suite, in run order, and the context they share.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use gabp_types::{shorten, ErrorCode, ErrorObject, Outcome as Answer, Response};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::report::Outcome;
use super::wire::{seconds, Journal, Wire, WireError};
use super::{CheckInfo, Level, Options, Profile, Target};

/// The `maxMessageSize` assumed when the mod advertises none (the protocol's default).
const DEFAULT_MAX_MESSAGE_SIZE: u64 = 1024 * 1024;

/// Why a check did not pass.
pub(crate) enum Verdict {
    Fail(String),
    Skip(String),
}

impl From<WireError> for Verdict {
    fn from(e: WireError) -> Self {
        Verdict::Fail(e.to_string())
    }
}

type CheckResult = Result<(), Verdict>;

macro_rules! fail {
    ($($arg:tt)*) => { return Err(Verdict::Fail(format!($($arg)*))) };
}

macro_rules! skip {
    ($($arg:tt)*) => { return Err(Verdict::Skip(format!($($arg)*))) };
}

mod envelope;
mod errors;
mod events;
mod extensions;
mod framing;
mod limits;
mod session;
mod tools;

use self::envelope::{envelope_strictly_valid, responses_ids_match, responses_one_of_result_error};
use self::errors::{errors_invalid_params, errors_method_not_found, errors_responses_not_answered};
use self::events::events_seq_contiguous;
use self::extensions::{
    extensions_cancel, extensions_content, extensions_env, extensions_input, extensions_progress,
    extensions_time_control,
};
use self::framing::{
    framing_answers_whole, framing_bad_header_closed, framing_coalesced_frames,
    framing_invalid_envelope, framing_no_content_length, framing_oversized_refused,
    framing_split_frames, framing_unparseable_body, framing_utf8_byte_length,
};
use self::limits::{
    concurrency_no_head_of_line_blocking, limits_advertised, limits_max_message_size_accepted,
};
use self::session::{
    auth_hello_required, auth_wrong_token_refused, handshake_second_hello_refused,
    handshake_welcome_valid, session_goodbye, session_ping, transport_connect,
};
use self::tools::{errors_tool_not_found, tools_arguments_validated, tools_list_valid};

/// What a check needs from the earlier ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Nothing.
    Nothing,
    /// A connection could be opened (`transport.connect`).
    Connection,
    /// The right token opens a session (`handshake.welcome_valid` got a welcome).
    Session,
}

pub(crate) struct Check {
    pub(crate) info: CheckInfo,
    needs: Needs,
    run: fn(&mut Ctx) -> BoxFuture<'_, CheckResult>,
}

macro_rules! suite {
    ($($func:ident: $name:literal, $level:ident, $needs:ident, $description:literal;)*) => {
        pub(crate) const INFO: &[CheckInfo] = &[
            $(CheckInfo { name: $name, level: Level::$level, description: $description },)*
        ];
        pub(crate) const CHECKS: &[Check] = &[
            $(Check {
                info: CheckInfo { name: $name, level: Level::$level, description: $description },
                needs: Needs::$needs,
                run: boxed::$func,
            },)*
        ];
        mod boxed {
            use super::{BoxFuture, CheckResult, Ctx};
            $(pub(super) fn $func(ctx: &mut Ctx) -> BoxFuture<'_, CheckResult> {
                Box::pin(super::$func(ctx))
            })*
        }
    };
}

suite! {
    transport_connect: "transport.connect", Must, Nothing,
        "a connection to the mod can be opened";
    handshake_welcome_valid: "handshake.welcome_valid", Must, Connection,
        "session/hello with the right token is answered with a welcome that matches its schema and lists the session methods (upstream profile: session/hello)";
    auth_hello_required: "auth.hello_required", Must, Connection,
        "a request before session/hello is refused with -32100 and the connection stays open";
    auth_wrong_token_refused: "auth.wrong_token_refused", Must, Connection,
        "session/hello with a wrong token is refused with -32101, without echoing the token, and (gabp-rs profile) the connection is closed";
    handshake_second_hello_refused: "handshake.second_hello_refused", GabpRs, Session,
        "a second session/hello on an established session is refused with -32600 and the connection stays open";
    session_ping: "session.ping", Should, Session,
        "session/ping is answered with a result that matches its schema";
    tools_list_valid: "tools.list_valid", Should, Session,
        "tools/list is answered with tools that match their schema";
    errors_method_not_found: "errors.method_not_found", Must, Session,
        "an unknown method is refused with -32601 and data.method";
    errors_tool_not_found: "errors.tool_not_found", Must, Session,
        "tools/call of an unknown tool is refused with -32400";
    errors_invalid_params: "errors.invalid_params", Must, Session,
        "params that fail the method's schema are refused with -32602 and data.errors";
    tools_arguments_validated: "tools.arguments_validated", Must, Session,
        "tool arguments that fail the tool's inputSchema are refused with -32602 and data.errors";
    errors_responses_not_answered: "errors.responses_not_answered", GabpRs, Session,
        "responses and events from the bridge, valid or not, are never answered";
    framing_split_frames: "framing.split_frames", Must, Session,
        "a frame written in small pieces is read whole";
    framing_coalesced_frames: "framing.coalesced_frames", Must, Session,
        "several frames written at once are all read";
    framing_answers_whole: "framing.answers_whole", Must, Session,
        "the answers to eight requests written at once each arrive as one frame, header then body, never interleaved";
    framing_utf8_byte_length: "framing.utf8_byte_length", Must, Session,
        "a body with non-ASCII UTF-8, its Content-Length counted in bytes, is read whole and answered";
    framing_unparseable_body: "framing.unparseable_body", GabpRs, Session,
        "a body that is not JSON or not UTF-8 is answered -32700 with the nil id and the stream goes on";
    framing_invalid_envelope: "framing.invalid_envelope", GabpRs, Session,
        "JSON that is not a valid envelope is answered -32600/-32202/-32203 with the message's id and the stream goes on";
    limits_advertised: "limits.advertised", Should, Session,
        "the welcome advertises capabilities.limits.maxMessageSize (optional upstream: skipped there when absent)";
    limits_max_message_size_accepted: "limits.max_message_size_accepted", Must, Session,
        "a message of exactly the advertised maxMessageSize is accepted";
    framing_oversized_refused: "framing.oversized_refused", GabpRs, Session,
        "a frame one byte over maxMessageSize is refused with -32600, the nil id and data.maxMessageSize, and the next frame works";
    framing_bad_header_closed: "framing.bad_header_closed", GabpRs, Session,
        "a malformed header block is answered -32700 (or not at all) and the connection is closed without stalling";
    framing_no_content_length: "framing.no_content_length", Should, Session,
        "a header block without Content-Length is answered -32700 or the connection is closed, not left to stall";
    concurrency_no_head_of_line_blocking: "concurrency.no_head_of_line_blocking", Should, Session,
        "a fast call is answered while a slow one is still running (needs a slow and a fast tool: demo/sleep and demo/echo by default)";
    events_seq_contiguous: "events.seq_contiguous", Must, Session,
        "events of a channel arrive with contiguous seq numbers (needs a tool that publishes, such as player/teleport)";
    extensions_progress: "extensions.progress", GabpRs, Session,
        "with the progress extension: a bad progressToken is refused with -32602, and the slow tool's progress events carry its token and come before its answer, none after";
    extensions_cancel: "extensions.cancel", GabpRs, Session,
        "with the cancel extension: tools/cancel of an unknown id is harmless, and a running call of the slow tool cancelled is answered -32404 once";
    extensions_time_control: "extensions.time_control", GabpRs, Session,
        "with the time-control extension: its methods and channel are advertised, a second pause changes nothing, a step of 0 is refused, a step of 2 runs exactly 2 ticks";
    extensions_content: "extensions.content", GabpRs, Session,
        "with the content extension: maxBytes is advertised, and world/render's picture is a valid content item within it";
    extensions_input: "extensions.input", GabpRs, Session,
        "with the input extension: its members and input/key are advertised, a key release is answered {}, an unknown key name, an unknown action and (with input/text) empty text are refused with -32602";
    extensions_env: "extensions.env", GabpRs, Session,
        "with the env extension: its methods are advertised, the spaces are valid, observations lie in their space, an action outside the space is refused with -32602 at /params/action, a step after the episode ended with -32401, and a seed starts the same episode twice";
    session_goodbye: "session.goodbye", Must, Session,
        "session/goodbye is answered, then the connection is closed (upstream profile: when the mod advertises it)";
    responses_one_of_result_error: "responses.one_of_result_error", Must, Session,
        "every response of the run carries exactly one of result and error (a null beside the other is read, SPEC/1.0 gabp.md §3.5, but breaks this rule)";
    responses_ids_match: "responses.ids_match", Must, Session,
        "every request is answered exactly once, with its own id echoed byte for byte, throughout the run";
    envelope_strictly_valid: "envelope.strictly_valid", GabpRs, Connection,
        "every message the mod sent during the run passes the strict decoder and its method's result schema";
}

/// What the checks share: the target, the options, what earlier checks learnt, and the journal.
pub(crate) struct Ctx {
    target: Target,
    options: Options,
    journal: Arc<Journal>,
    connected: bool,
    welcome: Option<Value>,
    tools: Vec<Value>,
    limit: Option<u64>,
}

impl Ctx {
    pub(crate) fn new(target: Target, options: Options) -> Self {
        Ctx {
            target,
            options,
            journal: Arc::default(),
            connected: false,
            welcome: None,
            tools: Vec::new(),
            limit: None,
        }
    }

    /// Runs one check within its time limit.
    pub(crate) async fn run(&mut self, check: &Check) -> Outcome {
        let unmet = match check.needs {
            Needs::Nothing => None,
            Needs::Connection if !self.connected => {
                Some("cannot connect to the mod (transport.connect failed)")
            }
            Needs::Session if !self.connected => {
                Some("cannot connect to the mod (transport.connect failed)")
            }
            Needs::Session if self.welcome.is_none() => {
                Some("no session: the right token got no welcome (handshake.welcome_valid failed)")
            }
            _ => None,
        };
        if let Some(reason) = unmet {
            return Outcome::Skipped(reason.to_owned());
        }
        if !self.options.profile.includes(check.info.level) {
            return Outcome::Skipped(format!(
                "a {} rule, checked only with the gabp-rs profile",
                check.info.level
            ));
        }
        self.journal.set_check(check.info.name);
        let limit = self.options.check_timeout;
        match tokio::time::timeout(limit, (check.run)(self)).await {
            Ok(Ok(())) => Outcome::Passed,
            Ok(Err(Verdict::Fail(reason))) => Outcome::Failed(reason),
            Ok(Err(Verdict::Skip(reason))) => Outcome::Skipped(reason),
            Err(_) => Outcome::Failed(format!(
                "did not finish within its time limit of {} (the mod stalled)",
                seconds(limit)
            )),
        }
    }

    /// What the run suggests beyond the checks.
    pub(crate) fn hints(&self) -> Vec<String> {
        let nagle = self.journal.median_round_trip().and_then(super::nagle_hint);
        nagle.into_iter().map(str::to_owned).collect()
    }

    /// Whether the gabp-rs profile's stricter details are checked.
    fn strict(&self) -> bool {
        self.options.profile == Profile::GabpRs
    }

    fn answer(&self) -> Duration {
        self.options.answer_timeout
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.answer()
    }

    fn token(&self) -> &str {
        self.target.token().expose_secret()
    }

    /// Opens a new connection.
    async fn open(&self) -> Result<Wire, Verdict> {
        match tokio::time::timeout(self.answer(), self.target.open()).await {
            Ok(Ok(stream)) => Ok(Wire::new(stream, self.journal.clone())),
            Ok(Err(e)) => fail!("cannot connect: {e}"),
            Err(_) => fail!(
                "cannot connect: no connection within {}",
                seconds(self.answer())
            ),
        }
    }

    /// Opens a new connection and completes the handshake.
    async fn session(&self) -> Result<Wire, Verdict> {
        let mut wire = self.open().await?;
        match wire.hello(self.token(), self.answer()).await {
            Ok(r) if r.result().is_some() => Ok(wire),
            Ok(r) => fail!(
                "cannot open a session: session/hello was answered {}",
                describe(&r)
            ),
            Err(e) => fail!("cannot open a session: {e}"),
        }
    }

    /// Whether the welcome lists `method`.
    fn advertises(&self, method: &str) -> bool {
        self.welcome
            .as_ref()
            .and_then(|w| w["capabilities"]["methods"].as_array())
            .is_some_and(|m| m.iter().any(|n| n == method))
    }

    /// The harmless request that shows a connection works: `session/ping`, or `tools/list` when the mod
    /// does not advertise ping (a 1.0 mod need not serve it).
    fn probe(&self) -> &'static str {
        if !self.advertises("session/ping") && self.advertises("tools/list") {
            "tools/list"
        } else {
            "session/ping"
        }
    }

    /// The fast tool and its arguments: the option, or `demo/echo` of `value` when the mod lists it.
    fn fast_call(&self, value: &str) -> Option<(String, Value)> {
        match &self.options.fast_tool {
            Some(call) => Some((call.tool.clone(), Value::Object(call.arguments.clone()))),
            None if self.has_tool("demo/echo") => {
                Some(("demo/echo".to_owned(), json!({ "value": value })))
            }
            None => None,
        }
    }

    /// The slow tool and its arguments: the option, or `demo/sleep` of `ms` when the mod lists it.
    fn slow_call(&self, ms: u128) -> Option<(String, Value)> {
        match &self.options.slow_tool {
            Some(call) => Some((call.tool.clone(), Value::Object(call.arguments.clone()))),
            None if self.has_tool("demo/sleep") => {
                Some(("demo/sleep".to_owned(), json!({ "ms": ms })))
            }
            None => None,
        }
    }

    fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t["name"] == name)
    }

    fn channels(&self) -> Vec<String> {
        self.welcome
            .as_ref()
            .and_then(|w| w["capabilities"]["events"].as_array())
            .map(|e| {
                e.iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The advertised `maxMessageSize`, or the default and `true` when none is advertised.
    fn message_limit(&self) -> Result<(u64, bool), Verdict> {
        let (limit, assumed) = match self.limit {
            Some(limit) => (limit, false),
            None => (DEFAULT_MAX_MESSAGE_SIZE, true),
        };
        if limit >= self.options.max_probe_size {
            skip!(
                "maxMessageSize is {limit} bytes, more than the largest probe of {} bytes",
                self.options.max_probe_size
            );
        }
        Ok((limit, assumed))
    }
}

/// A response in words: `a result ({...})` or `error -32601 (...)`.
fn describe(r: &Response) -> String {
    match &r.outcome {
        Answer::Result(v) => format!("with a result ({})", short(v)),
        Answer::Error(e) => format!("with error {} ({})", e.code.0, e.message),
    }
}

fn short(v: &Value) -> String {
    shorten(&v.to_string(), 80).into_owned()
}

/// The error of `r` when its code is `code`; otherwise a failure saying what came instead.
fn expect_error<'r>(
    r: &'r Response,
    code: ErrorCode,
    what: &str,
) -> Result<&'r ErrorObject, Verdict> {
    match r.error_object() {
        Some(e) if e.code == code => Ok(e),
        // Implementation-defined codes are allowed, but not where the registry has one for the case.
        Some(e) if e.code.name().is_none() => fail!(
            "{what} was answered with error {} ({}), a code outside the error-code registry, instead of {code}, \
             the registry's code for it",
            e.code.0,
            e.message
        ),
        _ => fail!(
            "{what} was answered {} instead of error {}",
            describe(r),
            code.0
        ),
    }
}

/// The result of `r`; otherwise a failure.
fn expect_result<'r>(r: &'r Response, what: &str) -> Result<&'r Value, Verdict> {
    match r.result() {
        Some(v) => Ok(v),
        None => fail!("{what} was answered {}", describe(r)),
    }
}

/// Checks that `e.data.errors` is a non-empty list of `{path, message}` strings (gabp-rs profile only).
fn expect_error_list(ctx: &Ctx, e: &ErrorObject, what: &str) -> CheckResult {
    if !ctx.strict() {
        return Ok(());
    }
    let errors = e.data.as_ref().and_then(|d| d.get("errors"));
    let Some(list) = errors.and_then(Value::as_array).filter(|l| !l.is_empty()) else {
        fail!(
            "{what} was refused with -32602 but without a data.errors list (data: {})",
            e.data.as_ref().map_or_else(|| "none".to_owned(), short)
        );
    };
    for item in list {
        if !(item["path"].is_string() && item["message"].is_string()) {
            fail!(
                "{what}: data.errors holds {} (each entry must be {{\"path\": string, \"message\": string}})",
                short(item)
            );
        }
    }
    Ok(())
}

/// A wire error in the words of a check that expected the connection to stay open.
fn kept_open(e: WireError, what: &str) -> Verdict {
    match e {
        WireError::Closed => Verdict::Fail(format!(
            "the mod closed the connection after {what} (it must answer and keep reading)"
        )),
        other => Verdict::Fail(format!("after {what}: {other}")),
    }
}

/// Sends the liveness probe on `wire` and expects a result: the connection still works after `what`.
async fn still_works(wire: &mut Wire, ctx: &Ctx, what: &str) -> CheckResult {
    let probe = ctx.probe();
    let r = wire
        .call(probe, Some(json!({})), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    expect_result(&r, &format!("{probe} after {what}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_uses_ping_only_when_the_mod_advertises_it() {
        let target = Target::in_memory(gabp_transport::Token::generate().expect("token"), || {
            gabp_transport::ByteStream::new(tokio::io::duplex(64).0)
        });
        let mut ctx = Ctx::new(target, Options::default());
        let welcome = |methods: &[&str]| Some(json!({ "capabilities": { "methods": methods } }));
        ctx.welcome = welcome(&["session/hello", "session/goodbye", "tools/list"]);
        assert_eq!(ctx.probe(), "tools/list");
        ctx.welcome = welcome(&["session/hello", "session/ping", "tools/list"]);
        assert_eq!(ctx.probe(), "session/ping");
    }

    #[test]
    fn the_suite_tables_agree() {
        assert_eq!(INFO.len(), CHECKS.len());
        for (info, check) in INFO.iter().zip(CHECKS) {
            assert_eq!(info, &check.info);
        }
    }
}
