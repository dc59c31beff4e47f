//! `MessageCodec` driven through `FramedRead`/`FramedWrite` by scripted reads and in-memory pipes.

mod support;

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use gabp_codec::{CodecError, MessageCodec};
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{ErrorCode, Message, MessageId, MethodName, Request};
use proptest::prelude::*;
use serde_json::{json, Value};
use support::{data, frame, read_all, ScriptedReader};
use tokio_util::codec::{Encoder, FramedRead, FramedWrite};

const ID: &str = "8d3c4c1e-8a2b-4f3e-9a59-0c8e4a2b7d10";

fn ping() -> String {
    format!(r#"{{"v":"gabp/1","id":"{ID}","type":"request","method":"session/ping"}}"#)
}

type Item = Result<Result<Message, CodecError>, CodecError>;

async fn decode_with(codec: MessageCodec, reader: ScriptedReader) -> Vec<Item> {
    read_all(codec, reader).await
}

fn message(item: &Item) -> &Message {
    match item {
        Ok(Ok(message)) => message,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn rejected(item: &Item) -> &CodecError {
    match item {
        Ok(Err(error)) => error,
        other => panic!("expected a per-frame error, got {other:?}"),
    }
}

/// Decodes `body` framed, followed by a valid ping that must still arrive.
async fn reject_then_continue(body: &[u8]) -> CodecError {
    let mut wire = frame(body);
    wire.extend_from_slice(&frame(ping()));
    let mut items = decode_with(MessageCodec::new(), ScriptedReader::new([data(wire)])).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(message(&items[1]).id().as_str(), ID);
    match items.swap_remove(0) {
        Ok(Err(error)) => error,
        other => panic!("expected a per-frame error, got {other:?}"),
    }
}

#[tokio::test]
async fn valid_message_split_at_every_byte_position() {
    let wire = frame(ping());
    for at in 0..=wire.len() {
        let items = decode_with(
            MessageCodec::new(),
            ScriptedReader::chunks([&wire[..at], &wire[at..]]),
        )
        .await;
        assert_eq!(items.len(), 1, "split at {at}");
        assert_eq!(message(&items[0]).id().as_str(), ID);
    }
}

#[tokio::test]
async fn many_messages_in_one_read() {
    let wire: Vec<u8> = (0..100).flat_map(|_| frame(ping())).collect();
    let items = decode_with(MessageCodec::new(), ScriptedReader::new([data(wire)])).await;
    assert_eq!(items.len(), 100);
    items
        .iter()
        .for_each(|item| assert_eq!(message(item).id().as_str(), ID));
}

#[tokio::test]
async fn multibyte_utf8_message_split_across_reads() {
    let body = format!(
        r#"{{"v":"gabp/1","id":"{ID}","type":"event","channel":"chat/said","seq":0,"payload":{{"text":"héllo ✓ 🎮"}}}}"#
    );
    let wire = frame(&body);
    let start_of = |needle: &str| {
        wire.windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .expect("present")
    };
    // Inside the 2-byte é, the 3-byte check mark and the 4-byte emoji.
    let inside = [
        start_of("é") + 1,
        start_of("✓") + 1,
        start_of("✓") + 2,
        start_of("🎮") + 3,
    ];
    for at in inside {
        let items = decode_with(
            MessageCodec::new(),
            ScriptedReader::chunks([&wire[..at], &wire[at..]]),
        )
        .await;
        match message(&items[0]) {
            Message::Event(event) => assert_eq!(event.payload["text"], "héllo ✓ 🎮"),
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn zero_length_body_is_a_parse_error_answer_and_stream_continues() {
    let error = reject_then_continue(b"").await;
    assert_eq!(error.code(), ErrorCode::PARSE_ERROR);
    assert!(error.id().is_nil());
}

#[tokio::test]
async fn non_json_body_is_a_parse_error_answer_with_nil_id() {
    let error = reject_then_continue(b"{not json").await;
    assert_eq!(error.code(), ErrorCode::PARSE_ERROR);
    assert!(error.id().is_nil());
    assert!(matches!(&error, CodecError::Invalid { body, .. } if &body[..] == b"{not json"));
}

#[tokio::test]
async fn invalid_utf8_body_is_a_parse_error_answer() {
    let error = reject_then_continue(b"{\"v\":\"\xff\xfe\"}").await;
    assert_eq!(error.code(), ErrorCode::PARSE_ERROR);
    assert!(error.id().is_nil());
}

#[tokio::test]
async fn non_object_body_is_an_invalid_request_answer() {
    let error = reject_then_continue(b"[1,2,3]").await;
    assert_eq!(error.code(), ErrorCode::INVALID_REQUEST);
    assert!(error.id().is_nil());
}

#[tokio::test]
async fn missing_field_answer_carries_the_message_id() {
    let body = format!(r#"{{"v":"gabp/1","id":"{ID}","type":"request"}}"#);
    let error = reject_then_continue(body.as_bytes()).await;
    assert_eq!(error.code(), ErrorCode::MISSING_REQUIRED_FIELD);
    assert_eq!(error.id().as_str(), ID);
    assert_eq!(error.to_response().id.as_str(), ID);
}

#[tokio::test]
async fn wrong_protocol_version_answer() {
    let body = format!(r#"{{"v":"gabp/2","id":"{ID}","type":"request","method":"session/ping"}}"#);
    let error = reject_then_continue(body.as_bytes()).await;
    assert_eq!(error.code(), ErrorCode::PROTOCOL_VERSION_MISMATCH);
    assert_eq!(error.id().as_str(), ID);
}

#[tokio::test]
async fn unknown_message_type_answer() {
    let body = format!(r#"{{"v":"gabp/1","id":"{ID}","type":"notification"}}"#);
    let error = reject_then_continue(body.as_bytes()).await;
    assert_eq!(error.code(), ErrorCode::INVALID_MESSAGE_TYPE);
    assert_eq!(error.id().as_str(), ID);
}

#[tokio::test]
async fn unreadable_id_answers_with_nil_id() {
    let body = r#"{"v":"gabp/1","id":"not-a-uuid","type":"request","method":"session/ping"}"#;
    let error = reject_then_continue(body.as_bytes()).await;
    assert!(error.id().is_nil());
    assert!(error.to_response().id.is_nil());
}

#[tokio::test]
async fn invalid_params_answer_carries_errors() {
    let body = format!(
        r#"{{"v":"gabp/1","id":"{ID}","type":"request","method":"tools/call","params":{{"name":"inventory.get"}}}}"#
    );
    let error = reject_then_continue(body.as_bytes()).await;
    assert_eq!(error.code(), ErrorCode::INVALID_PARAMS);
    assert_eq!(error.id().as_str(), ID);
    let data = error.to_error_object().data.expect("data");
    assert!(data["errors"].is_array(), "{data}");
}

#[tokio::test]
async fn message_exactly_at_limit_is_accepted_and_one_over_is_answered() {
    let body = ping();
    let limit = body.len();
    let mut wire = frame(&body);
    let mut longer = body.clone();
    longer.insert(longer.len() - 1, ' ');
    wire.extend_from_slice(&frame(&longer));
    wire.extend_from_slice(&frame(&body));
    let codec = MessageCodec::new().with_max_body_size(limit);
    let items = decode_with(codec, ScriptedReader::chunks(wire.chunks(13))).await;
    assert_eq!(items.len(), 3, "{items:?}");
    assert_eq!(message(&items[0]).id().as_str(), ID);
    let error = rejected(&items[1]);
    assert!(
        matches!(error, CodecError::Oversized { declared, limit: l } if *declared == limit as u64 + 1 && *l == limit)
    );
    assert_eq!(error.code(), ErrorCode::INVALID_REQUEST);
    assert!(error.id().is_nil());
    let answer = error.to_error_object();
    assert_eq!(answer.data, Some(json!({ "maxMessageSize": limit })));
    assert_eq!(message(&items[2]).id().as_str(), ID);
}

#[tokio::test]
async fn strict_mode_refuses_what_lenient_mode_accepts() {
    // GABS sends `parameters` instead of `arguments` (SPEC/1.0 gabp.md §3.5).
    let body = format!(
        r#"{{"v":"gabp/1","id":"{ID}","type":"request","method":"tools/call","params":{{"name":"inventory/get","parameters":{{}}}}}}"#
    );
    let lenient = decode_with(
        MessageCodec::new(),
        ScriptedReader::new([data(frame(&body))]),
    )
    .await;
    assert!(
        matches!(lenient[0], Ok(Ok(Message::Request(_)))),
        "{lenient:?}"
    );
    let strict = decode_with(
        MessageCodec::new().with_mode(DecodeMode::Strict),
        ScriptedReader::new([data(frame(&body))]),
    )
    .await;
    assert_eq!(rejected(&strict[0]).id().as_str(), ID);
}

#[tokio::test]
async fn fatal_header_error_ends_the_message_stream() {
    let mut wire = b"Content-Length: -1\r\n\r\n".to_vec();
    wire.extend_from_slice(&frame(ping()));
    let items = decode_with(MessageCodec::new(), ScriptedReader::new([data(wire)])).await;
    assert!(
        matches!(items[..], [Err(CodecError::InvalidContentLength { .. })]),
        "{items:?}"
    );
}

#[tokio::test]
async fn truncated_message_at_eof_is_fatal() {
    let wire = frame(ping());
    let items = decode_with(
        MessageCodec::new(),
        ScriptedReader::new([data(&wire[..wire.len() - 1])]),
    )
    .await;
    assert!(
        matches!(items[..], [Err(CodecError::TruncatedBody { .. })]),
        "{items:?}"
    );
}

#[tokio::test]
async fn next_dropped_inside_select_loses_nothing() {
    let wire = frame(ping());
    let mut reader = FramedRead::new(ScriptedReader::chunks(wire.chunks(3)), MessageCodec::new());
    let mut cancelled = 0;
    let item = loop {
        tokio::select! {
            biased;
            item = reader.next() => break item,
            () = std::future::ready(()) => cancelled += 1,
        }
    };
    assert!(cancelled > 10);
    assert_eq!(message(&item.expect("an item")).id().as_str(), ID);
}

#[tokio::test]
async fn messages_round_trip_through_framed_write_and_read() {
    let (tx, rx) = tokio::io::duplex(256);
    let mut writer = FramedWrite::new(tx, MessageCodec::new());
    let mut reader = FramedRead::new(rx, MessageCodec::new().with_mode(DecodeMode::Strict));
    let messages: Vec<Message> = (0..20).map(|i| echo_request(&"é".repeat(i * 50))).collect();
    let send = async {
        for m in &messages {
            writer.feed(m.clone()).await.expect("send");
        }
        writer.flush().await.expect("flush");
        drop(writer);
    };
    let receive = async {
        let mut got = Vec::new();
        while let Some(item) = reader.next().await {
            got.push(item.expect("no fatal error").expect("a valid message"));
        }
        got
    };
    let ((), got) = tokio::join!(send, receive);
    assert_eq!(got, messages);
}

#[test]
fn encoding_a_message_over_the_limit_is_an_error_and_writes_nothing() {
    let message = echo_request(&"x".repeat(2000));
    let mut codec = MessageCodec::new().with_max_body_size(1000);
    let mut dst = BytesMut::new();
    let err = codec.encode(message, &mut dst).expect_err("over the limit");
    assert!(
        matches!(err, CodecError::BodyTooLarge { len, limit: 1000 } if len > 2000),
        "{err}"
    );
    assert!(dst.is_empty());
    // The same codec still encodes a message that fits.
    codec.encode(echo_request("ok"), &mut dst).expect("fits");
    assert!(!dst.is_empty());
}

#[test]
fn oversized_answer_is_a_valid_strict_response() {
    let error = CodecError::Oversized {
        declared: 5_000_000,
        limit: gabp_codec::DEFAULT_MAX_BODY_SIZE,
    };
    let answer = Message::from(error.to_response());
    let bytes = serde_json::to_vec(&answer).expect("serializes");
    let back = decode(&bytes, DecodeMode::Strict).expect("strictly valid");
    assert_eq!(back, answer);
    assert_eq!(back.id(), MessageId::nil());
}

fn echo_request(text: &str) -> Message {
    let mut params = serde_json::Map::new();
    params.insert("text".into(), Value::String(text.into()));
    Message::from(Request::new(
        MethodName::new("test/echo").expect("valid method name"),
        Some(params),
    ))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "\\PC{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn encode_then_decode_a_message_is_the_identity(
        method in "[a-z][a-z0-9_]{0,8}/[a-z][a-z0-9_-]{0,8}",
        params in prop::option::of(prop::collection::btree_map("[a-z]{1,8}", json_value(), 0..6)),
        chunk in 1..64usize,
    ) {
        let message = Message::from(Request::new(
            MethodName::new(method).map_err(|e| TestCaseError::fail(e.to_string()))?,
            params.map(|p| p.into_iter().collect()),
        ));
        let mut wire = BytesMut::new();
        MessageCodec::new().encode(message.clone(), &mut wire).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut codec = MessageCodec::new().with_mode(DecodeMode::Strict);
        let mut buf = BytesMut::new();
        let mut decoded = Vec::new();
        for piece in wire.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(item) = tokio_util::codec::Decoder::decode(&mut codec, &mut buf)
                .map_err(|e| TestCaseError::fail(e.to_string()))?
            {
                decoded.push(item.map_err(|e| TestCaseError::fail(e.to_string()))?);
            }
        }
        prop_assert_eq!(decoded, vec![message]);
    }
}
