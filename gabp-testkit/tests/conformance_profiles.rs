//! Conformance profiles and levels: `upstream` runs the MUST and SHOULD checks only, without gabp-rs's stricter
//! details; `gabp-rs` runs everything.

use gabp_testkit::conformance::{self, Level, Options, Profile};
use gabp_testkit::{FaultyMod, MockMod};

#[test]
fn every_check_has_a_level_and_both_profiles_have_checks() {
    let checks = conformance::checks();
    let count = |level| checks.iter().filter(|c| c.level == level).count();
    assert!(count(Level::Must) > 0 && count(Level::Should) > 0 && count(Level::GabpRs) > 0);
    let level = |name: &str| checks.iter().find(|c| c.name == name).map(|c| c.level);
    assert_eq!(level("auth.wrong_token_refused"), Some(Level::Must));
    assert_eq!(level("session.ping"), Some(Level::Should));
    assert_eq!(level("envelope.strictly_valid"), Some(Level::GabpRs));
}

#[tokio::test]
async fn upstream_skips_the_gabp_rs_checks_and_shows_levels() {
    let mock = MockMod::demo().expect("mock");
    let options = Options::default().with_profile(Profile::Upstream);
    let report = conformance::run_with(&mock.conformance_target(), &options, |_| {}).await;
    assert!(report.is_success(), "{report}");
    for check in report.checks() {
        let gabp_rs = check.level == Level::GabpRs;
        assert_eq!(check.outcome.is_skipped(), gabp_rs, "{check}");
        if gabp_rs {
            assert!(
                check
                    .to_string()
                    .ends_with("[gabp-rs]: a gabp-rs rule, checked only with the gabp-rs profile"),
                "{check}"
            );
        }
    }
    assert!(report
        .to_string()
        .contains("ok   auth.wrong_token_refused [MUST]"));
}

#[tokio::test]
async fn a_fault_of_a_gabp_rs_rule_passes_upstream_and_fails_gabp_rs() {
    let faulty = FaultyMod::UnknownEnvelopeFields.build().expect("faulty");
    let target = faulty.conformance_target();
    let upstream = Options::default().with_profile(Profile::Upstream);
    let report = conformance::run_with(&target, &upstream, |_| {}).await;
    assert!(report.is_success(), "{report}");
    let report = conformance::run_with(&target, &Options::default(), |_| {}).await;
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert_eq!(failed, ["envelope.strictly_valid"], "{report}");
}

/// Upstream reserves session/ping and session/goodbye without requiring them, makes capabilities.limits
/// optional, and requires a wrong token's refusal but not that the connection closes.
#[tokio::test]
async fn the_upstream_profile_judges_by_upstream_rules_only() {
    let faulty = FaultyMod::UpstreamMinimum.build().expect("faulty");
    let target = faulty.conformance_target();
    let upstream = Options::default().with_profile(Profile::Upstream);
    let report = conformance::run_with(&target, &upstream, |_| {}).await;
    assert!(report.is_success(), "{report}");
    for (name, why) in [
        ("session.goodbye", "reserved upstream, not required"),
        ("limits.advertised", "optional upstream"),
    ] {
        let check = report.check(name).expect(name);
        assert!(
            check.outcome.reason().unwrap_or_default().contains(why),
            "{check}"
        );
    }
    assert!(report
        .check("auth.wrong_token_refused")
        .is_some_and(|c| c.outcome.is_passed()));
    // The gabp-rs profile asks for more.
    let report = conformance::run_with(&target, &Options::default(), |_| {}).await;
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert_eq!(failed, FaultyMod::UpstreamMinimum.fails(), "{report}");
}

/// Both members in every response: a deviation by upstream's own rule, and every other answer is still
/// checked (its codes, its data) instead of being undecodable.
#[tokio::test]
async fn both_members_fail_one_upstream_check_and_hide_nothing_else() {
    let faulty = FaultyMod::WritesBothMembers.build().expect("faulty");
    let upstream = Options::default().with_profile(Profile::Upstream);
    let report = conformance::run_with(&faulty.conformance_target(), &upstream, |_| {}).await;
    let failed: Vec<&str> = report.failures().map(|c| c.name).collect();
    assert_eq!(failed, ["responses.one_of_result_error"], "{report}");
    assert!(report
        .check("errors.tool_not_found")
        .is_some_and(|c| c.outcome.is_passed()));
}
