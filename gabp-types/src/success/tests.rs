//! What `ResultValue` holds, and what it refuses.

use super::ResultValue;
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
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

/// A map serialized by the calls in `steps`: `k` a key, `v` a value, `e` a whole entry.
struct Steps(&'static str);

impl Serialize for Steps {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (i, step) in self.0.chars().enumerate() {
            let key = format!("k{i}");
            match step {
                'k' => map.serialize_key(&key)?,
                'v' => map.serialize_value(&i)?,
                _ => map.serialize_entry(&key, &i)?,
            }
        }
        map.end()
    }
}

#[test]
fn a_map_whose_keys_and_values_do_not_alternate_is_refused() {
    for steps in ["kkv", "ke", "v", "kvv", "ekvk"] {
        let plain = serde_json::to_string(&Steps(steps)).unwrap();
        assert!(
            serde_json::from_str::<&RawValue>(&plain).is_err(),
            "{plain}"
        );
        assert!(
            ResultValue::from_serialize(&Steps(steps)).is_err(),
            "{steps}"
        );
    }
    let kept = ResultValue::from_serialize(&Steps("kvekv")).unwrap();
    assert_eq!(kept.json_text(), Some(r#"{"k0":1,"k2":2,"k3":4}"#));
}

/// A map, a sequence or a struct declared with no members and then given one.
enum DeclaredEmpty {
    Map,
    Seq,
    Struct,
}

impl Serialize for DeclaredEmpty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            DeclaredEmpty::Map => {
                let mut map = serializer.serialize_map(Some(0))?;
                map.serialize_entry("a", &1)?;
                map.end()
            }
            DeclaredEmpty::Seq => {
                let mut seq = serializer.serialize_seq(Some(0))?;
                seq.serialize_element(&1)?;
                seq.end()
            }
            DeclaredEmpty::Struct => {
                let mut s = serializer.serialize_struct("S", 0)?;
                s.serialize_field("a", &1)?;
                s.end()
            }
        }
    }
}

#[test]
fn members_given_to_what_was_declared_empty_are_refused() {
    for (value, plain) in [
        (DeclaredEmpty::Map, r#"{},"a":1}"#),
        (DeclaredEmpty::Seq, "[],1]"),
        (DeclaredEmpty::Struct, r#"{},"a":1}"#),
    ] {
        assert_eq!(serde_json::to_string(&value).unwrap(), plain);
        assert!(ResultValue::from_serialize(&value).is_err(), "{plain}");
    }
    let empty: (Vec<u8>, std::collections::BTreeMap<String, u8>, ()) = Default::default();
    let written = ResultValue::from_serialize(&empty).unwrap();
    assert_eq!(written.json_text(), Some("[[],{},null]"));
}

/// A sequence that drops the error of its first element and goes on.
struct DropsAnError;

impl Serialize for DropsAnError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bad_key: std::collections::BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
        let mut seq = serializer.serialize_seq(None)?;
        let _ = seq.serialize_element(&bad_key);
        let _ = seq.serialize_element(&Steps("kk"));
        seq.serialize_element(&1)?;
        seq.end()
    }
}

#[test]
fn a_serialize_that_drops_an_error_and_goes_on_is_refused() {
    let plain = serde_json::to_string(&DropsAnError).unwrap();
    assert!(
        serde_json::from_str::<&RawValue>(&plain).is_err(),
        "{plain}"
    );
    assert!(ResultValue::from_serialize(&DropsAnError).is_err());
}

/// A struct that a `Serialize` impl names as serde_json names its raw values, holding text that is not JSON:
/// whatever serde_json's writer makes of it, a result is JSON or an error.
#[test]
fn a_struct_named_as_serde_json_s_markers_gives_json_or_an_error() {
    struct Marked(&'static str, &'static str);
    impl Serialize for Marked {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut s = serializer.serialize_struct(self.0, 1)?;
            s.serialize_field(self.0, self.1)?;
            s.end()
        }
    }
    for name in [
        "$serde_json::private::RawValue",
        "$serde_json::private::Number",
    ] {
        for text in [r#"{"a""#, "", "1 2", "[true]", r#""1""#] {
            if let Ok(result) = ResultValue::from_serialize(&[Marked(name, text)]) {
                let json = result.json_text().unwrap();
                assert!(serde_json::from_str::<Value>(json).is_ok(), "{json}");
            }
        }
    }
}

#[test]
fn a_result_gets_the_numbers_serde_json_to_value_gives() {
    fn text<T: Serialize>(value: &T) -> Result<String, String> {
        let result = ResultValue::from_serialize(value).map_err(|e| e.to_string())?;
        Ok(result.json_text().unwrap_or_default().to_owned())
    }
    assert!(text(&u128::MAX).unwrap_err().contains("out of range"));
    assert_eq!(text(&u128::from(u64::MAX)).unwrap(), u64::MAX.to_string());
    assert!(text(&i128::MIN).is_err());
    assert_eq!(text(&i128::from(i64::MIN)).unwrap(), i64::MIN.to_string());
    // Map keys are strings in a value, whatever they were written from.
    let keys: std::collections::BTreeMap<u128, f32> = [(u128::MAX, 0.1)].into();
    let value = serde_json::to_value(&keys).unwrap().to_string();
    assert_eq!(text(&keys).unwrap(), value);
    struct FloatKey;
    impl Serialize for FloatKey {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry(&0.1f32, &0.1f32)?;
            map.end()
        }
    }
    let value = serde_json::to_value(FloatKey).unwrap().to_string();
    assert_eq!(text(&FloatKey).unwrap(), value);
}

#[test]
fn nesting_deeper_than_serde_json_reads_is_refused() {
    let nested = |depth: usize| {
        let mut value = json!([]);
        for _ in 1..depth {
            value = json!([value]);
        }
        value
    };
    for depth in [1, 100, 127, 128, 129] {
        let reads = serde_json::from_str::<Value>(&nested(depth).to_string()).is_ok();
        let written = ResultValue::from_serialize(&nested(depth));
        assert_eq!(written.is_ok(), reads, "{depth}");
    }
    let deep = ResultValue::from_serialize(&nested(200)).unwrap_err();
    assert!(deep.to_string().contains("recursion limit"), "{deep}");
}

/// Text that `Value` would read otherwise than it was written (a member named as serde_json names its raw
/// values) is refused; other names that begin with `$` are plain members.
#[test]
fn a_result_is_text_that_a_value_reads_as_written() {
    let marked = json!({"$serde_json::private::RawValue": "[1]"});
    assert!(ResultValue::from_serialize(&marked).is_err());
    let schema =
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/a", "$x::y": 1});
    let written = ResultValue::from_serialize(&schema).unwrap();
    assert_eq!(*written, schema);
}
