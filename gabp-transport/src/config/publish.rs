//! [`BridgeJsonGuard`]: a `bridge.json` a mod wrote for itself, removed when the mod stops
//! (SPEC/1.0/transport.md §4.3).

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::error::write_error;
use super::file::FileIdentity;
use super::BridgeConfig;
use crate::error::TransportError;

impl BridgeConfig {
    /// Write this configuration to `path` as [`BridgeConfig::write_atomic`] does, and return a
    /// guard that removes the file when dropped: what a mod that chose its own endpoint and token
    /// does while it listens, so that bridges find it (see
    /// [`ModSettings::publish_bridge_json`](crate::ModSettings::publish_bridge_json)).
    ///
    /// ```
    /// use gabp_transport::{BridgeConfig, Endpoint, Token};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("gabp").join("bridge.json");
    /// let guard = BridgeConfig::new(Token::generate()?, Endpoint::tcp_v4(38917)).publish(&path)?;
    /// assert_eq!(BridgeConfig::read(&path)?.endpoint, Endpoint::tcp_v4(38917));
    /// drop(guard); // the mod stops listening
    /// assert!(!path.exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`BridgeConfig::write_atomic`].
    pub fn publish(&self, path: impl AsRef<Path>) -> Result<BridgeJsonGuard, TransportError> {
        let path = path.as_ref();
        let identity = self.write_identified(path)?;
        Ok(BridgeJsonGuard {
            path: path.to_owned(),
            identity: Some(identity),
        })
    }
}

/// A `bridge.json` written by [`BridgeConfig::publish`]: removed when the guard is dropped (or
/// [`removed`](BridgeJsonGuard::remove) explicitly), but only while it is still the file written,
/// so a file another process has put there since is left alone.
///
/// A process that is killed (SIGKILL, a crash) leaves the file behind; the next reader finds
/// nobody listening at its endpoint.
#[must_use = "the file is removed when the guard is dropped"]
pub struct BridgeJsonGuard {
    path: PathBuf,
    identity: Option<FileIdentity>,
}

impl BridgeJsonGuard {
    /// The path written.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove the file now, if it is still the one written. Returns whether it was removed.
    ///
    /// # Errors
    ///
    /// [`TransportError::BridgeJsonWrite`] when the file is ours and cannot be removed.
    pub fn remove(mut self) -> Result<bool, TransportError> {
        self.remove_if_ours()
    }

    fn remove_if_ours(&mut self) -> Result<bool, TransportError> {
        let Some(identity) = self.identity.take() else {
            return Ok(false);
        };
        if !identity.is_at(&self.path) {
            tracing::debug!(path = %self.path.display(), "bridge.json was replaced; leaving it");
            return Ok(false);
        }
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(write_error("remove", &self.path, e)),
        }
    }
}

impl Drop for BridgeJsonGuard {
    fn drop(&mut self) {
        if let Err(e) = self.remove_if_ours() {
            tracing::warn!("{e}");
        }
    }
}

impl fmt::Debug for BridgeJsonGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BridgeJsonGuard")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}
