//! The checks of the suite, in run order, and the context they share.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use gabp_transport::Token;
use gabp_types::decode::check_result;
use gabp_types::{
    shorten, ErrorCode, ErrorObject, Event, Message, MessageId, Outcome as Answer, Response,
};
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::report::Outcome;
use super::wire::{seconds, Incoming, Journal, Wire, WireError};
use super::{CheckInfo, EventTrigger, Options, Target};
use crate::proxy::{frame, padded_ping};

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
    ($($func:ident: $name:literal, $needs:ident, $description:literal;)*) => {
        pub(crate) const INFO: &[CheckInfo] = &[
            $(CheckInfo { name: $name, description: $description },)*
        ];
        pub(crate) const CHECKS: &[Check] = &[
            $(Check {
                info: CheckInfo { name: $name, description: $description },
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
    transport_connect: "transport.connect", Nothing,
        "a connection to the mod can be opened";
    handshake_welcome_valid: "handshake.welcome_valid", Connection,
        "session/hello with the right token is answered with a welcome that matches its schema and lists the session methods";
    auth_hello_required: "auth.hello_required", Connection,
        "a request before session/hello is refused with -32100 and the connection stays open";
    auth_wrong_token_refused: "auth.wrong_token_refused", Connection,
        "session/hello with a wrong token is refused with -32101, without echoing the token, and the connection is closed";
    handshake_second_hello_refused: "handshake.second_hello_refused", Session,
        "a second session/hello on an established session is refused with -32600 and the connection stays open";
    session_ping: "session.ping", Session,
        "session/ping is answered with a result that matches its schema";
    tools_list_valid: "tools.list_valid", Session,
        "tools/list is answered with tools that match their schema";
    errors_method_not_found: "errors.method_not_found", Session,
        "an unknown method is refused with -32601 and data.method";
    errors_tool_not_found: "errors.tool_not_found", Session,
        "tools/call of an unknown tool is refused with -32400";
    errors_invalid_params: "errors.invalid_params", Session,
        "params that fail the method's schema are refused with -32602 and data.errors";
    tools_arguments_validated: "tools.arguments_validated", Session,
        "tool arguments that fail the tool's inputSchema are refused with -32602 and data.errors";
    errors_responses_not_answered: "errors.responses_not_answered", Session,
        "responses and events from the bridge, valid or not, are never answered";
    framing_split_frames: "framing.split_frames", Session,
        "a frame written in small pieces is read whole";
    framing_coalesced_frames: "framing.coalesced_frames", Session,
        "several frames written at once are all read";
    framing_unparseable_body: "framing.unparseable_body", Session,
        "a body that is not JSON or not UTF-8 is answered -32700 with the nil id and the stream goes on";
    framing_invalid_envelope: "framing.invalid_envelope", Session,
        "JSON that is not a valid envelope is answered -32600/-32202/-32203 with the message's id and the stream goes on";
    limits_advertised: "limits.advertised", Session,
        "the welcome advertises capabilities.limits.maxMessageSize";
    limits_max_message_size_accepted: "limits.max_message_size_accepted", Session,
        "a message of exactly the advertised maxMessageSize is accepted";
    framing_oversized_refused: "framing.oversized_refused", Session,
        "a frame one byte over maxMessageSize is refused with -32600, the nil id and data.maxMessageSize, and the next frame works";
    framing_bad_header_closed: "framing.bad_header_closed", Session,
        "a malformed header block is answered -32700 (or not at all) and the connection is closed without stalling";
    concurrency_no_head_of_line_blocking: "concurrency.no_head_of_line_blocking", Session,
        "a fast call is answered while a slow one is still running (needs demo/sleep and demo/echo)";
    events_seq_contiguous: "events.seq_contiguous", Session,
        "events of a channel arrive with contiguous seq numbers (needs a tool that publishes, such as player/teleport)";
    session_goodbye: "session.goodbye", Session,
        "session/goodbye is answered, then the connection is closed";
    responses_ids_match: "responses.ids_match", Session,
        "every request is answered exactly once, with its own id echoed byte for byte, throughout the run";
    envelope_strictly_valid: "envelope.strictly_valid", Connection,
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

/// Checks that `e.data.errors` is a non-empty list of `{path, message}` strings.
fn expect_error_list(e: &ErrorObject, what: &str) -> CheckResult {
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

/// Pings on `wire` and expects a result: the connection still works after `what`.
async fn still_works(wire: &mut Wire, ctx: &Ctx, what: &str) -> CheckResult {
    let r = wire
        .call("session/ping", None, ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    expect_result(&r, &format!("session/ping after {what}"))?;
    Ok(())
}

// ---- the checks, in run order ------------------------------------------------------------------------------

async fn transport_connect(ctx: &mut Ctx) -> CheckResult {
    let wire = ctx.open().await?;
    drop(wire);
    ctx.connected = true;
    Ok(())
}

async fn handshake_welcome_valid(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.open().await?;
    let r = match wire.hello(ctx.token(), ctx.answer()).await {
        Ok(r) => r,
        Err(e) => fail!("session/hello with the right token: {e}"),
    };
    let welcome = expect_result(&r, "session/hello with the right token")?.clone();
    ctx.welcome = Some(welcome.clone());
    if let Err(e) = check_result("session/hello", &welcome) {
        fail!("the welcome does not match its schema: {e}");
    }
    for method in ["session/hello", "session/ping", "session/goodbye"] {
        if !ctx.advertises(method) {
            fail!("capabilities.methods does not list {method} (a mod advertises every method it serves)");
        }
    }
    Ok(())
}

async fn auth_hello_required(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.open().await?;
    let what = "tools/list before session/hello";
    let r = match wire.call("tools/list", Some(json!({})), ctx.answer()).await {
        Ok(r) => r,
        Err(WireError::Closed) => {
            fail!(
                "the mod closed the connection on {what} (it must answer -32100 and keep it open)"
            )
        }
        Err(e) => fail!("{what}: {e}"),
    };
    expect_error(&r, ErrorCode::AUTHENTICATION_REQUIRED, what)?;
    if ctx.welcome.is_some() {
        let r = wire
            .hello(ctx.token(), ctx.answer())
            .await
            .map_err(|e| kept_open(e, "refusing a request before session/hello"))?;
        expect_result(&r, "session/hello after a refused early request")?;
    }
    Ok(())
}

async fn auth_wrong_token_refused(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.open().await?;
    let wrong = loop {
        let candidate = match Token::generate() {
            Ok(t) => t.expose_secret().to_owned(),
            Err(e) => skip!("cannot make a wrong token: {e}"),
        };
        if candidate != ctx.token() {
            break candidate;
        }
    };
    let r = match wire.hello(&wrong, ctx.answer()).await {
        Ok(r) => r,
        Err(WireError::Closed) => fail!("the mod closed the connection without answering -32101"),
        Err(e) => fail!("session/hello with a wrong token: {e}"),
    };
    if r.result().is_some() {
        fail!("the mod accepted a wrong token: session/hello was answered with a welcome");
    }
    expect_error(
        &r,
        ErrorCode::AUTHENTICATION_FAILED,
        "session/hello with a wrong token",
    )?;
    if serde_json::to_string(&Message::from(r.clone()))
        .unwrap_or_default()
        .contains(&wrong)
    {
        fail!("the refusal echoes the token (a mod never echoes a token)");
    }
    match wire.wait_closed(ctx.options.stall_timeout).await {
        Ok(()) => Ok(()),
        Err(WireError::Timeout(t)) => fail!(
            "the mod refused the token but kept the connection open for {} (it must close it)",
            seconds(t)
        ),
        Err(e) => fail!("after refusing the token: {e}"),
    }
}

async fn handshake_second_hello_refused(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let what = "a second session/hello";
    let r = wire
        .hello(ctx.token(), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    expect_error(&r, ErrorCode::INVALID_REQUEST, what)?;
    still_works(&mut wire, ctx, "refusing a second session/hello").await
}

async fn session_ping(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let r = wire.call("session/ping", None, ctx.answer()).await?;
    let result = expect_result(&r, "session/ping")?;
    if let Err(e) = check_result("session/ping", result) {
        fail!("the ping result does not match its schema: {e}");
    }
    Ok(())
}

async fn tools_list_valid(ctx: &mut Ctx) -> CheckResult {
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

async fn errors_method_not_found(ctx: &mut Ctx) -> CheckResult {
    const METHOD: &str = "conformance/no_such_method";
    let mut wire = ctx.session().await?;
    let what = "an unknown method";
    let r = wire
        .call(METHOD, Some(json!({})), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    let e = expect_error(&r, ErrorCode::METHOD_NOT_FOUND, what)?;
    let named = e.data.as_ref().and_then(|d| d.get("method"));
    if named.and_then(Value::as_str) != Some(METHOD) {
        fail!(
            "-32601 must carry data.method = {METHOD:?}, got data {}",
            e.data.as_ref().map_or_else(|| "none".to_owned(), short)
        );
    }
    Ok(())
}

async fn errors_tool_not_found(ctx: &mut Ctx) -> CheckResult {
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

async fn errors_invalid_params(ctx: &mut Ctx) -> CheckResult {
    let (method, params, what) = if ctx.advertises("tools/call") {
        (
            "tools/call",
            json!({ "name": 42 }),
            "tools/call with a number as the tool name",
        )
    } else {
        (
            "session/ping",
            json!({ "unexpected": true }),
            "session/ping with an unknown param",
        )
    };
    let mut wire = ctx.session().await?;
    let r = wire
        .call(method, Some(params), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    let e = expect_error(&r, ErrorCode::INVALID_PARAMS, what)?;
    expect_error_list(e, what)
}

/// Arguments that `schema` rejects, and why, when the schema says enough to build some.
fn invalid_arguments(schema: &Value) -> Option<(Value, String)> {
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

async fn tools_arguments_validated(ctx: &mut Ctx) -> CheckResult {
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
    expect_error_list(e, &what)
}

async fn errors_responses_not_answered(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let probes = [
        ("a valid response", r#""type":"response","result":{}"#),
        (
            "a response with neither result nor error",
            r#""type":"response""#,
        ),
        (
            "an event",
            r#""type":"event","channel":"conformance/probe","seq":0,"payload":{}"#,
        ),
    ];
    let mut sent = HashMap::new();
    for (what, rest) in probes {
        let id = MessageId::new_v4();
        wire.register(id, what, false);
        sent.insert(id, what);
        let body = format!(r#"{{"v":"gabp/1","id":"{id}",{rest}}}"#);
        wire.send_body(body.as_bytes()).await?;
    }
    // Two round trips: whatever the mod answers to the probes arrives before the second ping's answer.
    for _ in 0..2 {
        still_works(&mut wire, ctx, "a response and an event from the bridge").await?;
    }
    if let Some(r) = wire.stray.first() {
        let answered = sent.get(&r.id).copied().unwrap_or("a response or an event");
        fail!(
            "the mod answered {answered} from the bridge ({}); it must never answer responses or events",
            describe(r).trim_start_matches("with ")
        );
    }
    Ok(())
}

async fn framing_split_frames(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    let body = wire.request_body(id, "session/ping", None, true);
    let bytes = frame(&body);
    let mut at = 0;
    for size in [1, 2, 3, 5, 7, 11].into_iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + size).min(bytes.len());
        wire.write(&bytes[at..end]).await?;
        at = end;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let what = "a frame written in pieces of 1 to 11 bytes";
    let r = wire
        .response_to(id, ctx.deadline(), ctx.answer())
        .await
        .map_err(|e| Verdict::Fail(format!("{what}: {e}")))?;
    expect_result(&r, what)?;
    Ok(())
}

async fn framing_coalesced_frames(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let mut bytes = Vec::new();
    for _ in 0..3 {
        let body = wire.request_body(MessageId::new_v4(), "session/ping", None, true);
        bytes.extend_from_slice(&frame(&body));
    }
    wire.write(&bytes).await?;
    let deadline = ctx.deadline();
    let mut answered = 0;
    while answered < 3 {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Response { response, .. }) if !response.id.is_nil() => answered += 1,
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(WireError::Timeout(t)) => fail!(
                "only {answered} of 3 frames written at once were answered within {}",
                seconds(t)
            ),
            Err(e) => fail!("3 frames written at once: {e}"),
        }
    }
    Ok(())
}

async fn framing_unparseable_body(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let bodies: [(&str, &[u8]); 2] = [
        ("a body that is not JSON", br#"{"v":"gabp/1","id":"#),
        ("a body that is not UTF-8", &[0xff, 0xfe, b'{', b'}']),
    ];
    for (what, body) in bodies {
        wire.send_body(body).await?;
        let r = wire
            .unattributed_response(ctx.deadline(), ctx.answer())
            .await
            .map_err(|e| kept_open(e, what))?;
        if !r.id.is_nil() {
            fail!("{what} was answered with id {} instead of the nil id", r.id);
        }
        expect_error(&r, ErrorCode::PARSE_ERROR, what)?;
        still_works(&mut wire, ctx, what).await?;
    }
    Ok(())
}

async fn framing_invalid_envelope(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    wire.register(id, "(a request without a method)", true);
    let body = format!(r#"{{"v":"gabp/1","id":"{id}","type":"request"}}"#);
    wire.send_body(body.as_bytes()).await?;
    let what = "a request without `method`";
    let r = match wire.response_to(id, ctx.deadline(), ctx.answer()).await {
        Ok(r) => r,
        Err(WireError::Timeout(t)) => match wire.stray.first() {
            Some(r) => fail!(
                "{what} was answered with id {} instead of the message's id {id}",
                r.id
            ),
            None => fail!("{what}: no answer within {}", seconds(t)),
        },
        Err(e) => return Err(kept_open(e, what)),
    };
    let allowed = [
        ErrorCode::INVALID_REQUEST,
        ErrorCode::MISSING_REQUIRED_FIELD,
        ErrorCode::INVALID_FIELD_VALUE,
    ];
    if !r.error_object().is_some_and(|e| allowed.contains(&e.code)) {
        fail!(
            "{what} was answered {} instead of error -32600, -32202 or -32203",
            describe(&r)
        );
    }
    still_works(&mut wire, ctx, what).await
}

async fn limits_advertised(ctx: &mut Ctx) -> CheckResult {
    let advertised = ctx
        .welcome
        .as_ref()
        .and_then(|w| w["capabilities"]["limits"]["maxMessageSize"].as_u64());
    match advertised {
        Some(limit) => {
            ctx.limit = Some(limit);
            Ok(())
        }
        None => fail!(
            "capabilities.limits.maxMessageSize is not advertised (a mod advertises the limits it enforces; \
             the size checks assume the default of {DEFAULT_MAX_MESSAGE_SIZE} bytes)"
        ),
    }
}

async fn limits_max_message_size_accepted(ctx: &mut Ctx) -> CheckResult {
    let (limit, assumed) = ctx.message_limit()?;
    let size = usize::try_from(limit).unwrap_or(usize::MAX);
    let which = if assumed {
        "the default maxMessageSize"
    } else {
        "the advertised maxMessageSize"
    };
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    wire.register(id, "session/ping", true);
    let what = format!("a session/ping of exactly {limit} bytes, {which}");
    wire.send_body(&padded_ping(id, size))
        .await
        .map_err(|e| Verdict::Fail(format!("{what}: {e}")))?;
    match wire.response_to(id, ctx.deadline(), ctx.answer()).await {
        Ok(r) => {
            expect_result(&r, &what)?;
            Ok(())
        }
        Err(WireError::Timeout(_)) if wire.stray.iter().any(|r| r.id.is_nil()) => fail!(
            "{what} was refused as oversized: the mod enforces a smaller limit than it advertises"
        ),
        Err(e) => fail!("{what}: {e}"),
    }
}

async fn framing_oversized_refused(ctx: &mut Ctx) -> CheckResult {
    let (limit, assumed) = ctx.message_limit()?;
    let size = usize::try_from(limit + 1).unwrap_or(usize::MAX);
    let mut wire = ctx.session().await?;
    let id = MessageId::new_v4();
    // Its answer, if the mod executes it, is recognised but not waited for.
    wire.register(id, "session/ping (oversized)", false);
    let what = format!(
        "a frame of {} bytes, one over {} maxMessageSize of {limit}",
        limit + 1,
        if assumed {
            "the default"
        } else {
            "the advertised"
        }
    );
    wire.send_body(&padded_ping(id, size)).await.map_err(|e| {
        Verdict::Fail(format!(
            "{what}: {e} (the mod must skip the body and keep reading)"
        ))
    })?;
    let deadline = ctx.deadline();
    let refusal = loop {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Response {
                answers: Some(answered),
                ..
            }) if answered == id => fail!(
                "the mod executed {what} instead of refusing it with -32600 and skipping the body"
            ),
            Ok(Incoming::Response {
                response,
                answers: None,
            }) => break response,
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(e) => return Err(kept_open(e, &what)),
        }
    };
    if !refusal.id.is_nil() {
        fail!(
            "{what} was answered with id {} instead of the nil id",
            refusal.id
        );
    }
    let e = expect_error(&refusal, ErrorCode::INVALID_REQUEST, &what)?;
    let data_limit = e
        .data
        .as_ref()
        .and_then(|d| d.get("maxMessageSize"))
        .and_then(Value::as_u64);
    match data_limit {
        None => fail!("{what} was refused with -32600 but without data.maxMessageSize"),
        Some(stated) if !assumed && stated != limit => {
            fail!("the refusal says data.maxMessageSize = {stated}, the welcome advertises {limit}")
        }
        Some(_) => {}
    }
    still_works(&mut wire, ctx, "refusing an oversized frame").await
}

async fn framing_bad_header_closed(ctx: &mut Ctx) -> CheckResult {
    let mut long_header = b"X-Padding: ".to_vec();
    long_header.resize(64 * 1024, b'a');
    long_header.extend_from_slice(b"\r\n\r\n{}");
    let variants: [(&str, Vec<u8>); 4] = [
        (
            "a header block without Content-Length",
            b"Content-Type: application/json\r\n\r\n{}".to_vec(),
        ),
        (
            "a negative Content-Length",
            b"Content-Length: -5\r\n\r\n{}".to_vec(),
        ),
        (
            "a non-numeric Content-Length",
            b"Content-Length: ten\r\n\r\n{}".to_vec(),
        ),
        ("a 64 KiB header block", long_header),
    ];
    let stall = ctx.options.stall_timeout;
    for (what, bytes) in variants {
        let mut wire = ctx.session().await?;
        // The mod may close before it has read everything: a failed write is fine.
        let _ = wire.write(&bytes).await;
        match wire.wait_closed(stall).await {
            Ok(()) => {}
            Err(WireError::Timeout(_)) => match wire.stray.first() {
                Some(r) => fail!(
                    "after {what} the mod answered {} but kept the connection open for {} \
                     (the next frame cannot be found: it must close)",
                    describe(r).trim_start_matches("with "),
                    seconds(stall)
                ),
                None => fail!(
                    "the mod stalled after {what}: it neither answered nor closed the connection within {}",
                    seconds(stall)
                ),
            },
            Err(e) => fail!("after {what}: {e}"),
        }
        for r in &wire.stray {
            let parse_error = r
                .error_object()
                .is_some_and(|e| e.code == ErrorCode::PARSE_ERROR);
            if !(r.id.is_nil() && parse_error) {
                fail!(
                    "after {what} the mod answered {} with id {} (expected -32700 with the nil id, or nothing)",
                    describe(r).trim_start_matches("with "),
                    r.id
                );
            }
        }
    }
    Ok(())
}

async fn concurrency_no_head_of_line_blocking(ctx: &mut Ctx) -> CheckResult {
    if !(ctx.has_tool("demo/sleep") && ctx.has_tool("demo/echo")) {
        skip!("needs a slow and a fast tool, and the mod lists no demo/sleep and demo/echo");
    }
    let slow = ctx.options.slow_call;
    let mut wire = ctx.session().await?;
    let nonce = MessageId::new_v4().to_string();
    let sleep_args = json!({ "name": "demo/sleep", "arguments": { "ms": slow.as_millis() } });
    let echo_args = json!({ "name": "demo/echo", "arguments": { "value": nonce } });
    let sleep_id = wire.send_request("tools/call", Some(sleep_args)).await?;
    let echo_id = wire.send_request("tools/call", Some(echo_args)).await?;
    let waited = slow + ctx.answer();
    let deadline = Instant::now() + waited;
    let (mut echo, mut sleep) = (false, false);
    while !(echo && sleep) {
        let (response, answers) = match wire.next(deadline, waited).await {
            Ok(Incoming::Response { response, answers }) => (response, answers),
            Ok(Incoming::Event(event)) => {
                wire.events.push(event);
                continue;
            }
            Ok(Incoming::Other) => continue,
            Err(WireError::Timeout(t)) => {
                let missing = if echo { "demo/sleep" } else { "demo/echo" };
                fail!("no answer to {missing} within {}", seconds(t));
            }
            Err(e) => return Err(e.into()),
        };
        // By id; when the ids are wrong (another check's business), by content.
        let is_echo = match answers {
            Some(id) if id == echo_id => true,
            Some(id) if id == sleep_id => false,
            _ if response.id.is_nil() => continue,
            _ => response
                .result()
                .is_some_and(|v| v.to_string().contains(&nonce)),
        };
        let tool = if is_echo { "demo/echo" } else { "demo/sleep" };
        expect_result(&response, tool)?;
        if is_echo {
            if sleep {
                fail!(
                    "demo/echo was answered only after demo/sleep ({}): a slow call held up a fast one",
                    seconds(slow)
                );
            }
            echo = true;
        } else {
            sleep = true;
        }
    }
    Ok(())
}

fn default_trigger() -> EventTrigger {
    EventTrigger::new(
        "player/teleport",
        "player/move",
        (1..=3).map(|x| json!({ "x": x, "y": 1, "z": 1 })),
    )
}

async fn events_seq_contiguous(ctx: &mut Ctx) -> CheckResult {
    let channels = ctx.channels();
    if channels.is_empty() {
        skip!("the mod advertises no event channels");
    }
    if !ctx.advertises("events/subscribe") {
        skip!("the mod advertises channels but not events/subscribe");
    }
    let trigger = match &ctx.options.event_trigger {
        Some(trigger) => Some(trigger.clone()),
        None => {
            let trigger = default_trigger();
            (ctx.has_tool(&trigger.tool) && channels.contains(&trigger.channel)).then_some(trigger)
        }
    };
    let mut wire = ctx.session().await?;
    let r = wire
        .call(
            "events/subscribe",
            Some(json!({ "channels": channels })),
            ctx.answer(),
        )
        .await?;
    let result = expect_result(&r, "events/subscribe of the advertised channels")?;
    if let Err(e) = check_result("events/subscribe", result) {
        fail!("the events/subscribe result does not match its schema: {e}");
    }

    let deadline = match &trigger {
        Some(trigger) => {
            for args in &trigger.arguments {
                let params = json!({ "name": trigger.tool, "arguments": args });
                let r = wire.call("tools/call", Some(params), ctx.answer()).await?;
                if r.result().is_none() {
                    skip!(
                        "the trigger {} refused {} ({}); name another trigger in the options",
                        trigger.tool,
                        short(&Value::Object(args.clone())),
                        describe(&r).trim_start_matches("with ")
                    );
                }
            }
            ctx.deadline()
        }
        None => Instant::now() + ctx.options.event_listen,
    };
    let wanted = trigger.as_ref().map_or(0, |t| t.arguments.len());
    let on_trigger = |events: &[Event]| {
        trigger.as_ref().map_or(0, |t| {
            events
                .iter()
                .filter(|e| e.channel.as_str() == t.channel)
                .count()
        })
    };
    while on_trigger(&wire.events) < wanted || trigger.is_none() {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(WireError::Timeout(t)) => {
                if let Some(trigger) = &trigger {
                    fail!(
                        "only {} of {wanted} events on {} arrived within {} of calling {}",
                        on_trigger(&wire.events),
                        trigger.channel,
                        seconds(t),
                        trigger.tool
                    );
                }
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }

    let mut by_channel: HashMap<&str, Vec<u64>> = HashMap::new();
    for event in &wire.events {
        by_channel
            .entry(event.channel.as_str())
            .or_default()
            .push(event.seq);
    }
    if trigger.is_none() && by_channel.values().all(|s| s.len() < 2) {
        skip!(
            "no events to check: no known tool publishes (player/teleport) and the mod published fewer than \
             two events on a channel within {}; name a trigger in the options",
            seconds(ctx.options.event_listen)
        );
    }
    let mut names: Vec<&&str> = by_channel.keys().collect();
    names.sort();
    for channel in names {
        let seqs = &by_channel[*channel];
        for pair in seqs.windows(2) {
            if pair[1] != pair[0] + 1 {
                fail!(
                    "{channel}: seq {} followed seq {} (expected {}; seq counts the events of a channel without gaps)",
                    pair[1],
                    pair[0],
                    pair[0] + 1
                );
            }
        }
    }
    Ok(())
}

async fn session_goodbye(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let r = wire
        .call(
            "session/goodbye",
            Some(json!({ "reason": "conformance run done" })),
            ctx.answer(),
        )
        .await?;
    let result = expect_result(&r, "session/goodbye")?;
    if let Err(e) = check_result("session/goodbye", result) {
        fail!("the goodbye result does not match its schema: {e}");
    }
    match wire.wait_closed(ctx.options.stall_timeout).await {
        Ok(()) => Ok(()),
        Err(WireError::Timeout(t)) => fail!(
            "the mod answered session/goodbye but kept the connection open for {} (it must close it)",
            seconds(t)
        ),
        Err(e) => fail!("after session/goodbye: {e}"),
    }
}

async fn responses_ids_match(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let upper = MessageId::parse(&MessageId::new_v4().as_str().to_uppercase())
        .unwrap_or_else(|_| MessageId::new_v4());
    let list = if ctx.advertises("tools/list") {
        "tools/list"
    } else {
        "session/ping"
    };
    let requests = [
        (MessageId::new_v4(), "session/ping"),
        (upper, "session/ping"),
        (MessageId::new_v4(), list),
        (MessageId::new_v4(), "session/ping"),
    ];
    let mut bytes = Vec::new();
    for (id, method) in requests {
        let params = (method == "tools/list").then(|| json!({}));
        bytes.extend_from_slice(&frame(&wire.request_body(id, method, params, true)));
    }
    wire.write(&bytes).await?;
    let deadline = ctx.deadline();
    let mut answered = Vec::new();
    let mut responses = 0;
    while responses < requests.len() {
        match wire.next(deadline, ctx.answer()).await {
            Ok(Incoming::Response { response, answers }) if !response.id.is_nil() => {
                responses += 1;
                answered.extend(answers);
            }
            Ok(Incoming::Event(event)) => wire.events.push(event),
            Ok(_) => {}
            Err(WireError::Timeout(_)) => break,
            Err(e) => return Err(e.into()),
        }
    }
    let mut problems = ctx.journal.id_violations();
    for (id, method) in requests {
        if !answered.contains(&id) {
            problems.push(format!(
                "did not answer {method} (id {id}) within {}",
                seconds(ctx.answer())
            ));
        }
    }
    match problems.first() {
        None => Ok(()),
        Some(first) if problems.len() == 1 => fail!("the mod {first}"),
        Some(first) => fail!(
            "the mod {first}; {} more id problems in this run",
            problems.len() - 1
        ),
    }
}

async fn envelope_strictly_valid(ctx: &mut Ctx) -> CheckResult {
    let violations = ctx.journal.strict_violations();
    match violations.first() {
        None => Ok(()),
        Some(first) => fail!(
            "{} of the mod's messages break the strict rules; first, {first}",
            violations.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_suite_tables_agree() {
        assert_eq!(INFO.len(), CHECKS.len());
        for (info, check) in INFO.iter().zip(CHECKS) {
            assert_eq!(info, &check.info);
        }
    }
}
