//! How the commands that read `bridge.json` treat a file that is not a regular file, or that group or others
//! can read (SPEC/1.0 security.md §5): a FIFO is refused at once; a 0644 file is a warning, or with `--strict`
//! an error; a 0600 file is read silently.
#![cfg(unix)]

mod cli_support;
mod mod_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cli_support::{gabp_in, output, text};
use gabp_transport::{BridgeConfig, Endpoint, Token};
use mod_support::{Launch, TOKEN};

/// A home with `gabp/bridge.json` naming `endpoint`, with `mode`; the home and the file's path.
fn home_with_bridge_json(endpoint: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("gabp").join("bridge.json");
    let endpoint: Endpoint = endpoint.parse().expect("endpoint");
    BridgeConfig::new(Token::new(TOKEN).expect("token"), endpoint)
        .write_atomic(&path)
        .expect("write bridge.json");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    (home, path)
}

fn ping(home: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["call"];
    args.extend_from_slice(extra);
    args.push("session/ping");
    output(gabp_in(home, &args))
}

#[test]
fn a_fifo_at_the_bridge_json_path_is_refused_at_once() {
    let home = tempfile::tempdir().expect("tempdir");
    let fifo = home.path().join("bridge.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    let started = Instant::now();
    let out = ping(home.path(), &["--config", fifo.to_str().expect("utf-8")]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&fifo.display().to_string()) && stderr.contains("not a regular file"),
        "{stderr}"
    );
}

#[test]
fn a_bridge_json_others_can_read_warns_and_strict_refuses_it() {
    let mut game = Launch::new(&["--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();

    // 0600: read silently.
    let (home, _) = home_with_bridge_json(&endpoint, 0o600);
    let out = ping(home.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let out = ping(home.path(), &["--strict"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");

    // 0644: one warning naming the file and its mode; the call goes through.
    let (home, path) = home_with_bridge_json(&endpoint, 0o644);
    let out = ping(home.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("warning: "), "{stderr}");
    assert!(
        stderr.contains(&path.display().to_string()) && stderr.contains("0644"),
        "{stderr}"
    );
    assert!(!stderr.contains(TOKEN));

    // 0644 with --strict: refused, nothing sent.
    let out = ping(home.path(), &["--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(&path.display().to_string()) && stderr.contains("0644"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn gabp_mod_warns_about_a_bridge_json_others_can_read_and_strict_refuses_it() {
    let (home, path) = home_with_bridge_json("tcp://127.0.0.1:1", 0o644);
    let config = path.to_str().expect("utf-8");
    let out = Launch::new(&["--config", config, "--strict"]).output();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("0644") && stderr.contains(config),
        "{stderr}"
    );

    let mut m = Launch::new(&["--config", config, "--listen", "tcp://127.0.0.1:0"])
        .home(home)
        .spawn(false);
    let line = m.stderr_line("warning: ");
    assert!(line.contains("0644") && line.contains(config), "{line}");
    m.listening_on();
    m.signal("TERM");
    m.assert_clean_exit();
}

/// Whether `text` holds any 6-character run of `secret`, in any case.
fn leaks(text: &str, secret: &str) -> bool {
    let text = text.to_lowercase();
    let secret: Vec<char> = secret.to_lowercase().chars().collect();
    secret
        .windows(6)
        .any(|w| text.contains(&w.iter().collect::<String>()))
}

#[test]
fn no_error_line_shows_any_part_of_a_token_in_any_case() {
    // SPEC/1.0 security.md §6. Letters g-z only, so no run of it turns up in a port or a path by chance.
    const MIXED: &str = "GhIjKlMnOpQrStUvWxYzZyXwVuTsRqPoNmLkJiHg";
    let upper = MIXED.to_uppercase();
    let mut game = Launch::new(&["--token", MIXED]).spawn(false);
    let endpoint = game.listening_on();
    let home = tempfile::tempdir().expect("tempdir");

    // The right token in the wrong case, from the flag and from GABP_TOKEN: the mod refuses it.
    let out = output(gabp_in(
        home.path(),
        &[
            "call",
            "--connect",
            &endpoint,
            "--token",
            &upper,
            "session/ping",
        ],
    ));
    let line = cli_support::one_error_line(&out, MIXED);
    assert!(
        line.contains("refused the token") && !leaks(&line, MIXED),
        "{line}"
    );
    let mut command = gabp_in(
        home.path(),
        &["call", "--connect", &endpoint, "session/ping"],
    );
    command.env("GABP_TOKEN", MIXED.to_lowercase());
    let line = cli_support::one_error_line(&output(command), MIXED);
    assert!(!leaks(&line, MIXED), "{line}");

    // A bridge.json with the token pasted, in another case or in part, into the address.
    for address in [
        upper.clone(),
        format!("tcp://{upper}:80"),
        format!("127.0.0.1:{}", &MIXED[3..20]),
        format!("unix://{}", MIXED.to_lowercase()),
    ] {
        let path = home.path().join("bridge.json");
        let contents = serde_json::json!({
            "token": MIXED, "transport": {"type": "tcp", "address": address}
        });
        std::fs::write(&path, contents.to_string()).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let config = path.to_str().expect("utf-8");
        let out = output(gabp_in(
            home.path(),
            &["call", "--config", config, "session/ping"],
        ));
        let line = cli_support::one_error_line(&out, MIXED);
        assert!(line.contains("transport.address"), "{line}");
        assert!(!leaks(&line.replace(config, ""), MIXED), "{line}");
        let out = Launch::new(&["--config", config]).output();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(!leaks(&stderr.replace(config, ""), MIXED), "{stderr}");
    }
    game.signal("TERM");
    game.assert_clean_exit();
    assert!(!leaks(&game.stderr_text(), MIXED), "{}", game.stderr_text());
}
