//! The properties the `typed_decode` fuzz target checks, shared by the cargo-fuzz target
//! (`fuzz_targets/typed_decode.rs`) and the seed replay test of gabp-types (`tests/fuzz_seeds.rs`),
//! so CI covers every committed seed without a fuzzer. A violated property panics.
//!
//! Input: byte 0 picks one of [`CASES`] (modulo their number), the rest is that case's input. The
//! cases cover both envelope decoders, the params and the result type of every method in
//! [`METHODS`] (checked against `CORE_METHODS` and `EXTENSION_METHODS` by the seed test), the typed
//! event payloads of [`CHANNELS`], the other types read from peers, the string formats, and deep
//! nesting.
//!
//! Properties, wherever they apply: no panic; a value that decodes serializes to JSON that decodes
//! to an equal value and serializes to the same JSON again; what our types serialize, the decoders
//! accept; the strict decoder accepts nothing the lenient one refuses, and both read it alike
//! (SPEC/1.0 gabp.md §3.5); `success_result` finds a result only where both decoders read that result; what the decoder accepts, the method's typed params read; nesting is
//! bounded by serde_json's depth limit and never overflows the stack.

use std::fmt::Debug;

use gabp_types::decode::{
    check_params, check_result_in, decode, decode_response_to, decode_value, success_result,
    DecodeError, DecodeMode,
};
use gabp_types::methods::*;
use gabp_types::{
    BridgeFile, Capabilities, ChannelName, ErrorCode, ErrorObject, ExtraMembers, Message,
    MessageId, MethodName, Params, Request, Timestamp, ToolName, Uri,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

const MODES: [DecodeMode; 2] = [DecodeMode::Strict, DecodeMode::Lenient];
const ID: &str = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";
/// serde_json's nesting limit: a value nested deeper does not parse.
const DEPTH_LIMIT: usize = 128;

/// One case of the target: what it reads (`subject`, `part`) and the check of its input.
pub struct Case {
    /// A method or channel name, or a type.
    pub subject: &'static str,
    /// `params`, `result`, `payload`, `type`, ...
    pub part: &'static str,
    /// Checks the input.
    pub run: fn(&[u8]),
}

/// The `typed_decode` target: byte 0 picks the case, the rest is its input.
pub fn typed_decode(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    (CASES[usize::from(selector) % CASES.len()].run)(input);
}

/// Every method: `$m` its `Method` type, `$result` how its result is checked. Every typed channel:
/// its name and payload check.
macro_rules! cases {
    (
        methods { $($m:ident => $result:ident),* $(,)? }
        channels { $($channel:expr => $payload:ident),* $(,)? }
    ) => {
        /// The methods whose params and result have cases.
        pub const METHODS: &[&str] = &[$($m::NAME),*];

        /// The channels whose payload has a case.
        pub const CHANNELS: &[&str] = &[$($channel),*];

        /// Every case. A seed names its case by index: a new case moves the seeds of those after it.
        pub const CASES: &[Case] = &[
            Case { subject: "message", part: "envelope", run: envelope },
            Case { subject: "strings", part: "formats", run: formats },
            Case { subject: "message", part: "deep nesting", run: deep },
            Case { subject: "BridgeFile", part: "type", run: standalone::<BridgeFile> },
            Case { subject: "Capabilities", part: "type", run: standalone::<Capabilities> },
            Case { subject: "ErrorObject", part: "type", run: standalone::<ErrorObject> },
            $(
                Case { subject: $m::NAME, part: "params", run: params::<$m> },
                Case { subject: $m::NAME, part: "result", run: $result::<$m> },
            )*
            $(Case { subject: $channel, part: "payload", run: $payload },)*
        ];

        /// Whether the typed params of `method` read from `params` (`None`: not a listed method).
        fn read_params(method: &str, params: Option<&Params>) -> Option<Result<(), String>> {
            let read = |decoded: Result<(), serde_json::Error>| decoded.map_err(|e| e.to_string());
            match method {
                $(
                    $m::NAME => Some(read(match params {
                        Some(p) => p.decode::<<$m as Method>::Params>().map(drop),
                        None => serde_json::from_str::<<$m as Method>::Params>("{}").map(drop),
                    })),
                )*
                _ => None,
            }
        }
    };
}

cases! {
    methods {
        SessionHello => result,
        SessionPing => result,
        SessionGoodbye => result,
        ToolsList => result,
        ToolsCall => tool_result,
        ToolsCancel => result,
        EventsSubscribe => result,
        EventsUnsubscribe => result,
        ResourcesList => result,
        ResourcesRead => result,
        StateGet => result,
        StateSet => result,
        AttentionCurrent => result,
        AttentionAck => result,
        TimeStatus => result,
        TimePause => result,
        TimeResume => result,
        TimeStep => result,
        InputKey => result,
        InputTextMethod => result,
        InputMouse => result,
        EnvSpaces => result,
        EnvReset => result,
        EnvStep => result,
    }
    channels {
        "attention/opened" => attention_payload,
        TOOLS_CHANGED_CHANNEL => tools_changed_payload,
        PROGRESS_CHANNEL => progress_payload,
        TIME_CHANGED_CHANNEL => time_changed_payload,
    }
}

/// `typed` serializes to JSON that reads back equal and serializes to the same JSON; returns it.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(typed: &T) -> Vec<u8> {
    let json = serde_json::to_vec(typed).expect("a decoded value serializes");
    let again: T = serde_json::from_slice(&json)
        .unwrap_or_else(|e| panic!("{} does not read back: {e}", lossy(&json)));
    assert_eq!(&again, typed, "re-serializing changed the value");
    let json_again = serde_json::to_vec(&again).expect("serializes");
    assert_eq!(
        lossy(&json_again),
        lossy(&json),
        "serializing is not stable"
    );
    json
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `head`, then `input`, then `tail`: the input placed inside a message.
fn splice(head: &str, input: &[u8], tail: &str) -> Vec<u8> {
    [head.as_bytes(), input, tail.as_bytes()].concat()
}

fn request_head(method: &str) -> String {
    format!(r#"{{"v":"gabp/1","id":"{ID}","type":"request","method":"{method}","params":"#)
}

const RESPONSE_HEAD: &str =
    r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"response","result":"#;

fn event_head(channel: &str) -> String {
    format!(r#"{{"v":"gabp/1","id":"{ID}","type":"event","channel":"{channel}","seq":7,"payload":"#)
}

/// A message the decoder accepted in `mode` serializes to a body it reads back equal.
fn message_round_trip(message: &Message, mode: DecodeMode) {
    let json = serde_json::to_vec(message).expect("a message serializes");
    let again = decode(&json, mode).unwrap_or_else(|e| {
        panic!(
            "a re-serialized message is refused ({mode:?}): {e}: {}",
            lossy(&json)
        )
    });
    assert_eq!(&again, message, "re-serializing changed the message");
    let json_again = serde_json::to_vec(&again).expect("serializes");
    assert_eq!(
        lossy(&json_again),
        lossy(&json),
        "serializing is not stable"
    );
}

/// Both decoders on one body. Returns the outcome per mode (strict, lenient).
///
/// Checks: each accepted message round-trips; strict acceptance implies the same lenient reading;
/// the fast path reads as the general one (`decode_value`); `Message`'s own `Deserialize` reads as
/// the lenient decoder; refusals carry a known code; an accepted request of a listed method reads
/// as its typed params.
fn envelope_checks(body: &[u8]) -> [Result<Message, DecodeError>; 2] {
    let outcomes = MODES.map(|mode| decode(body, mode));
    let parsed = serde_json::from_slice::<Value>(body).ok();
    for (mode, outcome) in MODES.into_iter().zip(&outcomes) {
        if let Some(value) = &parsed {
            assert_eq!(
                &decode_value(value.clone(), mode),
                outcome,
                "the general path reads otherwise ({mode:?})"
            );
        }
        match outcome {
            Ok(message) => {
                message_round_trip(message, mode);
                if let Message::Request(request) = message {
                    typed_params_read(request);
                }
            }
            Err(error) => assert!(
                DecodeError::CODES.contains(&error.code()),
                "unexpected refusal code {:?}",
                error.code()
            ),
        }
    }
    if let Ok(strict) = &outcomes[0] {
        let lenient = outcomes[1]
            .as_ref()
            .expect("the lenient decoder accepts what the strict one does");
        assert_eq!(lenient, strict, "strict and lenient readings differ");
    }
    if let Some((id, range)) = success_result(body) {
        let result = serde_json::from_slice::<Value>(&body[range]).expect("the result is JSON");
        let expected = Message::Response(gabp_types::Response::success(id, result));
        for outcome in &outcomes {
            assert_eq!(
                outcome.as_ref().ok(),
                Some(&expected),
                "success_result reads otherwise"
            );
        }
    }
    if parsed.is_some() {
        let derived = serde_json::from_slice::<Message>(body).ok();
        assert_eq!(
            derived.as_ref(),
            outcomes[1].as_ref().ok(),
            "Message's Deserialize reads otherwise"
        );
    }
    outcomes
}

/// An accepted request of a listed method reads as its typed params, unless serde_json cannot read
/// the params at all: the decoder keeps params as text and does not parse `tools/call` arguments,
/// which may nest deeper than serde_json's limit, hold a lone surrogate or a number beyond `f64`.
fn typed_params_read(request: &Request) {
    let Some(Err(e)) = read_params(request.method.as_str(), request.params.as_ref()) else {
        return;
    };
    let readable = request
        .params
        .as_ref()
        .is_none_or(|p| serde_json::from_str::<Value>(p.as_json()).is_ok());
    assert!(
        !readable,
        "{} params the decoder accepted do not read as their type: {e}: {:?}",
        request.method, request.params
    );
}

/// The envelope case: the input is a whole message body.
fn envelope(input: &[u8]) {
    let _ = envelope_checks(input);
}

/// Standalone types read from peers: the typed value round-trips.
fn standalone<T: Serialize + DeserializeOwned + PartialEq + Debug>(input: &[u8]) {
    if let Ok(typed) = serde_json::from_slice::<T>(input) {
        round_trip(&typed);
    }
}

/// The params of `M`: the typed value round-trips; a request with the params we write decodes;
/// `check_params` accepts strictly only what it accepts leniently; the input as the params of a
/// request passes [`envelope_checks`].
fn params<M: Method>(input: &[u8])
where
    M::Params: PartialEq + Debug,
{
    if let Ok(typed) = serde_json::from_slice::<M::Params>(input) {
        let json = round_trip(&typed);
        let params =
            serde_json::from_slice::<Params>(&json).expect("params serialize to an object");
        let method = MethodName::new(M::NAME).expect("a registry name");
        let request = Request {
            id: MessageId::parse(ID).expect("a UUID"),
            method,
            params: Some(params),
        };
        let body = serde_json::to_vec(&Message::from(request)).expect("serializes");
        // The type takes any `launchId`; strictly it must be a UUID (SPEC/1.0 gabp.md §3.5).
        let lenient_only = M::NAME == SessionHello::NAME
            && serde_json::from_slice::<Value>(&json)
                .ok()
                .is_some_and(|v| {
                    v["launchId"]
                        .as_str()
                        .is_none_or(|id| MessageId::parse(id).is_err())
                });
        for mode in MODES {
            if mode == DecodeMode::Strict && lenient_only {
                continue;
            }
            if let Err(e) = decode(&body, mode) {
                panic!("{} params we write are refused ({mode:?}): {e}", M::NAME);
            }
        }
    }
    if let Ok(raw) = serde_json::from_slice::<Params>(input) {
        let checked = MODES.map(|mode| check_params(M::NAME, Some(&raw), mode));
        if checked[0].is_ok() {
            assert!(
                checked[1].is_ok(),
                "lenient check_params refuses what strict accepts"
            );
        }
    }
    let _ = envelope_checks(&splice(&request_head(M::NAME), input, "}"));
}

/// The result of `M`: the typed value round-trips; what reads liberally passes the lenient check,
/// and, its members beyond `gabp/1` cleared, the strict one; the input as the result of a response
/// passes [`response_checks`].
fn result<M: Method>(input: &[u8])
where
    M::Result: ExtraMembers + PartialEq + Debug,
{
    if let Ok(mut typed) = serde_json::from_slice::<M::Result>(input) {
        let json = round_trip(&typed);
        let value: Value = serde_json::from_slice(&json).expect("JSON");
        if let Err(e) = check_result_in(M::NAME, &value, DecodeMode::Lenient) {
            panic!("a {} result we write is refused leniently: {e}", M::NAME);
        }
        typed.clear_extra();
        assert_eq!(typed.first_extra(), None, "clear_extra left a member");
        let value = serde_json::to_value(&typed).expect("serializes");
        if let Err(e) = check_result_in(M::NAME, &value, DecodeMode::Strict) {
            panic!("a cleared {} result is refused strictly: {e}", M::NAME);
        }
    }
    response_checks(M::NAME, input);
}

/// The result of `tools/call`: the tool's own value, its content items split off; checking it does
/// not depend on the mode (SPEC/1.0 extensions.md §content).
fn tool_result<M: Method>(input: &[u8]) {
    if let Ok(typed) = serde_json::from_slice::<ToolResult>(input) {
        let json = round_trip(&typed);
        let value: Value = serde_json::from_slice(&json).expect("JSON");
        let checked = MODES.map(|mode| check_result_in(M::NAME, &value, mode).is_ok());
        assert_eq!(
            checked[0], checked[1],
            "the tools/call result check depends on the mode"
        );
    }
    response_checks(M::NAME, input);
}

/// The input as the result of a response to `method`: [`envelope_checks`], and `decode_response_to`
/// accepts strictly only what it accepts leniently, reads both alike, and reads back what it
/// accepted.
fn response_checks(method: &str, input: &[u8]) {
    let body = splice(RESPONSE_HEAD, input, "}");
    let plain = envelope_checks(&body);
    let outcomes = MODES.map(|mode| decode_response_to(&body, method, mode));
    for (mode, (outcome, plain)) in MODES.into_iter().zip(outcomes.iter().zip(&plain)) {
        let Ok(message) = outcome else { continue };
        assert_eq!(
            Ok(message),
            plain.as_ref(),
            "decode_response_to reads otherwise"
        );
        let json = serde_json::to_vec(message).expect("serializes");
        let again = decode_response_to(&json, method, mode)
            .unwrap_or_else(|e| panic!("a re-serialized {method} response is refused: {e}"));
        assert_eq!(&again, message);
    }
    if let Ok(strict) = &outcomes[0] {
        assert_eq!(
            outcomes[1].as_ref().ok(),
            Some(strict),
            "decode_response_to: strict and lenient readings differ"
        );
    }
}

/// A typed event payload on `channel`: the typed value round-trips; made strict by `strict_form`
/// (which says whether that is possible), an event carrying it decodes strictly; the input as the
/// payload of an event passes [`envelope_checks`], and an event accepted strictly reads as `T`.
fn payload<T>(channel: &str, input: &[u8], strict_form: fn(&mut T) -> bool)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    if let Ok(mut typed) = serde_json::from_slice::<T>(input) {
        round_trip(&typed);
        let modes: &[DecodeMode] = if strict_form(&mut typed) {
            &MODES
        } else {
            &MODES[1..]
        };
        let json = serde_json::to_vec(&typed).expect("serializes");
        let body = splice(&event_head(channel), &json, "}");
        for &mode in modes {
            if let Err(e) = decode(&body, mode) {
                panic!("a {channel} payload we write is refused ({mode:?}): {e}");
            }
        }
    }
    let [strict, _] = envelope_checks(&splice(&event_head(channel), input, "}"));
    if let Ok(Message::Event(event)) = strict {
        if event.channel == channel {
            if let Err(e) = serde_json::from_value::<T>(event.payload) {
                panic!("a strictly valid {channel} payload does not read as its type: {e}");
            }
        }
    }
}

fn attention_payload(input: &[u8]) {
    payload::<gabp_types::Attention>("attention/opened", input, |a| {
        a.clear_extra();
        true
    });
}

fn tools_changed_payload(input: &[u8]) {
    payload::<ToolsChangedPayload>(TOOLS_CHANGED_CHANNEL, input, |_| true);
}

fn progress_payload(input: &[u8]) {
    // The type takes any number; strictly, both must be >= 0 (SPEC/1.0 extensions.md §progress).
    payload::<ProgressPayload>(PROGRESS_CHANNEL, input, |p| {
        p.progress >= 0.0 && p.total.is_none_or(|t| t >= 0.0)
    });
}

fn time_changed_payload(input: &[u8]) {
    payload::<TimeState>(TIME_CHANGED_CHANNEL, input, |t| {
        t.clear_extra();
        true
    });
}

/// The input as a string for every validating newtype (the ones the envelope and the methods are
/// made of); its first 8 bytes as Unix milliseconds for `Timestamp::from_unix_millis`.
///
/// Checks: what validates round-trips; a `MessageId` keeps its text and names the UUID the uuid
/// crate reads, and every hyphenated UUID the uuid crate reads is one; a canonical channel name is
/// a lenient one; a timestamp we make is valid RFC 3339.
fn formats(input: &[u8]) {
    if let Some(millis) = input.first_chunk::<8>() {
        let made = Timestamp::from_unix_millis(u64::from_le_bytes(*millis));
        assert!(
            Timestamp::new(made.as_str()).is_ok(),
            "Timestamp::from_unix_millis made an invalid timestamp: {made}"
        );
    }
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let uuid = uuid::Uuid::try_parse(text)
        .ok()
        .filter(|_| text.len() == 36);
    match MessageId::parse(text) {
        Ok(id) => {
            assert_eq!(id.as_str(), text, "MessageId changed the text");
            assert_eq!(Some(id.as_uuid()), uuid, "MessageId names another UUID");
            round_trip(&id);
        }
        Err(_) => assert!(uuid.is_none(), "a hyphenated UUID is refused: {text:?}"),
    }
    if let Ok(name) = ChannelName::new(text) {
        assert!(ChannelName::new_lenient(text).is_ok());
        assert!(name.is_canonical());
        round_trip(&name);
    }
    if let Ok(name) = MethodName::new(text) {
        round_trip(&name);
    }
    if let Ok(name) = ToolName::new(text) {
        round_trip(&name);
    }
    if let Ok(uri) = Uri::new(text) {
        assert!(!uri.scheme().is_empty() && text.starts_with(uri.scheme()));
        round_trip(&uri);
    }
    if let Ok(timestamp) = Timestamp::new(text) {
        round_trip(&timestamp);
    }
    if let Ok(version) = SchemaVersion::new(text) {
        round_trip(&version);
    }
}

/// Places of a message where deep nesting goes: `(head, tail, through serde_json::Value)`. Params
/// are kept as text: `tools/call` arguments and the params of other methods are not parsed by the
/// decoder at all.
const DEEP_SPOTS: [(&str, &str, bool); 8] = [
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"tools/call","params":{"name":"world/get","arguments":{"k":"#,
        "}}}",
        false,
    ),
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"game/custom","params":{"k":"#,
        "}}",
        false,
    ),
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"state/set","params":{"updates":{"k":"#,
        "}}}",
        true,
    ),
    (RESPONSE_HEAD, "}", true),
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"event","channel":"game/tick","seq":0,"payload":"#,
        "}",
        true,
    ),
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"response","error":{"code":-32000,"message":"m","data":"#,
        "}}",
        true,
    ),
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"event","channel":"attention/opened","seq":0,"payload":{"attentionId":"a","state":"open","severity":"error","blocking":true,"stateInvalidated":false,"summary":"s","openedAtSequence":1,"latestSequence":1,"totalUrgentEntries":1,"x":"#,
        "}}",
        true,
    ),
    (
        r#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"tools/call","params":{"name":"world/get","_meta":{"k":"#,
        "}}}",
        false,
    ),
];

/// Deep nesting: bytes 0-1 give the depth (up to 4096), byte 2 the spot of [`DEEP_SPOTS`] (and,
/// bit 7, arrays or objects); the rest goes innermost.
///
/// Checks: [`envelope_checks`] and, for a response, [`response_checks`] (so no stack overflow); a
/// body nested beyond serde_json's limit through a parsed value is refused as a parse error.
fn deep(input: &[u8]) {
    let [low, high, spot, inner @ ..] = input else {
        return;
    };
    let depth = usize::from(u16::from_le_bytes([*low, *high]) % 4096);
    let (head, tail, parsed) = DEEP_SPOTS[usize::from(spot & 0x7f) % DEEP_SPOTS.len()];
    let (open, close) = if spot & 0x80 == 0 {
        ("[", "]")
    } else {
        (r#"{"k":"#, "}")
    };
    let nested = [
        open.repeat(depth).as_bytes(),
        inner,
        close.repeat(depth).as_bytes(),
    ]
    .concat();
    let body = splice(head, &nested, tail);
    let outcomes = if head == RESPONSE_HEAD {
        response_checks(ToolsCall::NAME, &nested);
        MODES.map(|mode| decode(&body, mode))
    } else {
        envelope_checks(&body)
    };
    if parsed && depth >= DEPTH_LIMIT {
        for outcome in outcomes {
            let code = outcome.err().map(|e| e.code());
            assert_eq!(code, Some(ErrorCode::PARSE_ERROR), "nested {depth} deep");
        }
    }
}
