//! [`Params`]: a request's `params` object, kept as the JSON text it arrived as until a handler reads it
//! (SPEC/1.0 gabp.md §3.2: `params` is always an object).

use std::borrow::Cow;
use std::fmt;
use std::num::NonZeroU64;

use serde::de::{DeserializeOwned, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

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
        // A map of JSON values always serializes, to JSON.
        let text = crate::encode::with_json(map, boxed_text).and_then(|text| text);
        Params(text.unwrap_or_else(|_| "{}".into()), None)
    }

    /// The serialization of `value`, which must be a JSON object.
    ///
    /// # Errors
    ///
    /// When `value` does not serialize, or not to an object.
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Params, serde_json::Error> {
        Params::from_text(json_text(value)?)
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
        let text = crate::encode::with_scratch(
            |out| {
                out.extend_from_slice(br#"{"name":"#);
                crate::encode::string(out, name)?;
                if let Some(arguments) = arguments {
                    out.extend_from_slice(br#","arguments":"#);
                    let start = out.len();
                    serde_json::to_writer(&mut *out, arguments).map_err(|e| {
                        serde_json::Error::custom(format!("tool arguments do not serialize: {e}"))
                    })?;
                    let written = out.get(start..).unwrap_or_default();
                    let kind = raw_type_name(checked(written)?.get());
                    if kind != "an object" {
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
pub(crate) fn json_text<T: Serialize + ?Sized>(value: &T) -> Result<Box<str>, serde_json::Error> {
    crate::encode::with_json(value, |json| checked(json).map(|raw| Box::from(raw.get())))?
}

/// What serde_json wrote, read back as JSON (a raw value, whitespace around it aside). serde_json's writer
/// trusts the `Serialize` impl: one that breaks serde's contract (a map key without its value, members after
/// an error it was given) makes it write text that is not JSON (SPEC/1.0 gabp.md §2), refused here.
fn checked(json: &[u8]) -> Result<&RawValue, serde_json::Error> {
    let text = std::str::from_utf8(json).map_err(serde_json::Error::custom)?;
    serde_json::from_str(text).map_err(|e| {
        serde_json::Error::custom(format!(
            "the `Serialize` impl wrote text that is not JSON: {e}"
        ))
    })
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
mod tests;
