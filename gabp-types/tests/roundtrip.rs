//! Property: any generated `Message` serializes to JSON that the strict decoder accepts, that the generated
//! schemas accept, and that decodes back to an equal value.

use std::collections::HashMap;

use gabp_types::decode::{decode, DecodeMode};
use gabp_types::methods::CORE_METHODS;
use gabp_types::schema::{applicable_schemas, schema_files};
use gabp_types::{
    Attention, AttentionSample, AttentionState, BoundedU64, ChannelName, ErrorCode, ErrorObject,
    Event, Message, MessageId, MethodName, NonEmptyString, Params, Request, Response, Severity,
    Timestamp,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const NAME: &str = "[a-z][a-z0-9_-]{0,6}(/[a-z][a-z0-9_-]{0,6}){1,3}";

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        "[ -~\u{e9}\u{4e16}\u{1F600}]{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-zA-Z_]{1,6}", json_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

fn message_id() -> impl Strategy<Value = MessageId> {
    (any::<u128>(), any::<bool>()).prop_map(|(n, upper)| {
        let id = MessageId::from_uuid(uuid::Uuid::from_u128(n));
        if upper {
            id.as_str().to_ascii_uppercase().parse().expect("uuid")
        } else {
            id
        }
    })
}

fn non_empty() -> impl Strategy<Value = NonEmptyString> {
    "[ -~]{1,16}".prop_map(|s| NonEmptyString::new(s).expect("non-empty"))
}

fn severity() -> impl Strategy<Value = Severity> {
    prop_oneof![
        Just(Severity::Info),
        Just(Severity::Warning),
        Just(Severity::Error),
        Just(Severity::Fatal)
    ]
}

fn attention() -> impl Strategy<Value = Attention> {
    let sample =
        (severity(), non_empty(), 1u64..1000, any::<u64>()).prop_map(|(level, message, n, seq)| {
            AttentionSample {
                level,
                message,
                repeat_count: BoundedU64::new(n).expect(">= 1"),
                latest_sequence: seq,
                extra: Map::new(),
            }
        });
    (
        (
            non_empty(),
            any::<bool>(),
            severity(),
            any::<bool>(),
            any::<bool>(),
            non_empty(),
        ),
        (
            proptest::option::of(non_empty()),
            proptest::option::of(non_empty()),
            any::<u64>(),
            any::<u64>(),
            proptest::option::of(any::<u64>()),
            any::<u64>(),
            proptest::option::of(prop::collection::vec(sample, 0..3)),
        ),
    )
        .prop_map(
            |(
                (id, open, severity, blocking, invalidated, summary),
                (op, method, first, latest, cursor, total, sample),
            )| {
                Attention {
                    attention_id: id,
                    state: if open {
                        AttentionState::Open
                    } else {
                        AttentionState::Cleared
                    },
                    severity,
                    blocking,
                    state_invalidated: invalidated,
                    summary,
                    causal_operation_id: op,
                    causal_method: method,
                    opened_at_sequence: first,
                    latest_sequence: latest,
                    diagnostics_cursor: cursor,
                    total_urgent_entries: total,
                    sample,
                    extra: Map::new(),
                }
            },
        )
}

/// Params for the core methods, valid by construction, keyed by method.
fn core_request() -> impl Strategy<Value = (String, Option<Value>)> {
    let channel = NAME;
    prop_oneof![
        (
            "[0-9a-f]{32,64}",
            "[0-9.]{1,8}",
            0..3usize,
            any::<u128>(),
            any::<bool>()
        )
            .prop_map(|(token, version, platform, launch, info)| {
                let mut p = json!({
                    "token": token,
                    "bridgeVersion": version,
                    "platform": (["windows", "macos", "linux"][platform]),
                    "launchId": uuid::Uuid::from_u128(launch).to_string(),
                });
                if info {
                    p["clientInfo"] = json!({"name": "proptest", "version": "1"});
                }
                ("session/hello".to_owned(), Some(p))
            }),
        proptest::option::of(Just(json!({}))).prop_map(|p| ("session/ping".to_owned(), p)),
        proptest::option::of("[ -~]{0,10}").prop_map(|r| (
            "session/goodbye".to_owned(),
            Some(r.map_or(json!({}), |r| json!({"reason": r})))
        )),
        (NAME, proptest::option::of(json_object())).prop_map(|(name, args)| {
            let mut p = json!({ "name": name });
            if let Some(args) = args {
                p["arguments"] = Value::Object(args);
            }
            ("tools/call".to_owned(), Some(p))
        }),
        prop::collection::btree_set(channel, 1..4).prop_map(|c| (
            "events/subscribe".to_owned(),
            Some(json!({ "channels": c.into_iter().collect::<Vec<_>>() }))
        )),
        ("[a-z]{1,8}", "[a-z/]{0,12}").prop_map(|(ns, path)| (
            "resources/read".to_owned(),
            Some(json!({ "uri": format!("gabp://{ns}/{path}") }))
        )),
        (json_object(), proptest::option::of(any::<bool>())).prop_map(|(updates, validate)| {
            let mut p = json!({ "updates": updates });
            if let Some(v) = validate {
                p["validate"] = json!(v);
            }
            ("state/set".to_owned(), Some(p))
        }),
        non_empty().prop_map(|id| (
            "attention/ack".to_owned(),
            Some(json!({ "attentionId": id.as_str() }))
        )),
        proptest::option::of(prop::collection::vec("[a-z]{1,5}", 0..3)).prop_map(|tags| {
            let p = tags.map_or(
                json!({}),
                |t| json!({ "filter": { "tags": t, "namePattern": "world/*" } }),
            );
            ("tools/list".to_owned(), Some(p))
        }),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let custom = (NAME, proptest::option::of(json_object()))
        .prop_filter("not a core method", |(m, _)| {
            !CORE_METHODS.contains(&m.as_str())
        })
        .prop_map(|(m, p)| (m, p.map(Value::Object)));
    (message_id(), prop_oneof![custom, core_request()]).prop_map(|(id, (method, params))| Request {
        id,
        method: MethodName::new(method).expect("valid name"),
        params: params.map(|p| match p {
            Value::Object(m) => Params::from(m),
            _ => Params::default(),
        }),
    })
}

fn response() -> impl Strategy<Value = Response> {
    let error = (
        any::<i64>(),
        non_empty(),
        proptest::option::of(json_value()),
    )
        .prop_map(|(code, message, data)| {
            let mut e = ErrorObject::new(ErrorCode(code), message.into_string());
            e.data = data;
            e
        });
    (
        message_id(),
        prop_oneof![json_value().prop_map(Ok), error.prop_map(Err)],
    )
        .prop_map(|(id, outcome)| match outcome {
            Ok(result) => Response::success(id, result),
            Err(error) => Response::error(id, error),
        })
}

fn event() -> impl Strategy<Value = Event> {
    let plain = (NAME, json_value())
        .prop_filter("not a channel with a typed payload", |(c, _)| {
            !c.starts_with("attention/") && c != gabp_types::methods::TOOLS_CHANGED_CHANNEL
        })
        .prop_map(|(c, p)| (c, p));
    let attention_event = (0..3usize, attention()).prop_map(|(i, a)| {
        (
            ["attention/opened", "attention/updated", "attention/cleared"][i].to_owned(),
            serde_json::to_value(a).expect("serializable"),
        )
    });
    (
        message_id(),
        prop_oneof![plain, attention_event],
        any::<u64>(),
        proptest::option::of(0u64..253_402_300_799_999),
    )
        .prop_map(|(id, (channel, payload), seq, ts)| Event {
            id,
            channel: ChannelName::new(channel).expect("valid channel"),
            seq,
            payload,
            timestamp: ts.map(Timestamp::from_unix_millis),
        })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        request().prop_map(Message::Request),
        response().prop_map(Message::Response),
        event().prop_map(Message::Event),
    ]
}

fn validators() -> HashMap<String, jsonschema::Validator> {
    schema_files()
        .into_iter()
        .map(|f| {
            let v = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft7)
                .should_validate_formats(true)
                .build(&f.schema)
                .expect("schema compiles");
            (f.path, v)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn generated_messages_round_trip_and_validate(message in message()) {
        thread_local! {
            static VALIDATORS: HashMap<String, jsonschema::Validator> = validators();
        }
        let bytes = message.to_vec();
        // The envelope writer and the `Serialize` impl agree byte for byte.
        prop_assert_eq!(&bytes, &serde_json::to_vec(&message).expect("serialize"));
        let decoded = decode(&bytes, DecodeMode::Strict)
            .map_err(|e| TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&bytes))))?;
        prop_assert_eq!(&decoded, &message);
        let value: Value = serde_json::from_slice(&bytes).expect("JSON");
        VALIDATORS.with(|validators| {
            for (path, pointer) in applicable_schemas(&value, None) {
                let part = value.pointer(pointer).unwrap_or(&Value::Null);
                if let Some(err) = validators[&path].iter_errors(part).next() {
                    return Err(TestCaseError::fail(format!("{path}: {err}: {value}")));
                }
            }
            Ok(())
        })?;
        // The lenient decoder reads strictly valid messages to the same value.
        prop_assert_eq!(decode(&bytes, DecodeMode::Lenient).expect("lenient"), message);
    }

    /// Params written with serde's contract checked are what serde_json writes, for any object.
    #[test]
    fn params_are_written_as_serde_json_writes_them(object in json_object()) {
        let params = Params::from_serialize(&object).expect("an object serializes");
        prop_assert_eq!(params.as_json(), serde_json::to_string(&object).expect("serialize"));
    }
}
