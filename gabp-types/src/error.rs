//! [`Error`], this crate's one error; the error codes and the error object of a response; and the two rules for
//! the text of error messages: [`shorten`] and [`without_json_position`].

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::methods::MAX_STEP_TICKS;
use crate::strict::NonEmptyString;
use crate::DecodeError;

/// Why this crate refused something: a message body a decoder refused, or a value outside its schema.
///
/// The decoders return the boxed [`DecodeError`] itself, which `?` turns into [`Error::Decode`]; the
/// constructors of the checked values (names, ids, tokens, URIs, timestamps, ...) return this type, and what
/// reads or writes JSON ([`Params`](crate::Params), [`encode`](crate::encode)) returns `serde_json::Error`. No
/// variant quotes a token.
///
/// ```
/// use gabp_types::{Error, ToolName};
///
/// let error = ToolName::new("Teleport").unwrap_err();
/// assert!(matches!(error, Error::InvalidName { kind: "tool", .. }));
/// assert!(error.to_string().starts_with("tool name \"Teleport\" does not match"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A message body a decoder refused.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A method, tool or channel name that does not match its pattern.
    #[non_exhaustive]
    #[error("{kind} name {name:?} does not match {pattern}")]
    InvalidName {
        /// What kind of name was expected (`method`, `tool`, `channel`).
        kind: &'static str,
        /// The offending text.
        name: String,
        /// The pattern it had to match.
        pattern: &'static str,
    },
    /// A message id that is not a hyphenated UUID.
    #[error("not a hyphenated UUID (expected 8-4-4-4-12 hexadecimal digits)")]
    InvalidMessageId,
    /// A `time/step` tick count outside 1..=[`MAX_STEP_TICKS`].
    #[non_exhaustive]
    #[error("ticks must be from 1 to {MAX_STEP_TICKS}, not {ticks}")]
    StepTicksOutOfRange {
        /// The count given.
        ticks: u64,
    },
    /// A `session/hello` token shorter than 32 characters.
    #[error("the token must be at least 32 characters long")]
    ShortToken,
    /// A schema version outside the 1.x line.
    #[error("schema version {0:?} does not match ^1\\.\\d+(?:\\.\\d+)?$")]
    InvalidSchemaVersion(String),
    /// An empty string where one is not allowed.
    #[error("must not be empty")]
    EmptyString,
    /// A string that is not an absolute URI.
    #[error("{0:?} is not an absolute URI")]
    InvalidUri(String),
    /// A string that is not an RFC 3339 date-time.
    #[error("{0:?} is not an RFC 3339 date-time")]
    InvalidTimestamp(String),
    /// An item of a unique array that repeats an earlier one.
    #[non_exhaustive]
    #[error("item {index} repeats an earlier item")]
    DuplicateItem {
        /// Index of the repeated item.
        index: usize,
    },
    /// An array with fewer items than required.
    #[non_exhaustive]
    #[error("at least {min} item(s) required")]
    TooFewItems {
        /// The minimum.
        min: usize,
    },
    /// A number below its bound.
    #[non_exhaustive]
    #[error("{value} is below the minimum {min}")]
    BelowMinimum {
        /// The value given.
        value: u64,
        /// The minimum.
        min: u64,
    },
    /// A capability extension key that does not match `^[a-z][a-z0-9_-]*$`.
    #[error("extension key {0:?} does not match ^[a-z][a-z0-9_-]*$")]
    InvalidExtensionKey(String),
    /// A space of the `env` extension that breaks its own rules (a bound of the wrong shape, `n` of 0, ...).
    #[non_exhaustive]
    #[error("invalid space at {pointer:?}: {reason}")]
    InvalidSpace {
        /// The JSON pointer of the offending member, relative to the space.
        pointer: String,
        /// Why.
        reason: String,
    },
    /// A value outside a space of the `env` extension (an action the action space does not contain).
    #[non_exhaustive]
    #[error("{pointer:?}: {reason}")]
    OutsideSpace {
        /// The JSON pointer of the offending element, relative to the value (`""` for the value itself).
        pointer: String,
        /// Why.
        reason: String,
    },
}

/// A numeric GABP error code.
///
/// Named constants cover every code of the registry; any other integer is carried as is (custom codes, or codes
/// of other implementations such as Lib.GAB's `-31000`).
///
/// ```
/// use gabp_types::ErrorCode;
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND.code(), -32601);
/// assert_eq!(ErrorCode::from(-32403).name(), Some("Tool Timeout"));
/// assert!(ErrorCode::from(-32050).is_server_error());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

macro_rules! codes {
    ($($(#[$doc:meta])* $name:ident = $value:literal, $label:literal;)*) => {
        impl ErrorCode {
            $( $(#[$doc])* pub const $name: ErrorCode = ErrorCode($value); )*

            /// Every named code of the registry, in registry order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            /// The registry's name for this code, if it has one.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($label),)*
                    -32099..=-32000 => Some("Server Error"),
                    _ => None,
                }
            }
        }
    };
}

codes! {
    /// -32700: the body is not JSON, or not UTF-8.
    PARSE_ERROR = -32700, "Parse Error";
    /// -32600: JSON, but not a valid message.
    INVALID_REQUEST = -32600, "Invalid Request";
    /// -32601: unknown method.
    METHOD_NOT_FOUND = -32601, "Method Not Found";
    /// -32602: parameters (or tool arguments) fail their schema.
    INVALID_PARAMS = -32602, "Invalid Params";
    /// -32603: internal error (a handler panicked, ...).
    INTERNAL_ERROR = -32603, "Internal Error";
    /// -32100: a request arrived before a successful `session/hello`.
    AUTHENTICATION_REQUIRED = -32100, "Authentication Required";
    /// -32101: `session/hello` carried a wrong token.
    AUTHENTICATION_FAILED = -32101, "Authentication Failed";
    /// -32102: the session has expired.
    SESSION_EXPIRED = -32102, "Session Expired";
    /// -32103: insufficient permissions.
    ACCESS_DENIED = -32103, "Access Denied";
    /// -32200: `v` is not `gabp/1`.
    PROTOCOL_VERSION_MISMATCH = -32200, "Protocol Version Mismatch";
    /// -32201: `type` is not request, response or event.
    INVALID_MESSAGE_TYPE = -32201, "Invalid Message Type";
    /// -32202: a required envelope field is missing.
    MISSING_REQUIRED_FIELD = -32202, "Missing Required Field";
    /// -32203: an envelope field has an invalid value.
    INVALID_FIELD_VALUE = -32203, "Invalid Field Value";
    /// -32300: unknown resource.
    RESOURCE_NOT_FOUND = -32300, "Resource Not Found";
    /// -32301: access to the resource denied.
    RESOURCE_ACCESS_DENIED = -32301, "Resource Access Denied";
    /// -32302: the resource is locked.
    RESOURCE_LOCKED = -32302, "Resource Locked";
    /// -32303: the resource changed during the operation.
    RESOURCE_MODIFIED = -32303, "Resource Modified";
    /// -32400: unknown tool.
    TOOL_NOT_FOUND = -32400, "Tool Not Found";
    /// -32401: the tool exists but is unavailable (for example blocked by attention).
    TOOL_UNAVAILABLE = -32401, "Tool Unavailable";
    /// -32402: the tool returned an error.
    TOOL_EXECUTION_FAILED = -32402, "Tool Execution Failed";
    /// -32403: the tool exceeded its time limit.
    TOOL_TIMEOUT = -32403, "Tool Timeout";
    /// -32404: the call was cancelled with `tools/cancel` before it finished (the `cancel` extension).
    TOOL_CANCELLED = -32404, "Tool Cancelled";
    /// -32500: unknown event channel.
    CHANNEL_NOT_FOUND = -32500, "Channel Not Found";
    /// -32501: subscribing failed.
    SUBSCRIPTION_FAILED = -32501, "Subscription Failed";
    /// -32502: an event could not be delivered.
    EVENT_DELIVERY_FAILED = -32502, "Event Delivery Failed";
    /// -32503: an event channel's buffer overflowed.
    CHANNEL_OVERFLOW = -32503, "Channel Overflow";
}

impl ErrorCode {
    /// The first code of the implementation-defined server range (-32000..=-32099).
    pub const SERVER_ERROR_START: ErrorCode = ErrorCode(-32000);
    /// The last code of the implementation-defined server range.
    pub const SERVER_ERROR_END: ErrorCode = ErrorCode(-32099);

    /// A code in the server range: `server(0)` is -32000, `server(99)` is -32099; `None` past 99.
    pub fn server(offset: u8) -> Option<ErrorCode> {
        (offset <= 99).then(|| ErrorCode(-32000 - i64::from(offset)))
    }

    /// Whether this code lies in the server range -32099..=-32000.
    pub fn is_server_error(self) -> bool {
        (-32099..=-32000).contains(&self.0)
    }

    /// The numeric value.
    pub fn code(self) -> i64 {
        self.0
    }
}

impl From<i64> for ErrorCode {
    fn from(code: i64) -> Self {
        ErrorCode(code)
    }
}

impl From<ErrorCode> for i64 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({})", self.0, name),
            None => write!(f, "{}", self.0),
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorCode({})", self.0)
    }
}

/// The `error` member of a failed response.
///
/// ```
/// use gabp_types::{ErrorCode, ErrorObject};
/// let e = ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")
///     .with_data(serde_json::json!({"method": "unknown/method"}));
/// assert_eq!(serde_json::to_value(&e).unwrap()["code"], -32601);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "GABP Error Object",
    description = "The error member of a failed GABP response."
)]
pub struct ErrorObject {
    /// Numeric error code.
    pub code: ErrorCode,
    /// Human-readable description; never empty.
    pub message: NonEmptyString,
    /// Additional error-specific data.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::strict::present"
    )]
    #[schemars(schema_with = "crate::strict::any_value")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message. An empty message is replaced by the registry name of the code (or
    /// `"error"`), so the object is always valid.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> Self {
        let code = code.into();
        let message = NonEmptyString::new(message.into())
            .unwrap_or_else(|_| NonEmptyString::from_static(code.name().unwrap_or("error")));
        ErrorObject {
            code,
            message,
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The `retryable` flag from `data`, when present.
    pub fn retryable(&self) -> Option<bool> {
        self.data.as_ref()?.get("retryable")?.as_bool()
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error {}: {}", self.code.0, self.message)
    }
}

impl std::error::Error for ErrorObject {}

/// `text` cut to its first `max_chars` characters, followed by `…` (U+2026) when anything was cut.
///
/// The one rule for quoting input, values or long texts in error messages, reports and log lines, so that their
/// size never grows with the input. The cut falls between two characters, never inside a multi-byte one; a text
/// of at most `max_chars` characters is returned as it is, without copying. The ellipsis comes on top of the
/// limit: a cut text has `max_chars + 1` characters.
///
/// ```
/// assert_eq!(gabp_types::shorten("loopback", 20), "loopback");
/// assert_eq!(gabp_types::shorten("größer als", 3), "grö…");
/// ```
pub fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
    }
}

/// How many characters of a name a peer sent (a method, a tool) are quoted in answers and log lines.
pub const QUOTED_NAME_CHARS: usize = 64;

/// `name`, sent by a peer, as it is quoted in answers and log lines: at most its first [`QUOTED_NAME_CHARS`]
/// characters (see [`shorten`]), so that a peer cannot make an answer or a log line grow with what it sends
/// (SPEC/1.0 security.md §7).
///
/// ```
/// let long = format!("a/{}", "b".repeat(10_000));
/// assert_eq!(gabp_types::quoted_name(&long).chars().count(), gabp_types::QUOTED_NAME_CHARS + 1);
/// assert_eq!(gabp_types::quoted_name("tools/list"), "tools/list");
/// ```
pub fn quoted_name(name: &str) -> Cow<'_, str> {
    shorten(name, QUOTED_NAME_CHARS)
}

/// A serde_json error message without the ` at line L column C` that serde_json appends to it.
///
/// The position means nothing for a value that was already parsed, and callers that know it report it
/// separately. Only that exact suffix at the very end is removed, so a message quoting a value that happens to
/// contain " at line " keeps it.
///
/// ```
/// let e = serde_json::from_str::<u8>("300").unwrap_err();
/// assert_eq!(e.to_string(), "invalid value: integer `300`, expected u8 at line 1 column 3");
/// assert_eq!(gabp_types::without_json_position(&e.to_string()), "invalid value: integer `300`, expected u8");
/// ```
pub fn without_json_position(message: &str) -> &str {
    const AT_LINE: &str = " at line ";
    let Some(start) = message.rfind(AT_LINE) else {
        return message;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match message[start + AT_LINE.len()..].split_once(" column ") {
        Some((line, column)) if digits(line) && digits(column) => &message[..start],
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    use crate::methods::{HelloToken, SchemaVersion, StepTicks};
    use crate::{
        BoundedU64, ChannelName, Extensions, MessageId, MethodName, Timestamp, ToolName, UniqueVec,
        Uri,
    };

    #[test]
    fn every_validating_constructor_answers_with_the_crate_error() {
        let name = |kind: &str, name: &str, pattern: &str| {
            format!("{kind} name {name:?} does not match {pattern}")
        };
        let registry = crate::format::NAME_PATTERN;
        let cases: Vec<(Error, String)> = vec![
            (
                ToolName::new("Teleport").unwrap_err(),
                name("tool", "Teleport", registry),
            ),
            (
                ToolName::try_from("a".to_owned()).unwrap_err(),
                name("tool", "a", registry),
            ),
            (
                MethodName::from_static("x").unwrap_err(),
                name("method", "x", registry),
            ),
            (
                "Tools/List".parse::<MethodName>().unwrap_err(),
                name("method", "Tools/List", registry),
            ),
            (
                ChannelName::new("player.move").unwrap_err(),
                name("channel", "player.move", registry),
            ),
            (
                ChannelName::new_lenient("").unwrap_err(),
                name("channel", "", "a non-empty string"),
            ),
            (
                MessageId::parse("{nope}").unwrap_err(),
                "not a hyphenated UUID (expected 8-4-4-4-12 hexadecimal digits)".into(),
            ),
            (
                StepTicks::new(0).unwrap_err(),
                "ticks must be from 1 to 10000, not 0".into(),
            ),
            (
                HelloToken::new("short").unwrap_err(),
                "the token must be at least 32 characters long".into(),
            ),
            (
                SchemaVersion::new("2.0").unwrap_err(),
                r#"schema version "2.0" does not match ^1\.\d+(?:\.\d+)?$"#.into(),
            ),
            (
                NonEmptyString::try_from("").unwrap_err(),
                "must not be empty".into(),
            ),
            (
                Uri::new("world").unwrap_err(),
                r#""world" is not an absolute URI"#.into(),
            ),
            (
                Timestamp::new("noon").unwrap_err(),
                r#""noon" is not an RFC 3339 date-time"#.into(),
            ),
            (
                UniqueVec::<u8>::new(vec![1, 1]).unwrap_err(),
                "item 1 repeats an earlier item".into(),
            ),
            (
                UniqueVec::<u8, 1>::new(vec![]).unwrap_err(),
                "at least 1 item(s) required".into(),
            ),
            (
                BoundedU64::<1>::new(0).unwrap_err(),
                "0 is below the minimum 1".into(),
            ),
            (
                Extensions::new().insert("Bad", Map::new()).unwrap_err(),
                r#"extension key "Bad" does not match ^[a-z][a-z0-9_-]*$"#.into(),
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text, "{error:?}");
        }
        assert_eq!(
            HelloToken::new("a-secret-that-is-too-short").unwrap_err(),
            Error::ShortToken,
            "a short token is refused without quoting it"
        );
        let decode = crate::decode::decode_strict(b"[]").unwrap_err();
        let error: Error = decode.clone().into();
        assert_eq!(error.to_string(), decode.to_string());
    }

    #[test]
    fn registry_is_complete() {
        let codes: Vec<i64> = ErrorCode::ALL.iter().map(|c| c.0).collect();
        for expected in [-32700, -32600, -32601, -32602, -32603] {
            assert!(codes.contains(&expected));
        }
        for base in [-32100, -32200, -32300, -32400, -32500] {
            for k in 0..4 {
                assert!(codes.contains(&(base - k)), "{}", base - k);
            }
        }
        assert_eq!(ErrorCode::server(99), Some(ErrorCode(-32099)));
        assert_eq!(ErrorCode::server(100), None);
        assert_eq!(ErrorCode(-32000).name(), Some("Server Error"));
        assert_eq!(ErrorCode(-31000).name(), None);
    }

    #[test]
    fn empty_message_is_replaced() {
        let e = ErrorObject::new(ErrorCode::TOOL_TIMEOUT, "");
        assert_eq!(e.message.as_str(), "Tool Timeout");
    }
    #[test]
    fn shorten_leaves_short_texts_untouched() {
        for text in ["", "a", "loop", "12345"] {
            assert!(
                matches!(shorten(text, 5), Cow::Borrowed(t) if t == text),
                "{text}"
            );
        }
        // Exactly at the limit, counted in characters, not bytes.
        assert!(matches!(shorten("ééééé", 5), Cow::Borrowed("ééééé")));
    }

    #[test]
    fn shorten_cuts_at_a_character_boundary() {
        assert_eq!(shorten("abcdef", 3), "abc…");
        assert_eq!(shorten("abcdef", 0), "…");
        // Two-, three- and four-byte characters right at the cut.
        assert_eq!(shorten("aé€😀b", 1), "a…");
        assert_eq!(shorten("aé€😀b", 2), "aé…");
        assert_eq!(shorten("aé€😀b", 3), "aé€…");
        assert_eq!(shorten("aé€😀b", 4), "aé€😀…");
        assert_eq!(shorten("aé€😀b", 5), "aé€😀b");
        let long = "ü".repeat(1000);
        let cut = shorten(&long, 120);
        assert_eq!(cut.chars().count(), 121);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn without_json_position_removes_only_the_suffix() {
        let e = serde_json::from_str::<Value>("{").expect_err("unterminated");
        let message = e.to_string();
        assert_eq!(
            without_json_position(&message),
            "EOF while parsing an object"
        );
        // A message without a position (an error of an already parsed value) stays as it is.
        let e = serde_json::from_value::<u8>(Value::from(300)).expect_err("too large");
        assert_eq!(without_json_position(&e.to_string()), e.to_string());
        // Text that only looks like a position is kept.
        for kept in [
            "invalid type: string \"seen at line 3 column 4 of the log\", expected u8",
            "at line 1 column 2 but no leading space",
            "stopped at line x column 2",
            "stopped at line 1 column ",
        ] {
            assert_eq!(without_json_position(kept), kept);
        }
        assert_eq!(
            without_json_position("value \"a at line 1 column 2\" at line 3 column 9"),
            "value \"a at line 1 column 2\""
        );
    }
}
