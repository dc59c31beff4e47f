//! `decode` reads plain messages on a fast path (the envelope straight into borrowed fields) and everything
//! else on the general path (`serde_json::Value`, then `decode_value`). The two must never disagree: for any
//! body that is JSON, `decode(body, mode)` equals `decode_value(parsed body, mode)`, message or error.
//!
//! Checked on every file of `CONFORMANCE/1.0/` and `EXAMPLES/1.0/`, on mutations of each (every field removed,
//! repeated, set to `null` or to a value of another type; an unknown field added), and on random envelopes.

use std::path::{Path, PathBuf};

use gabp_types::decode::{decode, decode_value, success_result, DecodeMode};
use gabp_types::{Message, Outcome, Response};
use proptest::prelude::*;
use serde_json::{Map, Value};

const MODES: [DecodeMode; 2] = [DecodeMode::Strict, DecodeMode::Lenient];

/// Both paths agree on `body` in both modes; returns how many of the two decodes succeeded.
fn agree(body: &[u8]) -> usize {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return 0;
    };
    let mut ok = 0;
    for mode in MODES {
        let general = decode_value(value.clone(), mode);
        let decoded = decode(body, mode);
        assert_eq!(
            decoded,
            general,
            "{mode:?} disagrees on {}",
            String::from_utf8_lossy(body)
        );
        ok += usize::from(decoded.is_ok());
    }
    ok
}

fn json_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            json_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(path);
        }
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let mut files = Vec::new();
    json_files(&root.join("CONFORMANCE/1.0"), &mut files);
    json_files(&root.join("EXAMPLES/1.0"), &mut files);
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read(f).expect("readable"))
        .collect()
}

/// A JSON object written from its entries as given (repeated keys included, which a `Map` cannot hold).
fn object_text(entries: &[(String, Value)]) -> String {
    let fields: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), v))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// Values of other types, for replacing a field.
fn others() -> [Value; 6] {
    [
        Value::Null,
        Value::Bool(true),
        Value::from(-1),
        Value::from("gabp/1"),
        Value::Array(vec![]),
        Value::Object(Map::new()),
    ]
}

fn mutations(map: &Map<String, Value>) -> Vec<String> {
    let entries: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut out = Vec::new();
    for i in 0..entries.len() {
        let mut removed = entries.clone();
        removed.remove(i);
        out.push(object_text(&removed));
        let mut repeated = entries.clone();
        repeated.push(entries[i].clone());
        out.push(object_text(&repeated));
        for other in others() {
            let mut changed = entries.clone();
            changed[i].1 = other;
            out.push(object_text(&changed));
        }
    }
    for extra in [
        "extra",
        "error",
        "result",
        "params",
        "payload",
        "timestamp",
        "seq",
    ] {
        if !map.contains_key(extra) {
            let mut added = entries.clone();
            added.push((extra.to_owned(), Value::Null));
            out.push(object_text(&added));
            let mut added = entries.clone();
            added.push((extra.to_owned(), Value::Object(Map::new())));
            out.push(object_text(&added));
        }
    }
    out
}

#[test]
fn both_paths_agree_on_the_corpus_and_its_mutations() {
    let corpus = corpus();
    assert!(corpus.len() > 100, "the corpus is missing");
    let (mut cases, mut decoded) = (0usize, 0usize);
    for body in &corpus {
        decoded += agree(body);
        cases += 1;
        if let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) {
            for mutated in mutations(&map) {
                decoded += agree(mutated.as_bytes());
                cases += 1;
            }
        }
    }
    // Both outcomes are exercised: plenty of messages decode, plenty are refused.
    assert!(decoded > 200, "{decoded} of {cases} decoded");
    assert!(decoded < 2 * cases - 200, "{decoded} of {cases} decoded");
}

#[test]
fn escaped_keys_and_values_read_the_same() {
    for body in [
        r#"{"\u0076":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request","method":"session/ping"}"#,
        r#"{"v":"gabp\/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"re\u0071uest","method":"session\/ping"}"#,
        r#"{"v":"gabp/1","id":"550E8400-E29B-41D4-A716-446655440000","type":"response","result":null}"#,
        r#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"response","result":{},"error":null}"#,
        r#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"event","channel":"a.b","seq":1,"payload":null,"timestamp":"x"}"#,
        r#" {"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request","method":"tools/call","params":{"name":"a/b","parameters":{"x":1}}} "#,
    ] {
        agree(body.as_bytes());
    }
}

fn field_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "v",
        "id",
        "type",
        "method",
        "params",
        "result",
        "error",
        "channel",
        "seq",
        "payload",
        "timestamp",
        "other",
    ])
    .prop_map(str::to_owned)
}

fn field_value() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        Value::from("gabp/1"),
        Value::from("gabp/2"),
        Value::from("550e8400-e29b-41d4-a716-446655440000"),
        Value::from("request"),
        Value::from("response"),
        Value::from("event"),
        Value::from("session/ping"),
        Value::from("tools/call"),
        Value::from("player/move"),
        Value::from("attention/opened"),
        Value::from("2024-01-01T00:00:00Z"),
        Value::from(0),
        Value::from(-3),
        Value::Null,
        serde_json::json!({"name": "demo/echo", "arguments": {"value": 1}}),
        serde_json::json!({"code": -32000, "message": "no"}),
        serde_json::json!({"channels": ["player/move"]}),
        serde_json::json!({}),
        serde_json::json!([]),
    ])
}

fn envelope() -> impl Strategy<Value = Vec<(String, Value)>> {
    let base = (
        prop::sample::select(vec!["request", "response", "event", "other"]),
        prop::bool::ANY,
    )
        .prop_map(|(kind, v_ok)| {
            vec![
                (
                    "v".to_owned(),
                    Value::from(if v_ok { "gabp/1" } else { "1" }),
                ),
                (
                    "id".to_owned(),
                    Value::from("550e8400-e29b-41d4-a716-446655440000"),
                ),
                ("type".to_owned(), Value::from(kind)),
            ]
        });
    (
        base,
        prop::collection::vec((field_name(), field_value()), 0..6),
    )
        .prop_map(|(mut fields, extra)| {
            fields.extend(extra);
            fields
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn both_paths_agree_on_random_envelopes(fields in envelope(), drop_first in 0usize..4) {
        let fields: Vec<_> = fields.into_iter().skip(drop_first % 2).collect();
        agree(object_text(&fields).as_bytes());
    }
}

/// `success_result` agrees with both decoders: a result it finds is the success both read.
fn success_agrees(body: &[u8]) {
    let Some((id, range)) = success_result(body) else {
        return;
    };
    let found: Value = serde_json::from_slice(&body[range]).expect("the result is JSON");
    for mode in MODES {
        match decode(body, mode) {
            Ok(Message::Response(Response {
                id: read,
                outcome: Outcome::Result(result),
                ..
            })) => assert_eq!((read, &*result), (id, &found), "{}", lossy(body)),
            other => panic!("{mode:?} reads {other:?} from {}", lossy(body)),
        }
    }
}

fn lossy(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// Bodies as gabp-rs writes a `tools/call` and a success, which `decode` and `success_result` match as bytes,
/// and bodies that look like them.
fn plainly_written() -> Vec<String> {
    const ID: &str = "550e8400-e29b-41d4-a716-446655440000";
    let call = |params: &str| {
        format!(
            r#"{{"v":"gabp/1","id":"{ID}","type":"request","method":"tools/call","params":{params}}}"#
        )
    };
    let success = |result: &str| {
        format!(r#"{{"v":"gabp/1","id":"{ID}","type":"response","result":{result}}}"#)
    };
    let mut bodies = Vec::new();
    for params in [
        r#"{"name":"demo/echo","arguments":{"value":"0123456789abcdef"}}"#,
        r#"{"name":"demo/echo"}"#,
        r#"{"name":"demo/echo","arguments":{}}"#,
        r#"{"arguments":{"x":[1,2,{"y":null}]},"name":"world/place"}"#,
        r#"{"name":"demo/echo","arguments":{"x":1},"_meta":{"progressToken":"p"}}"#,
        r#"{"name":"demo/echo","parameters":{"x":1}}"#,
        r#"{"name":"demo\/echo","arguments":{"s":"\"\\\u00e9\n"}}"#,
        r#"{"name":"Demo/Echo"}"#,
        r#"{"name":"demo/echo","name":"demo/other"}"#,
        r#"{"name":"demo/echo","arguments":[]}"#,
        r#"{"name":"demo/echo","extra":1}"#,
        r#"{ "name" : "demo/echo" , "arguments" : { "x" : 1 } }"#,
        r#"{}"#,
        r#"[]"#,
        r#""x""#,
    ] {
        bodies.push(call(params));
        bodies.push(format!("{} \r\n", call(params)));
    }
    for result in [
        r#"{"value":"0123456789abcdef"}"#,
        r#"{"content":[{"type":"text","text":"é \u2028"}],"isError":false}"#,
        r#"null"#,
        r#"[1,2,3]"#,
        r#""text""#,
        r#"-1.5e3"#,
        r#"{"a":{"b":{"c":[[[]]]}}}"#,
    ] {
        bodies.push(success(result));
        bodies.push(success(&format!(" {result}\t")));
    }
    bodies
}

/// Every byte of `body` deleted, replaced and preceded by bytes that matter to JSON.
fn byte_mutations(body: &[u8]) -> Vec<Vec<u8>> {
    const BYTES: &[u8] = b"\"\\{}[],: \t\x0c\x01\xffa0";
    let mut out = Vec::new();
    for i in 0..body.len() {
        let mut deleted = body.to_vec();
        deleted.remove(i);
        out.push(deleted);
        for &b in BYTES {
            let mut replaced = body.to_vec();
            replaced[i] = b;
            out.push(replaced);
            let mut inserted = body.to_vec();
            inserted.insert(i, b);
            out.push(inserted);
        }
    }
    out
}

#[test]
fn plainly_written_bodies_and_their_byte_mutations_read_as_the_general_path_reads_them() {
    let (mut cases, mut decoded, mut found) = (0usize, 0usize, 0usize);
    for body in plainly_written() {
        let mut all = byte_mutations(body.as_bytes());
        all.push(body.into_bytes());
        for body in all {
            cases += 1;
            if serde_json::from_slice::<Value>(&body).is_ok() {
                decoded += agree(&body);
            } else {
                // Not JSON: refused by both decoders, and no result is found in it.
                for mode in MODES {
                    assert!(decode(&body, mode).is_err(), "{}", lossy(&body));
                }
            }
            found += usize::from(success_result(&body).is_some());
            success_agrees(&body);
        }
    }
    assert!(
        decoded > 1000 && found > 500,
        "{decoded} decoded, {found} results of {cases}"
    );
}
