//! What `WellFormed` refuses, and that it writes what serde_json writes otherwise.

use super::{Guard, Target, WellFormed};
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::json;
use serde_json::value::RawValue;

fn written_as<T: Serialize>(value: &T, target: Target) -> Result<String, String> {
    let guard = Guard::new(target);
    let text = serde_json::to_string(&WellFormed::new(value, &guard)).map_err(|e| e.to_string())?;
    if guard.failed() {
        return Err(format!("an error was dropped: {text}"));
    }
    Ok(text)
}

fn written<T: Serialize>(value: &T) -> Result<String, String> {
    written_as(value, Target::Json)
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
    for (steps, message) in [
        ("kkv", "a map key was serialized without its value"),
        ("ke", "a map key was serialized without its value"),
        ("v", "a map value was serialized without its key"),
        ("kvv", "a map value was serialized without its key"),
        ("ekvk", "a map ended after a key without its value"),
    ] {
        let steps = Steps(steps);
        let plain = serde_json::to_string(&steps).unwrap();
        assert!(
            serde_json::from_str::<&RawValue>(&plain).is_err(),
            "{plain}"
        );
        let refused = written(&steps).unwrap_err();
        assert!(refused.contains(message), "{refused}");
    }
    assert_eq!(
        written(&Steps("kvekv")).unwrap(),
        r#"{"k0":1,"k2":2,"k3":4}"#
    );
}

/// A struct named with serde_json's raw value token, holding `text`.
struct Token(&'static str, &'static str);

impl Serialize for Token {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct(self.0, 1)?;
        s.serialize_field(self.0, self.1)?;
        s.end()
    }
}

#[test]
fn raw_text_is_written_only_when_it_is_json() {
    let raw = RawValue::from_string(r#"{"a": [1, 2]}"#.to_owned()).unwrap();
    #[derive(Serialize)]
    struct Holds {
        x: Box<RawValue>,
    }
    assert_eq!(
        written(&Holds { x: raw }).unwrap(),
        r#"{"x":{"a": [1, 2]}}"#
    );
    let token = super::RAW_VALUE_TOKEN;
    assert_eq!(written(&[Token(token, "[true]")]).unwrap(), "[[true]]");
    for bad in [r#"{"a""#, "", "1 2"] {
        let plain = serde_json::to_string(&Token(token, bad)).unwrap();
        assert_eq!(plain, bad);
        assert!(written(&Token(token, bad))
            .unwrap_err()
            .contains("not JSON"));
    }
    let number = super::NUMBER_TOKEN;
    assert!(written(&Token(number, "-1.5e3")).is_ok());
    assert!(written(&Token(number, r#""1""#))
        .unwrap_err()
        .contains("not a number"));
}

#[test]
fn what_keeps_the_contract_is_written_as_serde_json_writes_it() {
    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(u8, Option<i64>),
        Struct {
            a: Vec<(bool, char)>,
            #[serde(skip_serializing_if = "Option::is_none")]
            b: Option<u8>,
        },
    }
    #[derive(Serialize)]
    struct Wrapper<'a>(&'a str);
    let values = (
        [Shape::Unit, Shape::Newtype(3), Shape::Tuple(1, None)],
        Shape::Struct {
            a: vec![(true, 'é')],
            b: None,
        },
        Wrapper("q\"\u{1}"),
        [
            "long enough to be copied as it is, \u{e9}\u{1F600} included".to_owned(),
            "long enough but with a quote \" so that it is escaped".to_owned(),
            "x".repeat(super::VERBATIM),
            "y".repeat(super::VERBATIM - 1),
        ],
        json!({"nested": [{"x": null, "y": 1.5, "z": u64::MAX}], "": -0.0}),
        (u128::MAX, i128::MIN, f32::NAN, b"bytes".as_slice()),
    );
    assert_eq!(
        written(&values).unwrap(),
        serde_json::to_string(&values).unwrap()
    );
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
        assert!(written(&value)
            .unwrap_err()
            .contains("declared with no members"));
    }
    let empty: (Vec<u8>, std::collections::BTreeMap<String, u8>, ()) = Default::default();
    assert_eq!(written(&empty).unwrap(), "[[],{},null]");
}

/// serde_json's raw text token with `fields` fields, or a skipped one.
struct TokenFields(&'static [&'static str], bool);

impl Serialize for TokenFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct(super::RAW_VALUE_TOKEN, self.0.len())?;
        for field in self.0 {
            s.serialize_field(super::RAW_VALUE_TOKEN, field)?;
        }
        if self.1 {
            s.skip_field(super::RAW_VALUE_TOKEN)?;
        }
        s.end()
    }
}

#[test]
fn a_raw_text_token_holds_exactly_one_field() {
    assert_eq!(
        serde_json::to_string(&[TokenFields(&[], false)]).unwrap(),
        "[]"
    );
    assert_eq!(
        serde_json::to_string(&TokenFields(&["[1]", "[2]"], false)).unwrap(),
        "[1][2]"
    );
    for (fields, skip) in [
        (&[][..], false),
        (&["[1]", "[2]"][..], false),
        (&[][..], true),
    ] {
        assert!(written(&[TokenFields(fields, skip)]).is_err());
    }
    assert_eq!(written(&[TokenFields(&["[1]"], false)]).unwrap(), "[[1]]");
    // Declared with no field (the number token is a plain map to a writer without `arbitrary_precision`).
    struct EmptyNumber;
    impl Serialize for EmptyNumber {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut s = serializer.serialize_struct(super::NUMBER_TOKEN, 0)?;
            s.serialize_field(super::NUMBER_TOKEN, "1")?;
            s.end()
        }
    }
    assert!(written(&EmptyNumber)
        .unwrap_err()
        .contains("declared with no field"));
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
    assert!(written(&DropsAnError).unwrap_err().contains("dropped"));
}

#[test]
fn a_result_gets_the_numbers_serde_json_to_value_gives() {
    let (big, fits) = (u128::MAX, u128::from(u64::MAX));
    assert!(written_as(&big, Target::Value)
        .unwrap_err()
        .contains("out of range"));
    assert_eq!(
        written_as(&fits, Target::Value).unwrap(),
        u64::MAX.to_string()
    );
    assert_eq!(written_as(&big, Target::Json).unwrap(), big.to_string());
    assert!(written_as(&i128::MIN, Target::Value).is_err());
    assert_eq!(
        written_as(&i128::from(i64::MIN), Target::Value).unwrap(),
        i64::MIN.to_string()
    );
    let f = 0.1f32;
    assert_eq!(
        written_as(&f, Target::Value).unwrap(),
        serde_json::to_value(f).unwrap().to_string()
    );
    assert_eq!(written_as(&f, Target::Json).unwrap(), "0.1");
    let huge = RawValue::from_string("[1e400]".to_owned()).unwrap();
    assert_eq!(written_as(&huge, Target::Json).unwrap(), "[1e400]");
    assert!(written_as(&huge, Target::Value)
        .unwrap_err()
        .contains("not JSON"));
}
