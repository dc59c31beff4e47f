//! `ModSettings`: explicit values, then the GABS environment, then `bridge.json`; every bad GABS
//! variable is reported with its name. The process environment is never touched.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

use gabp_transport::{
    BridgeConfig, Endpoint, ExplicitSettings, ModSettings, SettingSource, Token, TransportError,
};

/// An environment made of `vars`.
fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name| map.get(name).cloned()
}

/// Explicit settings whose `bridge.json` is in an empty temporary directory (so it never exists
/// unless a test writes it).
fn explicit_in(dir: &tempfile::TempDir) -> ExplicitSettings {
    ExplicitSettings {
        bridge_json: Some(dir.path().join("bridge.json")),
        ..ExplicitSettings::default()
    }
}

fn resolve(vars: &[(&str, &str)]) -> Result<ModSettings, TransportError> {
    let dir = tempfile::tempdir().expect("tempdir");
    ModSettings::resolve(explicit_in(&dir), env(vars))
}

/// The error for the given environment, checked to be about `var`.
fn bad(var: &str, vars: &[(&str, &str)]) -> TransportError {
    let err = resolve(vars).expect_err("a bad value");
    assert_eq!(err.variable(), Some(var), "{err:?}");
    assert!(err.to_string().contains(var), "{err}");
    err
}

const GOOD: [(&str, &str); 3] = [
    ("GABP_SERVER_PORT", "38917"),
    (
        "GABP_TOKEN",
        "secret-token-value-0123456789abcdef0123456789abcdef",
    ),
    ("GABS_GAME_ID", "rimworld"),
];

fn with(var: &'static str, value: &'static str) -> Vec<(&'static str, &'static str)> {
    GOOD.iter()
        .map(|&(k, v)| if k == var { (k, value) } else { (k, v) })
        .collect()
}

#[test]
fn gabs_environment_is_used() {
    let s = resolve(&GOOD).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(38917));
    assert!(s
        .token
        .verify("secret-token-value-0123456789abcdef0123456789abcdef"));
    assert_eq!(s.agent_id.as_deref(), Some("rimworld"));
    assert_eq!(
        s.endpoint_source,
        SettingSource::Environment("GABP_SERVER_PORT")
    );
    assert_eq!(s.token_source, SettingSource::Environment("GABP_TOKEN"));
}

#[test]
fn port_with_surrounding_whitespace_is_accepted() {
    let s = resolve(&with("GABP_SERVER_PORT", " 4711\n")).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(4711));
    let s = resolve(&with("GABP_SERVER_PORT", "65535")).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(65535));
    let s = resolve(&with("GABP_SERVER_PORT", "1")).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(1));
}

#[test]
fn explicit_values_win() {
    let dir = tempfile::tempdir().expect("tempdir");
    let explicit = ExplicitSettings {
        endpoint: Some(Endpoint::tcp_v6(9)),
        token: Some(Token::new("explicit-0123456789abcdef0123456789abcdef").expect("token")),
        agent_id: Some("explicit-agent".into()),
        ..explicit_in(&dir)
    };
    let s = ModSettings::resolve(explicit, env(&GOOD)).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v6(9));
    assert!(s.token.verify("explicit-0123456789abcdef0123456789abcdef"));
    assert_eq!(s.agent_id.as_deref(), Some("explicit-agent"));
    assert_eq!(s.endpoint_source, SettingSource::Explicit);
    assert_eq!(s.token_source, SettingSource::Explicit);
}

#[test]
fn explicit_values_mean_bad_variables_are_not_consulted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let explicit = ExplicitSettings {
        endpoint: Some(Endpoint::tcp_v4(9)),
        token: Some(Token::new("explicit-0123456789abcdef0123456789abcdef").expect("token")),
        ..explicit_in(&dir)
    };
    let s = ModSettings::resolve(
        explicit,
        env(&[("GABP_SERVER_PORT", "junk"), ("GABP_TOKEN", "")]),
    )
    .expect("explicit values are enough");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(9));
}

#[test]
fn bridge_json_fills_what_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    BridgeConfig::new(
        Token::new("from-file-0123456789abcdef0123456789abcdef").expect("token"),
        Endpoint::unix("/run/gabp.sock").expect("path"),
    )
    .write_atomic(&path)
    .expect("write");

    // Nothing in the environment: both come from the file.
    let s = ModSettings::resolve(explicit_in(&dir), env(&[])).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::Unix("/run/gabp.sock".into()));
    assert!(s.token.verify("from-file-0123456789abcdef0123456789abcdef"));
    assert_eq!(s.endpoint_source, SettingSource::BridgeJson(path.clone()));
    assert_eq!(s.agent_id, None);

    // The port from the environment, the token from the file.
    let s = ModSettings::resolve(explicit_in(&dir), env(&[("GABP_SERVER_PORT", "5000")]))
        .expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(5000));
    assert!(s.token.verify("from-file-0123456789abcdef0123456789abcdef"));
    assert_eq!(s.token_source, SettingSource::BridgeJson(path));
}

#[cfg(unix)]
#[test]
fn a_bridge_json_others_can_read_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    BridgeConfig::new(
        Token::new("from-file-0123456789abcdef0123456789abcdef").expect("token"),
        Endpoint::tcp_v4(5000),
    )
    .write_atomic(&path)
    .expect("write");
    let s = ModSettings::resolve(explicit_in(&dir), env(&[])).expect("resolves");
    assert_eq!(s.bridge_json_exposure, None);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let s = ModSettings::resolve(explicit_in(&dir), env(&[])).expect("resolves");
    let exposure = s.bridge_json_exposure.expect("reported");
    assert_eq!((exposure.path, exposure.mode), (path, 0o644));
}

#[test]
fn bridge_json_at_the_default_path_is_found_through_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let xdg = dir.path().to_str().expect("utf-8").to_owned();
    let path =
        BridgeConfig::default_path_from(|n| (n == "XDG_CONFIG_HOME").then(|| xdg.clone().into()))
            .expect("path");
    if !cfg!(all(unix, not(target_os = "macos"))) {
        return; // the XDG rule is the Linux one
    }
    BridgeConfig::new(
        Token::new("xdg-0123456789abcdef0123456789abcdef").expect("token"),
        Endpoint::tcp_v4(7),
    )
    .write_atomic(&path)
    .expect("write");
    let vars = [("XDG_CONFIG_HOME", xdg.as_str())];
    let s = ModSettings::resolve(ExplicitSettings::default(), env(&vars)).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(7));
    assert_eq!(s.endpoint_source, SettingSource::BridgeJson(path));
}

#[test]
fn nothing_anywhere_is_a_clear_error() {
    let err = resolve(&[]).expect_err("nothing");
    assert!(
        matches!(
            err,
            TransportError::MissingSetting {
                setting: "endpoint and token",
                ..
            }
        ),
        "{err:?}"
    );
    let shown = err.to_string();
    assert!(
        shown.contains("GABP_SERVER_PORT") && shown.contains("bridge.json"),
        "{shown}"
    );
    let err = resolve(&[("GABP_SERVER_PORT", "1")]).expect_err("no token");
    assert!(
        matches!(
            err,
            TransportError::MissingSetting {
                setting: "token",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_broken_bridge_json_is_reported_when_needed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bridge.json"), "{").expect("write");
    let err = ModSettings::resolve(explicit_in(&dir), env(&[])).expect_err("broken");
    assert!(
        matches!(err, TransportError::BridgeJsonSyntax { .. }),
        "{err:?}"
    );
    // Not needed: never read.
    ModSettings::resolve(explicit_in(&dir), env(&GOOD)).expect("file not consulted");
}

#[test]
fn no_home_and_nothing_else_is_missing_not_a_panic() {
    let err = ModSettings::resolve(ExplicitSettings::default(), env(&[])).expect_err("nothing");
    assert!(
        matches!(err, TransportError::MissingSetting { .. }),
        "{err:?}"
    );
}

// Every bad GABS variable, each its own test.

#[test]
fn bad_port_empty() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", ""));
}

#[test]
fn bad_port_blank() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "   "));
}

#[test]
fn bad_port_not_a_number() {
    let err = bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "abc"));
    assert!(err.to_string().contains("\"abc\""), "{err}");
}

#[test]
fn bad_port_zero() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "0"));
}

#[test]
fn bad_port_too_large() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "65536"));
}

#[test]
fn bad_port_far_too_large() {
    bad(
        "GABP_SERVER_PORT",
        &with("GABP_SERVER_PORT", "99999999999999999999999"),
    );
}

#[test]
fn bad_port_negative() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "-1"));
}

#[test]
fn bad_port_with_plus_sign() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "+80"));
}

#[test]
fn bad_port_fractional() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "80.5"));
}

#[test]
fn bad_port_hexadecimal() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "0x50"));
}

#[test]
fn bad_port_with_trailing_text() {
    bad("GABP_SERVER_PORT", &with("GABP_SERVER_PORT", "80 tcp"));
}

#[test]
fn bad_token_empty() {
    bad("GABP_TOKEN", &with("GABP_TOKEN", ""));
}

#[test]
fn bad_token_blank() {
    bad("GABP_TOKEN", &with("GABP_TOKEN", " \t "));
}

#[test]
fn bad_game_id_empty() {
    bad("GABS_GAME_ID", &with("GABS_GAME_ID", ""));
}

#[test]
fn bad_game_id_blank() {
    bad("GABS_GAME_ID", &with("GABS_GAME_ID", "  "));
}

#[test]
fn bad_game_id_with_control_characters() {
    bad("GABS_GAME_ID", &with("GABS_GAME_ID", "rim\nworld"));
}

#[cfg(unix)]
mod not_unicode {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn resolve_raw(var: &'static str) -> TransportError {
        let dir = tempfile::tempdir().expect("tempdir");
        let raw = OsString::from_vec(vec![b'8', 0xff, b'0']);
        let base = env(&GOOD);
        let lookup = move |name: &str| {
            if name == var {
                Some(raw.clone())
            } else {
                base(name)
            }
        };
        let err = ModSettings::resolve(explicit_in(&dir), lookup).expect_err("not unicode");
        assert_eq!(err.variable(), Some(var), "{err:?}");
        assert!(err.to_string().contains(var), "{err}");
        err
    }

    #[test]
    fn bad_port_not_unicode() {
        resolve_raw("GABP_SERVER_PORT");
    }

    #[test]
    fn bad_token_not_unicode() {
        resolve_raw("GABP_TOKEN");
    }

    #[test]
    fn bad_game_id_not_unicode() {
        resolve_raw("GABS_GAME_ID");
    }
}

#[test]
fn the_token_never_appears_in_settings_or_their_errors() {
    let secret = "gabs-secret-0123456789abcdef0123456789";
    let s = resolve(&with("GABP_TOKEN", secret)).expect("resolves");
    let shown = format!("{s:?} {} {:?}", s.token, s.token);
    assert!(!shown.contains(secret), "{shown}");

    // A bad port beside a good token: the error shows the port, never the token.
    let mut vars = with("GABP_TOKEN", secret);
    vars[0] = ("GABP_SERVER_PORT", "nope");
    let err = resolve(&vars).expect_err("bad port");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(secret), "{shown}");

    // The token pasted into the port variable: the port error does not quote it.
    let vars = [("GABP_SERVER_PORT", secret), ("GABP_TOKEN", secret)];
    let err = resolve(&vars).expect_err("bad port");
    assert_eq!(err.variable(), Some("GABP_SERVER_PORT"));
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(secret), "{shown}");
}

#[test]
fn a_generated_token_pasted_into_the_port_variable_is_not_quoted_even_in_part() {
    // 64 hex digits, as `Token::generate` makes them: longer than the part of a bad port an error quotes.
    let secret = "3f9c1e7a5b2d4c6e8a0f1b3d5c7e9a2b4d6f8e0c1a3b5d7f9e2c4a6b8d0f1e3a";
    let vars = [("GABP_SERVER_PORT", secret), ("GABP_TOKEN", secret)];
    let err = resolve(&vars).expect_err("bad port");
    assert_eq!(err.variable(), Some("GABP_SERVER_PORT"));
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(&secret[..16]), "{shown}");
}

#[test]
fn from_env_reads_the_real_environment_without_panicking() {
    // Whatever this machine's environment holds, resolution returns a value or an error.
    let dir = tempfile::tempdir().expect("tempdir");
    let _ = ModSettings::from_env(ExplicitSettings {
        bridge_json: Some(PathBuf::from(dir.path()).join("bridge.json")),
        ..ExplicitSettings::default()
    });
}

#[test]
fn a_token_too_short_for_session_hello_is_refused_naming_its_source() {
    let short = "0123456789abcdef"; // 16 characters: no bridge could ever authenticate with it
    let err = ModSettings::resolve(ExplicitSettings::default(), |name| match name {
        "GABP_SERVER_PORT" => Some("4711".into()),
        "GABP_TOKEN" => Some(short.into()),
        _ => None,
    })
    .expect_err("short token accepted");
    let text = err.to_string();
    assert!(text.contains("GABP_TOKEN") && text.contains("32"), "{text}");
    assert!(!text.contains(short), "the token leaked: {text}");
}
