//! `ModSettings::resolve_or_default`: the tier a game uses as is (a free loopback port, a fresh
//! token) after explicit values, the GABS environment and `bridge.json`; and
//! `ModSettings::publish_bridge_json`, which writes `bridge.json` only for a mod that chose its own
//! settings. The process environment is never touched.

use std::ffi::OsString;
use std::path::Path;

use gabp_transport::{
    BridgeConfig, BridgeMetadata, Endpoint, ExplicitSettings, ModSettings, SettingSource, Token,
    TransportError,
};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// An environment whose config home is `home` (so the default bridge.json is in it), plus `vars`.
fn env<'a>(
    home: &'a Path,
    vars: &'a [(&'a str, &'a str)],
) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |name| {
        if name == "XDG_CONFIG_HOME" || name == "HOME" {
            return Some(home.as_os_str().to_owned());
        }
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(*v))
    }
}

fn defaults(home: &Path, vars: &[(&str, &str)]) -> Result<ModSettings, TransportError> {
    ModSettings::resolve_or_default(ExplicitSettings::default(), env(home, vars))
}

fn default_path(home: &Path) -> std::path::PathBuf {
    home.join("gabp").join("bridge.json")
}

/// Writes bridge.json at the default path of `home`, naming `pid` as its writer.
fn write_default(home: &Path, endpoint: Endpoint, pid: Option<u32>) {
    let metadata = BridgeMetadata {
        pid,
        ..BridgeMetadata::default()
    };
    BridgeConfig::new(Token::new(TOKEN).expect("token"), endpoint)
        .with_metadata(metadata)
        .write_atomic(default_path(home))
        .expect("write bridge.json");
}

#[test]
fn nothing_configured_is_a_free_loopback_port_and_a_fresh_token() {
    let home = tempfile::tempdir().expect("tempdir");
    let a = defaults(home.path(), &[]).expect("defaults");
    assert_eq!(a.endpoint, Endpoint::tcp_v4(0));
    assert_eq!(a.endpoint_source, SettingSource::Default);
    assert_eq!(a.token_source, SettingSource::Default);
    assert_eq!(a.token.expose_secret().len(), 64);
    assert_eq!(a.agent_id, None);
    assert_eq!(a.bridge_json_path, Some(default_path(home.path())));
    assert!(a.owns_bridge_json());
    let b = defaults(home.path(), &[]).expect("defaults");
    assert!(
        !b.token.verify(a.token.expose_secret()),
        "a fresh token each time"
    );
    // Without the defaults tier, the same environment is an error.
    let err = ModSettings::resolve(ExplicitSettings::default(), env(home.path(), &[]))
        .expect_err("missing");
    assert!(
        matches!(err, TransportError::MissingSetting { .. }),
        "{err:?}"
    );
}

#[test]
fn the_gabs_environment_wins_and_then_owns_bridge_json() {
    let home = tempfile::tempdir().expect("tempdir");
    let vars = [
        ("GABP_SERVER_PORT", "38917"),
        ("GABP_TOKEN", TOKEN),
        ("GABS_GAME_ID", "rimworld"),
    ];
    let s = defaults(home.path(), &vars).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(38917));
    assert_eq!(
        s.endpoint_source,
        SettingSource::Environment("GABP_SERVER_PORT")
    );
    assert!(s.token.verify(TOKEN));
    assert_eq!(s.agent_id.as_deref(), Some("rimworld"));
    assert!(!s.owns_bridge_json());

    // A port from the launcher and a token of our own: the launcher still owns the file.
    let s = defaults(home.path(), &[("GABP_SERVER_PORT", "38917")]).expect("resolves");
    assert_eq!(s.token_source, SettingSource::Default);
    assert!(!s.owns_bridge_json());
    let s = defaults(home.path(), &[("GABP_TOKEN", TOKEN)]).expect("resolves");
    assert_eq!(s.endpoint_source, SettingSource::Default);
    assert!(!s.owns_bridge_json());
}

#[test]
fn explicit_values_win_and_the_mod_owns_bridge_json() {
    let home = tempfile::tempdir().expect("tempdir");
    let explicit = ExplicitSettings {
        endpoint: Some(Endpoint::tcp_v4(40000)),
        token: Some(Token::new(TOKEN).expect("token")),
        agent_id: Some("mine".into()),
        ..ExplicitSettings::default()
    };
    let s =
        ModSettings::resolve_or_default(explicit, env(home.path(), &[("GABS_GAME_ID", "gabs")]))
            .expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(40000));
    assert_eq!(s.agent_id.as_deref(), Some("mine"));
    assert!(s.owns_bridge_json());
}

#[test]
fn a_bad_variable_is_an_error_not_a_default() {
    let home = tempfile::tempdir().expect("tempdir");
    let err = defaults(home.path(), &[("GABP_SERVER_PORT", "http")]).expect_err("bad port");
    assert_eq!(err.variable(), Some("GABP_SERVER_PORT"));
    let err = defaults(home.path(), &[("GABP_TOKEN", "short")]).expect_err("short token");
    assert!(matches!(err, TransportError::ShortToken { .. }), "{err:?}");
}

#[test]
fn bridge_json_at_the_platform_path_comes_before_the_defaults() {
    let home = tempfile::tempdir().expect("tempdir");
    write_default(
        home.path(),
        Endpoint::tcp_v4(40001),
        Some(std::process::id()),
    );
    let s = defaults(home.path(), &[]).expect("resolves");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(40001));
    assert!(s.token.verify(TOKEN));
    assert_eq!(
        s.token_source,
        SettingSource::BridgeJson(default_path(home.path()))
    );
    assert!(!s.owns_bridge_json());
}

#[cfg(unix)]
#[test]
fn a_bridge_json_left_by_an_exited_process_is_passed_over() {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("run true");
    let gone = child.id();
    child.wait().expect("reaped");
    let home = tempfile::tempdir().expect("tempdir");
    write_default(home.path(), Endpoint::tcp_v4(40002), Some(gone));

    let s = defaults(home.path(), &[]).expect("resolves");
    assert_eq!(
        s.endpoint,
        Endpoint::tcp_v4(0),
        "the stale file is passed over"
    );
    assert!(s.owns_bridge_json(), "and the mod writes its own");
    // Without a pid, or without the defaults tier, the file is used as before.
    let s = ModSettings::resolve(ExplicitSettings::default(), env(home.path(), &[])).expect("read");
    assert_eq!(s.endpoint, Endpoint::tcp_v4(40002));
    write_default(home.path(), Endpoint::tcp_v4(40003), None);
    assert_eq!(
        defaults(home.path(), &[]).expect("read").endpoint,
        Endpoint::tcp_v4(40003)
    );
}

#[test]
fn an_explicit_bridge_json_must_exist() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("mine.json");
    let explicit = ExplicitSettings {
        bridge_json: Some(path.clone()),
        ..ExplicitSettings::default()
    };
    let err =
        ModSettings::resolve_or_default(explicit, env(home.path(), &[])).expect_err("missing");
    assert!(
        matches!(err, TransportError::MissingSetting { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("mine.json"), "{err}");
}

#[test]
fn no_home_still_resolves_but_cannot_publish() {
    let s = ModSettings::resolve_or_default(ExplicitSettings::default(), |_: &str| None)
        .expect("defaults need no home");
    assert_eq!(s.bridge_json_path, None);
    let err = s
        .publish_bridge_json(&Endpoint::tcp_v4(4000))
        .expect_err("nowhere to write");
    assert!(matches!(err, TransportError::NoDefaultPath(_)), "{err:?}");
}

#[test]
fn publish_writes_a_private_file_that_the_guard_removes() {
    let home = tempfile::tempdir().expect("tempdir");
    let s = defaults(home.path(), &[]).expect("defaults");
    let guard = s
        .publish_bridge_json(&Endpoint::tcp_v4(40004))
        .expect("written")
        .expect("the mod owns the file");
    let path = default_path(home.path());
    assert_eq!(guard.path(), path);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (read, exposure) = BridgeConfig::read_checked(&path).expect("readable");
    assert!(exposure.is_none());
    assert_eq!(
        read.endpoint,
        Endpoint::tcp_v4(40004),
        "the listening endpoint"
    );
    assert!(read.token.verify(s.token.expose_secret()));
    assert_eq!(read.metadata.pid, Some(std::process::id()));
    assert!(read.metadata.start_time.is_some());
    assert!(!format!("{guard:?}").contains(s.token.expose_secret()));
    drop(guard);
    assert!(!path.exists(), "removed when the guard is dropped");
}

#[test]
fn publish_leaves_the_launchers_file_and_stdio_alone() {
    let home = tempfile::tempdir().expect("tempdir");
    let s = defaults(home.path(), &[("GABP_SERVER_PORT", "40005")]).expect("resolves");
    assert!(s
        .publish_bridge_json(&Endpoint::tcp_v4(40005))
        .expect("no error")
        .is_none());
    let s = defaults(home.path(), &[]).expect("defaults");
    assert!(s
        .publish_bridge_json(&Endpoint::Stdio)
        .expect("no error")
        .is_none());
    assert!(!default_path(home.path()).exists());
}

#[test]
fn the_guard_removes_only_the_file_it_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bridge.json");
    let config = BridgeConfig::new(Token::new(TOKEN).expect("token"), Endpoint::tcp_v4(40006));
    let guard = config.publish(&path).expect("published");
    // Another process writes its own file there meanwhile: it stays.
    config.write_atomic(&path).expect("replaced");
    assert!(!guard.remove().expect("no error"), "not ours any more");
    assert!(path.exists());

    let guard = config.publish(&path).expect("published");
    assert!(guard.remove().expect("removed"));
    assert!(!path.exists());
    // Already gone: nothing to do.
    let guard = config.publish(&path).expect("published");
    std::fs::remove_file(&path).expect("removed by hand");
    assert!(!guard.remove().expect("no error"));
}
