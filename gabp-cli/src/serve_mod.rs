//! `gabp mod`: serves the demo game (see [`gabp_demo`]) on TCP loopback, a Unix socket or stdio.
//!
//! Settings, first source wins ([`ModSettings::resolve_or_default`]): the flags, the GABS environment
//! (`GABP_SERVER_PORT`, `GABP_TOKEN`, `GABS_GAME_ID`), `bridge.json` (`--config`, else the platform path), then
//! defaults: a free loopback TCP port and a fresh token. On a socket, a mod that chose its own endpoint and token
//! writes them to `bridge.json` for bridges (SPEC/1.0/transport.md §4.3) and removes it on exit; the first stdout
//! line is `listening on ENDPOINT`. On stdio, stdout carries frames only. SIGINT and SIGTERM shut down gracefully
//! (a second one stops at once).

use std::ffi::OsString;
use std::future::Future as _;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use clap::Args;
use gabp_session::server::ModServer;
use gabp_transport::{
    BridgeJsonGuard, Connection, Endpoint, ExplicitSettings, Listener, ModSettings, SettingSource,
    Token, TransportError,
};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::oneshot;

use gabp_demo::{DemoGame, AGENT_ID};

/// Long help of `gabp mod`.
pub const EXAMPLES: &str = "\
Settings, first source wins: the flags; the GABS environment (GABP_SERVER_PORT, GABP_TOKEN, GABS_GAME_ID);
bridge.json (--config, else the platform path; one left by a process that has exited is passed over);
defaults (a free port on 127.0.0.1, a fresh token). Logs go to stderr; RUST_LOG sets the level (default info).

bridge.json: when the mod chose its endpoint and token itself (flags or defaults) and listens on a socket, it
writes them to bridge.json (--config, else the platform path; mode 0600, atomically) before the `listening on`
line, so that `gabp call`, `tools` and `tail` need no flags, and removes the file on exit. When the endpoint or
the token came from the GABS environment or from a bridge.json, the launcher owns the file and the mod leaves it
alone. --no-bridge-json writes nothing. A fresh token is printed to stderr only when no bridge.json holds it.

Examples:
  # Terminal 1: the demo game on a free loopback port, announced in bridge.json
  gabp mod
  # Terminal 2: no flags needed
  gabp call demo/echo '{\"value\":1}'

  # A fresh Unix socket (0600, unpredictable path), removed on exit; the token comes from the environment
  GABP_TOKEN=0123456789abcdef0123456789abcdef gabp mod --listen unix

  # One bridge on stdin/stdout; exits when stdin closes
  gabp mod --stdio --token 0123456789abcdef0123456789abcdef";

/// Arguments of `gabp mod`.
#[derive(Debug, Clone, Args)]
pub struct ModArgs {
    /// Where to listen: tcp://127.0.0.1:PORT (0 picks a free port), tcp://[::1]:PORT,
    /// ws://127.0.0.1:PORT (WebSocket), unix:///path.sock, `unix` (a fresh socket in $XDG_RUNTIME_DIR or the temp directory) or stdio.
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: Option<String>,
    /// Serve one bridge on stdin/stdout (only frames on stdout); exits when stdin closes.
    #[arg(long, conflicts_with = "listen")]
    pub stdio: bool,
    /// The token bridges must present in session/hello (at least 32 characters). Prefer GABP_TOKEN:
    /// other users can see command lines.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The bridge.json to take the endpoint and token from, or to write them to when the mod chose them
    /// itself (default: the platform path).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Refuse a bridge.json that group or others can read (without it: a warning).
    #[arg(long)]
    pub strict: bool,
    /// Do not write bridge.json, even when the mod chose its endpoint and token itself.
    #[arg(long)]
    pub no_bridge_json: bool,
}

/// What `gabp mod` serves with.
#[derive(Debug)]
pub struct Resolved {
    /// Where to listen, the token, and where they came from.
    pub settings: ModSettings,
    /// The `agentId`.
    pub agent_id: String,
    /// Whether the token was generated for this run (and so must reach bridges: through bridge.json, or shown).
    pub generated_token: bool,
    /// Whether to write bridge.json when the mod owns it (no `--no-bridge-json`).
    pub publish: bool,
    /// What the user should know but that did not stop the mod (a bridge.json others can read).
    pub warnings: Vec<String>,
}

/// Resolves the settings of `gabp mod` from `args` and the environment `env`.
///
/// # Errors
///
/// One line saying which flag, variable or file is wrong. Never contains a token.
pub fn resolve<F>(args: &ModArgs, env: F) -> Result<Resolved, String>
where
    F: Fn(&str) -> Option<OsString>,
{
    let endpoint = if args.stdio {
        Some(Endpoint::Stdio)
    } else {
        args.listen
            .as_deref()
            .map(|listen| parse_listen(listen, &env))
            .transpose()?
    };
    let token = args
        .token
        .as_deref()
        .map(|t| Token::new(t).map_err(|e| format!("--token: {e}")))
        .transpose()?;
    let explicit = ExplicitSettings {
        endpoint,
        token,
        agent_id: None,
        bridge_json: args.config.clone(),
    };
    let settings = ModSettings::resolve_or_default(explicit, &env).map_err(|e| e.to_string())?;
    // SPEC/1.0 security.md §5: a bridge.json others can read is a warning, or with --strict an error.
    let warnings = match settings.bridge_json_exposure.clone() {
        None => Vec::new(),
        Some(exposure) if args.strict => return Err(TransportError::from(exposure).to_string()),
        Some(exposure) => vec![exposure.to_string()],
    };
    Ok(Resolved {
        agent_id: settings
            .agent_id
            .clone()
            .unwrap_or_else(|| AGENT_ID.to_owned()),
        generated_token: settings.token_source == SettingSource::Default,
        publish: !args.no_bridge_json,
        warnings,
        settings,
    })
}

/// `--listen`: an endpoint, or `unix` for a fresh socket at an unpredictable path.
fn parse_listen<F>(listen: &str, env: &F) -> Result<Endpoint, String>
where
    F: Fn(&str) -> Option<OsString>,
{
    if listen == "unix" {
        let dir = env("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_absolute())
            .unwrap_or_else(std::env::temp_dir);
        return Endpoint::unix_unique_in(&dir).map_err(|e| format!("--listen unix: {e}"));
    }
    listen
        .parse::<Endpoint>()
        .map_err(|e| format!("--listen: {e}"))
}

/// Runs `gabp mod`; returns the exit code (0 after a clean shutdown, 1 on an error).
pub fn run(args: &ModArgs) -> u8 {
    crate::init_tracing("info");
    let resolved = match resolve(args, |name| std::env::var_os(name)) {
        Ok(resolved) => resolved,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    for warning in &resolved.warnings {
        eprintln!("warning: {warning}");
    }
    match crate::block_on(serve(resolved)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

async fn serve(resolved: Resolved) -> Result<(), String> {
    // Before anything can be connected to: a signal from now on shuts down instead of killing.
    let mut signals = crate::signals::Signals::new()?;
    let game = DemoGame::new();
    let server = game
        .builder()
        .token(resolved.settings.token.clone())
        .agent_id(resolved.agent_id.clone())
        .build()
        .map_err(|e| format!("cannot build the demo mod: {e}"))?;
    // Lives until serving is over: graceful shutdown may still run calls queued for the game thread.
    let _game_loop = game
        .run_loop(server.main_thread())
        .map_err(|e| e.to_string())?;
    if resolved.settings.endpoint == Endpoint::Stdio {
        show_generated_token(&resolved, None);
        serve_stdio(&server, &mut signals).await
    } else {
        serve_socket(server, &resolved, &mut signals).await
    }
}

/// A generated token must reach bridges: through bridge.json, or else it is shown on stderr.
fn show_generated_token(resolved: &Resolved, bridge_json: Option<&BridgeJsonGuard>) {
    match bridge_json {
        Some(guard) => eprintln!(
            "wrote {} for bridges (endpoint and token; removed on exit)",
            guard.path().display()
        ),
        None if resolved.generated_token => eprintln!(
            "generated token: {} (no --token, GABP_TOKEN or bridge.json; bridges present it in session/hello)",
            resolved.settings.token.expose_secret()
        ),
        None => {}
    }
}

/// Writes bridge.json for the endpoint being served, when this mod owns the file (see [`EXAMPLES`]).
async fn publish(resolved: &Resolved, listening: &Endpoint) -> Option<BridgeJsonGuard> {
    if !resolved.publish {
        return None;
    }
    let settings = resolved.settings.clone();
    let listening = listening.clone();
    // Blocking file-system work (fsync).
    let written =
        tokio::task::spawn_blocking(move || settings.publish_bridge_json(&listening)).await;
    match written {
        Ok(Ok(guard)) => guard,
        Ok(Err(e)) => {
            eprintln!("warning: bridges will need --connect and --token: {e}");
            None
        }
        Err(e) => {
            eprintln!("warning: cannot write bridge.json: {e}");
            None
        }
    }
}

async fn serve_socket(
    server: ModServer,
    resolved: &Resolved,
    signals: &mut crate::signals::Signals,
) -> Result<(), String> {
    let endpoint = &resolved.settings.endpoint;
    let listener = Listener::bind(endpoint).await.map_err(|e| {
        let from = &resolved.settings.endpoint_source;
        format!("cannot listen on {endpoint} (from {from}): {e}")
    })?;
    let handle = server.serve(listener);
    // Before the listening line: whoever waits for it finds bridge.json in place. Removed when dropped.
    let bridge_json = publish(resolved, handle.endpoint()).await;
    show_generated_token(resolved, bridge_json.as_ref());
    let line = format!("listening on {}", handle.endpoint());
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
        tracing::warn!(error = %e, "cannot write the listening line to stdout");
    }
    drop(stdout);
    tracing::info!(endpoint = %handle.endpoint(), "serving the demo game");

    let signal = signals.recv().await;
    tracing::info!(
        signal,
        "shutting down: answering requests in flight, then closing"
    );
    tokio::select! {
        () = handle.shutdown() => tracing::info!("shut down"),
        second = signals.recv() => {
            tracing::warn!(signal = second, "second signal: stopping without waiting for requests in flight");
        }
    }
    drop(bridge_json);
    Ok(())
}

async fn serve_stdio(
    server: &ModServer,
    signals: &mut crate::signals::Signals,
) -> Result<(), String> {
    let (stop, stopped) = oneshot::channel();
    let stdin = StdinUntil {
        stdin: tokio::io::stdin(),
        stop: stopped,
        stopped: false,
    };
    let connection =
        Connection::new(tokio::io::join(stdin, tokio::io::stdout())).with_peer("stdio");
    let serving = server.serve_connection(connection);
    tokio::pin!(serving);
    tracing::info!("serving the demo game on stdio");
    let reason = tokio::select! {
        reason = &mut serving => reason,
        signal = signals.recv() => {
            tracing::info!(signal, "shutting down: answering requests in flight, then closing");
            // The connection reads end of input: it answers what is in flight and closes.
            let _ = stop.send(());
            tokio::select! {
                reason = &mut serving => reason,
                second = signals.recv() => {
                    tracing::warn!(signal = second, "second signal: stopping without waiting for requests in flight");
                    return Ok(());
                }
            }
        }
    };
    tracing::info!(%reason, "the bridge connection closed");
    Ok(())
}

/// Standard input that reads as ended once `stop` fires (so a signal closes a stdio session gracefully).
struct StdinUntil {
    stdin: tokio::io::Stdin,
    stop: oneshot::Receiver<()>,
    stopped: bool,
}

impl AsyncRead for StdinUntil {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.stopped && Pin::new(&mut this.stop).poll(cx).is_ready() {
            this.stopped = true;
        }
        if this.stopped {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stdin).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;
    use std::path::Path;

    use gabp_transport::BridgeConfig;

    const TOKEN_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const TOKEN_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn args(listen: Option<&str>, token: Option<&str>, config: Option<&Path>) -> ModArgs {
        ModArgs {
            listen: listen.map(str::to_owned),
            stdio: false,
            token: token.map(str::to_owned),
            config: config.map(Path::to_path_buf),
            strict: false,
            no_bridge_json: false,
        }
    }

    #[test]
    fn defaults_when_nothing_is_configured() {
        let home = tempfile::tempdir().unwrap();
        let r = resolve(&args(None, None, None), env(home.path(), &[])).unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(0));
        assert!(r.generated_token);
        assert_eq!(r.settings.token.expose_secret().len(), 64);
        assert_eq!(r.agent_id, AGENT_ID);
    }

    #[test]
    fn flags_beat_environment_beats_config() {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("gabp").join("bridge.json");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        BridgeConfig::new(Token::new(TOKEN_B).unwrap(), Endpoint::tcp_v4(40001))
            .write_atomic(&config)
            .unwrap();

        // bridge.json at the default path.
        let r = resolve(&args(None, None, None), env(home.path(), &[])).unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(40001));
        assert!(r.settings.token.verify(TOKEN_B));
        assert!(!r.generated_token);

        // The GABS environment wins over it.
        let vars = [
            ("GABP_SERVER_PORT", "40002"),
            ("GABP_TOKEN", TOKEN_A),
            ("GABS_GAME_ID", "minecraft"),
        ];
        let r = resolve(&args(None, None, None), env(home.path(), &vars)).unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(40002));
        assert!(r.settings.token.verify(TOKEN_A));
        assert_eq!(r.agent_id, "minecraft");

        // Flags win over both.
        let r = resolve(
            &args(Some("tcp://127.0.0.1:40003"), Some(TOKEN_B), None),
            env(home.path(), &vars),
        )
        .unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(40003));
        assert!(r.settings.token.verify(TOKEN_B));

        // Only a token in the environment: the endpoint still comes from bridge.json.
        let r = resolve(
            &args(None, None, None),
            env(home.path(), &[("GABP_TOKEN", TOKEN_A)]),
        )
        .unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(40001));
        assert!(r.settings.token.verify(TOKEN_A));
    }

    #[test]
    fn the_mod_writes_bridge_json_only_for_settings_of_its_own() {
        let home = tempfile::tempdir().unwrap();
        let owns = |a: &ModArgs, vars: &[(&str, &str)]| {
            let r = resolve(a, env(home.path(), vars)).unwrap();
            r.publish && r.settings.owns_bridge_json()
        };
        assert!(owns(&args(None, None, None), &[]), "defaults");
        assert!(owns(&args(Some("unix"), Some(TOKEN_A), None), &[]), "flags");
        assert!(!owns(
            &args(None, None, None),
            &[("GABP_SERVER_PORT", "40005")]
        ));
        assert!(!owns(&args(None, None, None), &[("GABP_TOKEN", TOKEN_A)]));
        let mut quiet = args(None, None, None);
        quiet.no_bridge_json = true;
        assert!(!owns(&quiet, &[]), "--no-bridge-json");
        // Settings from a bridge.json: the launcher that wrote it owns it.
        let config = home.path().join("gabp").join("bridge.json");
        BridgeConfig::new(Token::new(TOKEN_B).unwrap(), Endpoint::tcp_v4(40006))
            .write_atomic(&config)
            .unwrap();
        assert!(!owns(&args(None, None, None), &[]));
    }

    #[test]
    fn partial_settings_take_defaults_for_the_rest() {
        let home = tempfile::tempdir().unwrap();
        let r = resolve(
            &args(None, None, None),
            env(home.path(), &[("GABP_SERVER_PORT", "40004")]),
        )
        .unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(40004));
        assert!(r.generated_token);
        let r = resolve(&args(None, Some(TOKEN_A), None), env(home.path(), &[])).unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::tcp_v4(0));
        assert!(!r.generated_token);
    }

    #[test]
    fn explicit_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mine.json");
        let socket = dir.path().join("game.sock");
        BridgeConfig::new(
            Token::new(TOKEN_A).unwrap(),
            Endpoint::unix(&socket).unwrap(),
        )
        .write_atomic(&config)
        .unwrap();
        let r = resolve(&args(None, None, Some(&config)), env(dir.path(), &[])).unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::unix(&socket).unwrap());
        assert!(r.settings.token.verify(TOKEN_A));

        let missing = dir.path().join("missing.json");
        let e = resolve(&args(None, None, Some(&missing)), env(dir.path(), &[])).unwrap_err();
        assert!(e.contains("missing.json"), "{e}");
    }

    #[test]
    fn bad_values_are_one_line_errors_without_the_token() {
        let home = tempfile::tempdir().unwrap();
        let e = resolve(
            &args(Some("tcp://0.0.0.0:1"), Some(TOKEN_A), None),
            env(home.path(), &[]),
        )
        .unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        let e = resolve(
            &args(None, Some("short-token"), None),
            env(home.path(), &[]),
        )
        .unwrap_err();
        assert!(e.contains("32"), "{e}");
        assert!(!e.contains("short-token"), "{e}");
        let e = resolve(&args(None, Some(""), None), env(home.path(), &[])).unwrap_err();
        assert!(e.starts_with("--token"), "{e}");
        let e = resolve(
            &args(None, None, None),
            env(home.path(), &[("GABP_SERVER_PORT", "http")]),
        )
        .unwrap_err();
        assert!(e.contains("GABP_SERVER_PORT"), "{e}");
        for e in [
            resolve(&args(Some("bogus"), None, None), env(home.path(), &[])).unwrap_err(),
            resolve(
                &args(Some("unix://relative.sock"), None, None),
                env(home.path(), &[]),
            )
            .unwrap_err(),
        ] {
            assert!(e.starts_with("--listen"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn listen_unix_picks_a_fresh_path_in_the_runtime_dir() {
        let home = tempfile::tempdir().unwrap();
        let runtime = home.path().to_str().unwrap();
        let vars = [("XDG_RUNTIME_DIR", runtime)];
        let a = resolve(
            &args(Some("unix"), Some(TOKEN_A), None),
            env(home.path(), &vars),
        )
        .unwrap();
        let b = resolve(
            &args(Some("unix"), Some(TOKEN_A), None),
            env(home.path(), &vars),
        )
        .unwrap();
        let Endpoint::Unix(path) = &a.settings.endpoint else {
            panic!("{:?}", a.settings.endpoint)
        };
        assert!(path.starts_with(home.path()));
        assert_ne!(a.settings.endpoint, b.settings.endpoint);
    }

    #[test]
    fn stdio_flag() {
        let home = tempfile::tempdir().unwrap();
        let mut a = args(None, Some(TOKEN_A), None);
        a.stdio = true;
        assert_eq!(
            resolve(&a, env(home.path(), &[]))
                .unwrap()
                .settings
                .endpoint,
            Endpoint::Stdio
        );
        let r = resolve(
            &args(Some("stdio"), Some(TOKEN_A), None),
            env(home.path(), &[]),
        )
        .unwrap();
        assert_eq!(r.settings.endpoint, Endpoint::Stdio);
    }
}
