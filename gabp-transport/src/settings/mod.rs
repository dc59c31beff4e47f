//! A mod's listening settings: explicit values, then the GABS environment, then `bridge.json`, then
//! (with [`ModSettings::resolve_or_default`]) a free loopback port and a fresh token.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::config::{BridgeConfig, BridgeJsonGuard, BridgeMetadata, Exposure};
use crate::endpoint::Endpoint;
use crate::error::TransportError;
use crate::token::Token;

mod env;
pub(crate) mod source;

use self::env::{env_game_id, env_port, env_token};
pub use self::env::{GABP_SERVER_PORT, GABP_TOKEN, GABS_GAME_ID};
pub use self::source::SettingSource;

/// Values given by the mod's own API or command-line flags; each one wins over every other source.
///
/// ```
/// use gabp_transport::{Endpoint, ExplicitSettings};
///
/// let explicit = ExplicitSettings {
///     endpoint: Some(Endpoint::tcp_v4(0)),
///     ..ExplicitSettings::default()
/// };
/// # let _ = explicit;
/// ```
#[derive(Clone, Debug, Default)]
pub struct ExplicitSettings {
    /// Where to listen.
    pub endpoint: Option<Endpoint>,
    /// The token bridges must present.
    pub token: Option<Token>,
    /// The `agentId` to report.
    pub agent_id: Option<String>,
    /// Where to read `bridge.json` instead of the platform default path.
    pub bridge_json: Option<PathBuf>,
}

/// A mod's resolved settings (SPEC/1.0/transport.md §3): where to listen, which token to expect,
/// which `agentId` to report, and where each came from.
///
/// Each setting is taken from the first source that has it: [`ExplicitSettings`], then the GABS
/// environment (`GABP_SERVER_PORT` → `tcp://127.0.0.1:PORT`, `GABP_TOKEN`, `GABS_GAME_ID` →
/// `agentId`), then `bridge.json` (read only when a setting is still missing). A source that has a
/// setting but a bad value is an error naming the variable or field; the resolution never falls
/// through a bad value to a later source. There is no `agentId` in `bridge.json`, so `agent_id`
/// may be `None`.
///
/// [`ModSettings::resolve`] takes the environment as a lookup function so it can be tested without
/// touching the process environment; [`ModSettings::from_env`] uses the real one.
///
/// ```
/// use gabp_transport::{Endpoint, ExplicitSettings, ModSettings};
///
/// let env = |name: &str| match name {
///     "GABP_SERVER_PORT" => Some("38917".into()),
///     "GABP_TOKEN" => Some("0123456789abcdef0123456789abcdef".into()),
///     "GABS_GAME_ID" => Some("rimworld".into()),
///     _ => None,
/// };
/// let settings = ModSettings::resolve(ExplicitSettings::default(), env)?;
/// assert_eq!(settings.endpoint, Endpoint::tcp_v4(38917));
/// assert!(settings.token.verify("0123456789abcdef0123456789abcdef"));
/// assert_eq!(settings.agent_id.as_deref(), Some("rimworld"));
/// # Ok::<(), gabp_transport::TransportError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ModSettings {
    /// Where to listen.
    pub endpoint: Endpoint,
    /// The token bridges must present in `session/hello`.
    pub token: Token,
    /// The `agentId` to report in `session/welcome`, if any source named one.
    pub agent_id: Option<String>,
    /// Where [`ModSettings::endpoint`] came from.
    pub endpoint_source: SettingSource,
    /// Where [`ModSettings::token`] came from.
    pub token_source: SettingSource,
    /// Set when `bridge.json` was read and group or others can read it (SPEC/1.0 security.md §5):
    /// warn, or refuse to serve.
    pub bridge_json_exposure: Option<Exposure>,
    /// The `bridge.json` bridges look at: [`ExplicitSettings::bridge_json`], else the platform's
    /// default path (`None` when the environment names none). Read when a setting was missing;
    /// written by [`ModSettings::publish_bridge_json`].
    pub bridge_json_path: Option<PathBuf>,
}

impl ModSettings {
    /// Resolve with the real process environment.
    ///
    /// # Errors
    ///
    /// As [`ModSettings::resolve`].
    pub fn from_env(explicit: ExplicitSettings) -> Result<Self, TransportError> {
        Self::resolve(explicit, |name| std::env::var_os(name))
    }

    /// Resolve with `env` as the environment (`env("GABP_TOKEN")` is the variable's value, if set).
    ///
    /// The default `bridge.json` path is also found through `env` (see
    /// [`BridgeConfig::default_path_from`]) unless [`ExplicitSettings::bridge_json`] is given.
    ///
    /// # Errors
    ///
    /// - [`TransportError::InvalidVariable`] for a GABS variable that is set to a bad value:
    ///   `GABP_SERVER_PORT` not a number in 1-65535, `GABP_TOKEN` empty, `GABS_GAME_ID` empty, or
    ///   any of them not valid Unicode. The error names the variable and never shows the token.
    /// - A `bridge.json` error (`BridgeJson*`) when `bridge.json` is needed and cannot be read.
    /// - [`TransportError::MissingSetting`] when no source has an endpoint or a token.
    pub fn resolve<F>(explicit: ExplicitSettings, env: F) -> Result<Self, TransportError>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        Self::resolve_tiers(explicit, &env, false)
    }

    /// Resolve as [`ModSettings::resolve`] does, then take what is still missing from the defaults:
    /// listen on `tcp://127.0.0.1:0` (a free loopback port) and expect a fresh
    /// [`Token::generate`]d token (their source is [`SettingSource::Default`]).
    ///
    /// `bridge.json` at the platform path is read only if it exists, and is passed over when its
    /// `metadata.pid` names a process that no longer runs (a mod killed before it could remove its
    /// own file). A `bridge.json` named by [`ExplicitSettings::bridge_json`] must exist.
    ///
    /// ```
    /// use gabp_transport::{Endpoint, ExplicitSettings, ModSettings, SettingSource};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let home = dir.path().as_os_str().to_owned();
    /// // No GABS environment and no bridge.json: a free port and a fresh token.
    /// let env = |name: &str| (name == "HOME" || name == "XDG_CONFIG_HOME").then(|| home.clone());
    /// let settings = ModSettings::resolve_or_default(ExplicitSettings::default(), env)?;
    /// assert_eq!(settings.endpoint, Endpoint::tcp_v4(0));
    /// assert_eq!(settings.token_source, SettingSource::Default);
    /// assert!(settings.owns_bridge_json());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`ModSettings::resolve`], except [`TransportError::MissingSetting`] (only for an explicit
    /// `bridge.json` that does not exist), and [`TransportError::TokenGeneration`] when no token can
    /// be generated.
    pub fn resolve_or_default<F>(explicit: ExplicitSettings, env: F) -> Result<Self, TransportError>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        Self::resolve_tiers(explicit, &env, true)
    }

    /// [`ModSettings::resolve_or_default`] with the real process environment.
    ///
    /// # Errors
    ///
    /// As [`ModSettings::resolve_or_default`].
    pub fn from_env_or_default(explicit: ExplicitSettings) -> Result<Self, TransportError> {
        Self::resolve_or_default(explicit, |name| std::env::var_os(name))
    }

    /// The settings a game uses as is: the GABS environment when a launcher set it, else the
    /// `bridge.json` at the platform path when there is one, else a free loopback TCP port and a
    /// fresh token; the `agentId` is `GABS_GAME_ID` when set, else `agent_id`.
    ///
    /// Bind a [`Listener`](crate::Listener) to [`ModSettings::endpoint`], give the settings to the
    /// server, then call [`ModSettings::publish_bridge_json`] with the listener's endpoint so that
    /// bridges find the game.
    ///
    /// # Errors
    ///
    /// As [`ModSettings::resolve_or_default`].
    pub fn for_game(agent_id: impl Into<String>) -> Result<Self, TransportError> {
        let mut settings = Self::from_env_or_default(ExplicitSettings::default())?;
        settings.agent_id.get_or_insert_with(|| agent_id.into());
        Ok(settings)
    }

    /// Whether this mod chose its endpoint and token itself (explicit values or defaults), and so
    /// tells bridges where it is by writing `bridge.json`. When either came from the GABS
    /// environment or a `bridge.json`, the launcher that set them owns the file: the mod leaves it
    /// alone.
    #[must_use]
    pub fn owns_bridge_json(&self) -> bool {
        !self.endpoint_source.is_launcher() && !self.token_source.is_launcher()
    }

    /// Write `bridge.json` for a mod listening at `listening` (the listener's endpoint, with the
    /// real port of a `tcp://127.0.0.1:0`), with this token and the process's pid and start time,
    /// at [`ModSettings::bridge_json_path`], atomically and with mode 0600 (SPEC/1.0/transport.md
    /// §4.3). Keep the guard while listening: dropping it removes the file.
    ///
    /// Returns `None`, writing nothing, when the launcher owns the file
    /// ([`ModSettings::owns_bridge_json`] is false) or when `listening` is `stdio`.
    ///
    /// # Errors
    ///
    /// [`TransportError::NoDefaultPath`] when there is no path to write to; otherwise as
    /// [`BridgeConfig::write_atomic`].
    pub fn publish_bridge_json(
        &self,
        listening: &Endpoint,
    ) -> Result<Option<BridgeJsonGuard>, TransportError> {
        if !self.owns_bridge_json() || *listening == Endpoint::Stdio {
            return Ok(None);
        }
        let path = match &self.bridge_json_path {
            Some(path) => path.clone(),
            // The platform's own reason (which variable is missing).
            None => BridgeConfig::default_path_from(|_| None)?,
        };
        BridgeConfig::new(self.token.clone(), listening.clone())
            .with_metadata(BridgeMetadata::current_process(None))
            .publish(path)
            .map(Some)
    }

    fn resolve_tiers<F>(
        explicit: ExplicitSettings,
        env: &F,
        defaults: bool,
    ) -> Result<Self, TransportError>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let ExplicitSettings {
            endpoint,
            token,
            agent_id,
            bridge_json,
        } = explicit;

        let mut endpoint = endpoint.map(|e| (e, SettingSource::Explicit));
        if endpoint.is_none() {
            if let Some(port) = env_port(env)? {
                endpoint = Some((
                    Endpoint::tcp_v4(port),
                    SettingSource::Environment(GABP_SERVER_PORT),
                ));
            }
        }

        let mut token = token.map(|t| (t, SettingSource::Explicit));
        if token.is_none() {
            if let Some(t) = env_token(env)? {
                token = Some((t, SettingSource::Environment(GABP_TOKEN)));
            }
        }

        let agent_id = match agent_id {
            Some(id) => Some(id),
            None => env_game_id(env)?,
        };

        let explicit_path = bridge_json.is_some();
        let path = bridge_json.or_else(|| BridgeConfig::default_path_from(env).ok());
        let mut found = Found {
            endpoint,
            token,
            bridge_json_exposure: None,
        };
        let mut why_not = None;
        if found.endpoint.is_none() || found.token.is_none() {
            // Something is still missing: bridge.json is the last source before the defaults.
            why_not = found.read_bridge_json(path.as_deref(), explicit_path, defaults, env)?;
        }
        if defaults {
            found
                .endpoint
                .get_or_insert((Endpoint::tcp_v4(0), SettingSource::Default));
            if found.token.is_none() {
                found.token = Some((Token::generate()?, SettingSource::Default));
            }
        }
        let missing = found.missing();
        let (Some((endpoint, endpoint_source)), Some((token, token_source))) =
            (found.endpoint.take(), found.token.take())
        else {
            return Err(TransportError::MissingSetting {
                setting: missing,
                bridge_json: why_not.unwrap_or_else(|| "it does not say".into()),
            });
        };
        check_token_length(&token, &token_source)?;
        Ok(ModSettings {
            endpoint,
            token,
            agent_id,
            endpoint_source,
            token_source,
            bridge_json_exposure: found.bridge_json_exposure,
            bridge_json_path: path,
        })
    }
}

/// Settings found so far.
struct Found {
    endpoint: Option<(Endpoint, SettingSource)>,
    token: Option<(Token, SettingSource)>,
    bridge_json_exposure: Option<Exposure>,
}

impl Found {
    /// What is missing, for [`TransportError::MissingSetting`].
    fn missing(&self) -> &'static str {
        match (&self.endpoint, &self.token) {
            (None, None) => "endpoint and token",
            (None, Some(_)) => "endpoint",
            _ => "token",
        }
    }

    /// Fills what is missing from the `bridge.json` at `path`; says why it could not, if so.
    /// With `defaults`, a file that is not there is no error (unless its path was explicit), and
    /// one left behind by a process that has exited is passed over.
    fn read_bridge_json<F>(
        &mut self,
        path: Option<&std::path::Path>,
        explicit_path: bool,
        defaults: bool,
        env: &F,
    ) -> Result<Option<String>, TransportError>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let Some(path) = path else {
            let reason = BridgeConfig::default_path_from(env)
                .err()
                .map_or_else(|| "no bridge.json path".to_owned(), |e| e.to_string());
            return Ok(Some(reason));
        };
        let (config, exposure) = match BridgeConfig::read_checked(path) {
            Ok(read) => read,
            // A file named explicitly must be there, defaults or not.
            Err(e) if e.is_not_found() && explicit_path => {
                return Err(TransportError::MissingSetting {
                    setting: self.missing(),
                    bridge_json: format!("no bridge.json at {}", path.display()),
                })
            }
            Err(e) if e.is_not_found() && !defaults => {
                return Ok(Some(format!("no bridge.json at {}", path.display())))
            }
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        if defaults && !explicit_path && left_behind(&config.metadata) {
            tracing::info!(
                path = %path.display(),
                pid = config.metadata.pid,
                "passing over bridge.json: the process that wrote it has exited"
            );
            return Ok(None);
        }
        let source = SettingSource::BridgeJson(path.to_owned());
        self.endpoint
            .get_or_insert_with(|| (config.endpoint, source.clone()));
        self.token.get_or_insert((config.token, source));
        self.bridge_json_exposure = exposure;
        Ok(None)
    }
}

/// Whether the file names, as its writer, a process that no longer runs (never this process).
fn left_behind(metadata: &BridgeMetadata) -> bool {
    let Some(pid) = metadata.pid.filter(|&pid| pid != std::process::id()) else {
        return false;
    };
    #[cfg(unix)]
    {
        let pid = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        pid.is_some_and(|pid| {
            matches!(
                rustix::process::test_kill_process(pid),
                Err(rustix::io::Errno::SRCH)
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// The shortest token a mod accepts: the `session/hello` schema requires at least 32 characters.
pub const MIN_TOKEN_CHARS: usize = 32;

fn check_token_length(token: &Token, source: &SettingSource) -> Result<(), TransportError> {
    let len = token.expose_secret().chars().count();
    if len < MIN_TOKEN_CHARS {
        return Err(TransportError::ShortToken {
            from: source.clone(),
            len,
            min: MIN_TOKEN_CHARS,
        });
    }
    Ok(())
}
