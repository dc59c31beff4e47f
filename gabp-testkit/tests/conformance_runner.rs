//! The conformance runner itself: unreachable and silent mods end the run quickly with clear reasons, checks
//! without material are skipped, event triggers, Unix sockets, the report's lines.

use std::time::{Duration, Instant};

use gabp_session::server::CallError;
use gabp_testkit::conformance::{self, EventTrigger, Options, Outcome, Target};
use gabp_testkit::{Direction, Fault, FaultProxy, MockMod, MockTool};
use gabp_transport::{ByteStream, Endpoint, Token};
use serde_json::json;
use tokio::io::AsyncReadExt;

fn outcome<'r>(report: &'r conformance::Report, name: &str) -> &'r Outcome {
    &report
        .check(name)
        .unwrap_or_else(|| panic!("no check {name}"))
        .outcome
}

/// A "mod" that accepts connections, reads everything and never answers.
fn silent_target() -> Target {
    let token = Token::generate().expect("token");
    Target::in_memory(token, || {
        let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            while matches!(theirs.read(&mut buf).await, Ok(n) if n > 0) {}
        });
        ByteStream::new(ours)
    })
    .with_description("a silent mod")
}

#[tokio::test]
async fn an_unreachable_mod_fails_the_connect_check_and_skips_the_rest() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let target = Target::endpoint(Endpoint::tcp_v4(port), Token::generate().expect("token"));
    let report = conformance::run(&target).await;
    assert!(
        outcome(&report, "transport.connect").is_failed(),
        "{report}"
    );
    assert_eq!(report.failed(), 1, "{report}");
    assert_eq!(report.skipped(), conformance::checks().len() - 1);
    assert!(!report.is_success());
    assert!(report
        .to_string()
        .contains("FAIL transport.connect [MUST]: cannot connect"));
}

#[tokio::test]
async fn a_silent_mod_fails_fast_instead_of_hanging() {
    let options = Options::default()
        .with_answer_timeout(Duration::from_millis(300))
        .with_stall_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let mut lines = Vec::new();
    let report = conformance::run_with(&silent_target(), &options, |check| {
        lines.push(check.to_string());
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10), "{report}");
    assert_eq!(lines.len(), conformance::checks().len());
    assert_eq!(
        outcome(&report, "handshake.welcome_valid"),
        &Outcome::Failed("session/hello with the right token: no answer within 300 ms".into())
    );
    assert!(outcome(&report, "auth.hello_required").is_failed());
    assert!(outcome(&report, "auth.wrong_token_refused").is_failed());
    assert!(outcome(&report, "session.ping")
        .reason()
        .is_some_and(|r| r.starts_with("no session")));
    assert_eq!(report.target(), "a silent mod");
}

#[tokio::test]
async fn every_check_has_a_time_limit() {
    let options = Options::default()
        .with_answer_timeout(Duration::from_secs(60))
        .with_check_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let report = conformance::run_with(&silent_target(), &options, |_| {}).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{report}");
    assert_eq!(
        outcome(&report, "handshake.welcome_valid"),
        &Outcome::Failed("did not finish within its time limit of 200 ms (the mod stalled)".into())
    );
}

#[tokio::test]
async fn checks_without_material_are_skipped_not_failed() {
    // No tools, no channels: nothing to test concurrency, arguments or events with.
    let bare = MockMod::builder().build().expect("mock");
    let report = conformance::run(&bare.conformance_target()).await;
    assert!(report.is_success(), "{report}");
    for name in [
        "tools.arguments_validated",
        "concurrency.no_head_of_line_blocking",
        "events.seq_contiguous",
        "extensions.progress",
        "extensions.cancel",
        "extensions.time_control",
        "extensions.content",
        "extensions.input",
        "extensions.env",
    ] {
        assert!(outcome(&report, name).is_skipped(), "{name}:\n{report}");
    }
    assert!(
        report.summary().ends_with(", 9 skipped"),
        "{}",
        report.summary()
    );
    assert!(report
        .to_string()
        .contains("skip events.seq_contiguous [MUST]: the mod advertises no event channels"));
}

/// A mock whose `world/tick` tool publishes on `world/tick`.
fn ticking_mock() -> MockMod {
    let builder = MockMod::builder().channel("world/tick");
    let events = builder.event_publisher();
    builder
        .tool(MockTool::with("world/tick", move |args| {
            events
                .publish("world/tick", &args)
                .map_err(|e| CallError::new(e.to_string()))?;
            Ok(json!({}))
        }))
        .build()
        .expect("mock")
}

#[tokio::test]
async fn an_event_trigger_from_the_options() {
    let mock = ticking_mock();
    let options = Options::default().with_event_trigger(EventTrigger::new(
        "world/tick",
        "world/tick",
        (0..4).map(|n| json!({ "n": n })),
    ));
    let report = conformance::run_with(&mock.conformance_target(), &options, |_| {}).await;
    assert!(
        outcome(&report, "events.seq_contiguous").is_passed(),
        "{report}"
    );

    // The same mod behind a proxy that skips seq values fails it.
    let proxy = FaultProxy::new();
    proxy.faults().inject(Fault::skip_event_seq().always());
    let behind = mock.clone();
    let target = Target::in_memory(mock.token().clone(), move || {
        proxy.link(behind.serve_in_memory().0)
    });
    let report = conformance::run_with(&target, &options, |_| {}).await;
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert_eq!(failed, ["events.seq_contiguous"], "{report}");
}

#[tokio::test]
async fn a_trigger_that_refuses_its_arguments_skips_the_event_check() {
    let mock = ticking_mock();
    let options = Options::default().with_event_trigger(EventTrigger::new(
        "world/no_such_tool",
        "world/tick",
        [json!({})],
    ));
    let report = conformance::run_with(&mock.conformance_target(), &options, |_| {}).await;
    let reason = outcome(&report, "events.seq_contiguous")
        .reason()
        .unwrap_or_default();
    assert!(
        reason.starts_with("the trigger world/no_such_tool refused"),
        "{report}"
    );
}

#[tokio::test]
async fn events_published_by_the_mod_itself_are_checked_without_a_trigger() {
    let mock = ticking_mock();
    let events = mock.events();
    let ticker = tokio::spawn(async move {
        for n in 0u64.. {
            let _ = events.publish("world/tick", json!({ "n": n }));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let options = Options::default().with_event_listen(Duration::from_millis(300));
    let report = conformance::run_with(&mock.conformance_target(), &options, |_| {}).await;
    ticker.abort();
    assert!(
        outcome(&report, "events.seq_contiguous").is_passed(),
        "{report}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn the_mock_passes_over_a_unix_socket() {
    let mock = MockMod::demo().expect("mock");
    let dir = std::env::temp_dir();
    let endpoint = Endpoint::unix_unique_in(&dir).expect("endpoint");
    let listener = gabp_transport::Listener::bind(&endpoint)
        .await
        .expect("bind");
    let served = mock.serve(listener);
    let report = conformance::run(&Target::endpoint(endpoint, mock.token().clone())).await;
    assert!(report.is_success(), "{report}");
    // No game clock, no picture tool: only those two checks lack material.
    assert_eq!(report.skipped(), 2, "{report}");
    served.shutdown().await;
}

#[tokio::test]
async fn a_faulty_mod_over_tcp_through_the_proxy() {
    let faulty = gabp_testkit::FaultyMod::UnknownEnvelopeFields
        .build()
        .expect("faulty");
    let (served, proxy) = faulty.serve_tcp().await.expect("serve");
    let target = Target::endpoint(proxy.endpoint().clone(), faulty.token().clone());
    let report = conformance::run(&target).await;
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert_eq!(failed, ["envelope.strictly_valid"], "{report}");
    proxy.shutdown().await;
    served.shutdown().await;
}

#[test]
fn check_names_are_unique_and_described() {
    let checks = conformance::checks();
    let mut names: Vec<&str> = checks.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), checks.len());
    for check in checks {
        assert!(check.name.contains('.'), "{}", check.name);
        assert!(!check.description.is_empty());
    }
}

#[tokio::test]
async fn an_answer_that_does_not_decode_is_not_reported_as_no_answer() {
    let mock = MockMod::demo().expect("mock");
    let proxy = FaultProxy::new();
    proxy
        .faults()
        .inject(Fault::corrupt_next(Direction::ModToBridge).always());
    let behind = mock.clone();
    let target = Target::in_memory(mock.token().clone(), move || {
        proxy.link(behind.serve_in_memory().0)
    });
    let options = Options::default().with_answer_timeout(Duration::from_millis(300));
    let report = conformance::run_with(&target, &options, |_| {}).await;
    let reason = outcome(&report, "handshake.welcome_valid")
        .reason()
        .unwrap_or_default();
    assert!(reason.contains("undecodable answer: "), "{report}");
    assert!(!reason.contains("no answer"), "{report}");
}

#[tokio::test]
async fn round_trips_near_40_ms_get_the_nagle_hint() {
    let mock = MockMod::demo().expect("mock");
    let proxy = FaultProxy::new();
    let delay = Duration::from_millis(37);
    proxy
        .faults()
        .inject(Fault::delay(Direction::ModToBridge, delay).always());
    let behind = mock.clone();
    let target = Target::in_memory(mock.token().clone(), move || {
        proxy.link(behind.serve_in_memory().0)
    });
    let report = conformance::run(&target).await;
    let hint = "round trips near 40 ms: the mod may not set TCP_NODELAY (NoDelay in .NET) and may write a frame in pieces";
    assert_eq!(report.hints(), [hint], "{report}");
    assert!(report.to_string().contains(&format!("\n{hint}\n")));
}
