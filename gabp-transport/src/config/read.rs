//! Reading the file: a regular file only, opened without blocking, no larger than
//! [`MAX_BRIDGE_JSON_BYTES`], and a report when others can read it (SPEC/1.0 security.md §5).

use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::read_error;
use super::{BridgeConfig, MAX_BRIDGE_JSON_BYTES};
use crate::error::TransportError;

/// A `bridge.json` whose mode lets group or others read it, and so read the token
/// (SPEC/1.0 security.md §5). [`BridgeConfig::read_checked`] reports it; the caller warns or
/// refuses (turn it into [`TransportError::BridgeJsonExposed`] with `TransportError::from`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Exposure {
    /// The file.
    pub path: PathBuf,
    /// Its permission bits (`0o644`).
    pub mode: u32,
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bridge.json at {} is readable by group or others (mode {:04o}); it holds the token: run chmod 600 on it",
            self.path.display(),
            self.mode
        )
    }
}

impl From<Exposure> for TransportError {
    fn from(e: Exposure) -> Self {
        TransportError::BridgeJsonExposed {
            path: e.path,
            mode: e.mode,
        }
    }
}

impl BridgeConfig {
    /// Read and check the `bridge.json` at `path`.
    ///
    /// A file that group or others can read is accepted with a `tracing` warning; use
    /// [`BridgeConfig::read_checked`] to warn in your own way or to refuse it.
    ///
    /// # Errors
    ///
    /// As [`BridgeConfig::read_checked`].
    pub fn read(path: impl AsRef<Path>) -> Result<Self, TransportError> {
        let (config, exposure) = Self::read_checked(path)?;
        if let Some(exposure) = exposure {
            tracing::warn!("{exposure}");
        }
        Ok(config)
    }

    /// Read and check the `bridge.json` at `path`, and say whether group or others can read it.
    ///
    /// Only a regular file (or a link to one) is read: a FIFO, socket, device or directory is
    /// refused at once, never waited on. The file is opened without blocking and checked again
    /// once open, so one swapped in between cannot stall the reader.
    ///
    /// ```
    /// # #[cfg(unix)] {
    /// use std::os::unix::fs::PermissionsExt;
    /// use gabp_transport::{BridgeConfig, Endpoint, Token, TransportError};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("bridge.json");
    /// BridgeConfig::new(Token::generate()?, Endpoint::tcp_v4(38917)).write_atomic(&path)?;
    /// assert!(BridgeConfig::read_checked(&path)?.1.is_none());
    ///
    /// std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    /// let (_, exposure) = BridgeConfig::read_checked(&path)?;
    /// let exposure = exposure.expect("0644 is readable by others");
    /// assert_eq!(exposure.mode, 0o644);
    /// let refusal = TransportError::from(exposure); // what a strict reader returns
    /// assert!(refusal.to_string().contains("0644"));
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TransportError::BridgeJsonNotFound`], [`TransportError::BridgeJsonNotRegular`],
    /// [`TransportError::BridgeJsonRead`], [`TransportError::BridgeJsonTooLarge`],
    /// [`TransportError::BridgeJsonSyntax`] (with line and column) or
    /// [`TransportError::BridgeJsonField`] (naming the field, e.g. `transport.address`). No error ever contains
    /// any part of the token.
    pub fn read_checked(
        path: impl AsRef<Path>,
    ) -> Result<(Self, Option<Exposure>), TransportError> {
        let path = path.as_ref();
        let before = fs::metadata(path).map_err(|source| read_error(path, source))?;
        regular(path, &before)?;
        let file = open_without_blocking(path).map_err(|source| read_error(path, source))?;
        let opened = file.metadata().map_err(|source| read_error(path, source))?;
        regular(path, &opened)?;
        let exposure = exposure(path, &opened);
        let mut bytes = Vec::new();
        file.take(MAX_BRIDGE_JSON_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| read_error(path, source))?;
        if bytes.len() as u64 > MAX_BRIDGE_JSON_BYTES {
            return Err(TransportError::BridgeJsonTooLarge {
                path: path.to_owned(),
                limit: MAX_BRIDGE_JSON_BYTES,
            });
        }
        let config = Self::from_json_slice(&bytes).map_err(|e| e.at(path))?;
        Ok((config, exposure))
    }
}

/// Refuses anything but a regular file, naming what it is.
fn regular(path: &Path, meta: &fs::Metadata) -> Result<(), TransportError> {
    if meta.is_file() {
        return Ok(());
    }
    let kind = file_kind(meta);
    Err(TransportError::BridgeJsonNotRegular {
        path: path.to_owned(),
        kind,
    })
}

fn file_kind(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    "another kind of file"
}

/// Opens for reading; on Unix with `O_NONBLOCK`, so a FIFO swapped in after the check does not
/// block the open (reads of a regular file ignore the flag).
fn open_without_blocking(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// The exposure of a file whose mode has a group or other read bit (Unix only).
fn exposure(path: &Path, meta: &fs::Metadata) -> Option<Exposure> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o044 != 0 {
            return Some(Exposure {
                path: path.to_owned(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (path, meta);
    None
}
