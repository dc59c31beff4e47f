//! The params of a request and the result of a response, checked against the types of their method:
//! [`check_params`] and [`check_result`].

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{DecodeError, DecodeMode};
use crate::methods::{self, Method};
use crate::params::{json_str, raw_type_name, CallRecord, Key};
use crate::pointer::escape_pointer;
use crate::{shorten, without_json_position, ErrorCode, ExtraMembers, Params};

/// Deserializes `T` from a borrowed value, mapping a failure to `code` with the pointer of the failing value.
///
/// The fast path deserializes directly; only a failure pays for a second, path-tracking pass that finds the
/// pointer.
pub(super) fn typed<T: DeserializeOwned>(
    value: &Value,
    base: &str,
    code: ErrorCode,
) -> Result<T, DecodeError> {
    T::deserialize(value).or_else(|_| {
        serde_path_to_error::deserialize::<_, T>(value).map_err(|e| path_error(e, base, code))
    })
}

/// Like [`typed`] for params, read straight from their text.
fn typed_params<T: DeserializeOwned>(params: &Params) -> Result<T, DecodeError> {
    params.decode::<T>().or_else(|_| {
        let mut de = serde_json::Deserializer::from_str(params.as_json());
        serde_path_to_error::deserialize::<_, T>(&mut de)
            .map_err(|e| path_error(e, "/params", ErrorCode::INVALID_PARAMS))
    })
}

/// The members of `tools/call` params (SPEC/1.0 gabp.md §4.5), as [`tools_call_members`] finds them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolsCallMembers<'a> {
    /// The tool's name.
    pub name: Cow<'a, str>,
    /// `arguments` as JSON text (an object), when present.
    pub arguments: Option<&'a str>,
    /// `_meta` as JSON text (an object), when present.
    pub meta: Option<&'a str>,
}

/// The members of `tools/call` params, checked as the decoder checks them: read from where the decoder's check
/// recorded them, or checked now (params that did not come through the decoder).
///
/// ```
/// use gabp_types::decode::{decode, tools_call_members, DecodeMode};
/// use gabp_types::Message;
///
/// let body = br#"{"v":"gabp/1","id":"7f9c2a4e-1b3d-4c5e-8f6a-0b1c2d3e4f5a","type":"request",
///     "method":"tools/call","params":{"name":"world/place","arguments":{"x":1}}}"#;
/// let Message::Request(request) = decode(body, DecodeMode::Strict)? else { unreachable!() };
/// let call = tools_call_members(request.params.as_ref().unwrap())?;
/// assert_eq!((call.name.as_ref(), call.arguments), ("world/place", Some(r#"{"x":1}"#)));
/// # Ok::<(), gabp_types::DecodeError>(())
/// ```
///
/// # Errors
///
/// A `-32602` [`DecodeError`] naming the member, as the decoder refuses such params.
pub fn tools_call_members(params: &Params) -> Result<ToolsCallMembers<'_>, DecodeError> {
    let text = params.as_json();
    if let Some((name, arguments)) = params.call_record().and_then(|r| r.members(text)) {
        return Ok(ToolsCallMembers {
            name: Cow::Borrowed(name),
            arguments,
            meta: None,
        });
    }
    tools_call_check(params)
}

/// `tools/call` params, checked member by member without building [`methods::ToolsCallParams`]: this is the
/// hot path of every session, and the typed struct would copy the whole `arguments` object just to drop it.
/// The decoder records where `name` and `arguments` lie (`Params::set_call_record`).
pub(super) fn check_tools_call(params: Option<&mut Params>) -> Result<(), DecodeError> {
    let Some(p) = params else {
        return Err(DecodeError::new(
            ErrorCode::INVALID_PARAMS,
            "/params",
            format!("`{}` requires params", methods::ToolsCall::NAME),
        ));
    };
    let found = tools_call_check(p)?;
    // Recorded for the common shape only: see `CallRecord`.
    let record = match (&found.name, found.meta) {
        (Cow::Borrowed(name), None) => CallRecord::new(p.as_json(), name, found.arguments),
        _ => None,
    };
    p.set_call_record(record);
    Ok(())
}

fn invalid(pointer: &str, reason: String) -> DecodeError {
    DecodeError::new(ErrorCode::INVALID_PARAMS, pointer, reason)
}

/// Checks the params and finds their members.
fn tools_call_check(p: &Params) -> Result<ToolsCallMembers<'_>, DecodeError> {
    let (mut name, mut arguments, mut meta) = (None, None, None);
    let members = member_list(p.as_json())
        .map_err(|e| invalid("/params", without_json_position(&e.to_string()).to_owned()))?;
    // Bits of `name`, `arguments` and `_meta` seen: a repeated member is refused, so that the general path,
    // which keeps the last one, reads these params, as it does those of the other methods.
    let mut seen = 0u8;
    for (key, text) in members.iter() {
        let (key, text): (&str, &str) = (key, text);
        let bit = match key {
            "name" => 1,
            "arguments" => 2,
            "_meta" => 4,
            _ => 0,
        };
        if seen & bit != 0 {
            return Err(invalid(
                &format!("/params/{key}"),
                format!("duplicate field `{key}`"),
            ));
        }
        seen |= bit;
        match key {
            "name" => match checked_str(text) {
                Some(found) if crate::format::is_registry_name(&found) => name = Some(found),
                Some(name) => {
                    return Err(invalid(
                        "/params/name",
                        format!(
                            "tool name {:?} does not match {}",
                            crate::quoted_name(&name),
                            crate::format::NAME_PATTERN
                        ),
                    ))
                }
                None => {
                    return Err(invalid(
                        "/params/name",
                        format!(
                            "invalid type: {}, expected a tool name string",
                            raw_type_name(text)
                        ),
                    ))
                }
            },
            "arguments" if text.starts_with('{') => arguments = Some(text),
            "arguments" => {
                return Err(invalid(
                    "/params/arguments",
                    format!("invalid type: {}, expected an object", raw_type_name(text)),
                ))
            }
            "_meta" => {
                check_call_meta(text)?;
                meta = Some(text);
            }
            other => {
                return Err(invalid(
                    "/params",
                    format!(
                        "unknown field `{}`, expected `name`, `arguments` or `_meta`",
                        crate::quoted_name(other)
                    ),
                ))
            }
        }
    }
    match name {
        Some(name) => Ok(ToolsCallMembers {
            name,
            arguments,
            meta,
        }),
        None => Err(invalid("/params", "missing field `name`".to_owned())),
    }
}

/// The value of `text`, a member's value that serde_json has read whole as JSON: when it is a string without
/// escapes, its text between the quotes is its value (a checked string holds no raw control character, and
/// any quote inside it is escaped), so it is not read again.
fn checked_str(text: &str) -> Option<Cow<'_, str>> {
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Some(Cow::Borrowed(inner)),
        _ => json_str(text),
    }
}

/// `_meta` of `tools/call` params: an object whose `progressToken`, when present, is a string or an integer
/// (SPEC/1.0 extensions.md §progress); other members are allowed.
fn check_call_meta(text: &str) -> Result<(), DecodeError> {
    if !text.starts_with('{') {
        return Err(invalid(
            "/params/_meta",
            format!("invalid type: {}, expected an object", raw_type_name(text)),
        ));
    }
    serde_json::from_str::<methods::CallMeta>(text)
        .map(drop)
        .map_err(|_| {
            invalid(
                "/params/_meta/progressToken",
                "expected a string or an integer".to_owned(),
            )
        })
}

/// The first member name the JSON object `text` repeats, if any. A map keeps the last of repeated members, a
/// member-by-member read ([`Params::member`]) the first, and a typed read refuses them.
pub(super) fn repeated_member(text: &str) -> Option<String> {
    let members = member_list(text).ok()?;
    let mut seen = std::collections::HashSet::new();
    for (key, _) in members.iter() {
        if !seen.insert(key) {
            return Some(key.to_string());
        }
    }
    None
}

/// How many members are kept without allocating: more than `tools/call` params have.
const INLINE_MEMBERS: usize = 3;

/// The members of the JSON object `text`, their values as text, read by serde_json, which also gives the
/// error.
fn member_list(text: &str) -> Result<MemberList<'_>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let list = serde::Deserializer::deserialize_map(&mut de, Members)?;
    de.end()?;
    Ok(list)
}

/// Reads the members of an object, their values unparsed.
struct Members;

/// The members of an object in order, each value's text: the first few inline, any others in `more`.
#[derive(Default)]
struct MemberList<'de> {
    inline: [Option<(Cow<'de, str>, &'de str)>; INLINE_MEMBERS],
    more: Vec<(Cow<'de, str>, &'de str)>,
    len: usize,
}

impl<'de> MemberList<'de> {
    fn push(&mut self, key: Cow<'de, str>, value: &'de str) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = Some((key, value)),
            None => self.more.push((key, value)),
        }
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &(Cow<'de, str>, &'de str)> + '_ {
        self.inline.iter().flatten().chain(self.more.iter())
    }
}

impl<'de> serde::de::Visitor<'de> for Members {
    type Value = MemberList<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut list = MemberList::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            list.push(key, map.next_value::<&'de RawValue>()?.get());
        }
        Ok(list)
    }
}

fn path_error(
    e: serde_path_to_error::Error<serde_json::Error>,
    base: &str,
    code: ErrorCode,
) -> DecodeError {
    use serde_path_to_error::Segment;
    let mut pointer = base.to_owned();
    for segment in e.path().iter() {
        match segment {
            Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(&escape_pointer(key));
            }
            Segment::Unknown => {}
        }
    }
    let reason = e.into_inner().to_string();
    DecodeError::new(code, pointer, without_json_position(&reason))
}

fn check<M: Method>(params: Option<&Params>) -> Result<(), DecodeError> {
    match params {
        None if M::PARAMS_REQUIRED => Err(DecodeError::new(
            ErrorCode::INVALID_PARAMS,
            "/params",
            format!("`{}` requires params", M::NAME),
        )),
        None => Ok(()),
        Some(p) => typed_params::<M::Params>(p).map(drop),
    }
}

/// Checks the params of a request for `method` as the decoder would in `mode`: core methods' params against
/// their types (`tools/call` on its fast path), any other method's params are any object. A sender uses it
/// with [`DecodeMode::Strict`] to make sure what it is about to send is conformant.
///
/// ```
/// use gabp_types::decode::{check_params, DecodeMode};
/// use gabp_types::{ErrorCode, Params};
///
/// let params = Params::from_serialize(&serde_json::json!({"name": "world/get_block", "parameters": {}}))?;
/// let err = check_params("tools/call", Some(&params), DecodeMode::Strict).unwrap_err();
/// assert_eq!(err.code(), ErrorCode::INVALID_PARAMS);
/// assert!(check_params("tools/list", None, DecodeMode::Strict).is_ok());
/// assert!(check_params("custom/thing", Some(&params), DecodeMode::Strict).is_ok());
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// # Errors
///
/// A [`DecodeError`] with code -32602 and the JSON pointer of the offending value.
pub fn check_params(
    method: &str,
    params: Option<&Params>,
    mode: DecodeMode,
) -> Result<(), DecodeError> {
    use methods::*;
    match method {
        // Never quotes a value: any may be a token (SPEC/1.0 security.md §6).
        SessionHello::NAME => super::hello::check_hello_params(params, mode),
        SessionPing::NAME => check::<SessionPing>(params),
        SessionGoodbye::NAME => check::<SessionGoodbye>(params),
        ToolsList::NAME => check::<ToolsList>(params),
        ToolsCall::NAME => match params {
            Some(p) => tools_call_check(p).map(drop),
            None => check_tools_call(None),
        },
        ToolsCancel::NAME => check::<ToolsCancel>(params),
        TimeStatus::NAME => check::<TimeStatus>(params),
        TimePause::NAME => check::<TimePause>(params),
        TimeResume::NAME => check::<TimeResume>(params),
        TimeStep::NAME => check::<TimeStep>(params),
        InputKey::NAME => check::<InputKey>(params),
        InputTextMethod::NAME => check::<InputTextMethod>(params),
        InputMouse::NAME => check::<InputMouse>(params),
        EnvSpaces::NAME => check::<EnvSpaces>(params),
        EnvReset::NAME => check::<EnvReset>(params),
        EnvStep::NAME => check::<EnvStep>(params),
        EventsSubscribe::NAME => check::<EventsSubscribe>(params),
        EventsUnsubscribe::NAME => check::<EventsUnsubscribe>(params),
        ResourcesList::NAME => check::<ResourcesList>(params),
        ResourcesRead::NAME => check::<ResourcesRead>(params),
        StateGet::NAME => check::<StateGet>(params),
        StateSet::NAME => check::<StateSet>(params),
        AttentionCurrent::NAME => check::<AttentionCurrent>(params),
        AttentionAck::NAME => check::<AttentionAck>(params),
        _ => Ok(()),
    }
}

/// Reads `result` as `T`; in strict mode, also refuses a member `gabp/1` does not define (a liberal read keeps
/// it, SPEC/1.0 gabp.md §3.5).
pub(crate) fn typed_answer<T: DeserializeOwned + ExtraMembers>(
    value: &Value,
    base: &str,
    mode: DecodeMode,
) -> Result<(), DecodeError> {
    let typed: T = typed(value, base, ErrorCode::INVALID_FIELD_VALUE)?;
    match typed.first_extra() {
        Some(pointer) if mode == DecodeMode::Strict => {
            let name = pointer
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .replace("~1", "/")
                .replace("~0", "~");
            Err(DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                format!("{base}{pointer}"),
                format!("unknown field `{}`", shorten(&name, 64)),
            ))
        }
        _ => Ok(()),
    }
}

fn result_of<M: Method>(result: &Value, mode: DecodeMode) -> Result<(), DecodeError>
where
    M::Result: ExtraMembers,
{
    typed_answer::<M::Result>(result, "/result", mode)
}

/// A `tools/call` result is the tool's own; only its content items, when it has any, are checked (SPEC/1.0
/// extensions.md §content).
fn check_tool_result(result: &Value) -> Result<(), DecodeError> {
    let Some(items) = result
        .as_object()
        .and_then(|m| m.get(methods::CONTENT_MEMBER))
    else {
        return Ok(());
    };
    let base = format!("/result/{}", methods::CONTENT_MEMBER);
    let items: Vec<methods::ContentItem> = typed(items, &base, ErrorCode::INVALID_FIELD_VALUE)?;
    for (index, item) in items.iter().enumerate() {
        if let Some((member, reason)) = item.problem() {
            return Err(DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                format!("{base}/{index}/{member}"),
                reason,
            ));
        }
    }
    Ok(())
}

/// Checks a success `result` strictly against the result schema of `method`: [`check_result_in`] with
/// [`DecodeMode::Strict`].
pub fn check_result(method: &str, result: &Value) -> Result<(), DecodeError> {
    check_result_in(method, result, DecodeMode::Strict)
}

/// Checks a success `result` against the result schema of `method`, as the decoder would in `mode`: strictly,
/// a member `gabp/1` does not define is an error; leniently it is kept in the type's `extra` (SPEC/1.0
/// gabp.md §3.5). Results of unknown methods (and of `tools/call`, whose result is the tool's own) are
/// accepted as they are.
///
/// ```
/// use gabp_types::decode::{check_result_in, DecodeMode};
///
/// let tools = serde_json::json!({"tools": [{
///     "name": "inventory/get", "title": "Get", "description": "The inventory.",
///     "inputSchema": {"type": "object"}, "outputSchema": {}, "requiresAuth": true
/// }]});
/// assert!(check_result_in("tools/list", &tools, DecodeMode::Lenient).is_ok());
/// let e = check_result_in("tools/list", &tools, DecodeMode::Strict).unwrap_err();
/// assert_eq!(e.pointer(), "/result/tools/0/requiresAuth");
/// ```
///
/// # Errors
///
/// A [`DecodeError`] with code -32203 and the JSON pointer of the offending value.
pub fn check_result_in(method: &str, result: &Value, mode: DecodeMode) -> Result<(), DecodeError> {
    use methods::*;
    match method {
        SessionHello::NAME => result_of::<SessionHello>(result, mode),
        SessionPing::NAME => result_of::<SessionPing>(result, mode),
        SessionGoodbye::NAME => result_of::<SessionGoodbye>(result, mode),
        ToolsList::NAME => result_of::<ToolsList>(result, mode),
        ToolsCall::NAME => check_tool_result(result),
        ToolsCancel::NAME => result_of::<ToolsCancel>(result, mode),
        TimeStatus::NAME => result_of::<TimeStatus>(result, mode),
        TimePause::NAME => result_of::<TimePause>(result, mode),
        TimeResume::NAME => result_of::<TimeResume>(result, mode),
        TimeStep::NAME => result_of::<TimeStep>(result, mode),
        InputKey::NAME => result_of::<InputKey>(result, mode),
        InputTextMethod::NAME => result_of::<InputTextMethod>(result, mode),
        InputMouse::NAME => result_of::<InputMouse>(result, mode),
        EnvSpaces::NAME => result_of::<EnvSpaces>(result, mode),
        EnvReset::NAME => result_of::<EnvReset>(result, mode),
        EnvStep::NAME => result_of::<EnvStep>(result, mode),
        EventsSubscribe::NAME => result_of::<EventsSubscribe>(result, mode),
        EventsUnsubscribe::NAME => result_of::<EventsUnsubscribe>(result, mode),
        ResourcesList::NAME => result_of::<ResourcesList>(result, mode),
        ResourcesRead::NAME => result_of::<ResourcesRead>(result, mode),
        StateGet::NAME => result_of::<StateGet>(result, mode),
        StateSet::NAME => result_of::<StateSet>(result, mode),
        AttentionCurrent::NAME => result_of::<AttentionCurrent>(result, mode),
        AttentionAck::NAME => result_of::<AttentionAck>(result, mode),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(text: &str) -> Params {
        serde_json::from_str(text).expect("an object")
    }

    #[test]
    fn a_checked_string_reads_as_serde_json_reads_it() {
        for text in [
            r#""demo/echo""#,
            r#""""#,
            r#""a\"b""#,
            r#""tools\/call""#,
            r#""\u0041\\""#,
            r#""é/ü""#,
            "12",
            "null",
            "{}",
        ] {
            let want: Option<String> = serde_json::from_str(text).ok();
            assert_eq!(checked_str(text).as_deref(), want.as_deref(), "{text}");
        }
        let text = r#""demo/echo""#;
        match checked_str(text) {
            Some(Cow::Borrowed(name)) => assert_eq!(name.as_ptr(), text[1..].as_ptr()),
            other => panic!("{other:?} is not borrowed from the text"),
        }
        // An escaped name is a copy, so no call record points into the params for it.
        assert!(matches!(checked_str(r#""a\"b""#), Some(Cow::Owned(_))));
    }

    #[test]
    fn repeated_members_are_found() {
        assert_eq!(repeated_member(r#"{"a":1,"b":{"a":2}}"#), None);
        assert_eq!(
            repeated_member(r#"{"a":1,"b":2,"a":3}"#).as_deref(),
            Some("a")
        );
        assert_eq!(
            repeated_member(r#"{"\u0061":1,"a":2}"#).as_deref(),
            Some("a")
        );
        assert_eq!(repeated_member("[1]"), None);
    }

    /// A member-by-member read takes the first of repeated members, a map the last: both valid, the
    /// check used to pass, and `Params::member("name")` and the typed read disagreed.
    #[test]
    fn tools_call_params_with_a_repeated_member_are_refused() {
        for (text, pointer) in [
            (r#"{"name":"world/get","name":"world/set"}"#, "/params/name"),
            (
                r#"{"name":"a/b","arguments":{},"arguments":{"x":1}}"#,
                "/params/arguments",
            ),
            (
                r#"{"_meta":{},"name":"a/b","_meta":{"progressToken":1}}"#,
                "/params/_meta",
            ),
        ] {
            let e = check_params("tools/call", Some(&params(text)), DecodeMode::Strict)
                .expect_err(text);
            assert_eq!(
                (e.code(), e.pointer()),
                (ErrorCode::INVALID_PARAMS, pointer)
            );
        }
        let once = params(r#"{"name":"a/b","arguments":{"x":1,"x":2},"_meta":{}}"#);
        assert!(check_params("tools/call", Some(&once), DecodeMode::Strict).is_ok());
    }
}
