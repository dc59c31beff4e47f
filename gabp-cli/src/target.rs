//! How the client commands (`call`, `tools`, `tail`, `conformance`, `bench`) reach a mod: `--connect ENDPOINT`
//! or `--spawn 'CMD'`, and the token from `--token`, `GABP_TOKEN` or `bridge.json`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use clap::Args;
use gabp_session::bridge::{Bridge, BridgeBuilder};
use gabp_session::Error as SessionError;
use gabp_transport::{BridgeConfig, Endpoint, ModProcess, Token, TransportError, GABP_TOKEN};
use gabp_types::methods::HelloToken;
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Where the mod is and how to authenticate: shared by every client command.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// The mod's endpoint: tcp://127.0.0.1:PORT, tcp://[::1]:PORT, ws://127.0.0.1:PORT, unix:///path.sock or
    /// pipe://NAME (default: the endpoint in bridge.json).
    #[arg(long, value_name = "ENDPOINT", conflicts_with = "spawn")]
    pub connect: Option<String>,
    /// Start the mod with this shell command and talk to it over its stdin/stdout; it gets the token in
    /// GABP_TOKEN (a fresh one unless --token or GABP_TOKEN gives one).
    #[arg(long, value_name = "CMD")]
    pub spawn: Option<String>,
    /// The session token (default: GABP_TOKEN, then bridge.json). Prefer GABP_TOKEN: other users can see
    /// command lines.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The bridge.json to take the endpoint and token from (default: the platform path).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Refuse a bridge.json that group or others can read (without it: a warning).
    #[arg(long)]
    pub strict: bool,
}

/// A resolved target: where the mod is, and the token (its `Debug` never shows the secret).
#[derive(Debug)]
pub struct Target {
    /// How to reach it.
    pub reach: Reach,
    /// The token to present.
    pub token: Token,
    /// What the user should know but that did not stop the command (a bridge.json others can read).
    pub warnings: Vec<String>,
}

/// How to reach the mod.
#[derive(Debug, Clone)]
pub enum Reach {
    /// A listening mod.
    Endpoint(Endpoint),
    /// A shell command that runs a mod on its stdin/stdout.
    Spawn(String),
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reach::Endpoint(endpoint) => write!(f, "{endpoint}"),
            Reach::Spawn(command) => write!(f, "spawn: {command}"),
        }
    }
}

impl TargetArgs {
    /// Resolves the target from the flags, the environment `env` and `bridge.json`.
    ///
    /// # Errors
    ///
    /// One line naming the flag, variable or file that is wrong or missing. Never contains the token.
    pub fn resolve<F>(&self, env: F) -> Result<Target, String>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let mut target = self.resolve_target(env)?;
        let length = target.token.expose_secret().chars().count();
        if length < HelloToken::MIN_LEN {
            target.warnings.push(format!(
                "the token is {length} characters long, shorter than the {} session/hello asks for; it is sent as \
                 the mod was given it (a mod built on gabp-rs refuses it)",
                HelloToken::MIN_LEN
            ));
        }
        Ok(target)
    }

    fn resolve_target<F>(&self, env: F) -> Result<Target, String>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let explicit_token = match (&self.token, env(GABP_TOKEN)) {
            (Some(token), _) => {
                Some(Token::new(token.as_str()).map_err(|e| format!("--token: {e}"))?)
            }
            (None, Some(value)) => {
                let value = value
                    .into_string()
                    .map_err(|_| format!("{GABP_TOKEN} is not valid UTF-8"))?;
                Some(Token::new(value).map_err(|e| format!("{GABP_TOKEN}: {e}"))?)
            }
            (None, None) => None,
        };
        if let Some(command) = &self.spawn {
            if command.trim().is_empty() {
                return Err("--spawn: the command is empty".into());
            }
            // The child is ours: without a token given, it gets a fresh one.
            let token = match explicit_token {
                Some(token) => token,
                None => Token::generate().map_err(|e| e.to_string())?,
            };
            return Ok(Target {
                reach: Reach::Spawn(command.clone()),
                token,
                warnings: Vec::new(),
            });
        }
        let endpoint = self
            .connect
            .as_deref()
            .map(|text| {
                let endpoint = text
                    .parse::<Endpoint>()
                    .map_err(|e| format!("--connect: {e}"))?;
                if endpoint == Endpoint::Stdio {
                    return Err(
                        "--connect: cannot connect to stdio; use --spawn 'CMD' to run a mod over stdio"
                            .to_owned(),
                    );
                }
                Ok(endpoint)
            })
            .transpose()?;
        if let (Some(endpoint), Some(token)) = (&endpoint, &explicit_token) {
            return Ok(Target {
                reach: Reach::Endpoint(endpoint.clone()),
                token: token.clone(),
                warnings: Vec::new(),
            });
        }
        // Something is still open: bridge.json has it.
        let (config, warnings) =
            self.bridge_json(&env, endpoint.is_none(), explicit_token.is_none())?;
        let token = match explicit_token {
            Some(token) => token,
            None => config.token,
        };
        let endpoint = match endpoint {
            Some(endpoint) => endpoint,
            None if config.endpoint == Endpoint::Stdio => return Err(
                "bridge.json names a stdio mod; use --spawn 'CMD' to run it, or --connect ENDPOINT"
                    .into(),
            ),
            None => config.endpoint,
        };
        Ok(Target {
            reach: Reach::Endpoint(endpoint),
            token,
            warnings,
        })
    }

    /// [`TargetArgs::resolve`] with the process environment; each warning goes to stderr as one
    /// `warning: ...` line.
    ///
    /// # Errors
    ///
    /// As [`TargetArgs::resolve`].
    pub fn resolve_from_env(&self) -> Result<Target, String> {
        let target = self.resolve(|name| std::env::var_os(name))?;
        for warning in &target.warnings {
            eprintln!("warning: {warning}");
        }
        Ok(target)
    }

    /// Reads `bridge.json` for the settings still missing; with it, the warnings to show. A file
    /// others can read is a warning, or with `--strict` an error (SPEC/1.0 security.md §5).
    fn bridge_json<F>(
        &self,
        env: &F,
        need_endpoint: bool,
        need_token: bool,
    ) -> Result<(BridgeConfig, Vec<String>), String>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let missing = match (need_endpoint, need_token) {
            (true, true) => "no mod to talk to: pass --connect ENDPOINT and --token TOKEN (or set GABP_TOKEN), or --spawn 'CMD'",
            (true, false) => "no mod to talk to: pass --connect ENDPOINT or --spawn 'CMD'",
            _ => "no token: pass --token TOKEN or set GABP_TOKEN",
        };
        let path = match &self.config {
            Some(path) => path.clone(),
            None => BridgeConfig::default_path_from(env).map_err(|e| format!("{missing} ({e})"))?,
        };
        let (config, exposure) = BridgeConfig::read_checked(&path).map_err(|e| {
            if e.is_not_found() && self.config.is_none() {
                format!(
                    "{missing} (and there is no bridge.json at {})",
                    path.display()
                )
            } else {
                e.to_string()
            }
        })?;
        match exposure {
            None => Ok((config, Vec::new())),
            Some(exposure) if self.strict => Err(TransportError::from(exposure).to_string()),
            Some(exposure) => Ok((config, vec![exposure.to_string()])),
        }
    }
}

/// A connected bridge, and the mod process when it was spawned (it lives as long as this value).
pub struct Session {
    /// The bridge, handshake done.
    pub bridge: Bridge,
    /// The spawned mod, if any.
    pub process: Option<ModProcess>,
}

impl Session {
    /// Says goodbye, closes the connection and, for a spawned mod, gives it a moment to exit by itself.
    pub async fn finish(self) {
        let _ = self.bridge.goodbye(None).await;
        if let Some(mut process) = self.process {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), process.wait()).await;
        }
    }
}

/// The last lines a spawned mod wrote to stderr, to explain why it went away.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<Vec<String>>>);

impl StderrTail {
    const KEEP: usize = 3;

    fn push(&self, line: String) {
        let mut lines = self.0.lock();
        if lines.len() == Self::KEEP {
            lines.remove(0);
        }
        lines.push(line);
    }

    fn last(&self) -> Option<String> {
        self.0.lock().last().cloned()
    }
}

impl Target {
    /// The `sh -c CMD` that runs a `--spawn` command, with the token in `GABP_TOKEN`.
    pub fn spawn_command(command: &str, token: &Token) -> std::process::Command {
        #[cfg(windows)]
        let mut cmd = {
            let mut cmd = std::process::Command::new("cmd");
            cmd.arg("/C").arg(command);
            cmd
        };
        #[cfg(not(windows))]
        let mut cmd = {
            let mut cmd = std::process::Command::new("sh");
            cmd.arg("-c").arg(command);
            cmd
        };
        cmd.env(GABP_TOKEN, token.expose_secret());
        cmd
    }

    /// Connects (or spawns) and performs the handshake with `builder`'s options.
    ///
    /// # Errors
    ///
    /// One line: why the mod could not be reached or refused the handshake.
    pub async fn open<L>(&self, builder: BridgeBuilder<L>) -> Result<Session, String>
    where
        L: tower::Layer<gabp_session::bridge::BridgeService>,
        L::Service: tower::Service<
                gabp_session::bridge::BridgeRequest,
                Response = gabp_session::bridge::BridgeResponse,
                Error = SessionError,
            > + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as tower::Service<gabp_session::bridge::BridgeRequest>>::Future: Send + 'static,
    {
        match &self.reach {
            Reach::Endpoint(endpoint) => {
                let bridge = builder
                    .connect(endpoint)
                    .await
                    .map_err(|e| describe_connect_error(&e, &self.reach, None))?;
                Ok(Session {
                    bridge,
                    process: None,
                })
            }
            Reach::Spawn(command) => {
                let mut cmd = Self::spawn_command(command, &self.token);
                cmd.stderr(Stdio::piped());
                let (connection, mut process) = gabp_transport::spawn(cmd)
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                let tail = StderrTail::default();
                if let Some(stderr) = process.take_stderr() {
                    let tail = tail.clone();
                    tokio::spawn(async move {
                        let mut lines = BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            tail.push(line);
                        }
                    });
                }
                match builder.over(connection).await {
                    Ok(bridge) => Ok(Session {
                        bridge,
                        process: Some(process),
                    }),
                    Err(e) => {
                        // Give the child a moment to exit and its last words to arrive.
                        let _ = tokio::time::timeout(
                            std::time::Duration::from_millis(500),
                            process.wait(),
                        )
                        .await;
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        Err(describe_connect_error(&e, &self.reach, tail.last()))
                    }
                }
            }
        }
    }
}

/// One line for a failed connect or handshake.
fn describe_connect_error(e: &SessionError, reach: &Reach, stderr: Option<String>) -> String {
    let reach = match reach {
        Reach::Endpoint(endpoint) => format!("at {endpoint}"),
        Reach::Spawn(command) => format!("started by `{command}`"),
    };
    let mut line = match e {
        SessionError::Transport(t) => format!("cannot reach the mod: {t}"),
        SessionError::AuthenticationFailed { error } => format!(
            "the mod {reach} refused the token ({}: {})",
            error.code.code(),
            error.message
        ),
        SessionError::Disconnected => {
            format!("the mod {reach} closed the connection during the handshake")
        }
        SessionError::Timeout { after, .. } => {
            format!("the mod {reach} did not answer session/hello within {after:?}")
        }
        other => format!(
            "the handshake with the mod {reach} failed: {}",
            describe_call_error(other)
        ),
    };
    if let Some(stderr) = stderr.filter(|s| !s.trim().is_empty()) {
        line.push_str(&format!(" (its stderr: {})", stderr.trim()));
    }
    line
}

/// One line for an error the mod answered a call with: code, message, and `data` as compact JSON. The mod's
/// message is shown once, without the bridge's own words for the same failure in front of it.
pub fn describe_call_error(e: &SessionError) -> String {
    match e.error_object() {
        Some(error) => {
            let mut line = format!("{} {}", error.code.code(), error.message);
            if let Some(data) = &error.data {
                line.push_str(&format!(" (data: {data})"));
            }
            line
        }
        None => match e {
            SessionError::Disconnected => "the mod closed the connection".into(),
            other => other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;
    use gabp_types::ErrorObject;

    #[test]
    fn a_refused_token_is_said_once() {
        let refused = SessionError::from_remote(
            ErrorObject::new(
                -32101,
                "authentication failed: the token is not the one this mod expects",
            ),
            "session/hello",
            None,
        );
        // As any error is shown with `{e}` (gabp mcp's games among them).
        let shown = refused.to_string();
        assert_eq!(shown.matches("authentication failed").count(), 1, "{shown}");
        let line = describe_call_error(&refused);
        assert_eq!(line.matches("authentication failed").count(), 1, "{line}");
        let reach = Reach::Endpoint(Endpoint::tcp_v4(4000));
        let line = describe_connect_error(&refused, &reach, None);
        assert_eq!(line.matches("authentication failed").count(), 1, "{line}");
    }

    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn args(connect: Option<&str>, spawn: Option<&str>, token: Option<&str>) -> TargetArgs {
        TargetArgs {
            connect: connect.map(str::to_owned),
            spawn: spawn.map(str::to_owned),
            token: token.map(str::to_owned),
            config: None,
            strict: false,
        }
    }

    #[test]
    fn flags_then_environment_then_bridge_json() {
        let home = tempfile::tempdir().unwrap();
        let t = args(Some("tcp://127.0.0.1:4000"), None, Some(TOKEN))
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(matches!(t.reach, Reach::Endpoint(ref e) if *e == Endpoint::tcp_v4(4000)));
        assert!(t.token.verify(TOKEN));

        let other = "f".repeat(64);
        let t = args(Some("tcp://127.0.0.1:4000"), None, None)
            .resolve(env(home.path(), &[(GABP_TOKEN, &other)]))
            .unwrap();
        assert!(t.token.verify(&other));

        let config = home.path().join("gabp").join("bridge.json");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        BridgeConfig::new(Token::new(TOKEN).unwrap(), Endpoint::tcp_v4(4001))
            .write_atomic(&config)
            .unwrap();
        let t = args(None, None, None)
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(matches!(t.reach, Reach::Endpoint(ref e) if *e == Endpoint::tcp_v4(4001)));
        assert!(t.token.verify(TOKEN));
        // The endpoint from the flag, the token from bridge.json.
        let t = args(Some("tcp://127.0.0.1:4002"), None, None)
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(matches!(t.reach, Reach::Endpoint(ref e) if *e == Endpoint::tcp_v4(4002)));
        assert!(t.token.verify(TOKEN));
    }

    #[test]
    fn a_short_token_is_taken_with_a_warning_that_never_shows_it() {
        let home = tempfile::tempdir().unwrap();
        let short = "libgab-t0k3n";
        let t = args(Some("tcp://127.0.0.1:4000"), None, Some(short))
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(t.token.verify(short));
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
        assert!(
            t.warnings[0].contains("12 characters long"),
            "{:?}",
            t.warnings
        );
        assert!(!t.warnings[0].contains(short));
        let t = args(Some("tcp://127.0.0.1:4000"), None, Some(TOKEN))
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    }

    #[test]
    fn spawn_gets_a_fresh_token_unless_given_one() {
        let home = tempfile::tempdir().unwrap();
        let t = args(None, Some("gabp mod --stdio"), None)
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(matches!(t.reach, Reach::Spawn(_)));
        assert_eq!(t.token.expose_secret().len(), 64);
        let t = args(None, Some("gabp mod --stdio"), Some(TOKEN))
            .resolve(env(home.path(), &[]))
            .unwrap();
        assert!(t.token.verify(TOKEN));
        let cmd = Target::spawn_command("gabp mod --stdio", &t.token);
        assert!(cmd
            .get_envs()
            .any(|(k, v)| k == GABP_TOKEN && v.is_some_and(|v| v == TOKEN)));
    }

    #[test]
    fn errors_are_one_line_and_never_show_the_token() {
        let home = tempfile::tempdir().unwrap();
        let e = args(None, None, None)
            .resolve(env(home.path(), &[]))
            .unwrap_err();
        assert!(e.starts_with("no mod to talk to"), "{e}");
        assert!(e.contains("bridge.json"), "{e}");
        let e = args(Some("tcp://127.0.0.1:4000"), None, None)
            .resolve(env(home.path(), &[]))
            .unwrap_err();
        assert!(e.starts_with("no token"), "{e}");
        let e = args(Some("tcp://10.0.0.1:4000"), None, Some(TOKEN))
            .resolve(env(home.path(), &[]))
            .unwrap_err();
        assert!(e.starts_with("--connect") && e.contains("loopback"), "{e}");
        let e = args(Some("stdio"), None, Some(TOKEN))
            .resolve(env(home.path(), &[]))
            .unwrap_err();
        assert!(e.contains("--spawn"), "{e}");
        let e = args(Some("tcp://127.0.0.1:4000"), None, Some(""))
            .resolve(env(home.path(), &[]))
            .unwrap_err();
        assert!(e.starts_with("--token"), "{e}");
        for e in [
            args(None, None, None)
                .resolve(env(home.path(), &[]))
                .unwrap_err(),
            args(Some("bogus"), None, Some(TOKEN))
                .resolve(env(home.path(), &[]))
                .unwrap_err(),
        ] {
            assert_eq!(e.lines().count(), 1, "{e}");
            assert!(!e.contains(TOKEN));
        }
    }
}
