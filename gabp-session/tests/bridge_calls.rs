//! Bridge calls: concurrency, timeouts, cancellation, disconnect, advertised methods, liberal reading and error
//! mapping.

mod bridge_support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bridge_support::*;
use futures::future::join_all;
use gabp_session::bridge::{Bridge, DEFAULT_REQUEST_TIMEOUT, GOODBYE_WAIT};
use gabp_session::Error;
use gabp_types::methods::{StateGetParams, ToolsCall, ToolsCallParams};
use gabp_types::{ErrorCode, MessageId, ToolName};
use serde_json::{json, Value};

#[tokio::test]
async fn concurrent_calls_with_out_of_order_responses_are_each_answered_once() {
    let (bridge, mut mock) = connected().await;
    const N: usize = 32;
    let calls = join_all((0..N).map(|i| {
        let bridge = bridge.clone();
        async move { bridge.call_tool("demo/echo", json!({"value": i})).await }
    }));
    let script = async {
        let mut requests = Vec::new();
        for _ in 0..N {
            requests.push(mock.expect("tools/call").await);
        }
        // Answer in reverse, interleaved with an unknown id and a duplicate.
        requests.reverse();
        for (k, request) in requests.iter().enumerate() {
            let value = request.params.as_ref().unwrap().to_value()["arguments"]["value"].clone();
            mock.reply(request.id, json!({"value": value})).await;
            if k == 3 {
                mock.reply(MessageId::new_v4(), json!("stray")).await;
                mock.reply(request.id, json!({"value": "duplicate"})).await;
            }
        }
    };
    let (results, ()) = tokio::join!(calls, script);
    for (i, result) in results.into_iter().enumerate() {
        assert_eq!(result.unwrap(), json!({"value": i}));
    }
    // Still healthy afterwards.
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({})).await;
    });
    pong.unwrap();
}

#[tokio::test]
async fn responses_echoing_the_id_in_upper_case_still_match() {
    let (bridge, mut mock) = connected().await;
    let script = async {
        let request = mock.expect("tools/call").await;
        let upper = request.id.as_str().to_uppercase();
        mock.send_raw(format!(
            r#"{{"v":"gabp/1","id":"{upper}","type":"response","result":{{"ok":true}}}}"#
        ))
        .await;
    };
    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", Value::Null), script);
    assert_eq!(result.unwrap(), json!({"ok": true}));
}

#[tokio::test]
async fn timeout_then_late_response_is_discarded() {
    let (bridge, mut mock) = connected().await;
    let quick = bridge.with_timeout(Duration::from_millis(50));
    let started = Instant::now();
    let (result, late) = tokio::join!(quick.call_tool("demo/sleep", json!({"ms": 1000})), async {
        mock.expect("tools/call").await
    });
    match err(result) {
        Error::Timeout { method, after } => {
            assert_eq!(method, "tools/call");
            assert_eq!(after, Duration::from_millis(50));
        }
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(bridge.pending_calls(), 0);

    // The late answer arrives; the next call must get its own answer, not the late one.
    mock.reply(late.id, json!("late")).await;
    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({"value": 2})), async {
        let request = mock.expect("tools/call").await;
        assert_ne!(request.id, late.id);
        mock.reply(request.id, json!("fresh")).await;
    });
    assert_eq!(result.unwrap(), json!("fresh"));
}

#[tokio::test]
async fn per_request_timeout_overrides_the_default() {
    use gabp_session::bridge::BridgeRequest;
    let builder = Bridge::builder(token()).request_timeout(Duration::from_secs(3600));
    let (bridge, mut mock) = connected_with(builder, ALL_METHODS).await;
    let request = BridgeRequest::tool_call("demo/sleep", json!({"ms": 5}))
        .unwrap()
        .with_timeout(Duration::from_millis(20));
    let (result, _) = tokio::join!(bridge.send(request), mock.expect("tools/call"));
    assert!(
        matches!(err(result), Error::Timeout { after, .. } if after == Duration::from_millis(20))
    );
}

#[tokio::test]
async fn dropping_a_call_forgets_it() {
    let (bridge, mut mock) = connected().await;
    let call = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("demo/sleep", json!({"ms": 1})).await }
    });
    let abandoned = mock.expect("tools/call").await;
    assert_eq!(bridge.pending_calls(), 1);
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(bridge.pending_calls(), 0);
    mock.reply(abandoned.id, json!("nobody listens")).await;

    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({"value": 1})), async {
        let request = mock.expect("tools/call").await;
        mock.reply(request.id, json!({"value": 1})).await;
    });
    assert_eq!(result.unwrap(), json!({"value": 1}));
}

#[tokio::test]
async fn disconnect_fails_every_pending_call_at_once_after_draining() {
    let (bridge, mut mock) = connected().await;
    const N: usize = 10;
    let calls: Vec<_> = (0..N)
        .map(|i| {
            let bridge = bridge.clone();
            tokio::spawn(async move { bridge.call_tool("demo/echo", json!({"value": i})).await })
        })
        .collect();
    let mut requests = Vec::new();
    for _ in 0..N {
        requests.push(mock.expect("tools/call").await);
    }
    // Answer two, then vanish at once: the two answers are already on the wire when the stream ends.
    let mut answered = HashSet::new();
    for request in &requests[..2] {
        let value = request.params.as_ref().unwrap().to_value()["arguments"]["value"].clone();
        answered.insert(value.as_u64().unwrap() as usize);
        mock.reply(request.id, json!({"value": value})).await;
    }
    let dropped_at = Instant::now();
    drop(mock);
    let results = join_all(calls).await;
    let elapsed = dropped_at.elapsed();
    assert!(elapsed < Duration::from_millis(100), "took {elapsed:?}");
    for (i, result) in results.into_iter().enumerate() {
        match result.unwrap() {
            Ok(value) => {
                assert!(
                    answered.contains(&i),
                    "call {i} answered but never replied to"
                );
                assert_eq!(value, json!({"value": i}));
            }
            Err(Error::Disconnected) => {
                assert!(!answered.contains(&i), "call {i} lost its answer")
            }
            Err(other) => panic!("call {i}: {other:?}"),
        }
    }
    // Later calls fail at once too.
    assert!(matches!(err(bridge.ping().await), Error::Disconnected));
    let state = soon(bridge.closed()).await;
    assert!(
        matches!(
            state,
            gabp_session::bridge::ConnectionState::Disconnected { .. }
        ),
        "{state:?}"
    );
}

#[tokio::test]
async fn unadvertised_methods_fail_locally_without_a_frame() {
    let (bridge, mut mock) =
        connected_with(Bridge::builder(token()), &["tools/list", "tools/call"]).await;
    assert!(matches!(
        err(bridge.get_state(StateGetParams::default()).await),
        Error::NotAdvertised { method } if method == "state/get"
    ));
    assert!(matches!(
        err(bridge.request("custom/thing", Value::Null).await),
        Error::NotAdvertised { .. }
    ));
    assert!(!bridge.is_advertised("state/get"));
    // session/* is always allowed; the next frame the mod sees is that ping, so nothing was sent before.
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let first = mock.recv().await;
        assert_eq!(first.method.as_str(), "session/ping");
        mock.reply(first.id, json!({"timestamp": 1})).await;
    });
    assert_eq!(pong.unwrap().timestamp, Some(1));
}

#[tokio::test]
async fn the_advertised_check_can_be_turned_off() {
    let builder = Bridge::builder(token()).check_advertised(false);
    let (bridge, mut mock) = connected_with(builder, &["tools/list"]).await;
    let (result, ()) = tokio::join!(bridge.request("custom/thing", json!({"a": 1})), async {
        let request = mock.expect("custom/thing").await;
        mock.reply_error(
            request.id,
            -32601,
            "Method not found",
            Some(json!({"method": "custom/thing"})),
        )
        .await;
    });
    assert!(
        matches!(err(result), Error::MethodNotFound { method, .. } if method == "custom/thing")
    );
}

#[tokio::test]
async fn welcome_without_a_method_list_allows_everything() {
    let (conn, mut mock) = pair();
    let welcome = json!({"agentId": "a", "app": {"name": "g", "version": "1"}, "capabilities": {},
        "schemaVersion": "1.0"});
    let (bridge, _) = tokio::join!(Bridge::over(conn, token()), mock.handshake_with(welcome));
    let bridge = bridge.unwrap();
    let (result, ()) = tokio::join!(bridge.request("custom/thing", Value::Null), async {
        let request = mock.expect("custom/thing").await;
        mock.reply(request.id, json!(7)).await;
    });
    assert_eq!(result.unwrap(), json!(7));
}

#[tokio::test]
async fn lenient_reading_of_libgab_style_responses() {
    let (bridge, mut mock) = connected().await;
    // "error": null beside the result, unknown fields.
    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({"value": 1})), async {
        let request = mock.expect("tools/call").await;
        mock.send(json!({"v": "gabp/1", "id": request.id, "type": "response",
            "result": {"value": 1}, "error": null, "timestampUtc": "x"}))
            .await;
    });
    assert_eq!(result.unwrap(), json!({"value": 1}));
    // "result": null beside an error.
    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({})), async {
        let request = mock.expect("tools/call").await;
        mock.send(json!({"v": "gabp/1", "id": request.id, "type": "response",
            "result": null, "error": {"code": -31002, "message": "Tool not found"}}))
            .await;
    });
    assert!(matches!(err(result), Error::ToolNotFound { tool, .. } if tool == "demo/echo"));
    // Lib.GAB's "not established".
    let (result, ()) = tokio::join!(bridge.list_tools(), async {
        let request = mock.expect("tools/list").await;
        mock.reply_error(request.id, -31001, "Session not established", None)
            .await;
    });
    assert!(matches!(err(result), Error::NotAuthenticated { .. }));
    // Ours, for comparison.
    let (result, ()) = tokio::join!(bridge.list_tools(), async {
        let request = mock.expect("tools/list").await;
        mock.reply_error(request.id, -32100, "Authentication required", None)
            .await;
    });
    assert!(matches!(err(result), Error::NotAuthenticated { .. }));
}

#[tokio::test]
async fn remote_errors_map_to_typed_variants() {
    let (bridge, mut mock) = connected().await;
    type Check = fn(&Error) -> bool;
    let cases: Vec<(i64, Option<Value>, Check)> = vec![
        (
            -32602,
            Some(json!({"errors": [{"path": "/x", "message": "missing"}]})),
            |e| matches!(e, Error::InvalidParams { errors, .. } if errors.len() == 1 && errors[0].path == "/x"),
        ),
        (-32400, None, |e| matches!(e, Error::ToolNotFound { .. })),
        (-32401, Some(json!({"executed": false})), |e| {
            matches!(e, Error::ToolUnavailable { .. })
        }),
        (
            -32402,
            None,
            |e| matches!(e, Error::ToolFailed { tool, .. } if tool == "demo/echo"),
        ),
        (-32403, None, |e| matches!(e, Error::ToolTimeout { .. })),
        (-32300, None, |e| {
            matches!(e, Error::ResourceNotFound { .. })
        }),
        (-32603, None, |e| matches!(e, Error::Remote { .. })),
        (4711, Some(json!({"retryable": true})), |e| {
            matches!(e, Error::Remote { error, .. } if error.code == ErrorCode(4711))
                && e.is_retryable()
        }),
    ];
    for (code, data, check) in cases {
        let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({})), async {
            let request = mock.expect("tools/call").await;
            mock.reply_error(request.id, code, "failed", data.clone())
                .await;
        });
        let error = err(result);
        assert!(check(&error), "{code}: {error:?}");
        assert_eq!(error.code(), Some(ErrorCode(code)));
    }
}

#[tokio::test]
async fn an_invalid_response_fails_its_call_at_once() {
    let (bridge, mut mock) = connected().await;
    let (result, ()) = tokio::join!(bridge.call_tool("demo/echo", json!({})), async {
        let request = mock.expect("tools/call").await;
        mock.send(json!({"v": "gabp/1", "id": request.id, "type": "response"}))
            .await;
    });
    assert!(matches!(err(result), Error::InvalidResponse { .. }));
    // Garbage that names no pending call is dropped; the connection goes on.
    mock.send_raw("not json at all").await;
    mock.send(json!({"v": "gabp/1", "id": MessageId::new_v4(), "type": "bogus"}))
        .await;
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({})).await;
    });
    pong.unwrap();
}

/// Answers the next `tools/call` with a success written as gabp-rs writes one, whatever `result` holds.
async fn reply_plainly(mock: &mut MockMod, result: &[u8]) {
    let id = mock.expect("tools/call").await.id;
    let mut body =
        format!(r#"{{"v":"gabp/1","id":"{id}","type":"response","result":"#).into_bytes();
    body.extend_from_slice(result);
    body.push(b'}');
    mock.send_raw(body).await;
}

/// A success written as gabp-rs writes one reaches a typed call unread, and its decode reads it whole: typed and
/// untyped calls, with layers or without, see the same outcome for the same frame (SPEC/1.0 gabp.md §3.3, §3.5).
#[tokio::test]
async fn results_written_plainly_read_alike_typed_or_untyped() {
    #[derive(serde::Deserialize, Debug)]
    struct Small {
        #[allow(dead_code)]
        n: u8,
    }
    let direct = connected().await;
    let (conn, mut mock) = pair();
    let same = tower::util::MapRequestLayer::new(|r: gabp_session::bridge::BridgeRequest| r);
    let (bridge, _) = tokio::join!(
        Bridge::builder(token()).layer(same).over(conn),
        mock.handshake(ALL_METHODS)
    );
    let layered = (bridge.unwrap(), mock);
    assert!(format!("{:?}", layered.0).contains("layered: true"));
    let refused = br#"null,"error":{"code":-32400,"message":"gone"}"#;
    let cases: [&[u8]; 5] = [
        br#"{"n":}"#,
        b"{\"n\":1,\"x\":\"\xff\"}",
        refused,
        br#"{"n":300}"#,
        br#"{"n":1}"#,
    ];
    for (bridge, mut mock) in [direct, layered] {
        for result in cases {
            let (untyped, ()) = tokio::join!(
                bridge.call_tool("demo/echo", json!({})),
                reply_plainly(&mut mock, result)
            );
            let args = json!({});
            let (typed, ()) = tokio::join!(
                bridge.call_tool_as::<_, Small>("demo/echo", &args),
                reply_plainly(&mut mock, result)
            );
            let params = ToolsCallParams {
                name: ToolName::new("demo/echo").unwrap(),
                arguments: None,
                meta: None,
            };
            let (core, ()) = tokio::join!(
                bridge.call::<ToolsCall>(&params),
                reply_plainly(&mut mock, result)
            );
            let case = String::from_utf8_lossy(result);
            match result {
                br#"{"n":300}"# => {
                    assert_eq!(untyped.unwrap(), json!({"n": 300}));
                    assert!(matches!(err(typed), Error::InvalidResult { .. }));
                    assert!(core.is_ok());
                }
                br#"{"n":1}"# => {
                    assert_eq!(untyped.unwrap(), json!({"n": 1}));
                    assert_eq!(typed.unwrap().n, 1);
                    assert!(core.is_ok());
                }
                _ if result == refused => {
                    let gone = |e: Error| matches!(e, Error::ToolNotFound { tool, .. } if tool == "demo/echo");
                    assert!(gone(err(untyped)), "{case}");
                    assert!(gone(err(typed)), "{case}");
                    assert!(gone(err(core)), "{case}");
                }
                _ => {
                    let invalid = |e: Error| matches!(e, Error::InvalidResponse { .. });
                    assert!(invalid(err(untyped)), "{case}");
                    assert!(invalid(err(typed)), "{case}");
                    assert!(invalid(err(core)), "{case}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_request_from_the_mod_is_not_answered() {
    // SPEC/1.0 gabp.md §8: a bridge never answers anything, a request from the mod included.
    let (bridge, mut mock) = connected().await;
    let id = MessageId::new_v4();
    mock.send(json!({"v": "gabp/1", "id": id, "type": "request", "method": "bridge/do_something"}))
        .await;
    assert!(
        mock.try_recv(Duration::from_millis(200)).await.is_none(),
        "the bridge answered a request from the mod"
    );
    // The connection is still in use.
    let (pong, ()) = tokio::join!(bridge.ping(), async {
        let ping = mock.expect("session/ping").await;
        mock.reply(ping.id, json!({"timestamp": 7})).await;
    });
    assert_eq!(pong.unwrap().timestamp, Some(7));
}

#[tokio::test]
async fn in_flight_limit_holds_back_further_calls() {
    let mut welcome = welcome(ALL_METHODS, &[]);
    welcome["capabilities"]["limits"] = json!({"maxConcurrentRequests": 2});
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).max_in_flight(8);
    let (bridge, _) = tokio::join!(builder.over(conn), mock.handshake_with(welcome));
    let bridge = bridge.unwrap();
    let calls: Vec<_> = (0..3)
        .map(|i| {
            let bridge = bridge.clone();
            tokio::spawn(async move { bridge.call_tool("demo/echo", json!({"value": i})).await })
        })
        .collect();
    let first = mock.expect("tools/call").await;
    let _second = mock.expect("tools/call").await;
    assert!(
        mock.try_recv(Duration::from_millis(100)).await.is_none(),
        "a third call went out"
    );
    mock.reply(first.id, json!(0)).await;
    let third = mock.expect("tools/call").await;
    assert_ne!(third.id, first.id);
    drop(mock);
    let results = join_all(calls).await;
    assert_eq!(results.iter().filter(|r| matches!(r, Ok(Ok(_)))).count(), 1);
}

#[tokio::test]
async fn requests_over_the_mods_size_limit_fail_locally() {
    let mut welcome = welcome(ALL_METHODS, &[]);
    welcome["capabilities"]["limits"] = json!({"maxMessageSize": 1024});
    let (conn, mut mock) = pair();
    let (bridge, _) = tokio::join!(Bridge::over(conn, token()), mock.handshake_with(welcome));
    let bridge = bridge.unwrap();
    let big = "x".repeat(2000);
    match err(bridge.call_tool("demo/echo", json!({"value": big})).await) {
        Error::TooLarge { len, limit } => {
            assert_eq!(limit, 1024);
            assert!(len > 2000);
        }
        other => panic!("{other:?}"),
    }
    assert!(mock.try_recv(Duration::from_millis(50)).await.is_none());
}

#[tokio::test]
async fn local_request_errors() {
    let (bridge, _mock) = connected().await;
    assert!(matches!(
        err(bridge.call_tool("Not A Name", Value::Null).await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge.call_tool("demo/echo", json!([1])).await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge.request("bad", Value::Null).await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge.read_resource("no scheme").await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge.ack_attention("").await),
        Error::InvalidRequest { .. }
    ));
    assert!(matches!(
        err(bridge.call_tool_as::<_, Value>("demo/echo", &5).await),
        Error::InvalidRequest { .. }
    ));
}

#[tokio::test]
async fn a_cancelled_connect_closes_the_connection() {
    let (conn, mut mock) = pair();
    let connecting = tokio::spawn(Bridge::over(conn, token()));
    mock.expect("session/hello").await;
    connecting.abort();
    assert!(connecting.await.unwrap_err().is_cancelled());
    assert!(
        mock.recv_body().await.is_none(),
        "the connection stayed open"
    );
}

#[tokio::test(start_paused = true)]
async fn goodbye_to_a_silent_mod_waits_a_second_not_a_call_time_limit() {
    // A call to a mod that stopped answering fails after its time limit (30 s); leaving it must not add another
    // 30 s (gabp.md §7: the connection closes either way).
    let (bridge, mut mock) = connected().await;
    let start = tokio::time::Instant::now();
    let (result, _ping) = tokio::join!(bridge.ping(), mock.expect("session/ping"));
    assert!(
        matches!(err(result), Error::Timeout { after, .. } if after == DEFAULT_REQUEST_TIMEOUT)
    );
    assert_eq!(start.elapsed(), DEFAULT_REQUEST_TIMEOUT);
    let start = tokio::time::Instant::now();
    let (bye, _goodbye) = tokio::join!(bridge.goodbye(None), mock.expect("session/goodbye"));
    assert!(
        matches!(&bye, Err(Error::Timeout { after, .. }) if *after == GOODBYE_WAIT),
        "{bye:?}"
    );
    // The wait, then the grace for the mod to close its side (it does not).
    assert!(
        start.elapsed() <= GOODBYE_WAIT + Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
}
