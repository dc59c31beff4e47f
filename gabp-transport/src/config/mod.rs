//! `bridge.json`: where a mod is and which token it expects ([`BridgeConfig`]).

mod contents;
mod error;
mod file;
mod publish;
mod read;

use std::ffi::OsString;
use std::path::PathBuf;

pub use self::publish::BridgeJsonGuard;
pub use self::read::Exposure;
use crate::endpoint::Endpoint;
use crate::error::TransportError;
use crate::token::Token;

/// The largest `bridge.json` [`BridgeConfig::read`] accepts. Real files are a few hundred bytes.
pub const MAX_BRIDGE_JSON_BYTES: u64 = 64 * 1024;

/// The file name of the bridge configuration.
pub const BRIDGE_JSON: &str = "bridge.json";

/// The contents of `bridge.json`: the token, the transport and optional metadata about the mod's
/// process (SPEC/1.0/transport.md §4.2).
///
/// The file looks like this (the token is a placeholder):
///
/// ```json
/// {
///   "token": "<64 hex digits>",
///   "transport": { "type": "tcp", "address": "38917" },
///   "metadata": { "pid": 12345, "startTime": "2025-01-02T10:30:00Z", "launchId": "…" }
/// }
/// ```
///
/// Writing is strict: `transport.type` is `tcp`, `pipe` (a Windows pipe path or a Unix socket
/// path, as upstream writes both) or `stdio`; a TCP address on `127.0.0.1` is written as the bare
/// port, any other loopback address as `HOST:PORT`. Reading is liberal: it also takes `unix` as a
/// type, `HOST:PORT` or an endpoint URL (`tcp://…`, `unix://…`, `pipe://…`) as an address, a
/// non-UUID `launchId`, and ignores fields it does not know. Only loopback TCP addresses are ever
/// accepted.
///
/// ```
/// use gabp_transport::{BridgeConfig, Endpoint, Token};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("gabp").join("bridge.json");
/// let config = BridgeConfig::new(Token::generate()?, Endpoint::tcp_v4(38917));
/// config.write_atomic(&path)?;
///
/// let back = BridgeConfig::read(&path)?;
/// assert_eq!(back.endpoint, Endpoint::tcp_v4(38917));
/// assert!(back.token.verify(config.token.expose_secret()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// The session token a bridge must present.
    pub token: Token,
    /// Where the mod listens.
    pub endpoint: Endpoint,
    /// Information about the mod's process; every field optional.
    pub metadata: BridgeMetadata,
}

pub use gabp_types::BridgeMetadata;

impl BridgeConfig {
    /// A configuration with empty metadata.
    #[must_use]
    pub fn new(token: Token, endpoint: Endpoint) -> Self {
        BridgeConfig {
            token,
            endpoint,
            metadata: BridgeMetadata::default(),
        }
    }

    /// The same configuration with `metadata` replaced.
    #[must_use]
    pub fn with_metadata(mut self, metadata: BridgeMetadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// The platform's default `bridge.json` path, from the real process environment.
    ///
    /// See [`BridgeConfig::default_path_from`].
    ///
    /// # Errors
    ///
    /// [`TransportError::NoDefaultPath`] when none of the variables it needs is set.
    pub fn default_path() -> Result<PathBuf, TransportError> {
        Self::default_path_from(|name| std::env::var_os(name))
    }

    /// The platform's default `bridge.json` path, looking variables up with `env`
    /// (SPEC/1.0/transport.md §4.1):
    ///
    /// - Linux and other Unix: `$XDG_CONFIG_HOME/gabp/bridge.json` when `XDG_CONFIG_HOME` is an
    ///   absolute path, else `$HOME/.config/gabp/bridge.json`;
    /// - macOS: `$HOME/Library/Application Support/gabp/bridge.json`;
    /// - Windows: `%APPDATA%\gabp\bridge.json`.
    ///
    /// ```
    /// # #[cfg(all(unix, not(target_os = "macos")))] {
    /// use gabp_transport::BridgeConfig;
    /// use std::path::Path;
    ///
    /// let path = BridgeConfig::default_path_from(|name| match name {
    ///     "HOME" => Some("/home/ada".into()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(path, Path::new("/home/ada/.config/gabp/bridge.json"));
    /// # }
    /// # Ok::<(), gabp_transport::TransportError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TransportError::NoDefaultPath`] when none of the variables it needs is set.
    pub fn default_path_from<F>(env: F) -> Result<PathBuf, TransportError>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let absolute = |name: &str| {
            env(name)
                .map(PathBuf::from)
                .filter(|p| !p.as_os_str().is_empty() && p.is_absolute())
        };
        if cfg!(windows) {
            return absolute("APPDATA")
                .map(|base| base.join("gabp").join(BRIDGE_JSON))
                .ok_or(TransportError::NoDefaultPath("APPDATA"));
        }
        if cfg!(target_os = "macos") {
            return absolute("HOME")
                .map(|home| {
                    home.join("Library")
                        .join("Application Support")
                        .join("gabp")
                        .join(BRIDGE_JSON)
                })
                .ok_or(TransportError::NoDefaultPath("HOME"));
        }
        if let Some(xdg) = absolute("XDG_CONFIG_HOME") {
            return Ok(xdg.join("gabp").join(BRIDGE_JSON));
        }
        absolute("HOME")
            .map(|home| home.join(".config").join("gabp").join(BRIDGE_JSON))
            .ok_or(TransportError::NoDefaultPath("XDG_CONFIG_HOME or HOME"))
    }
}
