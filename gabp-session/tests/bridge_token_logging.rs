//! The bridge never logs or prints the token.
//!
//! In a test binary of its own: a thread-local tracing subscriber only sees callsites whose interest was not
//! already cached as "never" by tests running on other threads, which made this check flaky beside them.

mod bridge_support;

use bridge_support::*;
use gabp_session::bridge::Bridge;
use serde_json::json;

#[tokio::test]
async fn the_token_is_never_logged_or_printed() {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (bridge, mut mock) = connected().await;
    let call = bridge.call_tool("demo/echo", json!({"value": 1}));
    let script = async {
        let request = mock.expect("tools/call").await;
        mock.reply_error(request.id, -32402, "boom", None).await;
    };
    let (result, ()) = tokio::join!(call, script);
    let error = err(result);
    let printed = format!("{error} {error:?} {bridge:?} {:?}", bridge.service());

    let (conn, mut mock) = pair();
    let script = async move {
        let hello = mock.expect("session/hello").await;
        mock.reply_error(hello.id, -32101, "Authentication failed", None)
            .await;
    };
    let (refused, ()) = tokio::join!(Bridge::over(conn, token()), script);
    let refused = format!("{:?}", err(refused));

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(!logs.is_empty(), "tracing captured nothing");
    for text in [&logs, &printed, &refused] {
        assert!(!text.contains(TOKEN), "the token leaked: {text}");
    }
}

#[tokio::test]
async fn a_mod_that_quotes_the_token_it_refused_is_not_repeated() {
    // Letters g-z only, so no run of it can turn up in an id by chance.
    const MIXED: &str = "GhIjKlMnOpQrStUvWxYzZyXwVuTsRqPoNmLkJiHg";
    let upper = MIXED.to_uppercase();
    let lower = MIXED.to_lowercase();
    for (code, message) in [
        (-32101, format!("Invalid token: {upper}")),
        (-32101, format!("token {lower} is not {MIXED}")),
        (-32602, format!("bad params near '{}'", &upper[4..20])),
        (-32000, format!("Authentication failed for {MIXED}")),
    ] {
        let (conn, mut mock) = pair();
        let data = json!({"token": upper, "errors": [{"path": "/params/token", "message": lower}]});
        let script = async move {
            let hello = mock.expect("session/hello").await;
            mock.reply_error(hello.id, code, &message, Some(data)).await;
        };
        let token = gabp_transport::Token::new(MIXED).expect("token");
        let (refused, ()) = tokio::join!(Bridge::over(conn, token), script);
        let e = err(refused);
        let shown = format!("{e} {e:?}").to_lowercase();
        let secret: Vec<char> = lower.chars().collect();
        for run in secret.windows(8) {
            let run: String = run.iter().collect();
            assert!(!shown.contains(&run), "the token was repeated: {shown}");
        }
    }
}
