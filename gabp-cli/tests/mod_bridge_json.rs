//! `gabp mod` writes `bridge.json` when it chose its endpoint and token itself, so that the README's two
//! terminals need no flags: `gabp mod`, then `gabp call demo/echo '{"value":1}'`. The file is private, removed
//! on SIGTERM, and never written over a launcher's (GABS environment, an existing bridge.json).

mod cli_support;
mod mod_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cli_support::{gabp_in, output};
use gabp_transport::{BridgeConfig, BridgeMetadata, Endpoint, Token};
use mod_support::{Launch, TOKEN};
use serde_json::{json, Value};

fn bridge_json(home: &Path) -> PathBuf {
    home.join("gabp").join("bridge.json")
}

/// `gabp call ARGS` with no target flags, in `home`; its stdout as JSON.
fn call(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    let out = output(gabp_in(home, &all));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gabp {all:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn two_terminals_need_no_flags() {
    let mut m = Launch::new(&[]).spawn(false);
    let endpoint = m.listening_on();
    let path = bridge_json(m.home.path());
    // Written before the listening line, private, naming the real endpoint and this process.
    let mode = std::fs::metadata(&path)
        .expect("bridge.json")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let written = BridgeConfig::read(&path).expect("readable");
    assert_eq!(written.endpoint.to_string(), endpoint);
    assert_eq!(written.metadata.pid, Some(m.pid()));
    let token = written.token.expose_secret().to_owned();
    assert!(!m.stderr_text().contains(&token), "the token is not shown");

    assert_eq!(
        call(m.home.path(), &["demo/echo", r#"{"value":1}"#]),
        json!({"value": 1})
    );
    assert_eq!(
        call(m.home.path(), &["tools/list"])["tools"]
            .as_array()
            .map(|t| !t.is_empty()),
        Some(true)
    );

    m.signal("TERM");
    m.assert_clean_exit();
    assert!(!path.exists(), "removed on SIGTERM");
    assert!(!m.stderr_text().contains(&token));
}

#[test]
fn a_launchers_bridge_json_is_left_alone() {
    let home = tempfile::tempdir().expect("tempdir");
    let socket = home.path().join("launcher.sock");
    let path = bridge_json(home.path());
    // Written by a launcher that still runs (this test).
    BridgeConfig::new(
        Token::new(TOKEN).expect("token"),
        Endpoint::unix(&socket).expect("endpoint"),
    )
    .with_metadata(BridgeMetadata::current_process(None))
    .write_atomic(&path)
    .expect("write bridge.json");
    let before = std::fs::read(&path).expect("read");

    let mut m = Launch::new(&[]).home(home).spawn(false);
    assert_eq!(m.listening_on(), format!("unix://{}", socket.display()));
    call(m.home.path(), &["session/ping"]);
    m.signal("TERM");
    m.assert_clean_exit();
    assert_eq!(std::fs::read(&path).expect("still there"), before);
}

#[test]
fn the_gabs_environment_means_no_bridge_json() {
    let mut m = Launch::new(&["--listen", "tcp://127.0.0.1:0"])
        .env("GABP_TOKEN", TOKEN)
        .spawn(false);
    m.listening_on();
    assert!(!bridge_json(m.home.path()).exists());
    m.signal("TERM");
    m.assert_clean_exit();
}

#[test]
fn no_bridge_json_flag_writes_nothing_and_shows_the_fresh_token() {
    let mut m = Launch::new(&["--no-bridge-json"]).spawn(false);
    let token = m.stderr_line("generated token: ");
    let endpoint = m.listening_on();
    assert!(!bridge_json(m.home.path()).exists());
    let token = token.split_whitespace().next().expect("token").to_owned();
    m.connect(&endpoint).hello(&token);
    m.signal("TERM");
    m.assert_clean_exit();
}

#[test]
fn a_bridge_json_left_by_a_killed_mod_is_replaced() {
    let mut first = Launch::new(&[]).spawn(false);
    first.listening_on();
    let home = tempfile::tempdir().expect("tempdir");
    let path = bridge_json(home.path());
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::copy(bridge_json(first.home.path()), &path).expect("copy");
    first.signal("KILL");
    first.wait_exit();

    let mut m = Launch::new(&[]).home(home).spawn(false);
    let endpoint = m.listening_on();
    let written = BridgeConfig::read(&path).expect("rewritten");
    assert_eq!(written.endpoint.to_string(), endpoint);
    assert_eq!(written.metadata.pid, Some(m.pid()));
    m.signal("TERM");
    m.assert_clean_exit();
    assert!(!path.exists());
}

#[test]
fn a_method_that_is_not_a_tool_is_sent_as_is() {
    let mut m = Launch::new(&[]).spawn(false);
    m.listening_on();
    let out = output(gabp_in(
        m.home.path(),
        &["call", "demo/no_such_thing", "{}"],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("-32601"), "the mod's own answer: {stderr}");
    m.signal("TERM");
    m.assert_clean_exit();
}
