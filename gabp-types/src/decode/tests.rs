//! The decoders' unit tests: faults the fuzz target found, and `success_result` against both decoders.

use super::*;

/// The fuzz target found it: without serde_json's `float_roundtrip` (which the workspace turns on
/// for every crate), 98999999999999999999999999 and the shortest text of the `f64` read from it
/// read as two different `f64`s, so a message changed each time it was read and written again.
/// In this crate's tests jsonschema turns the feature on as well; the fuzz build has no jsonschema.
#[test]
fn numbers_read_back_exactly() {
    let body = br#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"event",
        "channel":"game/tick","seq":0,"payload":[98999999999999999999999999,9.99999e68]}"#;
    let message = decode_strict(body).expect("valid");
    assert_eq!(decode_strict(&message.to_vec()), Ok(message.clone()));
    let Message::Event(event) = message else {
        panic!("an event");
    };
    let exact = ["98999999999999999999999999", "9.99999e68"].map(|t| t.parse::<f64>().ok());
    assert_eq!([0, 1].map(|i| event.payload[i].as_f64()), exact);
}

/// A repeated member of `tools/call` params reads as the general path reads it, the last copy, as
/// for every other method; the fast path used to keep both, and `Params::member` read the first.
#[test]
fn a_repeated_params_member_reads_as_the_last() {
    let body = br#"{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request",
        "method":"tools/call","params":{"name":"world/get","name":"world/set"}}"#;
    let Ok(Message::Request(request)) = decode_strict(body) else {
        panic!("a valid request");
    };
    let params = request.params.expect("params");
    assert_eq!(params.str_member("name").as_deref(), Some("world/set"));
    assert!(params.decode::<methods::ToolsCallParams>().is_ok());
}

/// `written_success` finds the result of a success only as gabp-rs writes one, without reading it; where
/// `success_result` finds one in such a body, the range is the same, and `result_reads` says whether it would.
#[test]
fn written_success_finds_the_result_unread() {
    let id = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";
    let plain = |result: &[u8]| {
        let mut body =
            format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":"#).into_bytes();
        body.extend_from_slice(result);
        body.push(b'}');
        body
    };
    for (result, reads) in [
        (&br#"{"value":"x"}"#[..], true),
        (br#" null "#, true),
        (br#"{"n":}"#, false),
        (b"\"\xff\"", false),
        (br#"1,"error":{"code":-1,"message":"m"}"#, false),
        (br#"1e999"#, false),
    ] {
        let body = plain(result);
        let (found, range) = written_success(&body).expect("written as gabp-rs writes");
        assert_eq!(found.as_str(), id);
        assert_eq!(&body[range.clone()], result.trim_ascii());
        assert_eq!(
            result_reads(&body[range.clone()]),
            reads,
            "{:?}",
            String::from_utf8_lossy(result)
        );
        let checked = success_result(&body);
        assert_eq!(checked.is_some(), reads);
        assert!(checked.is_none_or(|(_, checked)| checked == range));
    }
    // Any other layout is not read here.
    let reordered = format!(r#"{{"id":"{id}","v":"gabp/1","type":"response","result":1}}"#);
    assert_eq!(written_success(reordered.as_bytes()), None);
    assert_eq!(written_success(b"\xff"), None);
    let error = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"response","error":{{"code":-1,"message":"m"}}}}"#
    );
    assert_eq!(written_success(error.as_bytes()), None);
}

/// `success_result` finds the result of plain success responses only, and where it finds one, both
/// decoders read the response as that result.
#[test]
fn success_result_agrees_with_the_decoders() {
    let id = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";
    let plain = [
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":{{"value":"x"}}}}"#),
        format!(r#" {{ "result" : [1, "é", null] , "type":"response","id":"{id}","v":"gabp/1"}} "#),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":null}}"#),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":"a\"b"}}"#),
    ];
    for body in &plain {
        let (found, range) = success_result(body.as_bytes()).expect(body);
        let result: Value = serde_json::from_str(&body[range]).expect("json");
        for mode in [DecodeMode::Strict, DecodeMode::Lenient] {
            let message = decode(body.as_bytes(), mode).expect(body);
            assert_eq!(
                message,
                Message::Response(Response::success(found, result.clone()))
            );
        }
    }
    let others = [
        format!(
            r#"{{"v":"gabp/1","id":"{id}","type":"response","error":{{"code":-1,"message":"m"}}}}"#
        ),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":1,"error":null}}"#),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":1,"result":2}}"#),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":1,"extra":2}}"#),
        format!(r#"{{"v":"gabp/2","id":"{id}","type":"response","result":1}}"#),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"event","result":1}}"#),
        r#"{"v":"gabp/1","id":"7","type":"response","result":1}"#.to_owned(),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response"}}"#),
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":1"#),
    ];
    for body in &others {
        assert_eq!(success_result(body.as_bytes()), None, "{body}");
    }
    assert_eq!(success_result(b"\xff"), None);
    let deep = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"response","result":{}1{}}}"#,
        "[".repeat(65),
        "]".repeat(65)
    );
    assert_eq!(
        success_result(deep.as_bytes()),
        None,
        "deep results take the general path"
    );
    let quoted = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"response","result":["{}\\",{{}}]}}"#,
        "[".repeat(100)
    );
    assert!(
        success_result(quoted.as_bytes()).is_some(),
        "brackets in strings do not nest"
    );
    // Results a raw read skips but a `Value` refuses: both decoders refuse these bodies, so no result is found.
    let digits = "1".repeat(340);
    let numbers = format!("[{}]", ["12"; 200].join(","));
    for (result, found) in [
        ("1e400", false),
        ("[1.8E+308]", false),
        (r#""\ud800""#, false),
        (r#"{"\udc00":1}"#, false),
        (digits.as_str(), false),
        ("[1.5E+308]", true),
        (r#"{"a":"\u00e9\ud83d\ude00"}"#, true),
        ("[1e99,2E-9]", true),
        (r#""1e400, \" and \\ud800""#, true),
        (numbers.as_str(), true),
    ] {
        for body in [
            format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":{result}}}"#),
            format!(r#"{{"id":"{id}","v":"gabp/1","type":"response","result":{result}}}"#),
        ] {
            assert_eq!(success_result(body.as_bytes()).is_some(), found, "{body}");
            assert_eq!(
                serde_json::from_str::<Value>(&body).is_ok(),
                found,
                "{body}"
            );
            assert_eq!(
                decode(body.as_bytes(), DecodeMode::Lenient).is_ok(),
                found,
                "{body}"
            );
        }
    }
    // serde_json's raw value token as a member name: `Value` reads the JSON in the string, so the general path
    // reads this result, as `[1,2]`.
    let token = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"response","result":{{"$serde_json::private::RawValue":"[1,2]"}}}}"#
    );
    assert_eq!(success_result(token.as_bytes()), None);
}

/// Lib.GAB's `parameters` reads as `arguments` in a liberal read only; a member the check refuses beside it
/// is still named in the error, and a strict read refuses `parameters` itself.
#[test]
fn libgab_parameters_are_renamed_only_where_the_check_refuses_them() {
    let request = |params: &str| {
        format!(
            r#"{{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"tools/call","params":{params}}}"#
        )
    };
    let libgab = request(r#"{"name":"a/b","parameters":{"x":1}}"#);
    let Ok(Message::Request(r)) = decode(libgab.as_bytes(), DecodeMode::Lenient) else {
        panic!("a liberal read accepts `parameters`");
    };
    let params = r.params.expect("params");
    assert_eq!(
        params.member("arguments").map(|a| a.get().to_owned()),
        Some(r#"{"x":1}"#.into())
    );
    assert!(params.member("parameters").is_none());
    let strict = decode(libgab.as_bytes(), DecodeMode::Strict).expect_err("strict refuses it");
    assert!(strict.to_string().contains("parameters"), "{strict}");
    let both = request(r#"{"name":"a/b","parameters":{},"bogus":1}"#);
    let error = decode(both.as_bytes(), DecodeMode::Lenient).expect_err("bogus is refused");
    assert!(error.to_string().contains("bogus"), "{error}");
    // Plain `arguments` is read as it is, once.
    let plain = request(r#"{"name":"a/b","arguments":{"y":2}}"#);
    assert!(decode(plain.as_bytes(), DecodeMode::Lenient).is_ok());
}

/// The check of `tools/call` params records where their members lie, and `tools_call_members` reads them from
/// there; params that did not come through the decoder are checked as the decoder checks them.
#[test]
fn tools_call_members_are_read_where_the_check_found_them() {
    let request = |params: &str| {
        format!(
            r#"{{"v":"gabp/1","id":"6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11","type":"request","method":"tools/call","params":{params}}}"#
        )
    };
    for params in [
        r#"{"name":"a/b","arguments":{"x":1}}"#,
        r#"{ "_meta" : {"progressToken":"t"}, "arguments" : { "y" : [1, "}"] } , "name" : "a\/b" }"#,
        r#"{"name":"a/b"}"#,
    ] {
        // Written as bridges write it, the envelope is matched as bytes; written otherwise, it is read into
        // fields; an envelope member the fast path does not take sends the request down the general path.
        let spaced = request(params).replacen('{', "{ ", 1);
        let general = request(params).replacen('{', r#"{"x-extra":1,"#, 1);
        for (body, mode, fast) in [
            (request(params), DecodeMode::Strict, true),
            (request(params), DecodeMode::Lenient, true),
            (spaced, DecodeMode::Strict, true),
            (general, DecodeMode::Lenient, false),
        ] {
            let Ok(Message::Request(r)) = decode(body.as_bytes(), mode) else {
                panic!("valid: {body}");
            };
            let p = r.params.expect("params");
            if fast {
                // Kept as received: recorded unless `_meta` is there.
                assert_eq!(
                    p.call_record().is_some(),
                    !params.contains("_meta"),
                    "{params}"
                );
            }
            let members = tools_call_members(&p).expect("members");
            assert_eq!(members.name, "a/b");
            assert_eq!(p.str_member("name").as_deref(), Some("a/b"));
            assert_eq!(members.arguments, p.member("arguments").map(RawValue::get));
            assert_eq!(members.meta, p.member("_meta").map(RawValue::get));
            // The same params, not decoded: no record, the same members.
            let fresh = Params::from_raw(RawValue::from_string(p.as_json().to_owned()).unwrap());
            let fresh = fresh.expect("object");
            assert!(fresh.call_record().is_none());
            assert_eq!(tools_call_members(&fresh), Ok(members));
        }
    }
    // A peer's long name or member is quoted short.
    let long = "x".repeat(50_000);
    for params in [
        format!(r#"{{"name":"{long}"}}"#),
        format!(r#"{{"name":"a/b","{long}":1}}"#),
    ] {
        let p = Params::from_raw(RawValue::from_string(params).unwrap()).unwrap();
        let error = tools_call_members(&p).expect_err("refused");
        assert!(error.reason().len() < 200, "{}", error.reason());
    }
    for (params, pointer) in [
        (r#"{"arguments":{}}"#, "/params"),
        (r#"{"name":"a/b","arguments":[1]}"#, "/params/arguments"),
        (r#"{"name":"A"}"#, "/params/name"),
        (r#"{"name":"a/b","x":1}"#, "/params"),
        (r#"{"name":"a/b","name":"a/c"}"#, "/params/name"),
    ] {
        let p = Params::from_raw(RawValue::from_string(params.to_owned()).unwrap()).unwrap();
        let error = tools_call_members(&p).expect_err(params);
        assert_eq!(
            (error.code(), error.pointer()),
            (ErrorCode::INVALID_PARAMS, pointer),
            "{params}"
        );
    }
    // Lib.GAB's `parameters`, renamed: the params are written again and checked again.
    let libgab = request(r#"{"name":"a/b","parameters":{"x":1}}"#);
    let Ok(Message::Request(r)) = decode(libgab.as_bytes(), DecodeMode::Lenient) else {
        panic!("a liberal read accepts `parameters`");
    };
    let p = r.params.expect("params");
    assert_eq!(
        tools_call_members(&p).unwrap().arguments,
        Some(r#"{"x":1}"#)
    );
}

/// SPEC/1.0 gabp.md §3.5: a null member beside the other one is read as absent, leniently only; two real members
/// are refused either way.
#[test]
fn a_null_member_beside_the_other_is_read_liberally() {
    let id = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";
    let body = |rest: &str| format!(r#"{{"v":"gabp/1","id":"{id}","type":"response",{rest}}}"#);
    let error = body(r#""result":null,"error":{"code":-31002,"message":"Tool not found"}"#);
    let Ok(Message::Response(r)) = decode(error.as_bytes(), DecodeMode::Lenient) else {
        panic!("lenient reads {error}");
    };
    assert_eq!(r.error_object().map(|e| e.code.0), Some(-31002));
    let success = body(r#""result":{"ok":true},"error":null"#);
    let Ok(Message::Response(r)) = decode(success.as_bytes(), DecodeMode::Lenient) else {
        panic!("lenient reads {success}");
    };
    assert_eq!(r.result(), Some(&serde_json::json!({"ok": true})));
    for refused in [
        error,
        success,
        body(r#""result":1,"error":{"code":-1,"message":"m"}"#),
    ] {
        assert!(
            decode(refused.as_bytes(), DecodeMode::Strict).is_err(),
            "{refused}"
        );
    }
    let both = body(r#""result":1,"error":{"code":-1,"message":"m"}"#);
    assert!(decode(both.as_bytes(), DecodeMode::Lenient).is_err());
}
