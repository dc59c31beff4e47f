//! End-to-end tests of where `gabp mod` takes its settings from (flags, the GABS environment, `bridge.json`),
//! and of how it reports bad ones.

mod mod_support;

use gabp_transport::{BridgeConfig, Endpoint, Token};
use mod_support::{Launch, TOKEN};

#[test]
fn gabs_environment_sets_port_token_and_agent_id() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut m = Launch::new(&[])
        .env("GABP_SERVER_PORT", &port.to_string())
        .env("GABP_TOKEN", TOKEN)
        .env("GABS_GAME_ID", "minecraft")
        .spawn(false);
    let endpoint = m.listening_on();
    assert_eq!(endpoint, format!("tcp://127.0.0.1:{port}"));
    let mut c = m.connect(&endpoint);
    assert_eq!(c.hello(TOKEN)["agentId"], "minecraft");
    m.signal("TERM");
    m.assert_clean_exit();

    // --token wins over GABP_TOKEN.
    let flag_token = "f".repeat(64);
    let mut m = Launch::new(&["--token", &flag_token])
        .env("GABP_TOKEN", TOKEN)
        .spawn(false);
    let endpoint = m.listening_on();
    assert!(endpoint.starts_with("tcp://127.0.0.1:"), "{endpoint}");
    let mut c = m.connect(&endpoint);
    c.hello(&flag_token);
    m.signal("TERM");
    m.assert_clean_exit();
}

#[test]
fn bridge_json_sets_endpoint_and_token() {
    let home = tempfile::tempdir().expect("tempdir");
    let socket = home.path().join("from-config.sock");
    let config = home.path().join("gabp").join("bridge.json");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    BridgeConfig::new(
        Token::new(TOKEN).expect("token"),
        Endpoint::unix(&socket).expect("endpoint"),
    )
    .write_atomic(&config)
    .expect("write bridge.json");
    let mut m = Launch::new(&[]).home(home).spawn(false);
    let endpoint = m.listening_on();
    assert_eq!(endpoint, format!("unix://{}", socket.display()));
    let mut c = m.connect(&endpoint);
    c.hello(TOKEN);
    m.signal("TERM");
    m.assert_clean_exit();
    assert!(!socket.exists());

    // --config names another file.
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other.json");
    let socket = dir.path().join("other.sock");
    BridgeConfig::new(
        Token::new(TOKEN).expect("token"),
        Endpoint::unix(&socket).expect("endpoint"),
    )
    .write_atomic(&other)
    .expect("write");
    let mut m = Launch::new(&["--config", other.to_str().expect("utf-8")]).spawn(false);
    assert_eq!(m.listening_on(), format!("unix://{}", socket.display()));
    m.signal("TERM");
    m.assert_clean_exit();
}

#[test]
fn without_any_token_a_fresh_one_goes_to_bridge_json_not_stderr() {
    let mut m = Launch::new(&[]).spawn(false);
    let endpoint = m.listening_on();
    let written = m.stderr_line("wrote ");
    assert!(written.contains("bridge.json"), "{written}");
    let config = BridgeConfig::read(m.home.path().join("gabp").join("bridge.json")).expect("read");
    let token = config.token.expose_secret().to_owned();
    assert_eq!(token.len(), 64);
    assert!(token
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert!(endpoint.starts_with("tcp://127.0.0.1:"), "{endpoint}");
    let mut c = m.connect(&endpoint);
    c.hello(&token);
    m.signal("TERM");
    m.assert_clean_exit();
    assert!(!m.stderr_text().contains(&token), "never shown");
}

/// Runs `gabp mod ARGS` expecting a one-line error; returns the line.
fn one_line_error(launch: Launch) -> String {
    let out = launch.output();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"));
    lines[0].to_owned()
}

#[test]
fn errors_are_one_clear_line() {
    let line = one_line_error(Launch::new(&[
        "--listen",
        "tcp://0.0.0.0:4711",
        "--token",
        TOKEN,
    ]));
    assert!(line.contains("loopback"), "{line}");
    let line = one_line_error(Launch::new(&[
        "--listen",
        "carrier-pigeon",
        "--token",
        TOKEN,
    ]));
    assert!(line.contains("--listen"), "{line}");
    let line = one_line_error(Launch::new(&["--token", "tiny-secret"]));
    assert!(
        line.contains("32") && !line.contains("tiny-secret"),
        "{line}"
    );
    let line = one_line_error(Launch::new(&["--config", "/nonexistent/gabp/bridge.json"]));
    assert!(line.contains("/nonexistent/gabp/bridge.json"), "{line}");
    let line = one_line_error(Launch::new(&[]).env("GABP_SERVER_PORT", "eighty"));
    assert!(line.contains("GABP_SERVER_PORT"), "{line}");

    // A live socket is never taken over.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("taken.sock");
    let listen = format!("unix://{}", path.display());
    let mut first = Launch::new(&["--listen", &listen, "--token", TOKEN]).spawn(false);
    first.listening_on();
    let line = one_line_error(Launch::new(&["--listen", &listen, "--token", TOKEN]));
    assert!(line.contains("taken.sock"), "{line}");
    let mut c = first.connect(&listen);
    c.hello(TOKEN);
    first.signal("TERM");
    first.assert_clean_exit();

    // Usage errors are clap's (exit 2).
    let out = Launch::new(&["--stdio", "--listen", "tcp://127.0.0.1:0"]).output();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_has_an_example() {
    let out = Launch::new(&["--help"]).output();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--listen",
        "--stdio",
        "--token",
        "--config",
        "Examples:",
        "gabp mod --stdio",
    ] {
        assert!(text.contains(needle), "{needle} in:\n{text}");
    }
}
