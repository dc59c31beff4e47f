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
    assert!(error.to_string().contains("not JSON"), "{error}");
}

#[test]
fn a_tool_call_is_read_by_the_decoder_without_a_second_pass() {
    let params = Params::tool_call("world/get_block", Some(&json!({"x": 1}))).unwrap();
    let request = crate::Request::with_raw_params(crate::MethodName::tools_call(), Some(params));
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
    #[derive(Serialize)]
    struct All<T> {
        values: T,
    }
    let values = All {
        values: (
            [Shape::Unit, Shape::Newtype(3), Shape::Tuple(1, None)],
            Shape::Struct {
                a: vec![(true, 'é')],
                b: None,
            },
            Wrapper("q\"\u{1}"),
            "long enough to be copied as it is, \u{e9}\u{1F600} included",
            json!({"nested": [{"x": null, "y": 1.5, "z": u64::MAX}], "": -0.0}),
            (u128::MAX, i128::MIN, 0.1f32, f32::NAN, b"bytes".as_slice()),
        ),
    };
    let params = Params::from_serialize(&values).unwrap();
    assert_eq!(params.as_json(), serde_json::to_string(&values).unwrap());
    // Raw text is kept as it is, numbers beyond `f64` included.
    let raw = RawValue::from_string(r#"{"a": [1e400]}"#.to_owned()).unwrap();
    let params = Params::from_serialize(&raw).unwrap();
    assert_eq!(params.as_json(), r#"{"a": [1e400]}"#);
}
