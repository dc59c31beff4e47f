//! A mod's listening settings: explicit values, then the GABS environment, then `bridge.json`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use gabp_types::shorten;

use crate::config::{BridgeConfig, ConfigError, Exposure};
use crate::endpoint::Endpoint;
use crate::token::Token;

/// The variable GABS sets to the TCP port the mod must listen on (on `127.0.0.1`).
pub const GABP_SERVER_PORT: &str = "GABP_SERVER_PORT";
/// The variable GABS sets to the session token.
pub const GABP_TOKEN: &str = "GABP_TOKEN";
/// The variable GABS sets to the game's id; a mod reports it as `agentId`.
pub const GABS_GAME_ID: &str = "GABS_GAME_ID";

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

/// Where a resolved setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingSource {
    /// [`ExplicitSettings`].
    Explicit,
    /// The named GABS environment variable.
    Environment(&'static str),
    /// The `bridge.json` at this path.
    BridgeJson(PathBuf),
}

impl fmt::Display for SettingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingSource::Explicit => f.write_str("explicit setting"),
            SettingSource::Environment(var) => write!(f, "environment variable {var}"),
            SettingSource::BridgeJson(path) => write!(f, "{}", path.display()),
        }
    }
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
/// # Ok::<(), gabp_transport::SettingsError>(())
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
}

impl ModSettings {
    /// Resolve with the real process environment.
    ///
    /// # Errors
    ///
    /// As [`ModSettings::resolve`].
    pub fn from_env(explicit: ExplicitSettings) -> Result<Self, SettingsError> {
        Self::resolve(explicit, |name| std::env::var_os(name))
    }

    /// Resolve with `env` as the environment (`env("GABP_TOKEN")` is the variable's value, if set).
    ///
    /// The default `bridge.json` path is also found through `env` (see
    /// [`BridgeConfig::default_path_from`]) unless [`ExplicitSettings::bridge_json`] is given.
    ///
    /// # Errors
    ///
    /// - [`SettingsError::InvalidVariable`] for a GABS variable that is set to a bad value:
    ///   `GABP_SERVER_PORT` not a number in 1-65535, `GABP_TOKEN` empty, `GABS_GAME_ID` empty, or
    ///   any of them not valid Unicode. The error names the variable and never shows the token.
    /// - [`SettingsError::BridgeConfig`] when `bridge.json` is needed and cannot be read.
    /// - [`SettingsError::Missing`] when no source has an endpoint or a token.
    pub fn resolve<F>(explicit: ExplicitSettings, env: F) -> Result<Self, SettingsError>
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
            if let Some(port) = env_port(&env)? {
                endpoint = Some((
                    Endpoint::tcp_v4(port),
                    SettingSource::Environment(GABP_SERVER_PORT),
                ));
            }
        }

        let mut token = token.map(|t| (t, SettingSource::Explicit));
        if token.is_none() {
            if let Some(t) = env_token(&env)? {
                token = Some((t, SettingSource::Environment(GABP_TOKEN)));
            }
        }

        let agent_id = match agent_id {
            Some(id) => Some(id),
            None => env_game_id(&env)?,
        };

        if let (Some((endpoint, endpoint_source)), Some((token, token_source))) =
            (endpoint.clone(), token.clone())
        {
            check_token_length(&token, &token_source)?;
            return Ok(ModSettings {
                endpoint,
                token,
                agent_id,
                endpoint_source,
                token_source,
                bridge_json_exposure: None,
            });
        }

        // Something is still missing: bridge.json is the last source.
        let missing = match (&endpoint, &token) {
            (None, None) => "endpoint and token",
            (None, Some(_)) => "endpoint",
            _ => "token",
        };
        let path = match bridge_json {
            Some(path) => path,
            None => BridgeConfig::default_path_from(&env).map_err(|e| SettingsError::Missing {
                setting: missing,
                bridge_json: e.to_string(),
            })?,
        };
        let (config, bridge_json_exposure) = match BridgeConfig::read_checked(&path) {
            Ok(read) => read,
            Err(e) if e.is_not_found() => {
                return Err(SettingsError::Missing {
                    setting: missing,
                    bridge_json: format!("no bridge.json at {}", path.display()),
                })
            }
            Err(e) => return Err(SettingsError::BridgeConfig(e)),
        };
        let source = SettingSource::BridgeJson(path);
        let (endpoint, endpoint_source) =
            endpoint.unwrap_or_else(|| (config.endpoint, source.clone()));
        let (token, token_source) = token.unwrap_or((config.token, source));
        check_token_length(&token, &token_source)?;
        Ok(ModSettings {
            endpoint,
            token,
            agent_id,
            endpoint_source,
            token_source,
            bridge_json_exposure,
        })
    }
}

/// Why a mod's settings could not be resolved. No variant ever contains a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A GABS environment variable is set to a bad value.
    #[error("environment variable {var} {problem}")]
    InvalidVariable {
        /// The variable's name, e.g. `GABP_SERVER_PORT`.
        var: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// No source has this setting.
    #[error(
        "no {setting} for the mod: pass it explicitly, set the GABS environment \
         (GABP_SERVER_PORT, GABP_TOKEN), or write bridge.json ({bridge_json})"
    )]
    Missing {
        /// Which setting: `endpoint`, `token`, or `endpoint and token`.
        setting: &'static str,
        /// Why `bridge.json` did not have it.
        bridge_json: String,
    },
    /// `bridge.json` was needed and could not be used.
    #[error(transparent)]
    BridgeConfig(#[from] ConfigError),
    /// The token is shorter than `session/hello` allows, so no bridge could ever authenticate.
    #[error(
        "the token from {from} has {len} characters; a session/hello token needs at least {min}"
    )]
    ShortToken {
        /// Where the token came from.
        from: SettingSource,
        /// Its length in characters.
        len: usize,
        /// The minimum ([`MIN_TOKEN_CHARS`]).
        min: usize,
    },
}

/// The shortest token a mod accepts: the `session/hello` schema requires at least 32 characters.
pub const MIN_TOKEN_CHARS: usize = 32;

fn check_token_length(token: &Token, source: &SettingSource) -> Result<(), SettingsError> {
    let len = token.expose_secret().chars().count();
    if len < MIN_TOKEN_CHARS {
        return Err(SettingsError::ShortToken {
            from: source.clone(),
            len,
            min: MIN_TOKEN_CHARS,
        });
    }
    Ok(())
}

impl SettingsError {
    /// For [`SettingsError::InvalidVariable`], the variable's name.
    #[must_use]
    pub fn variable(&self) -> Option<&'static str> {
        match self {
            SettingsError::InvalidVariable { var, .. } => Some(var),
            _ => None,
        }
    }
}

fn invalid(var: &'static str, problem: impl Into<String>) -> SettingsError {
    SettingsError::InvalidVariable {
        var,
        problem: problem.into(),
    }
}

/// A variable's value as UTF-8, if set.
fn env_str<F>(env: &F, var: &'static str) -> Result<Option<String>, SettingsError>
where
    F: Fn(&str) -> Option<OsString>,
{
    match env(var) {
        None => Ok(None),
        Some(value) => value
            .into_string()
            .map(Some)
            .map_err(|_| invalid(var, "is not valid Unicode")),
    }
}

fn env_port<F>(env: &F) -> Result<Option<u16>, SettingsError>
where
    F: Fn(&str) -> Option<OsString>,
{
    let Some(raw) = env_str(env, GABP_SERVER_PORT)? else {
        return Ok(None);
    };
    let value = raw.trim();
    // Quote the bad value, unless it holds the token (pasted into the wrong variable). The whole
    // value is searched, not the quoted part: a cut token would otherwise show its first characters.
    let holds_token = env(GABP_TOKEN)
        .and_then(|t| t.into_string().ok())
        .is_some_and(|secret| secret.trim().len() >= 4 && value.contains(secret.trim()));
    let shown = if holds_token {
        "<redacted>".into()
    } else {
        shorten(value, 40)
    };
    let bad = || {
        invalid(
            GABP_SERVER_PORT,
            format!("is {shown:?}, not a TCP port in 1-65535"),
        )
    };
    if value.is_empty() {
        return Err(invalid(
            GABP_SERVER_PORT,
            "is empty, not a TCP port in 1-65535",
        ));
    }
    if value.len() > 5 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match value.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(port) => Ok(Some(port)),
    }
}

fn env_token<F>(env: &F) -> Result<Option<Token>, SettingsError>
where
    F: Fn(&str) -> Option<OsString>,
{
    // Never echo the value: it is the secret, even when malformed.
    match env_str(env, GABP_TOKEN)? {
        None => Ok(None),
        Some(value) => Token::new(value)
            .map(Some)
            .map_err(|_| invalid(GABP_TOKEN, "is empty")),
    }
}

fn env_game_id<F>(env: &F) -> Result<Option<String>, SettingsError>
where
    F: Fn(&str) -> Option<OsString>,
{
    match env_str(env, GABS_GAME_ID)? {
        None => Ok(None),
        Some(value) if value.trim().is_empty() => Err(invalid(GABS_GAME_ID, "is empty")),
        Some(value) if value.chars().any(char::is_control) => {
            Err(invalid(GABS_GAME_ID, "contains control characters"))
        }
        Some(value) => Ok(Some(value)),
    }
}
