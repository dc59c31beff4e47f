//! The live conformance suite against the conformant mock (in memory, over TCP, over a child's stdio) and
//! against each faulty mod: every faulty mod fails exactly the check that names its fault.

use gabp_testkit::conformance::{self, Report, Target};
use gabp_testkit::{FaultyMod, MockMod};

/// Fails the test with the whole report when `report` has any failure.
fn assert_all_pass(report: &Report) {
    assert!(
        report.is_success(),
        "expected every check to pass:\n{report}"
    );
    let skipped: Vec<&str> = report
        .checks()
        .iter()
        .filter(|c| c.outcome.is_skipped())
        .map(|c| c.name)
        .collect();
    // The mock has no game clock and no picture tool; gabp-cli's conformance test runs those checks against
    // the demo game.
    assert_eq!(
        skipped,
        ["extensions.time_control", "extensions.content"],
        "{report}"
    );
    assert_eq!(report.checks().len(), conformance::checks().len());
}

/// Runs the suite against `faulty` and checks that exactly the check named for its fault failed.
async fn assert_caught(faulty: FaultyMod, check: &str) {
    assert_eq!(faulty.caught_by(), check);
    let server = faulty.build().expect("build the faulty mod");
    let report = conformance::run(&server.conformance_target()).await;
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert_eq!(failed, [check], "{faulty}: unexpected failures:\n{report}");
    let reason = report
        .check(check)
        .and_then(|c| c.outcome.reason())
        .expect("a failure has a reason");
    assert!(!reason.contains('\n'), "one-line reason: {reason}");
    eprintln!("{faulty}: FAIL {check}: {reason}");
}

#[tokio::test]
async fn the_mock_passes_in_memory() {
    let mock = MockMod::demo().expect("mock");
    let report = conformance::run(&mock.conformance_target()).await;
    eprintln!("{report}");
    assert_all_pass(&report);
}

#[tokio::test]
async fn the_mock_passes_over_tcp() {
    let mock = MockMod::demo().expect("mock");
    let served = mock.serve_tcp().await.expect("serve on loopback TCP");
    let target = Target::endpoint(served.endpoint().clone(), mock.token().clone());
    let report = conformance::run(&target).await;
    assert_eq!(report.target(), served.endpoint().to_string());
    assert_all_pass(&report);
    served.shutdown().await;
}

#[tokio::test]
async fn the_mock_passes_over_a_childs_stdio() {
    let token = gabp_transport::Token::generate().expect("token");
    // The suite hands the token to each child in GABP_TOKEN.
    let target = Target::spawn(
        env!("CARGO_BIN_EXE_gabp-testkit-mock-mod"),
        [] as [&str; 0],
        token,
    );
    let report = conformance::run(&target).await;
    assert_all_pass(&report);
}

#[tokio::test]
async fn a_mod_that_accepts_any_token_fails_auth_wrong_token_refused() {
    assert_caught(FaultyMod::AcceptsAnyToken, "auth.wrong_token_refused").await;
}

#[tokio::test]
async fn a_mod_that_answers_before_hello_fails_auth_hello_required() {
    assert_caught(FaultyMod::AnswersBeforeHello, "auth.hello_required").await;
}

#[tokio::test]
async fn a_mod_that_answers_with_wrong_ids_fails_responses_ids_match() {
    assert_caught(FaultyMod::WrongResponseIds, "responses.ids_match").await;
}

#[tokio::test]
async fn a_mod_that_skips_seq_values_fails_events_seq_contiguous() {
    assert_caught(FaultyMod::SkipsEventSeq, "events.seq_contiguous").await;
}

#[tokio::test]
async fn a_mod_that_adds_unknown_envelope_fields_fails_envelope_strictly_valid() {
    assert_caught(FaultyMod::UnknownEnvelopeFields, "envelope.strictly_valid").await;
}

#[tokio::test]
async fn a_mod_that_stalls_on_a_malformed_header_fails_framing_bad_header_closed() {
    assert_caught(
        FaultyMod::StallsOnMalformedHeader,
        "framing.bad_header_closed",
    )
    .await;
}

#[tokio::test]
async fn a_mod_that_executes_an_oversized_frame_fails_framing_oversized_refused() {
    assert_caught(
        FaultyMod::ExecutesOversizedFrames,
        "framing.oversized_refused",
    )
    .await;
}
