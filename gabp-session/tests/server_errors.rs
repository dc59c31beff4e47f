//! Every row of the error table of SPEC/1.0 transport.md §7, one bad input per test, over an in-memory pair driven by a
//! raw frame-level client. After each recoverable error the connection must still serve a request.

mod server_support;

use gabp_session::server::{CloseReason, ModServer, ServerLimits};
use gabp_types::{Message, MessageId};
use serde_json::json;
use server_support::{
    close_reason, code, connect, connect_hello, connect_hello_served, connect_served,
    connect_with_buffer, data, fixture, frame, hello_params, request, RawClient,
};

fn server() -> ModServer {
    fixture::register(server_support::builder())
        .build()
        .expect("build")
}

/// The connection still answers a ping (so the error left it open and in sync).
async fn still_open(client: &mut RawClient) {
    let r = client.call("session/ping", None).await;
    assert!(r.result().is_some(), "{r:?}");
}

/// Sends `body` as one frame and returns the one answer.
async fn answer_to(client: &mut RawClient, body: &[u8]) -> gabp_types::Response {
    client.send_frame(body).await;
    client.recv_response().await
}

// --- -32700: body is not JSON / not UTF-8; nil id; stays open ---

#[tokio::test]
async fn body_not_json_is_parse_error_with_nil_id() {
    let mut client = connect_hello(&server()).await;
    let r = answer_to(&mut client, b"{not json").await;
    assert_eq!(code(&r), Some(-32700));
    assert!(r.id.is_nil());
    still_open(&mut client).await;
}

#[tokio::test]
async fn body_not_utf8_is_parse_error_with_nil_id() {
    let mut client = connect_hello(&server()).await;
    let r = answer_to(&mut client, b"{\"v\":\"gabp/1\xff\xfe\"}").await;
    assert_eq!(code(&r), Some(-32700));
    assert!(r.id.is_nil());
    still_open(&mut client).await;
}

#[tokio::test]
async fn empty_body_is_parse_error() {
    let mut client = connect_hello(&server()).await;
    let r = answer_to(&mut client, b"").await;
    assert_eq!(code(&r), Some(-32700));
    still_open(&mut client).await;
}

// --- -32600 / -32202 / -32203: JSON but not a valid envelope; the message's id when it is a UUID ---

#[tokio::test]
async fn json_that_is_not_an_object_is_invalid_request_with_nil_id() {
    let mut client = connect_hello(&server()).await;
    let r = answer_to(&mut client, b"[1,2,3]").await;
    assert_eq!(code(&r), Some(-32600));
    assert!(r.id.is_nil());
    still_open(&mut client).await;
}

#[tokio::test]
async fn missing_method_is_missing_field_with_the_message_id() {
    let mut client = connect_hello(&server()).await;
    let id = MessageId::new_v4();
    let body = json!({"v": "gabp/1", "id": id.as_str(), "type": "request"});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32202));
    assert_eq!(r.id, id);
    still_open(&mut client).await;
}

#[tokio::test]
async fn missing_id_is_missing_field_with_nil_id() {
    let mut client = connect_hello(&server()).await;
    let body = json!({"v": "gabp/1", "type": "request", "method": "session/ping"});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32202));
    assert!(r.id.is_nil());
    still_open(&mut client).await;
}

#[tokio::test]
async fn braced_id_is_invalid_field_value_with_nil_id() {
    let mut client = connect_hello(&server()).await;
    let body = json!({"v": "gabp/1", "id": "{6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11}", "type": "request", "method": "session/ping"});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32203));
    assert!(r.id.is_nil());
    still_open(&mut client).await;
}

#[tokio::test]
async fn bad_method_name_is_invalid_field_value_with_the_message_id() {
    let mut client = connect_hello(&server()).await;
    let id = MessageId::new_v4();
    let body = json!({"v": "gabp/1", "id": id.as_str(), "type": "request", "method": "Tools.List"});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32203));
    assert_eq!(r.id, id);
    still_open(&mut client).await;
}

#[tokio::test]
async fn request_with_a_result_field_is_invalid_request() {
    let mut client = connect_hello(&server()).await;
    let id = MessageId::new_v4();
    let body = json!({"v": "gabp/1", "id": id.as_str(), "type": "request", "method": "session/ping", "result": {}});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32600));
    assert_eq!(r.id, id);
    still_open(&mut client).await;
}

// --- -32200: v is not gabp/1 ---

#[tokio::test]
async fn wrong_version_is_protocol_version_mismatch() {
    let mut client = connect_hello(&server()).await;
    let id = MessageId::new_v4();
    let body =
        json!({"v": "gabp/2", "id": id.as_str(), "type": "request", "method": "session/ping"});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32200));
    assert_eq!(r.id, id);
    still_open(&mut client).await;
}

// --- -32201: unknown type ---

#[tokio::test]
async fn unknown_type_is_invalid_message_type() {
    let mut client = connect_hello(&server()).await;
    let id = MessageId::new_v4();
    let body =
        json!({"v": "gabp/1", "id": id.as_str(), "type": "notification", "method": "session/ping"});
    let r = answer_to(&mut client, body.to_string().as_bytes()).await;
    assert_eq!(code(&r), Some(-32201));
    assert_eq!(r.id, id);
    still_open(&mut client).await;
}

// --- never answer a response or an event, even an invalid one ---

#[tokio::test]
async fn responses_and_events_are_never_answered() {
    let mut client = connect_hello(&server()).await;
    // Our own kind of error reply, bounced back: must not start a storm.
    let bounced = json!({"v": "gabp/1", "id": MessageId::nil().as_str(), "type": "response", "error": {"code": -32700, "message": "x"}});
    client.send_value(&bounced).await;
    let bad_response = json!({"v": "gabp/9", "id": "nope", "type": "response", "result": {}});
    client.send_value(&bad_response).await;
    let event = json!({"v": "gabp/1", "id": MessageId::new_v4().as_str(), "type": "event", "channel": "a/b", "seq": 0, "payload": {}});
    client.send_value(&event).await;
    let bad_event = json!({"v": "gabp/1", "id": MessageId::new_v4().as_str(), "type": "event", "channel": "a/b", "seq": -1, "payload": {}});
    client.send_value(&bad_event).await;
    // The next frame the mod writes is the ping's answer.
    let (id, ping) = request("session/ping", None);
    client.send_value(&ping).await;
    let Message::Response(r) = client.recv().await else {
        panic!("expected the ping's response")
    };
    assert_eq!(r.id, id);
    assert!(r.result().is_some());
}

#[tokio::test]
async fn many_bad_frames_get_one_answer_each() {
    let mut client = connect_hello(&server()).await;
    for _ in 0..50 {
        client.send_frame(b"garbage").await;
    }
    for _ in 0..50 {
        let r = client.recv_response().await;
        assert_eq!(code(&r), Some(-32700));
    }
    still_open(&mut client).await;
}

// --- -32600 with data.maxMessageSize: frame over the size limit; the body is skipped ---

#[tokio::test]
async fn oversized_frame_is_refused_skipped_and_the_stream_goes_on() {
    let limits = ServerLimits::default().with_max_message_size(4096);
    let server = fixture::register(server_support::builder())
        .limits(limits)
        .build()
        .unwrap();
    let mut client = connect_hello(&server).await;
    // An oversized request, immediately followed by a ping in the same write.
    let (_, big) = request(
        "tools/call",
        Some(json!({"name": "demo/echo", "arguments": {"value": "x".repeat(10_000)}})),
    );
    let big = big.to_string();
    let (ping_id, ping) = request("session/ping", None);
    let ping = ping.to_string();
    let mut bytes = frame(big.as_bytes());
    bytes.extend(frame(ping.as_bytes()));
    client.write_raw(&bytes).await;
    let r = client.recv_response().await;
    assert_eq!(code(&r), Some(-32600));
    assert!(r.id.is_nil());
    assert_eq!(data(&r)["maxMessageSize"], 4096);
    let r = client.recv_response().await;
    assert_eq!(r.id, ping_id);
    assert!(r.result().is_some());
}

// --- header block without a valid Content-Length: best-effort -32700, then close ---

async fn fatal_header(header: &[u8]) {
    let server = server();
    let (mut client, served) = connect_hello_served(&server).await;
    client.write_raw(header).await;
    let seen = client.until_closed().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let Message::Response(r) = &seen[0] else {
        panic!("{seen:?}")
    };
    assert_eq!(code(r), Some(-32700));
    assert!(r.id.is_nil());
    assert!(matches!(
        close_reason(served).await,
        CloseReason::Framing(_)
    ));
}

#[tokio::test]
async fn missing_content_length_closes() {
    fatal_header(b"Content-Type: application/json\r\n\r\n{}").await;
}

#[tokio::test]
async fn negative_content_length_closes() {
    fatal_header(b"Content-Length: -5\r\n\r\n{}").await;
}

#[tokio::test]
async fn non_numeric_content_length_closes() {
    fatal_header(b"Content-Length: 0x10\r\n\r\n{}").await;
}

#[tokio::test]
async fn header_over_8_kib_closes() {
    let mut header = b"Content-Length: 2\r\nX-Padding: ".to_vec();
    header.extend(std::iter::repeat_n(b'a', 9000));
    header.extend(b"\r\n\r\n{}");
    fatal_header(&header).await;
}

// --- end of input inside a frame: no answer, the connection closes (transport.md §7, last row) ---

/// Writes `bytes`, then ends the input: the mod must answer nothing and close.
async fn truncated(bytes: &[u8]) {
    let server = server();
    let (mut client, served) = connect_hello_served(&server).await;
    client.write_raw(bytes).await;
    client.shutdown_write().await;
    let seen = client.until_closed().await;
    assert!(seen.is_empty(), "a truncated frame was answered: {seen:?}");
    assert!(matches!(
        close_reason(served).await,
        CloseReason::Framing(_)
    ));
}

#[tokio::test]
async fn a_body_one_byte_short_then_end_of_input_is_not_answered() {
    let (_, ping) = request("session/ping", None);
    let mut bytes = frame(ping.to_string().as_bytes());
    bytes.pop();
    truncated(&bytes).await;
}

#[tokio::test]
async fn a_header_cut_short_by_end_of_input_is_not_answered() {
    truncated(b"Content-Length: 2\r\n").await;
}

// --- -32100: any request before a successful session/hello; stays open ---

#[tokio::test]
async fn request_before_hello_is_authentication_required() {
    let server = server();
    let mut client = connect(&server);
    for method in ["session/ping", "tools/list", "game/pause"] {
        let r = client.call(method, None).await;
        assert_eq!(code(&r), Some(-32100), "{method}");
    }
    let r = client.call_tool("demo/echo", json!({"value": 1})).await;
    assert_eq!(code(&r), Some(-32100));
    // Still open: the handshake works now.
    client.hello(server_support::TOKEN).await;
    still_open(&mut client).await;
}

// --- -32101: session/hello with a wrong token, then close ---

#[tokio::test]
async fn wrong_token_is_authentication_failed_then_close() {
    let server = server();
    let (mut client, served) = connect_served(&server);
    let wrong = "0000000000000000000000000000000000000000000000000000000000000000";
    let (id, hello) = request("session/hello", Some(hello_params(wrong)));
    client.send_value(&hello).await;
    let seen = client.until_closed().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let Message::Response(r) = &seen[0] else {
        panic!()
    };
    assert_eq!(r.id, id);
    assert_eq!(code(r), Some(-32101));
    let text = serde_json::to_string(&Message::Response(r.clone())).unwrap();
    assert!(!text.contains(wrong) && !text.contains(server_support::TOKEN));
    assert_eq!(
        close_reason(served).await,
        CloseReason::AuthenticationFailed
    );
}

#[tokio::test]
async fn short_token_is_authentication_failed_then_close() {
    let server = server();
    let (mut client, served) = connect_served(&server);
    let (id, hello) = request("session/hello", Some(hello_params("short-secret")));
    client.send_value(&hello).await;
    let seen = client.until_closed().await;
    let Message::Response(r) = &seen[0] else {
        panic!()
    };
    assert_eq!(r.id, id);
    assert_eq!(code(r), Some(-32101));
    assert!(!serde_json::to_string(&seen[0])
        .unwrap()
        .contains("short-secret"));
    assert_eq!(
        close_reason(served).await,
        CloseReason::AuthenticationFailed
    );
}

#[tokio::test]
async fn requests_after_a_wrong_token_are_not_read() {
    let server = server();
    let mut client = connect(&server);
    let (_, hello) = request("session/hello", Some(hello_params(&"f".repeat(64))));
    let (_, ping) = request("session/ping", None);
    // Both in one write: the ping must not be answered.
    let mut bytes = Vec::new();
    for m in [hello, ping] {
        let body = m.to_string();
        bytes.extend(frame(body.as_bytes()));
    }
    client.write_raw(&bytes).await;
    let seen = client.until_closed().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
}

// --- -32600: session/hello again on an established session; stays open ---

#[tokio::test]
async fn second_hello_is_invalid_request() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call("session/hello", Some(hello_params(server_support::TOKEN)))
        .await;
    assert_eq!(code(&r), Some(-32600));
    still_open(&mut client).await;
}

// --- -32601: unknown method, data.method ---

#[tokio::test]
async fn unknown_method_is_method_not_found() {
    let mut client = connect_hello(&server()).await;
    let r = client.call("game/unknown_thing", Some(json!({}))).await;
    assert_eq!(code(&r), Some(-32601));
    assert_eq!(data(&r)["method"], "game/unknown_thing");
    still_open(&mut client).await;
}

// --- -32602: params that fail the method's schema; data.errors = [{path, message}] ---

#[tokio::test]
async fn params_failing_the_method_schema_are_invalid_params() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call("events/subscribe", Some(json!({"channels": []})))
        .await;
    assert_eq!(code(&r), Some(-32602));
    let errors = data(&r)["errors"].as_array().unwrap().clone();
    assert!(!errors.is_empty());
    assert!(errors[0]["path"].as_str().unwrap().starts_with("/params"));
    assert!(errors[0]["message"].is_string());
    still_open(&mut client).await;
}

#[tokio::test]
async fn tools_call_without_params_is_invalid_params() {
    let mut client = connect_hello(&server()).await;
    let r = client.call("tools/call", None).await;
    assert_eq!(code(&r), Some(-32602));
    assert!(data(&r)["errors"].is_array());
    still_open(&mut client).await;
}

#[tokio::test]
async fn tool_arguments_failing_the_input_schema_are_invalid_params() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call_tool("world/get_block", json!({"x": 99, "y": "zero"}))
        .await;
    assert_eq!(code(&r), Some(-32602));
    let errors = data(&r)["errors"].as_array().unwrap().clone();
    let paths: Vec<&str> = errors.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"/params/arguments/x"), "{paths:?}");
    assert!(paths.contains(&"/params/arguments/y"), "{paths:?}");
    assert!(
        paths.contains(&"/params/arguments"),
        "the missing z: {paths:?}"
    );
    for e in &errors {
        assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    still_open(&mut client).await;
}

#[tokio::test]
async fn raw_tool_arguments_are_validated_too() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call_tool("dyn/sum", json!({"a": 1, "b": 2, "c": 3}))
        .await;
    assert_eq!(code(&r), Some(-32602));
    still_open(&mut client).await;
}

// --- -32400: unknown tool ---

#[tokio::test]
async fn unknown_tool_is_tool_not_found() {
    let mut client = connect_hello(&server()).await;
    let r = client.call_tool("demo/nothing", json!({})).await;
    assert_eq!(code(&r), Some(-32400));
    assert_eq!(data(&r)["tool"], "demo/nothing");
    still_open(&mut client).await;
}

// --- -32402, or the tool's own code: tool returned an error ---

#[tokio::test]
async fn tool_error_is_tool_execution_failed() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call_tool("demo/fail", json!({"message": "no diamonds left"}))
        .await;
    assert_eq!(code(&r), Some(-32402));
    assert_eq!(
        r.error_object().unwrap().message.as_str(),
        "no diamonds left"
    );
    still_open(&mut client).await;
}

#[tokio::test]
async fn tool_error_with_its_own_code() {
    let mut client = connect_hello(&server()).await;
    let r = client.call_tool("demo/fail_code", json!({})).await;
    assert_eq!(code(&r), Some(-32007));
    assert_eq!(r.error_object().unwrap().retryable(), Some(true));
    still_open(&mut client).await;
}

// --- -32403: tool exceeded its time limit ---

#[tokio::test]
async fn tool_over_its_time_limit_is_tool_timeout() {
    let mut client = connect_hello(&server()).await;
    let started = std::time::Instant::now();
    let r = client.call_tool("demo/stuck", json!({})).await;
    assert_eq!(code(&r), Some(-32403));
    assert_eq!(data(&r)["timeoutMs"], 100);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    still_open(&mut client).await;
}

#[tokio::test(start_paused = true)]
async fn tool_over_the_server_request_timeout_is_tool_timeout() {
    // Paused time: the 30 s default elapses instantly once everything is idle.
    let mut client = connect_hello(&server()).await;
    client.set_patience(std::time::Duration::from_secs(3600));
    let r = client.call_tool("demo/sleep", json!({"ms": 60000})).await;
    assert_eq!(code(&r), Some(-32403));
    assert_eq!(data(&r)["timeoutMs"], 30000);
    still_open(&mut client).await;
}

// --- -32603: tool panicked; the mod keeps running ---

#[tokio::test]
async fn tool_panic_is_internal_error_and_the_mod_keeps_serving() {
    let server = server();
    let mut client = connect_hello(&server).await;
    let r = client.call_tool("demo/panic", json!({})).await;
    assert_eq!(code(&r), Some(-32603));
    assert!(!r.error_object().unwrap().message.contains("on purpose"));
    let r = client.call_tool("demo/echo", json!({"value": 1})).await;
    assert!(r.result().is_some());
    // Another connection is fine too.
    let mut other = connect_hello(&server).await;
    still_open(&mut other).await;
}

// --- -32300: unknown resource ---

#[tokio::test]
async fn unknown_resource_is_resource_not_found() {
    let mut client = connect_hello(&server()).await;
    let r = client
        .call(
            "resources/read",
            Some(json!({"uri": "gabp://game/nothing"})),
        )
        .await;
    assert_eq!(code(&r), Some(-32300));
    assert_eq!(data(&r)["uri"], "gabp://game/nothing");
    still_open(&mut client).await;
}

// --- a small buffer does not change any of this ---

#[tokio::test]
async fn bad_frames_through_a_tiny_pipe() {
    let server = server();
    let mut client = connect_with_buffer(&server, 7);
    client.hello(server_support::TOKEN).await;
    let r = answer_to(&mut client, b"{oops").await;
    assert_eq!(code(&r), Some(-32700));
    still_open(&mut client).await;
}
