//! [`TransportError`]: the one error of this crate.

use std::io;
use std::path::PathBuf;

use crate::settings::source::SettingSource;

/// Why an endpoint, a token, the settings or `bridge.json` are not usable, or why binding, accepting,
/// connecting or spawning failed. No variant ever carries a token (SPEC/1.0 security.md §6).
///
/// The variants come in groups, by what fails:
///
/// - an [`Endpoint`](crate::Endpoint) that does not parse, from [`TransportError::UnknownForm`] to
///   [`TransportError::Random`] (for TCP: not loopback, and the message says "loopback");
/// - a [`Token`](crate::Token): [`TransportError::EmptyToken`], [`TransportError::TokenGeneration`];
/// - [`ModSettings`](crate::ModSettings): [`TransportError::InvalidVariable`],
///   [`TransportError::MissingSetting`], [`TransportError::ShortToken`], and any `bridge.json` error;
/// - `bridge.json`: [`TransportError::NoDefaultPath`] and the `BridgeJson*` variants, each naming the file
///   (and the field);
/// - a listener, a connection or a child process: from [`TransportError::Unsupported`] on.
///
/// ```
/// use gabp_transport::{Endpoint, TransportError};
///
/// let err = "tcp://0.0.0.0:4711".parse::<Endpoint>().unwrap_err();
/// assert!(matches!(err, TransportError::NotLoopback(_)));
/// assert!(err.to_string().contains("loopback"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The string has none of the known endpoint forms.
    #[error(
        "`{0}` is not a GABP endpoint; expected tcp://127.0.0.1:PORT, tcp://[::1]:PORT, \
         ws://127.0.0.1:PORT, unix:///absolute/path.sock, pipe://NAME or stdio"
    )]
    UnknownForm(String),
    /// A `tcp://` endpoint without a valid `HOST:PORT`.
    #[error(
        "`tcp://{0}` is not a valid address; expected tcp://127.0.0.1:PORT or tcp://[::1]:PORT"
    )]
    InvalidTcpAddress(String),
    /// A `tcp://` endpoint whose port is not a number in 0-65535.
    #[error("`{0}` is not a TCP port (0-65535)")]
    InvalidPort(String),
    /// A TCP address or host name that is not loopback.
    #[error(
        "`{0}` is not a loopback address; GABP TCP is loopback only (127.0.0.1 or [::1]), \
         it never listens on or connects to any other address"
    )]
    NotLoopback(String),
    /// A `unix://` path that is not absolute.
    #[error("unix socket path `{0}` is not absolute; write unix:///absolute/path.sock")]
    RelativeUnixPath(String),
    /// A `unix://` path that is empty or contains a NUL byte.
    #[error("unix socket path `{0}` is empty or contains a NUL byte")]
    InvalidUnixPath(String),
    /// A pipe name that is empty, too long, or contains a separator or control character.
    #[error(
        "`{0}` is not a valid pipe name: it must be 1-256 characters without `\\`, `/` or control \
         characters"
    )]
    InvalidPipeName(String),
    /// The OS random source failed while making a unique socket path.
    #[error("the operating system's random source failed: {0}")]
    Random(String),

    /// A token's secret was empty or all whitespace.
    #[error("the token is empty")]
    EmptyToken,
    /// The OS random source failed while generating a token.
    #[error("cannot generate a token: the operating system's random source failed: {0}")]
    TokenGeneration(String),

    /// A GABS environment variable is set to a bad value.
    #[error("environment variable {var} {problem}")]
    InvalidVariable {
        /// The variable's name, e.g. `GABP_SERVER_PORT`.
        var: &'static str,
        /// What is wrong with its value.
        problem: String,
    },
    /// No source has this setting of a mod.
    #[error(
        "no {setting} for the mod: pass it explicitly, set the GABS environment \
         (GABP_SERVER_PORT, GABP_TOKEN), or write bridge.json ({bridge_json})"
    )]
    MissingSetting {
        /// Which setting: `endpoint`, `token`, or `endpoint and token`.
        setting: &'static str,
        /// Why `bridge.json` did not have it.
        bridge_json: String,
    },
    /// The token is shorter than `session/hello` allows, so no bridge could ever authenticate.
    #[error(
        "the token from {from} has {len} characters; a session/hello token needs at least {min}"
    )]
    ShortToken {
        /// Where the token came from.
        from: SettingSource,
        /// Its length in characters.
        len: usize,
        /// The minimum ([`MIN_TOKEN_CHARS`](crate::MIN_TOKEN_CHARS)).
        min: usize,
    },

    /// No platform default path for `bridge.json`: the named environment variables are unset or not
    /// absolute.
    #[error("no default bridge.json location: {0} is not set to an absolute path")]
    NoDefaultPath(&'static str),
    /// There is no `bridge.json` at the path.
    #[error("bridge.json not found at {}", path.display())]
    BridgeJsonNotFound {
        /// The path looked at.
        path: PathBuf,
    },
    /// `bridge.json` exists but could not be read.
    #[error("cannot read bridge.json at {}: {source}", path.display())]
    BridgeJsonRead {
        /// The path read.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// What is at the path is not a regular file (a FIFO, socket, device or directory); it is
    /// never opened for a blocking read (SPEC/1.0 security.md §5).
    #[error("bridge.json at {} is {kind}, not a regular file; refusing to read it", path.display())]
    BridgeJsonNotRegular {
        /// The path looked at.
        path: PathBuf,
        /// What it is instead (`a FIFO`).
        kind: &'static str,
    },
    /// The file is readable by group or others and the reader was asked to refuse such a file
    /// (made from an [`Exposure`](crate::Exposure); SPEC/1.0 security.md §5).
    #[error(
        "bridge.json at {} is readable by group or others (mode {mode:04o}) and holds the token; \
         refusing it: run chmod 600 on it",
        path.display()
    )]
    BridgeJsonExposed {
        /// The path read.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file is larger than [`MAX_BRIDGE_JSON_BYTES`](crate::MAX_BRIDGE_JSON_BYTES).
    #[error("bridge.json at {} is larger than {limit} bytes", path.display())]
    BridgeJsonTooLarge {
        /// The path read.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file is not JSON.
    #[error("bridge.json at {} is not valid JSON (line {line}, column {column}): {message}", path.display())]
    BridgeJsonSyntax {
        /// The path read (empty for
        /// [`BridgeConfig::from_json_slice`](crate::BridgeConfig::from_json_slice)).
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong, without quoting the input.
        message: String,
    },
    /// A field of `bridge.json` is missing or has a bad value.
    #[error("bridge.json at {}: `{field}` {problem}", path.display())]
    BridgeJsonField {
        /// The path read (empty for
        /// [`BridgeConfig::from_json_slice`](crate::BridgeConfig::from_json_slice)).
        path: PathBuf,
        /// The field, dotted (`transport.address`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The configuration cannot be expressed as `bridge.json`.
    #[error("cannot write bridge.json: {0}")]
    BridgeJsonUnwritable(String),
    /// A step of [`BridgeConfig::write_atomic`](crate::BridgeConfig::write_atomic) failed.
    #[error("cannot {step} {}: {source}", path.display())]
    BridgeJsonWrite {
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
    BridgeJsonNotPrivate {
        /// The path written.
        path: PathBuf,
        /// What the check found.
        problem: String,
    },

    /// The operation does not apply to this endpoint on this platform (e.g. `connect` to `stdio`,
    /// a named pipe on Unix, a Unix socket on Windows).
    #[error("{endpoint}: {reason}")]
    Unsupported {
        /// The endpoint, as text.
        endpoint: String,
        /// Why, and what to use instead.
        reason: &'static str,
    },
    /// A live socket is already listening at this path; it was left alone.
    #[error(
        "a live socket is already listening at {}; refusing to replace it",
        path.display()
    )]
    SocketInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// Something other than a socket exists at this path; it was left alone.
    #[error("{} exists and is not a socket; refusing to replace it", path.display())]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// The Unix socket is served by a process of another user; nothing was sent to it (a bridge
    /// would otherwise hand its token to whoever squatted the path).
    #[error("{endpoint} is served by user id {uid}, not by this user; refusing to talk to it")]
    ForeignPeer {
        /// The endpoint, as text.
        endpoint: String,
        /// The user id of the process serving it.
        uid: u32,
    },
    /// The stdio listener already handed out its one connection and that connection has closed.
    #[error("the stdio listener has no more connections: its one connection has closed")]
    Closed,
    /// An I/O operation failed.
    #[error("cannot {op} {target}: {source}")]
    Io {
        /// What was being done, as a verb phrase ("bind", "connect to", "accept on").
        op: &'static str,
        /// On what (an endpoint, a path or a program).
        target: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// There is no Tokio runtime to run the operation on.
    #[error("{0} must be called from inside a Tokio runtime")]
    NoRuntime(&'static str),
}

impl TransportError {
    pub(crate) fn io(op: &'static str, target: impl std::fmt::Display, source: io::Error) -> Self {
        TransportError::Io {
            op,
            target: target.to_string(),
            source,
        }
    }

    /// The underlying I/O error kind, if this is [`TransportError::Io`].
    #[must_use]
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            TransportError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// Whether this is [`TransportError::BridgeJsonNotFound`]: there is no `bridge.json` at the path.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, TransportError::BridgeJsonNotFound { .. })
    }

    /// For [`TransportError::InvalidVariable`], the variable's name.
    #[must_use]
    pub fn variable(&self) -> Option<&'static str> {
        match self {
            TransportError::InvalidVariable { var, .. } => Some(var),
            _ => None,
        }
    }

    /// What is wrong with an endpoint, without the input: for places where the input may hold a secret,
    /// such as a `bridge.json` field (SPEC/1.0 security.md §6). Other errors never carry their input.
    pub(crate) fn endpoint_reason(&self) -> String {
        match self {
            TransportError::UnknownForm(_) => {
                "is not a GABP endpoint; expected a port, HOST:PORT, \
                tcp://127.0.0.1:PORT, tcp://[::1]:PORT, unix:///absolute/path.sock or pipe://NAME"
                    .into()
            }
            TransportError::InvalidTcpAddress(_) => {
                "is not a valid address; expected 127.0.0.1:PORT or [::1]:PORT".into()
            }
            TransportError::InvalidPort(_) => "is not a TCP port (1-65535)".into(),
            TransportError::NotLoopback(_) => {
                "is not a loopback address; GABP TCP is loopback only (127.0.0.1 or [::1])".into()
            }
            TransportError::RelativeUnixPath(_) => "is not an absolute socket path".into(),
            TransportError::InvalidUnixPath(_) => "is empty or contains a NUL byte".into(),
            TransportError::InvalidPipeName(_) => "is not a valid pipe name: it must be 1-256 \
                characters without `\\`, `/` or control characters"
                .into(),
            TransportError::Random(e) => {
                format!("could not be made: the random source failed: {e}")
            }
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MIN_TOKEN_CHARS;

    #[test]
    fn messages_name_the_file_the_field_and_the_variable() {
        let field = TransportError::BridgeJsonField {
            path: PathBuf::from("/run/gabp/bridge.json"),
            field: "transport.address",
            problem: "must be a string".into(),
        };
        assert_eq!(
            field.to_string(),
            "bridge.json at /run/gabp/bridge.json: `transport.address` must be a string"
        );
        let variable = TransportError::InvalidVariable {
            var: "GABP_SERVER_PORT",
            problem: "is not a number".into(),
        };
        assert!(variable.to_string().contains("GABP_SERVER_PORT"));
        assert_eq!(variable.variable(), Some("GABP_SERVER_PORT"));
        let short = TransportError::ShortToken {
            from: SettingSource::Environment("GABP_TOKEN"),
            len: 3,
            min: MIN_TOKEN_CHARS,
        };
        assert!(short
            .to_string()
            .contains("environment variable GABP_TOKEN"));
    }
}
