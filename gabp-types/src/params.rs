//! [`Params`]: a request's `params` object, kept as the JSON text it arrived as until a handler reads it
//! (SPEC/1.0 gabp.md §3.2: `params` is always an object).

use std::borrow::Cow;
use std::fmt;
use std::num::NonZeroU64;

use serde::de::{DeserializeOwned, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::wellformed::{Guard, Target, WellFormed};
use serde_json::{Map, Value};

/// The `params` of a request: a JSON object held as its compact or received text.
///
/// Decoding a message keeps the params as they were on the wire (one copy, no tree of values); a handler
/// reads them once, into its own type with [`Params::decode`], or into a map with [`Params::to_map`].
/// Equality compares the JSON values, not the text.
///
/// ```
/// use gabp_types::Params;
/// use serde_json::json;
///
/// let params = Params::from_serialize(&json!({"name": "world/get_block", "arguments": {"x": 1}}))?;
/// assert_eq!(params.as_json(), r#"{"arguments":{"x":1},"name":"world/get_block"}"#);
/// assert_eq!(params.to_value()["arguments"]["x"], 1);
/// assert!(Params::from_serialize(&[1, 2]).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
pub struct Params(Box<str>, Option<CallRecord>);

/// Where the `name` and the `arguments` of `tools/call` params lie, recorded by the decoder's check so that the
/// mod does not read the params again (SPEC/1.0 gabp.md §4.5). Recorded only for params whose `name` leads,
/// written plainly (`{"name":"` then its text, no escapes: as bridges write it), and without `_meta`: the rest
/// are read again. Packed in 8 bytes so that every request stays small: the end of the name (16 bits), and the
/// start and end of `arguments` (24 bits each; equal when there is none). Params too large for that are read
/// again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallRecord(NonZeroU64);

/// What precedes the text of a `name` that leads the params, written plainly.
const LEADING_NAME: &str = "{\"name\":\"";

impl CallRecord {
    /// The record of `name` and `arguments` (or none), both slices of `text` (the name's decoded text, borrowed
    /// from it). `None` unless the name leads, written plainly, and both fit the record.
    pub(crate) fn new(text: &str, name: &str, arguments: Option<&str>) -> Option<CallRecord> {
        let offset = |part: &str| (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize);
        // The name's text starts right after `{"name":"`: a string borrowed from there has no escapes, so it
        // ends at the closing quote.
        if !text.starts_with(LEADING_NAME) || offset(name)? != LEADING_NAME.len() {
            return None;
        }
        let name_end = u16::try_from(LEADING_NAME.len() + name.len()).ok()?;
        let (start, end) = match arguments {
            None => (0, 0),
            Some(part) => {
                let start = offset(part)?;
                let end = start.checked_add(part.len())?;
                if start <= usize::from(name_end) || start == end || end > text.len() {
                    return None;
                }
                (start, end)
            }
        };
        let fits = |n: usize| u64::try_from(n).ok().filter(|&n| n < 1 << 24);
        let packed = u64::from(name_end) << 48 | fits(start)? << 24 | fits(end)?;
        NonZeroU64::new(packed).map(CallRecord)
    }

    /// The name, as the record found it in `text`.
    fn name(self, text: &str) -> Option<&str> {
        text.get(LEADING_NAME.len()..(self.0.get() >> 48) as usize)
    }

    /// The leading `name` and the `arguments` of `text`, the params this record was made for.
    pub(crate) fn members(self, text: &str) -> Option<(&str, Option<&str>)> {
        let bits = self.0.get();
        let mask = (1 << 24) - 1;
        let (start, end) = ((bits >> 24 & mask) as usize, (bits & mask) as usize);
        let arguments = if start == end {
            None
        } else {
            Some(text.get(start..end)?)
        };
        Some((self.name(text)?, arguments))
    }
}

impl Params {
    /// The params of a map.
    #[must_use]
    pub fn from_map(map: &Map<String, Value>) -> Params {
        // A map of JSON values always serializes.
        Params(
            json_text(map, Target::Json).unwrap_or_else(|_| "{}".into()),
            None,
        )
    }

    /// The serialization of `value`, which must be a JSON object.
    ///
    /// # Errors
    ///
    /// When `value` does not serialize, or not to an object.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Params, serde_json::Error> {
        Params::from_text(json_text(value, Target::Json)?)
    }

    /// The params of a `tools/call` of tool `name` (SPEC/1.0 gabp.md §4.5): `{"name":…}`, then `"arguments"`
    /// when given, the same text as serializing a struct of those two fields gives, written with the name first
    /// as the mod's decoder reads it at once. The name is written by hand unless it needs escapes, and only the
    /// arguments go through serde. The name is not checked against the naming rules (the caller does that).
    ///
    /// ```
    /// use gabp_types::Params;
    /// use serde_json::json;
    ///
    /// let params = Params::tool_call("world/get_block", Some(&json!({"x": 1})))?;
    /// assert_eq!(params.as_json(), r#"{"name":"world/get_block","arguments":{"x":1}}"#);
    /// let bare = Params::tool_call::<()>("world/time", None)?;
    /// assert_eq!(bare.as_json(), r#"{"name":"world/time"}"#);
    /// assert!(Params::tool_call("world/time", Some(&[1, 2])).is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When the arguments do not serialize, or not to a JSON object.
    pub fn tool_call<A: Serialize + ?Sized>(
        name: &str,
        arguments: Option<&A>,
    ) -> Result<Params, serde_json::Error> {
        let guard = Guard::new(Target::Json);
        let text = crate::encode::with_scratch(
            |out| {
                out.extend_from_slice(br#"{"name":"#);
                crate::encode::string(out, name)?;
                if let Some(arguments) = arguments {
                    out.extend_from_slice(br#","arguments":"#);
                    let start = out.len();
                    serde_json::to_writer(&mut *out, &WellFormed::new(arguments, &guard)).map_err(
                        |e| {
                            serde_json::Error::custom(format!(
                                "tool arguments do not serialize: {e}"
                            ))
                        },
                    )?;
                    let written = out.get(start..).unwrap_or_default();
                    // A raw value may keep the whitespace it was made with.
                    let at = written.iter().position(|b| !b" \t\n\r".contains(b));
                    let value = written
                        .get(at.unwrap_or(written.len())..)
                        .unwrap_or_default();
                    if value.first() != Some(&b'{') {
                        let kind = std::str::from_utf8(value).map_or("not JSON", raw_type_name);
                        return Err(serde_json::Error::custom(format!(
                            "tool arguments must serialize to a JSON object, not {kind}"
                        )));
                    }
                }
                out.push(b'}');
                Ok(())
            },
            boxed_text,
        )??;
        guard.verdict()?;
        Ok(Params(text, None))
    }

    /// Params from raw JSON, which must be an object.
    ///
    /// # Errors
    ///
    /// When `raw` is not an object.
    pub fn from_raw(raw: Box<RawValue>) -> Result<Params, serde_json::Error> {
        Params::from_text(raw.into())
    }

    /// Params from JSON text that is known to be valid: what serde_json wrote or read.
    fn from_text(text: Box<str>) -> Result<Params, serde_json::Error> {
        if text.starts_with('{') {
            Ok(Params(text, None))
        } else {
            Err(serde_json::Error::custom(format!(
                "params must be a JSON object, not {}",
                raw_type_name(&text)
            )))
        }
    }

    /// Params from the text of a JSON object that a check of the caller has parsed.
    pub(crate) fn from_checked(text: &str) -> Params {
        Params(text.into(), None)
    }

    /// Whether the object has no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0
            .get(1..)
            .unwrap_or_default()
            .trim_start()
            .starts_with('}')
    }

    /// The JSON text.
    #[must_use]
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// The raw JSON value (reads the text through serde_json).
    #[must_use]
    pub fn as_raw(&self) -> &RawValue {
        serde_json::from_str(&self.0).unwrap_or_else(|_| empty_raw())
    }

    /// Deserializes the params into `T`, straight from the text.
    ///
    /// # Errors
    ///
    /// When the params do not fit `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// The params as a map (parses the text).
    #[must_use]
    pub fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(&self.0).unwrap_or_default()
    }

    /// The params as a JSON value (parses the text).
    #[must_use]
    pub fn to_value(&self) -> Value {
        Value::Object(self.to_map())
    }

    /// The raw value of the member `key`, if present, read without parsing the other members' values.
    #[must_use]
    pub fn member(&self, key: &str) -> Option<&RawValue> {
        let [found] = self.members([key]);
        found
    }

    /// Where the decoder's check found the `name` and `arguments` of `tools/call` params, if it recorded them.
    pub(crate) fn call_record(&self) -> Option<CallRecord> {
        self.1
    }

    pub(crate) fn set_call_record(&mut self, record: Option<CallRecord>) {
        self.1 = record;
    }

    /// The raw values of the members `keys`, found in one pass over the text (the first of repeated keys).
    #[must_use]
    pub fn members<const N: usize>(&self, keys: [&str; N]) -> [Option<&RawValue>; N] {
        let mut de = serde_json::Deserializer::from_str(&self.0);
        de.deserialize_map(Members { keys }).unwrap_or([None; N])
    }

    /// The string member `key`, if present and a string.
    #[must_use]
    pub fn str_member(&self, key: &str) -> Option<Cow<'_, str>> {
        if let Some(name) = self
            .1
            .filter(|_| key == "name")
            .and_then(|r| r.name(&self.0))
        {
            return Some(Cow::Borrowed(name));
        }
        if let Some(first) = leading_str(&self.0, key) {
            return Some(Cow::Borrowed(first));
        }
        let raw = self.member(key)?;
        json_str(raw.get())
    }
}

/// The string member `key` when it is the first member, written compactly and without escapes (as writers put
/// a `tools/call`'s `name`): found without a pass over the other members.
pub(crate) fn leading_str<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    // Byte searches: a pattern of two chars goes through the general char searcher, several times slower.
    let quote_or_escape = |b: u8| b == b'"' || b == b'\\';
    if key.bytes().any(quote_or_escape) {
        return None;
    }
    let value = text
        .strip_prefix("{\"")?
        .strip_prefix(key)?
        .strip_prefix("\":\"")?;
    let end = value.bytes().position(quote_or_escape)?;
    // Both are ASCII, so `end` is a char boundary.
    (value.as_bytes().get(end) == Some(&b'"')).then(|| &value[..end])
}

/// The JSON string `text`, borrowed unless it has escapes; `None` when `text` is not a string.
pub fn json_str(text: &str) -> Option<Cow<'_, str>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = de.deserialize_str(Text).ok()?;
    de.end().ok()?;
    Some(value)
}

/// A JSON string, borrowed from the input when it can be.
pub(crate) struct Text;

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A map key read with [`Text`].
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(Text).map(Key)
    }
}

/// The JSON of `value` in one allocation of exactly its size: written into the shared scratch buffer, then
/// copied out. (`serde_json::value::to_raw_value` grows a string from 128 bytes and shrinks it at the end:
/// two reallocations for params of a typical tool call.)
///
/// serde_json's writer trusts the `Serialize` impl: one that breaks serde's contract would make it write text
/// that is not JSON (or not what `target` reads), and `WellFormed` refuses it as it is written.
pub(crate) fn json_text<T: Serialize + ?Sized>(
    value: &T,
    target: Target,
) -> Result<Box<str>, serde_json::Error> {
    let guard = Guard::new(target);
    let text = crate::encode::with_json(&WellFormed::new(value, &guard), boxed_text)??;
    guard.verdict()?;
    Ok(text)
}

/// The text serde_json wrote, in a box of its size.
fn boxed_text(json: &[u8]) -> Result<Box<str>, serde_json::Error> {
    std::str::from_utf8(json)
        .map(Box::from)
        .map_err(serde_json::Error::custom)
}

/// `{}` as a raw value, for text that serde_json does not read back (never the case for valid params).
#[cold]
fn empty_raw() -> &'static RawValue {
    static EMPTY: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(|| RawValue::from_string("{}".to_owned()).unwrap_or_default())
}

/// The JSON type of raw text, for messages.
pub(crate) fn raw_type_name(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// Finds members of an object, skipping the others' values unparsed.
struct Members<'k, const N: usize> {
    keys: [&'k str; N],
}

impl<'de, const N: usize> Visitor<'de> for Members<'_, N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = [None; N];
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let value = map.next_value::<&'de RawValue>()?;
            if let Some(i) = self.keys.iter().position(|k| *k == key) {
                found[i].get_or_insert(value);
            }
        }
        Ok(found)
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || self.to_map() == other.to_map()
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Params").field(&&*self.0).finish()
    }
}

impl Default for Params {
    fn default() -> Self {
        Params("{}".into(), None)
    }
}

impl From<Map<String, Value>> for Params {
    fn from(map: Map<String, Value>) -> Self {
        Params::from_map(&map)
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_raw().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Params::from_raw(raw).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `Params::tool_call` must write: the serialization of this struct.
    #[derive(Serialize)]
    struct Call<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        arguments: Option<&'a Value>,
    }

    /// Text with what JSON escapes (quotes, backslashes, control characters), DEL and non-ASCII.
    const TEXT: &str = "[\\x00-\\x7f\"\\\\é😀]{0,24}";

    fn arguments() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            TEXT.prop_map(Value::from),
        ];
        let value = leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(TEXT, inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        proptest::collection::btree_map(TEXT, value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest::proptest! {
        #[test]
        fn a_tool_call_is_written_as_its_struct_serializes(
            name in TEXT,
            arguments in proptest::option::of(arguments()),
        ) {
            let expected = serde_json::to_string(&Call { name: &name, arguments: arguments.as_ref() }).unwrap();
            let params = Params::tool_call(&name, arguments.as_ref()).unwrap();
            proptest::prop_assert_eq!(params.as_json(), expected.as_str());
        }
    }

    #[test]
    fn a_tool_call_takes_only_arguments_that_are_an_object() {
        for (arguments, kind) in [
            (json!([1]), "an array"),
            (json!("{"), "a string"),
            (json!(null), "null"),
            (json!(5), "a number"),
        ] {
            let error = Params::tool_call("a/b", Some(&arguments)).unwrap_err();
            assert!(
                error.to_string().contains(&format!("not {kind}")),
                "{error}"
            );
        }
        let raw = RawValue::from_string(r#"{"x": 1}"#.to_owned()).unwrap();
        let params = Params::tool_call("a/b", Some(&raw)).unwrap();
        assert_eq!(params.as_json(), r#"{"name":"a/b","arguments":{"x": 1}}"#);
    }

    #[test]
    fn a_tool_call_whose_arguments_fail_to_serialize_is_refused() {
        /// Fails, then (against serde's contract) serializes on regardless.
        struct Stubborn;
        impl Serialize for Stubborn {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                let _ = map.serialize_entry(&[1u8], &1u8);
                map.serialize_entry("x", &1u8)?;
                map.end()
            }
        }
        let mut keys = std::collections::HashMap::new();
        keys.insert(vec![1u8], 1);
        assert!(
            Params::tool_call("a/b", Some(&keys)).is_err(),
            "keys that are not strings"
        );
        let error = Params::tool_call("a/b", Some(&Stubborn)).unwrap_err();
        assert!(
            error.to_string().contains("went on after an error"),
            "{error}"
        );
    }

    #[test]
    fn a_tool_call_is_read_by_the_decoder_without_a_second_pass() {
        let params = Params::tool_call("world/get_block", Some(&json!({"x": 1}))).unwrap();
        let request =
            crate::Request::with_raw_params(crate::MethodName::tools_call(), Some(params));
        let body = crate::encode::with_envelope(&request, <[u8]>::to_vec).unwrap();
        let Ok(crate::Message::Request(read)) =
            crate::decode::decode(&body, crate::decode::DecodeMode::Strict)
        else {
            panic!("a request");
        };
        let read = read.params.unwrap();
        let record = read.call_record().expect("recorded by the decoder");
        assert_eq!(
            record.members(read.as_json()),
            Some(("world/get_block", Some(r#"{"x":1}"#)))
        );
    }

    #[test]
    fn the_record_of_call_members_costs_params_8_bytes() {
        assert_eq!(std::mem::size_of::<Option<CallRecord>>(), 8);
        let text = r#"{"name":"a/b","arguments":{"x":1}}"#;
        let (name, arguments) = (&text[9..12], &text[26..33]);
        let record = CallRecord::new(text, name, Some(arguments)).unwrap();
        assert_eq!(record.members(text), Some(("a/b", Some(r#"{"x":1}"#))));
        let none = CallRecord::new(text, name, None).unwrap();
        assert_eq!(none.members(text), Some(("a/b", None)));
        assert_eq!(CallRecord::new(text, name, Some("elsewhere")), None);
        assert_eq!(CallRecord::new(text, name, Some(&text[0..1])), None);
        // `arguments` before the end of the name, or a name that is not the text right after `{"name":"`.
        assert_eq!(CallRecord::new(text, name, Some(&text[8..13])), None);
        assert_eq!(CallRecord::new(text, &text[10..12], None), None);
        assert_eq!(CallRecord::new(text, "a/b", None), None);
        let spaced = r#"{ "name":"a/b"}"#;
        assert_eq!(CallRecord::new(spaced, &spaced[10..13], None), None);
        // A name or arguments beyond what the record holds: the params are read again.
        let long_name = format!(r#"{{"name":"{}"}}"#, "a".repeat(70_000));
        let long = &long_name[9..long_name.len() - 2];
        assert_eq!(CallRecord::new(&long_name, long, None), None);
        let big = format!(
            r#"{{"name":"a/b","arguments":{{"x":"{}"}}}}"#,
            "a".repeat(1 << 24)
        );
        let arguments = &big[26..big.len() - 1];
        assert_eq!(CallRecord::new(&big, &big[9..12], Some(arguments)), None);
        let fits = format!(
            r#"{{"name":"a/b","arguments":{{"x":"{}"}}}}"#,
            "a".repeat(1000)
        );
        let arguments = &fits[26..fits.len() - 1];
        let record = CallRecord::new(&fits, &fits[9..12], Some(arguments)).unwrap();
        assert_eq!(record.members(&fits), Some(("a/b", Some(arguments))));
    }

    #[test]
    fn members_are_found_without_reading_the_rest() {
        let params: Params =
            serde_json::from_str(r#"{"arguments": {"deep": [1, 2]}, "name": "a\/b"}"#).unwrap();
        assert_eq!(
            params.member("arguments").unwrap().get(),
            r#"{"deep": [1, 2]}"#
        );
        assert_eq!(params.str_member("name").as_deref(), Some("a/b"));
        assert!(params.member("other").is_none());
        assert!(matches!(params.str_member("name"), Some(Cow::Owned(_))));
        let plain: Params = serde_json::from_str(r#"{"name": "a/b"}"#).unwrap();
        assert!(matches!(
            plain.str_member("name"),
            Some(Cow::Borrowed("a/b"))
        ));
        assert!(params.str_member("arguments").is_none());
    }

    #[test]
    fn members_are_found_in_one_pass_first_wins() {
        let params: Params =
            serde_json::from_str(r#"{"b": 2, "a": 1, "b": 3, "c": {"x": [1]}}"#).unwrap();
        let [a, b, d] = params.members(["a", "b", "d"]);
        assert_eq!((a.unwrap().get(), b.unwrap().get()), ("1", "2"));
        assert!(d.is_none());
    }

    #[test]
    fn equality_is_by_value() {
        let spaced: Params = serde_json::from_str(r#"{ "a" : 1, "b": [true] }"#).unwrap();
        let compact = Params::from_serialize(&json!({"b": [true], "a": 1})).unwrap();
        assert_eq!(spaced, compact);
        assert_ne!(spaced, Params::default());
    }

    #[test]
    fn a_serialize_that_breaks_serdes_contract_gives_no_params() {
        /// Two keys in a row: serde_json writes `{"a","b":1}`.
        struct KeyWithoutValue;
        impl Serialize for KeyWithoutValue {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_key("a")?;
                map.serialize_key("b")?;
                map.serialize_value(&1)?;
                map.end()
            }
        }
        assert_eq!(
            serde_json::to_string(&KeyWithoutValue).unwrap(),
            r#"{"a","b":1}"#
        );
        assert!(Params::from_serialize(&KeyWithoutValue).is_err());
        let call = json!({"name": "a/b", "arguments": {"x": [1, "}"]}});
        assert_eq!(Params::from_serialize(&call).unwrap().to_value(), call);
    }

    #[test]
    fn only_objects_are_params() {
        for bad in ["[]", "1", "\"x\"", "null", "true"] {
            let err = serde_json::from_str::<Params>(bad).unwrap_err();
            assert!(
                err.to_string().contains("must be a JSON object"),
                "{bad}: {err}"
            );
        }
        assert_eq!(Params::default().as_json(), "{}");
        assert!(Params::default().is_empty());
        assert!(serde_json::from_str::<Params>("{ \n }").unwrap().is_empty());
        assert!(!serde_json::from_str::<Params>(r#"{"a":1}"#)
            .unwrap()
            .is_empty());
        assert_eq!(
            Params::default().decode::<Map<String, Value>>().unwrap(),
            Map::new()
        );
    }

    #[test]
    fn a_leading_string_member_reads_as_the_general_path_reads_it() {
        let cases = [
            r#"{"name":"a/b","arguments":{"x":1}}"#,
            r#"{"name":"a\"b","x":1}"#,
            r#"{"name":"a\u0041","name":"c"}"#,
            r#"{"name":"x","name":"y"}"#,
            r#"{"name":1}"#,
            r#"{"names":"x","name":"y"}"#,
            r#"{ "name" : "x" }"#,
            r#"{"arguments":{"name":"z"},"name":"x"}"#,
            r#"{"name":""}"#,
        ];
        for text in cases {
            let params: Params = serde_json::from_str(text).unwrap();
            let general = params.member("name").and_then(|raw| json_str(raw.get()));
            assert_eq!(params.str_member("name"), general, "{text}");
        }
        let params: Params = serde_json::from_str(r#"{"a\"b":"x"}"#).unwrap();
        assert_eq!(leading_str(params.as_json(), "a\"b"), None);
    }
}
