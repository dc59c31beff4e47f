//! Bridge handshake: success and every failure.

mod bridge_support;

use std::time::Duration;

use bridge_support::*;
use gabp_session::bridge::{Bridge, ConnectionState};
use gabp_session::Error;
use gabp_transport::Token;
use gabp_types::MessageId;
use serde_json::json;

#[tokio::test]
async fn hello_carries_token_version_platform_launch_id_and_client_info() {
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).client_info("test-agent", "9.9.9");
    let (bridge, hello) = tokio::join!(builder.over(conn), mock.handshake(ALL_METHODS));
    let bridge = bridge.unwrap();
    let params = hello.params.unwrap().to_value();
    assert_eq!(params["token"], TOKEN);
    assert_eq!(params["bridgeVersion"], env!("CARGO_PKG_VERSION"));
    assert!(["linux", "macos", "windows"].contains(&params["platform"].as_str().unwrap()));
    assert!(MessageId::parse(params["launchId"].as_str().unwrap()).is_ok());
    assert_eq!(
        params["clientInfo"],
        json!({"name": "test-agent", "version": "9.9.9"})
    );

    let welcome = bridge.welcome();
    assert_eq!(welcome.agent_id.as_str(), "mock-mod");
    assert_eq!(welcome.app.name.as_str(), "Mock Game");
    assert!(welcome.capabilities.has_method("tools/call"));
    assert_eq!(bridge.state(), ConnectionState::Connected { generation: 1 });
    assert!(bridge.is_advertised("tools/list"));
}

#[tokio::test]
async fn wrong_token_is_authentication_failed() {
    let (conn, mut mock) = pair();
    let script = async move {
        let hello = mock.expect("session/hello").await;
        mock.reply_error(hello.id, -32101, "Authentication failed", None)
            .await;
        mock.close().await;
    };
    let (result, ()) = tokio::join!(Bridge::over(conn, token()), script);
    let error = err(result);
    assert!(
        matches!(error, Error::AuthenticationFailed { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.code(),
        Some(gabp_types::ErrorCode::AUTHENTICATION_FAILED)
    );
}

#[tokio::test]
async fn libgab_auth_code_reads_as_authentication_failed() {
    let (conn, mut mock) = pair();
    let script = async move {
        let hello = mock.expect("session/hello").await;
        // Lib.GAB style: its own code and "error": null-free but odd extra fields.
        mock.send(json!({"v": "gabp/1", "id": hello.id, "type": "response",
            "error": {"code": -31000, "message": "Invalid token"}, "extra": true}))
            .await;
        mock.close().await;
    };
    let (result, ()) = tokio::join!(Bridge::over(conn, token()), script);
    let error = err(result);
    assert!(
        matches!(error, Error::AuthenticationFailed { .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), Some(gabp_types::ErrorCode(-31000)));
}

#[tokio::test]
async fn mod_closing_during_handshake_is_disconnected() {
    let (conn, mut mock) = pair();
    let script = async move {
        mock.expect("session/hello").await;
        mock.close().await;
    };
    let (result, ()) = tokio::join!(Bridge::over(conn, token()), script);
    assert!(matches!(err(result), Error::Disconnected));
}

#[tokio::test(start_paused = true)]
async fn silent_mod_times_out_the_handshake() {
    let (conn, mut mock) = pair();
    let builder = Bridge::builder(token()).handshake_timeout(Duration::from_secs(3));
    let script = async {
        mock.expect("session/hello").await;
    };
    let (result, ()) = tokio::join!(builder.over(conn), script);
    match err(result) {
        Error::Timeout { method, after } => {
            assert_eq!(method, "session/hello");
            assert_eq!(after, Duration::from_secs(3));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn invalid_welcome_is_a_protocol_error() {
    let (conn, mut mock) = pair();
    let script = async move {
        mock.handshake_with(json!({"agentId": "x", "schemaVersion": "2.0"}))
            .await;
        mock
    };
    let (result, _mock) = tokio::join!(Bridge::over(conn, token()), script);
    assert!(matches!(err(result), Error::InvalidWelcome { .. }));
}

#[tokio::test]
async fn liberal_welcome_with_extras_is_accepted() {
    let (conn, mut mock) = pair();
    let mut w = welcome(
        &["tools/list", "tools/list", "game.custom"],
        &["player.move"],
    );
    w["sessionId"] = json!("abc");
    w["capabilities"]["tools"] = json!([]);
    let (result, _) = tokio::join!(Bridge::over(conn, token()), mock.handshake_with(w));
    let bridge = result.unwrap();
    assert!(bridge.welcome().capabilities.has_method("tools/list"));
    assert!(bridge.welcome().capabilities.has_event("player.move"));
}

/// Lib.GAB accepts any token: a bridge given one shorter than 32 characters sends it as it is (with a
/// warning) instead of refusing to connect.
#[tokio::test]
async fn a_short_token_is_sent_as_given() {
    let (conn, mut mock) = pair();
    let short = "libgab-t0k3n";
    let script = async move {
        let body = mock.recv_body().await.expect("the hello");
        let hello: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(hello["method"], "session/hello");
        assert_eq!(hello["params"]["token"], short);
        let id = MessageId::parse(hello["id"].as_str().expect("id")).expect("a UUID");
        mock.reply(id, welcome(ALL_METHODS, &[])).await;
        mock
    };
    let token = Token::new(short).expect("a token");
    let (bridge, _mock) = tokio::join!(Bridge::over(conn, token), script);
    let bridge = bridge.expect("a short token is sent, not refused");
    assert_eq!(bridge.welcome().agent_id.as_str(), "mock-mod");
}
