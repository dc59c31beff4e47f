//! `ModSettings::for_game` reads the real process environment, so this binary has one test only
//! and sets that environment itself: a config home of its own and no GABS variables.

use gabp_transport::{Endpoint, ModSettings, SettingSource};

#[test]
fn for_game_takes_the_defaults_then_the_gabs_game_id() {
    let home = tempfile::tempdir().expect("tempdir");
    // The only test of this binary: nothing else reads the environment meanwhile.
    std::env::set_var("XDG_CONFIG_HOME", home.path());
    std::env::set_var("HOME", home.path());
    for var in ["GABP_SERVER_PORT", "GABP_TOKEN", "GABS_GAME_ID"] {
        std::env::remove_var(var);
    }
    let s = ModSettings::for_game("my-game").expect("defaults");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(0));
    assert_eq!(s.token_source, SettingSource::Default);
    assert_eq!(s.agent_id.as_deref(), Some("my-game"));
    assert!(s.owns_bridge_json());

    std::env::set_var("GABS_GAME_ID", "from-gabs");
    let s = ModSettings::for_game("my-game").expect("defaults");
    assert_eq!(s.agent_id.as_deref(), Some("from-gabs"));
}
