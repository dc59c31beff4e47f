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
