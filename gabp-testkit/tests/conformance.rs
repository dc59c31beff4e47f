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

/// Runs the suite against `faulty` and checks that exactly the checks named for its fault failed, the one
/// written for it first; returns the reason of that one.
async fn assert_caught(faulty: FaultyMod, check: &str) -> String {
    assert_eq!(faulty.caught_by(), check);
    let server = faulty.build().expect("build the faulty mod");
    let report = conformance::run(&server.conformance_target()).await;
    let mut failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    let mut expected = faulty.fails().to_vec();
    failed.sort_unstable();
    expected.sort_unstable();
    assert_eq!(failed, expected, "{faulty}: unexpected failures:\n{report}");
    for name in faulty.fails() {
        let reason = report
            .check(name)
            .and_then(|c| c.outcome.reason())
            .expect("a failure has a reason");
        assert!(!reason.contains('\n'), "one-line reason: {reason}");
        eprintln!("{faulty}: FAIL {name}: {reason}");
    }
    let reason = report.check(check).and_then(|c| c.outcome.reason());
    reason.unwrap_or_default().to_owned()
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

#[tokio::test]
async fn a_mod_that_counts_characters_fails_framing_utf8_byte_length() {
    let reason = assert_caught(FaultyMod::CountsCharacters, "framing.utf8_byte_length").await;
    assert!(reason.contains("Content-Length counts bytes"), "{reason}");
}

#[tokio::test]
async fn a_mod_that_stalls_without_content_length_fails_framing_no_content_length() {
    let reason = assert_caught(
        FaultyMod::StallsWithoutContentLength,
        "framing.no_content_length",
    )
    .await;
    assert!(reason.contains("stalled"), "{reason}");
}

#[tokio::test]
async fn codes_outside_the_registry_are_named_as_such() {
    let reason = assert_caught(FaultyMod::UnregisteredErrorCodes, "errors.tool_not_found").await;
    assert!(
        reason.contains("-31002") && reason.contains("outside the error-code registry"),
        "{reason}"
    );
    assert!(reason.contains("-32400 (Tool Not Found)"), "{reason}");
}

#[tokio::test]
async fn interleaved_answers_are_reported_as_interleaving() {
    let faulty = FaultyMod::InterleavesAnswers;
    let reason = assert_caught(faulty, "framing.answers_whole").await;
    assert!(reason.contains("interleave"), "{reason}");
    // Every check it fails says so, not that a body is not JSON.
    let report = conformance::run(&faulty.build().expect("faulty").conformance_target()).await;
    for check in report.failures() {
        let reason = check.outcome.reason().unwrap_or_default();
        assert!(reason.contains("interleave"), "{check}");
        assert!(!reason.contains("not JSON"), "{check}");
    }
}

#[tokio::test]
async fn both_members_are_a_deviation_and_the_answers_are_still_checked() {
    let reason = assert_caught(
        FaultyMod::WritesBothMembers,
        "responses.one_of_result_error",
    )
    .await;
    assert!(reason.contains("§3.5"), "{reason}");
}

#[tokio::test]
async fn a_mod_that_takes_unknown_key_names_fails_extensions_input() {
    let reason = assert_caught(FaultyMod::TakesUnknownKeys, "extensions.input").await;
    assert!(reason.contains("Spacebar"), "{reason}");
}

#[tokio::test]
async fn a_mod_that_takes_actions_outside_its_space_fails_extensions_env() {
    let reason = assert_caught(FaultyMod::TakesActionsOutsideTheSpace, "extensions.env").await;
    assert!(reason.contains("outside the space"), "{reason}");
}
