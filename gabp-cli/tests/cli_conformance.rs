//! `gabp conformance` end to end: the whole suite passes against `gabp mod` on loopback TCP, a Unix socket
//! and stdio (a `gabp mod --stdio` spawned per connection), and fails, naming the check that catches it,
//! against each faulty mod of the testkit.

mod cli_support;
mod mod_support;

use cli_support::{gabp_in, output, run, text};
use gabp_testkit::conformance;
use mod_support::{Launch, TOKEN};

/// Asserts a passing run: one `ok   NAME [LEVEL]` line per check, in the suite's order, then the summary; exit 0.
fn assert_all_pass(out: &std::process::Output) {
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    let checks = conformance::checks();
    let mut expected: Vec<String> = checks
        .iter()
        .map(|c| format!("ok   {} [{}]", c.name, c.level))
        .collect();
    expected.push(format!("{} passed, 0 failed", checks.len()));
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected, "{stdout}");
    assert!(!stdout.contains(TOKEN) && !text(&out.stderr).contains(TOKEN));
}

#[test]
fn passes_against_gabp_mod_on_tcp() {
    let mut game = Launch::new(&["--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    assert!(endpoint.starts_with("tcp://127.0.0.1:"), "{endpoint}");
    let out = run(&["conformance", "--connect", &endpoint, "--token", TOKEN]);
    assert_all_pass(&out);
}

#[test]
fn passes_against_gabp_mod_on_a_unix_socket() {
    let mut game = Launch::new(&["--listen", "unix", "--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    assert!(endpoint.starts_with("unix:///"), "{endpoint}");
    // The token from the environment this time.
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = gabp_in(home.path(), &["conformance", "--connect", &endpoint]);
    command.env("GABP_TOKEN", TOKEN);
    assert_all_pass(&output(command));
}

#[test]
fn passes_against_gabp_mod_on_stdio() {
    let spawn = format!("{} mod --stdio", env!("CARGO_BIN_EXE_gabp"));
    let out = run(&["conformance", "--spawn", &spawn]);
    assert_all_pass(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fails_against_each_faulty_mod_naming_the_check() {
    // One `gabp conformance` per faulty mod, all at once.
    let runs = gabp_testkit::FaultyMod::ALL
        .into_iter()
        .map(|kind| async move {
            let faulty = kind.build().expect("faulty mod");
            let (served, proxy) = faulty.serve_tcp().await.expect("serve");
            let endpoint = proxy.endpoint().to_string();
            let token = faulty.token().expose_secret().to_owned();
            let out = tokio::task::spawn_blocking(move || {
                run(&["conformance", "--connect", &endpoint, "--token", &token])
            })
            .await
            .expect("gabp conformance");
            proxy.shutdown().await;
            served.shutdown().await;
            (kind, out)
        });
    for (kind, out) in futures::future::join_all(runs).await {
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{kind}:\n{stdout}");
        let failed: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("FAIL "))
            .map(|l| l.split(' ').next().unwrap_or_default())
            .collect();
        assert!(
            failed.contains(&kind.caught_by()),
            "{kind}: expected FAIL {}:\n{stdout}",
            kind.caught_by()
        );
        let summary = stdout.lines().last().unwrap_or_default();
        assert!(
            summary.ends_with(&format!("{} failed", failed.len()))
                || summary.contains(&format!("{} failed,", failed.len())),
            "{kind}: {summary}"
        );
    }
}

#[test]
fn an_unreachable_mod_is_a_failed_check_not_a_crash() {
    let free_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let endpoint = format!("tcp://127.0.0.1:{free_port}");
    let out = run(&["conformance", "--connect", &endpoint, "--token", TOKEN]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("FAIL transport.connect [MUST]: "),
        "{stdout}"
    );
    assert!(
        stdout.lines().skip(1).any(|l| l.starts_with("skip ")),
        "{stdout}"
    );
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.starts_with("0 passed, 1 failed, "), "{summary}");
}

#[test]
fn the_upstream_profile_skips_the_gabp_rs_checks() {
    let mut game = Launch::new(&["--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    let args = [
        "conformance",
        "--profile",
        "upstream",
        "--connect",
        &endpoint,
        "--token",
        TOKEN,
    ];
    let out = run(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for check in conformance::checks() {
        let status = if check.level == conformance::Level::GabpRs {
            "skip"
        } else {
            "ok  "
        };
        let line = format!("{status} {} [{}]", check.name, check.level);
        assert!(
            stdout.lines().any(|l| l.starts_with(&line)),
            "{line}:\n{stdout}"
        );
    }
    let out = run(&[
        "conformance",
        "--profile",
        "strict",
        "--connect",
        &endpoint,
        "--token",
        TOKEN,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn the_tools_to_call_can_be_named() {
    let mut game = Launch::new(&["--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    let args = [
        "conformance",
        "--fast-tool",
        "conformance/absent",
        "--event-tool",
        "conformance/absent_trigger",
        "--event-channel",
        "player/move",
        "--event-args",
        r#"{"n":1}"#,
        "--connect",
        &endpoint,
        "--token",
        TOKEN,
    ];
    let stdout = text(&run(&args).stdout);
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!(" {name} ")))
            .unwrap_or_default()
            .to_owned()
    };
    let concurrency = line("concurrency.no_head_of_line_blocking");
    assert!(
        concurrency.starts_with("FAIL ") && concurrency.contains("conformance/absent"),
        "{stdout}"
    );
    let events = line("events.seq_contiguous");
    assert!(
        events.starts_with("skip ")
            && events.contains(r#"conformance/absent_trigger refused {"n":1}"#),
        "{stdout}"
    );
    let out = run(&[
        "conformance",
        "--slow-tool",
        "demo/sleep",
        "--slow-args",
        "[1]",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
