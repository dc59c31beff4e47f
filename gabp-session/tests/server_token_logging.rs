//! Tokens never reach the mod's logs or its answers.
//!
//! In a test binary of its own: a thread-local tracing subscriber only sees callsites whose interest was not
//! already cached as "never" by tests running on other threads, which would make the span assertions flaky.

mod server_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use gabp_session::server::{ModServer, ServerLimits};
use gabp_types::Message;
use server_support::{
    close_reason, connect_hello_served, connect_served, fixture, hello_params, request,
};

fn server_with(limits: ServerLimits) -> ModServer {
    fixture::register(server_support::builder())
        .limits(limits)
        .build()
        .expect("build")
}

/// A `MakeWriter` that keeps everything logged.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn tokens_are_never_logged_or_echoed() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = server_with(ServerLimits::default());
    let wrong = "wrong-token-0123456789-wrong-token-0123456789-wrong";
    let short = "short-token-xyz";
    let mut frames = Vec::new();
    for token in [wrong, short] {
        let (mut client, served) = connect_served(&server);
        let (_, hello) = request("session/hello", Some(hello_params(token)));
        client.send_value(&hello).await;
        frames.extend(client.until_closed().await);
        close_reason(served).await;
    }
    let (mut client, served) = connect_hello_served(&server).await;
    frames.push(Message::Response(
        client
            .call("session/hello", Some(hello_params(server_support::TOKEN)))
            .await,
    ));
    client.call("session/goodbye", None).await;
    close_reason(served).await;

    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("gabp.connection"),
        "spans are logged: {logged}"
    );
    assert!(
        logged.contains("gabp.request"),
        "spans are logged: {logged}"
    );
    for secret in [wrong, short, server_support::TOKEN] {
        assert!(!logged.contains(secret), "a token reached the log");
        for f in &frames {
            assert!(
                !serde_json::to_string(f).unwrap().contains(secret),
                "a token was echoed"
            );
        }
    }
}
