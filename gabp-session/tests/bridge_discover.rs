//! `Bridge::discover` reads `bridge.json` at the platform path of the real process environment, so this binary
//! has one test only and sets that environment itself (a config home of its own).
#![allow(clippy::unwrap_used)]

use gabp_session::bridge::Bridge;
use gabp_session::server::ModServer;
use gabp_session::Error;
use gabp_transport::{BridgeConfig, Endpoint, Listener, Token, TransportError};

#[tokio::test]
async fn discover_connects_to_the_mod_that_bridge_json_names() {
    let home = tempfile::tempdir().unwrap();
    // The only test of this binary: nothing else reads the environment meanwhile.
    std::env::set_var("XDG_CONFIG_HOME", home.path());
    std::env::set_var("HOME", home.path());
    let path = BridgeConfig::default_path().unwrap();
    assert!(path.starts_with(home.path()));

    // No file yet: a typed error naming the path.
    let err = Bridge::discover().await.expect_err("no bridge.json");
    assert!(
        matches!(
            err,
            Error::Config(TransportError::BridgeJsonNotFound { .. })
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );

    let token = Token::generate().unwrap();
    let server = ModServer::builder()
        .agent_id("found-mod")
        .token(token.clone())
        .build()
        .unwrap();
    let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let published = BridgeConfig::new(token, handle.endpoint().clone())
        .publish(&path)
        .unwrap();
    let bridge = Bridge::discover().await.expect("found and connected");
    assert_eq!(bridge.welcome().agent_id.as_str(), "found-mod");
    bridge.ping().await.unwrap();
    bridge.close().await;
    drop(published);
    handle.shutdown().await;
}
