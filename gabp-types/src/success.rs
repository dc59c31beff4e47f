//! [`ResultValue`]: the `result` of a success response (SPEC/1.0 gabp.md §3.3), a JSON value or the JSON text a
//! typed handler wrote, which is written out as it is and read into a value only if something asks for one.

use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
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
    /// The serialization of `value` as JSON text, checked against serde's contract as it is written (so it is
    /// JSON), without a tree of values. The numbers are those `serde_json::to_value` gives (an `f32` is the
    /// `f64` it widens to); members keep the order `value` gives them, where a value sorts them.
    ///
    /// # Errors
    ///
    /// As `serde_json::to_value`: when `value` does not serialize (a map with keys that are not strings, a
    /// `Serialize` that fails or breaks serde's contract), or holds an integer beyond 64 bits or raw text that a
    /// value cannot hold.
    pub fn from_serialize<T: Serialize + ?Sized>(
        value: &T,
    ) -> Result<ResultValue, serde_json::Error> {
        crate::params::json_text(value, crate::wellformed::Target::Value).map(|json| {
            ResultValue(Repr::Text {
                json,
                value: OnceLock::new(),
            })
        })
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

/// The value of JSON text written for a value ([`ResultValue::from_serialize`] refuses what `Value` does not
/// hold). Only nesting deeper than serde_json reads (128 levels), or an object whose first member is named with
/// serde_json's raw value token, does not read back: this in-memory view of it is `null`, and the text is
/// written as it is.
fn read(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or(Value::Null)
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
mod tests {
    use super::ResultValue;
    use serde_json::{json, Value};

    #[test]
    fn text_and_value_are_the_same_result() {
        #[derive(serde::Serialize)]
        struct Placed {
            block: &'static str,
            at: [i64; 3],
        }
        let text = ResultValue::from_serialize(&Placed {
            block: "stone",
            at: [1, -2, 3],
        })
        .unwrap();
        let value = ResultValue::from(json!({"block": "stone", "at": [1, -2, 3]}));
        assert_eq!(text.json_text(), Some(r#"{"block":"stone","at":[1,-2,3]}"#));
        assert_eq!(value.json_text(), None);
        assert_eq!(text, value);
        assert_eq!(format!("{text:?}"), format!("{value:?}"));
        assert_eq!(text.clone().into_value(), value.clone().into_value());
        // Written as the text, by the envelope writer and by serde_json alike; the value is read when asked.
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            text.json_text().unwrap()
        );
        assert_eq!(text["block"], "stone");
        assert_eq!(
            Value::from(text),
            json!({"block": "stone", "at": [1, -2, 3]})
        );
    }

    #[test]
    fn a_serialize_that_breaks_serdes_contract_gives_no_result() {
        use serde::ser::SerializeMap;
        struct KeyWithoutValue;
        impl serde::Serialize for KeyWithoutValue {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_key("a")?;
                map.end()
            }
        }
        assert!(ResultValue::from_serialize(&KeyWithoutValue).is_err());
    }

    #[test]
    fn text_that_a_value_cannot_hold_is_refused_as_to_value_refuses_it() {
        #[derive(serde::Serialize)]
        struct Huge {
            n: Box<serde_json::value::RawValue>,
        }
        let huge = Huge {
            n: serde_json::value::RawValue::from_string("1e400".to_owned()).unwrap(),
        };
        assert!(serde_json::to_value(&huge).is_err());
        assert!(ResultValue::from_serialize(&huge).is_err());
        assert!(serde_json::to_value(u128::MAX).is_err());
        assert!(ResultValue::from_serialize(&u128::MAX).is_err());
        // An f32 is the f64 it widens to, as in a value.
        let f = ResultValue::from_serialize(&0.1f32).unwrap();
        assert_eq!(
            f.json_text(),
            Some(serde_json::to_value(0.1f32).unwrap().to_string().as_str())
        );
    }
}
