//! [`ConfigError`]: why `bridge.json` could not be found, read, parsed or written.

use std::io;
use std::path::{Path, PathBuf};

/// Why `bridge.json` could not be found, read, parsed or written. No variant ever carries the
/// token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No platform default path: the named environment variables are unset or not absolute.
    #[error("no default bridge.json location: {0} is not set to an absolute path")]
    NoDefaultPath(&'static str),
    /// There is no file at the path.
    #[error("bridge.json not found at {}", path.display())]
    NotFound {
        /// The path looked at.
        path: PathBuf,
    },
    /// The file exists but could not be read.
    #[error("cannot read bridge.json at {}: {source}", path.display())]
    Read {
        /// The path read.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// What is at the path is not a regular file (a FIFO, socket, device or directory); it is
    /// never opened for a blocking read (SPEC/1.0 security.md §5).
    #[error("bridge.json at {} is {kind}, not a regular file; refusing to read it", path.display())]
    NotRegular {
        /// The path looked at.
        path: PathBuf,
        /// What it is instead (`a FIFO`).
        kind: &'static str,
    },
    /// The file is readable by group or others and the reader was asked to refuse such a file
    /// (made from an [`Exposure`](super::Exposure); SPEC/1.0 security.md §5).
    #[error(
        "bridge.json at {} is readable by group or others (mode {mode:04o}) and holds the token; \
         refusing it: run chmod 600 on it",
        path.display()
    )]
    Exposed {
        /// The path read.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is larger than [`MAX_BRIDGE_JSON_BYTES`](super::MAX_BRIDGE_JSON_BYTES).
    #[error("bridge.json at {} is larger than {limit} bytes", path.display())]
    TooLarge {
        /// The path read.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file is not JSON.
    #[error("bridge.json at {} is not valid JSON (line {line}, column {column}): {message}", path.display())]
    Json {
        /// The path read (empty for
        /// [`BridgeConfig::from_json_slice`](super::BridgeConfig::from_json_slice)).
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong, without quoting the input.
        message: String,
    },
    /// A field is missing or has a bad value.
    #[error("bridge.json at {}: `{field}` {problem}", path.display())]
    Field {
        /// The path read (empty for
        /// [`BridgeConfig::from_json_slice`](super::BridgeConfig::from_json_slice)).
        path: PathBuf,
        /// The field, dotted (`transport.address`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The configuration cannot be expressed as `bridge.json`.
    #[error("cannot write bridge.json: {0}")]
    Unwritable(String),
    /// A step of [`BridgeConfig::write_atomic`](super::BridgeConfig::write_atomic) failed.
    #[error("cannot {step} {}: {source}", path.display())]
    Write {
        /// The step, as a verb phrase ("rename into").
        step: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// After writing, the file is not the private regular file just written.
    #[error("bridge.json at {} is not private after writing: {problem}", path.display())]
    NotPrivate {
        /// The path written.
        path: PathBuf,
        /// What the check found.
        problem: String,
    },
}

impl ConfigError {
    /// Whether this is [`ConfigError::NotFound`].
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, ConfigError::NotFound { .. })
    }

    pub(super) fn at(mut self, at: &Path) -> Self {
        match &mut self {
            ConfigError::Json { path, .. } | ConfigError::Field { path, .. } => {
                at.clone_into(path);
            }
            _ => {}
        }
        self
    }
}

pub(super) fn read_error(path: &Path, source: io::Error) -> ConfigError {
    if source.kind() == io::ErrorKind::NotFound {
        ConfigError::NotFound {
            path: path.to_owned(),
        }
    } else {
        ConfigError::Read {
            path: path.to_owned(),
            source,
        }
    }
}

pub(super) fn write_error(step: &'static str, path: &Path, source: io::Error) -> ConfigError {
    ConfigError::Write {
        step,
        path: path.to_owned(),
        source,
    }
}

pub(super) fn field_error(field: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Field {
        path: PathBuf::new(),
        field,
        problem: problem.into(),
    }
}
