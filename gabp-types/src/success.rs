//! [`ResultValue`]: the `result` of a success response (SPEC/1.0 gabp.md §3.3), a JSON value or the JSON text a
//! typed handler wrote, which is written out as it is and read into a value only if something asks for one.

use std::fmt;
use std::io;
use std::ops::Deref;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::ser::{CompactFormatter, Formatter};
use serde_json::value::RawValue;
use serde_json::Value;

/// The `result` of a success: a [`Value`], or JSON text made with [`ResultValue::from_serialize`]. It derefs to
/// the value (text is read into one the first time, and kept); the envelope writer writes text as it is.
///
/// ```
/// use gabp_types::ResultValue;
/// use serde_json::json;
///
/// let text = ResultValue::from_serialize(&json!({"ok": true}))?;
/// assert_eq!(text.json_text(), Some(r#"{"ok":true}"#));
/// assert_eq!(text["ok"], true);
/// assert_eq!(text, ResultValue::from(json!({"ok": true})));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
pub struct ResultValue(Repr);

#[derive(Clone)]
enum Repr {
    Value(Value),
    Text {
        json: Box<str>,
        value: OnceLock<Box<Value>>,
    },
}

impl ResultValue {
    /// The serialization of `value` as JSON text, without a tree of values, read back as a `Value` reads it
    /// (so it is JSON, and the value it stands for). The numbers are those `serde_json::to_value` gives (an
    /// `f32` is the `f64` it widens to); members keep the order `value` gives them, where a value sorts them.
    ///
    /// # Errors
    ///
    /// As `serde_json::to_value`: when `value` does not serialize (a map with keys that are not strings, a
    /// `Serialize` that fails), or holds an integer beyond 64 bits or raw text that a value cannot hold; and
    /// when the text does not read back as a value: a `Serialize` that breaks serde's contract, or nesting
    /// deeper than serde_json reads (128 levels).
    pub fn from_serialize<T: Serialize + ?Sized>(
        value: &T,
    ) -> Result<ResultValue, serde_json::Error> {
        let write = |out: &mut Vec<u8>| {
            value.serialize(&mut serde_json::Serializer::with_formatter(
                out,
                ValueNumbers::default(),
            ))
        };
        let json = crate::encode::with_scratch(write, |json| {
            let text = std::str::from_utf8(json).map_err(serde_json::Error::custom)?;
            reads_as_value(text, usize::MAX).map_err(|e| {
                serde_json::Error::custom(format!("the text written does not read back: {e}"))
            })?;
            Ok::<_, serde_json::Error>(Box::from(text))
        })??;
        Ok(ResultValue(Repr::Text {
            json,
            value: OnceLock::new(),
        }))
    }

    /// The JSON text, when this result was made from one.
    #[must_use]
    pub fn json_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Value(_) => None,
            Repr::Text { json, .. } => Some(json),
        }
    }

    /// The value, read from the text if there is one.
    #[must_use]
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Value(value) => value,
            Repr::Text { json, value } => match value.into_inner() {
                Some(value) => *value,
                None => read(&json),
            },
        }
    }
}

/// The value of JSON text written for a value ([`ResultValue::from_serialize`] refuses what does not read
/// back); should it not read, this in-memory view of it is `null`.
fn read(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or(Value::Null)
}

/// serde_json's compact writer with the numbers `serde_json::to_value` gives: an `f32` is written as the `f64`
/// it widens to, and an integer beyond 64 bits is refused; in a map key, which a value holds as a string, both
/// are written as they are.
#[derive(Default)]
struct ValueNumbers {
    in_string: bool,
}

impl Formatter for ValueNumbers {
    fn begin_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.in_string = true;
        CompactFormatter.begin_string(writer)
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.in_string = false;
        CompactFormatter.end_string(writer)
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        if self.in_string {
            return CompactFormatter.write_f32(writer, value);
        }
        CompactFormatter.write_f64(writer, f64::from(value))
    }

    fn write_i128<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: i128) -> io::Result<()> {
        if !self.in_string && i64::try_from(value).is_err() && u64::try_from(value).is_err() {
            return Err(out_of_range());
        }
        CompactFormatter.write_i128(writer, value)
    }

    fn write_u128<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: u128) -> io::Result<()> {
        if !self.in_string && u64::try_from(value).is_err() {
            return Err(out_of_range());
        }
        CompactFormatter.write_u128(writer, value)
    }
}

fn out_of_range() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "number out of range")
}

/// Reads `text` as a `serde_json::Value` reads it, building nothing, nested at most `depth` levels (and at
/// most serde_json's 128): numbers within the range of `f64`, no lone surrogate escape, and no string that
/// `Value` reads otherwise (serde_json's marker names, which it reads as the JSON in the member's value).
pub(crate) fn reads_as_value(text: &str, depth: usize) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    DeserializeSeed::deserialize(Reads(depth), &mut de)?;
    de.end()
}

/// Reads a JSON value the way `Value` reads it (`deserialize_any`), keeping nothing; the count is the nesting
/// still allowed.
#[derive(Clone, Copy)]
struct Reads(usize);

impl Reads {
    fn inner<E: de::Error>(self) -> Result<Reads, E> {
        self.0
            .checked_sub(1)
            .map(Reads)
            .ok_or_else(|| E::custom("nested too deeply"))
    }
}

impl<'de> DeserializeSeed<'de> for Reads {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reads {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    /// Member names are read here too: with serde_json's `raw_value` feature (on in this workspace) or
    /// `arbitrary_precision`, `Value` reads an object whose first member has one of serde_json's marker names
    /// otherwise. serde_json itself is asked, for a string that may be one (a `$` and a Rust path, unlike a JSON
    /// Schema's `$ref`), whether `Value` reads it as a plain member name.
    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        if text.starts_with('$') && text.contains("::") && !plain_member_name(text) {
            return Err(E::custom("a name serde_json reserves"));
        }
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.inner()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.inner()?;
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

/// Whether `Value` reads `{name: 0}` as an object with that member.
#[cold]
fn plain_member_name(name: &str) -> bool {
    let Ok(name) = serde_json::to_string(name) else {
        return false;
    };
    matches!(
        serde_json::from_str(&format!("{{{name}:0}}")),
        Ok(Value::Object(_))
    )
}

impl Deref for ResultValue {
    type Target = Value;

    fn deref(&self) -> &Value {
        match &self.0 {
            Repr::Value(value) => value,
            Repr::Text { json, value } => value.get_or_init(|| Box::new(read(json))),
        }
    }
}

impl From<Value> for ResultValue {
    fn from(value: Value) -> Self {
        ResultValue(Repr::Value(value))
    }
}

impl From<ResultValue> for Value {
    fn from(result: ResultValue) -> Self {
        result.into_value()
    }
}

impl PartialEq for ResultValue {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Value> for ResultValue {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl fmt::Debug for ResultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Text is serialized as serde_json serializes a raw value: the same bytes as the envelope writer's for
/// serde_json's writer, the value it reads for `serde_json::to_value`.
impl Serialize for ResultValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Value(value) => value.serialize(serializer),
            Repr::Text { json, .. } => serde_json::from_str::<&RawValue>(json)
                .map_err(S::Error::custom)?
                .serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests;
