//! `Bridge::connect_with_retry` and `BridgeBuilder::retry_connect`: a bridge waits, with backoff and an overall
//! deadline, for a mod that is not listening yet or not again (SPEC/1.0 transport.md §5).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use gabp_session::bridge::{Bridge, ConnectRetry};
use gabp_session::server::{ModServer, ServeHandle};
use gabp_session::Error;
use gabp_transport::{Endpoint, Listener, Token, TransportError};

const TOKEN: &str = "72657472792d746573742d746f6b656e2d6e657665722d7072696e7465642121";
const PATIENCE: Duration = Duration::from_secs(20);

fn token() -> Token {
    Token::new(TOKEN).unwrap()
}

async fn serve(endpoint: &Endpoint) -> ServeHandle {
    let server = ModServer::builder()
        .agent_id("late-mod")
        .token(token())
        .build()
        .unwrap();
    server.serve(Listener::bind(endpoint).await.unwrap())
}

/// Serves at `endpoint` once `after` has passed.
fn serve_later(endpoint: Endpoint, after: Duration) -> tokio::task::JoinHandle<ServeHandle> {
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        serve(&endpoint).await
    })
}

#[cfg(unix)]
#[tokio::test]
async fn a_mod_that_starts_listening_300ms_later_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = Endpoint::unix(dir.path().join("late.sock")).unwrap();
    let started = Instant::now();
    let late = serve_later(endpoint.clone(), Duration::from_millis(300));
    let bridge = tokio::time::timeout(
        PATIENCE,
        Bridge::connect_with_retry(&endpoint, token(), Duration::from_secs(10)),
    )
    .await
    .unwrap()
    .expect("reached once it listens");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(bridge.welcome().agent_id.as_str(), "late-mod");
    bridge.ping().await.unwrap();
    bridge.close().await;
    late.await.unwrap().shutdown().await;
}

#[tokio::test]
async fn a_mod_that_comes_back_on_its_port_is_reached() {
    let first = serve(&Endpoint::tcp_v4(0)).await;
    let endpoint = first.endpoint().clone();
    first.shutdown().await;
    assert!(gabp_transport::connect(&endpoint).await.is_err(), "gone");
    let back = serve_later(endpoint.clone(), Duration::from_millis(300));
    let bridge = tokio::time::timeout(
        PATIENCE,
        Bridge::builder(token())
            .retry_connect(
                ConnectRetry::new(Duration::from_secs(10)).initial_delay(Duration::from_millis(10)),
            )
            .connect(&endpoint),
    )
    .await
    .unwrap()
    .expect("reached once it is back");
    bridge.ping().await.unwrap();
    bridge.close().await;
    back.await.unwrap().shutdown().await;
}

#[tokio::test]
async fn the_deadline_is_a_typed_error_naming_the_endpoint_never_the_token() {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    let endpoint = Endpoint::unix(dir.path().join("never.sock")).unwrap();
    #[cfg(not(unix))]
    let endpoint = {
        let _ = &dir;
        let gone = serve(&Endpoint::tcp_v4(0)).await;
        let endpoint = gone.endpoint().clone();
        gone.shutdown().await;
        endpoint
    };
    let deadline = Duration::from_millis(300);
    let started = Instant::now();
    let err = Bridge::builder(token())
        .retry_connect(ConnectRetry::new(deadline).initial_delay(Duration::from_millis(20)))
        .connect(&endpoint)
        .await
        .expect_err("nobody listens");
    let waited_here = started.elapsed();
    assert!(waited_here >= deadline, "{waited_here:?}");
    assert!(waited_here < PATIENCE, "{waited_here:?}");
    let Error::Unreachable {
        endpoint: named,
        attempts,
        waited,
        last,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(named, &endpoint.to_string());
    assert!(*attempts >= 2, "{attempts}");
    assert!(*waited >= deadline);
    assert!(
        matches!(**last, Error::Transport(TransportError::Io { .. })),
        "{last:?}"
    );
    let shown = format!("{err} {err:?}");
    assert!(shown.contains(&endpoint.to_string()), "{shown}");
    assert!(
        !shown.contains(TOKEN) && !shown.contains(&TOKEN[..16]),
        "{shown}"
    );
    assert!(err.is_retryable());
}

#[tokio::test]
async fn a_refused_token_is_not_retried() {
    let handle = serve(&Endpoint::tcp_v4(0)).await;
    let wrong = Token::generate().unwrap();
    let started = Instant::now();
    let err = Bridge::connect_with_retry(handle.endpoint(), wrong.clone(), Duration::from_secs(30))
        .await
        .expect_err("refused");
    assert!(matches!(err, Error::AuthenticationFailed { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no waiting out the deadline"
    );
    assert!(!format!("{err} {err:?}").contains(wrong.expose_secret()));
    handle.shutdown().await;
}

#[tokio::test]
async fn without_retry_an_absent_mod_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    let endpoint = Endpoint::unix(dir.path().join("absent.sock")).unwrap();
    #[cfg(not(unix))]
    let endpoint = {
        let _ = &dir;
        Endpoint::tcp_v4(1)
    };
    let err = Bridge::connect(&endpoint, token())
        .await
        .expect_err("absent");
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
}
