//! Tokens never reach the mod's logs or its answers, and a name a peer sends reaches them only as a short prefix.
//!
//! In a test binary of its own: a thread-local tracing subscriber only sees callsites whose interest was not
//! already cached as "never" by tests running on other threads, which would make the span assertions flaky.

mod server_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use gabp_session::server::{ModServer, ServerLimits};
use gabp_types::Message;
use server_support::{
    close_reason, connect, connect_hello_served, connect_served, fixture, hello_params, request,
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

impl Captured {
    /// Everything logged on this thread at any level goes to the returned capture while the guard lives.
    fn install() -> (Captured, tracing::subscriber::DefaultGuard) {
        let logs = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(logs.clone())
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        (logs, guard)
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
    let (logs, _guard) = Captured::install();

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

/// Whether `text` holds any 6-character run of `secret`, in any case.
fn leaks(text: &str, secret: &str) -> bool {
    let text = text.to_lowercase();
    let secret: Vec<char> = secret.to_lowercase().chars().collect();
    secret
        .windows(6)
        .any(|w| text.contains(&w.iter().collect::<String>()))
}

#[tokio::test(flavor = "current_thread")]
async fn tokens_in_the_wrong_case_or_field_are_never_echoed_or_logged() {
    // Letters g-z only, so no run of it can turn up in an id or a hex dump by chance.
    const MIXED: &str = "GhIjKlMnOpQrStUvWxYzZyXwVuTsRqPoNmLkJiHg";
    let (logs, _guard) = Captured::install();

    let token = gabp_transport::Token::new(MIXED).expect("token");
    let server = fixture::register(server_support::builder().token(token))
        .build()
        .expect("build");
    let upper = MIXED.to_uppercase();
    let lower = MIXED.to_lowercase();
    let wrong = "wrong-token-0123456789-wrong-token-0123456789";
    let with = |token: &str, field: &str, value: &str| {
        let mut p = hello_params(token);
        p[field] = serde_json::json!(value);
        p
    };
    let cases = [
        // The right token in the wrong case.
        hello_params(&upper),
        hello_params(&lower),
        // The token (in any case, or part of it) in another field, beside the right token or a wrong one.
        with(MIXED, "platform", MIXED),
        with(MIXED, "platform", &upper),
        with(wrong, "platform", &lower),
        with(wrong, "bridgeVersion", &upper[..20]),
        with(MIXED, "launchId", &upper),
        with(wrong, &upper, "x"),
        with(MIXED, &lower, &upper),
        serde_json::json!({"Token": upper, "bridgeVersion": "1", "platform": "linux",
                           "launchId": server_support::LAUNCH_ID}),
        serde_json::json!({"token": [upper], "bridgeVersion": "1", "platform": "linux",
                           "launchId": server_support::LAUNCH_ID}),
    ];
    let mut answers = Vec::new();
    for params in cases {
        let mut client = connect(&server);
        let (_, hello) = request("session/hello", Some(params));
        client.send_value(&hello).await;
        answers.push(Message::Response(client.recv_response().await));
    }
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("gabp.connection"), "spans are logged");
    for f in &answers {
        let shown = serde_json::to_string(f).unwrap();
        assert!(!leaks(&shown, MIXED), "a token was echoed: {shown}");
    }
    assert!(!leaks(&logged, MIXED), "a token reached the log");
}

#[tokio::test(flavor = "current_thread")]
async fn long_names_are_logged_by_a_short_prefix() {
    let (logs, _guard) = Captured::install();

    let server = server_with(ServerLimits::default());
    let method = format!("a/{}", "m".repeat(200_000));
    let tool = format!("t/{}", "t".repeat(200_000));
    let (mut before_hello, _served) = connect_served(&server);
    before_hello.call(&method, None).await;
    let (mut client, served) = connect_hello_served(&server).await;
    client.call(&method, None).await;
    client
        .call(
            "tools/call",
            Some(serde_json::json!({"name": tool, "arguments": {}})),
        )
        .await;
    client.call("session/goodbye", None).await;
    close_reason(served).await;

    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("a/mmm"),
        "the method is logged (by its prefix): {logged}"
    );
    let longest = logged.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2_000, "a log line of {longest} bytes");
    assert!(logged.len() < 100_000, "{} bytes logged", logged.len());
}
