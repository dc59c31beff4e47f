//! The client commands end to end against real mods: `gabp tools` (golden table), `gabp call` (success and
//! error answers), the error lines (golden), `gabp tail` (events, and a warning per `seq` gap from a mod of the
//! testkit that skips `seq` values), `gabp bench` (the JSON shape, with and without `--self`), and `--help` of
//! every subcommand.

mod cli_support;
mod mod_support;

use std::process::Stdio;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use cli_support::{gabp_in, golden, mask, one_error_line, output, run, text};
use mod_support::{Launch, TOKEN};
use serde_json::{json, Value};

/// A `gabp mod` on a free loopback port with [`TOKEN`]; its endpoint.
fn tcp_mod() -> (mod_support::ModProcess, String) {
    let mut game = Launch::new(&["--token", TOKEN]).spawn(false);
    let endpoint = game.listening_on();
    (game, endpoint)
}

#[test]
fn tools_table_is_golden() {
    let (_game, endpoint) = tcp_mod();
    let out = run(&["tools", "--connect", &endpoint, "--token", TOKEN]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    golden("tools.txt", &text(&out.stdout));

    // The same over stdio, with the token from GABP_TOKEN.
    let home = tempfile::tempdir().expect("tempdir");
    let spawn = format!("{} mod --stdio", env!("CARGO_BIN_EXE_gabp"));
    let mut command = gabp_in(home.path(), &["tools", "--spawn", &spawn]);
    command.env("GABP_TOKEN", TOKEN);
    let stdio = output(command);
    assert_eq!(stdio.status.code(), Some(0), "{}", text(&stdio.stderr));
    assert_eq!(stdio.stdout, out.stdout);
}

#[test]
fn call_prints_the_result_as_pretty_json() {
    let (_game, endpoint) = tcp_mod();
    let call = |args: &[&str]| {
        let mut all = vec!["call", "--connect", &endpoint, "--token", TOKEN];
        all.extend_from_slice(args);
        run(&all)
    };
    let out = call(&[
        "tools/call",
        r#"{"name": "world/get_block", "arguments": {"x": 3, "y": 4, "z": 3}}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout,
        "{\n  \"block\": \"grass\",\n  \"x\": 3,\n  \"y\": 4,\n  \"z\": 3\n}\n"
    );

    // No params.
    let out = call(&["tools/list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(list["tools"].as_array().map(Vec::len), Some(11));

    // A spawned mod over stdio gets a fresh token.
    let spawn = format!("{} mod --stdio", env!("CARGO_BIN_EXE_gabp"));
    let out = run(&[
        "call",
        "--spawn",
        &spawn,
        "state/get",
        r#"{"components": ["player"]}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let state: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(state["state"]["player"]["id"], "steve");

    // The endpoint and token from bridge.json.
    let home = tempfile::tempdir().expect("tempdir");
    let config = home.path().join("gabp").join("bridge.json");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    gabp_transport::BridgeConfig::new(
        gabp_transport::Token::new(TOKEN).expect("token"),
        endpoint.parse().expect("endpoint"),
    )
    .write_atomic(&config)
    .expect("write bridge.json");
    let out = output(gabp_in(home.path(), &["call", "session/ping"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(serde_json::from_slice::<Value>(&out.stdout).is_ok());
}

/// Runs each failing command and records `$ ARGS` and its one error line.
#[test]
fn error_lines_are_golden() {
    let (_game, endpoint) = tcp_mod();
    let free_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let nothing_there = format!("tcp://127.0.0.1:{free_port}");
    let wrong_token = "0".repeat(64);
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "call",
            "--connect",
            "tcp://10.0.0.1:4711",
            "--token",
            TOKEN,
            "tools/list",
        ],
        vec!["call", "--connect", "bogus", "--token", TOKEN, "tools/list"],
        vec!["call", "--connect", "stdio", "--token", TOKEN, "tools/list"],
        vec![
            "call",
            "--connect",
            &nothing_there,
            "--token",
            TOKEN,
            "tools/list",
        ],
        vec![
            "call",
            "--connect",
            &endpoint,
            "--token",
            &wrong_token,
            "tools/list",
        ],
        vec!["call", "--connect", &endpoint, "tools/list"],
        vec!["call", "tools/list"],
        vec![
            "call",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "no/such_method",
        ],
        vec![
            "call",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "tools/call",
            r#"{"name": "world/get_block", "arguments": {"x": 3, "y": 99, "z": 3}}"#,
        ],
        vec![
            "call",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "tools/call",
            r#"{"name": "world/get_block", "arguments": {"x": "three", "y": 4, "z": 3}}"#,
        ],
        vec![
            "call",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "tools/call",
            r#"{"name": "no/such_tool"}"#,
        ],
        vec![
            "call",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "tools/list",
            "{not json",
        ],
        vec!["tools", "--connect", &nothing_there, "--token", TOKEN],
        vec![
            "tail",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "no/such_channel",
        ],
        vec![
            "bench",
            "--connect",
            &endpoint,
            "--token",
            TOKEN,
            "--calls",
            "5",
            "--tool",
            "no/such_tool",
        ],
        vec!["bench", "--self", "--args", "{}"],
    ];
    let mut transcript = String::new();
    for args in &cases {
        let home = tempfile::tempdir().expect("tempdir");
        let out = output(gabp_in(home.path(), args));
        let line = one_error_line(&out, TOKEN);
        let line = line.replace(&home.path().display().to_string(), "HOME");
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if *a == TOKEN {
                    "$TOKEN".to_owned()
                } else if *a == wrong_token {
                    "$WRONG_TOKEN".to_owned()
                } else if a.contains(' ') || a.contains('{') {
                    format!("'{a}'")
                } else {
                    (*a).to_owned()
                }
            })
            .collect();
        transcript.push_str(&format!("$ gabp {}\n{line}\n\n", shown.join(" ")));
    }
    let transcript = mask(&transcript).replace(&format!(":{free_port}"), ":FREE_PORT");
    golden("errors.txt", &transcript);

    // A mod that cannot start: the shell's own words follow (they differ between shells, so not golden).
    let out = run(&[
        "call",
        "--spawn",
        "gabp-test-no-such-mod --stdio",
        "tools/list",
    ]);
    let line = one_error_line(&out, "");
    assert!(
        line.starts_with(
            "error: the mod started by `gabp-test-no-such-mod --stdio` closed the connection during the handshake"
        ) && line.contains("gabp-test-no-such-mod"),
        "{line}"
    );
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for command in [
        "demo",
        "call",
        "tools",
        "tail",
        "conformance",
        "bench",
        "mod",
        "validate",
        "mcp",
        "record",
        "replay",
    ] {
        let out = run(&[command, "--help"]);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}: {}",
            text(&out.stderr)
        );
        assert!(stdout.contains("Examples:"), "{command} --help:\n{stdout}");
        assert!(
            !stdout.contains("\\\""),
            "{command} --help shows \\\":\n{stdout}"
        );
        assert!(
            stdout.contains(&format!("gabp {command}")),
            "{command} --help:\n{stdout}"
        );
    }
    // A usage error is clap's, exit status 2.
    let out = run(&["call"]);
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_events_and_warns_of_each_seq_gap() {
    // The testkit's mock mod behind a proxy that skips a seq value before every event.
    let faulty = gabp_testkit::FaultyMod::SkipsEventSeq
        .build()
        .expect("faulty mod");
    let (_served, proxy) = faulty.serve_tcp().await.expect("serve");
    let endpoint = proxy.endpoint().to_string();
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = gabp_in(
        home.path(),
        &["tail", "--connect", &endpoint, "player/move"],
    );
    command
        .env("GABP_TOKEN", faulty.token().expose_secret())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start gabp tail");
    let stdout = cli_support::lines(child.stdout.take().expect("stdout"));
    let stderr = cli_support::lines(child.stderr.take().expect("stderr"));

    // Publish until three events came through (the first ones may precede the subscription).
    let mut events = Vec::new();
    let deadline = Instant::now() + cli_support::DEADLINE;
    let mut n = 0;
    while events.len() < 3 {
        assert!(Instant::now() < deadline, "gabp tail printed {events:?}");
        faulty
            .mock
            .publish("player/move", json!({ "n": n }))
            .expect("publish");
        n += 1;
        match stdout.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => events.push(line),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                panic!(
                    "gabp tail ended: {:?}",
                    stderr.try_iter().collect::<Vec<_>>()
                )
            }
        }
        events.extend(stdout.try_iter());
    }
    let mut seqs = Vec::new();
    for line in &events {
        let event: Value = serde_json::from_str(line).expect("one JSON event per line");
        assert_eq!(event["type"], "event");
        assert_eq!(event["channel"], "player/move");
        seqs.push(event["seq"].as_u64().expect("seq"));
    }
    // First it says where it connected and what it follows.
    let deadline = Instant::now() + cli_support::DEADLINE;
    let status: Vec<String> = (0..2)
        .map(|_| {
            stderr
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("a status line")
        })
        .collect();
    assert_eq!(
        status,
        [
            format!("connected to {endpoint}"),
            "subscribed to player/move".to_owned()
        ]
    );
    // Every event after the first follows a skipped seq value: one warning each.
    let mut warnings = Vec::new();
    while warnings.len() < events.len() - 1 {
        match stderr.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => warnings.push(line),
            Err(e) => panic!("{e}: warnings {warnings:?} for events {seqs:?}"),
        }
    }
    for (warning, seq) in warnings.iter().zip(&seqs) {
        assert_eq!(
            warning,
            &format!("warning: player/move: 1 event lost after seq {seq}")
        );
    }
    // Ctrl-C ends it cleanly.
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let status = cli_support::wait(&mut child, cli_support::DEADLINE);
    assert_eq!(status.code(), Some(0));
}

fn stats(part: &Value) {
    let p50 = part["p50_us"].as_f64().expect("p50_us");
    let p99 = part["p99_us"].as_f64().expect("p99_us");
    let rate = part["calls_per_s"].as_f64().expect("calls_per_s");
    assert!(p50 > 0.0 && p50 <= p99 && rate > 0.0, "{part}");
}

#[test]
fn bench_self_json_has_gabp_and_floor() {
    let out = run(&[
        "bench",
        "--self",
        "--json",
        "--calls",
        "200",
        "--concurrency",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let report: Value = serde_json::from_str(&stdout).expect("one JSON object");
    let keys: Vec<&String> = report.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["floor", "gabp"]);
    stats(&report["gabp"]);
    stats(&report["floor"]);
    assert_eq!(report["gabp"]["calls"], 200);
    assert_eq!(report["gabp"]["call"], "demo/echo");
    assert_eq!(report["gabp"]["callers"], "tasks");
    assert!(report["gabp"]["vs_floor"]["p50"].as_f64().is_some());
    assert_eq!(report["gabp"]["vs_floor"]["rounds"], 10);
    assert_eq!(report["floor"]["calls"], 200);

    // The table.
    let out = run(&["bench", "--self", "--calls", "100"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("100 calls of demo/echo, 1 at a time"),
        "{stdout}"
    );
    for line in ["\ngabp   p50", "\nfloor  p50", "\nratio  p50"] {
        assert!(stdout.contains(line), "{stdout}");
    }
    assert!(stdout.contains(" calls/s"), "{stdout}");
    let verdict = stdout.lines().last().expect("a verdict");
    assert!(
        verdict.starts_with("verdict: a typical call takes ")
            && verdict.contains("more than the raw echo")
            && verdict.contains("times as long")
            && verdict.ends_with("as many calls per second as the echo."),
        "{stdout}"
    );
}

#[test]
fn bench_from_threads_blocks_a_thread_per_call_in_flight() {
    let out = run(&[
        "bench",
        "--self",
        "--json",
        "--from-threads",
        "--calls",
        "300",
        "--concurrency",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(&text(&out.stdout)).expect("one JSON object");
    stats(&report["gabp"]);
    assert_eq!(report["gabp"]["calls"], 300);
    assert_eq!(report["gabp"]["callers"], "threads");
    assert_eq!(report["gabp"]["concurrency"], 3);

    let out = run(&["bench", "--self", "--from-threads", "--concurrency", "513"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--concurrency is at most 512"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&["bench", "--self", "--from-threads", "--calls", "50"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("50 calls of demo/echo, 1 at a time from threads outside the runtime"),
        "{stdout}"
    );
}

#[test]
fn bench_rounds_are_for_self_only_and_at_least_one() {
    for (args, says) in [
        (&["bench", "--rounds", "3"][..], "--self"),
        (&["bench", "--self", "--rounds", "0"][..], "--rounds"),
    ] {
        let out = run(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(says),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn bench_against_a_mod_has_no_floor() {
    let (_game, endpoint) = tcp_mod();
    let args = [
        "bench",
        "--connect",
        &endpoint,
        "--token",
        TOKEN,
        "--json",
        "--calls",
        "100",
        "--concurrency",
        "8",
        "--tool",
        "world/get_block",
        "--args",
        r#"{"x": 1, "y": 1, "z": 1}"#,
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(report.get("floor").is_none(), "{report}");
    stats(&report["gabp"]);
    assert_eq!(report["gabp"]["call"], "world/get_block");
    assert_eq!(report["gabp"]["concurrency"], 8);

    // The table ends with a verdict in words.
    let out = run(&[
        "bench",
        "--connect",
        &endpoint,
        "--token",
        TOKEN,
        "--calls",
        "50",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let verdict = stdout.lines().last().expect("a verdict");
    assert!(
        verdict.starts_with("verdict: a typical call takes ")
            && verdict.ends_with("calls per second with 1 at a time."),
        "{stdout}"
    );
}

/// A refused token is one line, and says "authentication failed" once, whichever command met it.
#[test]
fn a_refused_token_is_one_message() {
    let (_game, endpoint) = tcp_mod();
    let wrong_token = "0".repeat(64);
    for command in [
        vec!["call", "tools/list"],
        vec!["tools"],
        vec!["tail", "player/move"],
        vec!["bench", "--calls", "5"],
    ] {
        let mut args = command.clone();
        args.extend(["--connect", &endpoint, "--token", &wrong_token]);
        let line = one_error_line(&run(&args), &wrong_token);
        assert_eq!(
            line.matches("authentication failed").count(),
            1,
            "{command:?}: {line}"
        );
    }
}
