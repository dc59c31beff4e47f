//! `bridge.json`: where a mod is and which token it expects ([`BridgeConfig`]).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use gabp_types::without_json_position;
use serde_json::{Map, Value};

use crate::endpoint::{Endpoint, EndpointError};
use crate::token::{Token, TokenError};

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
    /// [`ConfigError::NoDefaultPath`] when none of the variables it needs is set.
    pub fn default_path() -> Result<PathBuf, ConfigError> {
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
    /// # Ok::<(), gabp_transport::ConfigError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::NoDefaultPath`] when none of the variables it needs is set.
    pub fn default_path_from<F>(env: F) -> Result<PathBuf, ConfigError>
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
                .ok_or(ConfigError::NoDefaultPath("APPDATA"));
        }
        if cfg!(target_os = "macos") {
            return absolute("HOME")
                .map(|home| {
                    home.join("Library")
                        .join("Application Support")
                        .join("gabp")
                        .join(BRIDGE_JSON)
                })
                .ok_or(ConfigError::NoDefaultPath("HOME"));
        }
        if let Some(xdg) = absolute("XDG_CONFIG_HOME") {
            return Ok(xdg.join("gabp").join(BRIDGE_JSON));
        }
        absolute("HOME")
            .map(|home| home.join(".config").join("gabp").join(BRIDGE_JSON))
            .ok_or(ConfigError::NoDefaultPath("XDG_CONFIG_HOME or HOME"))
    }

    /// Read and check the `bridge.json` at `path`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::NotFound`], [`ConfigError::Read`], [`ConfigError::TooLarge`],
    /// [`ConfigError::Json`] (with line and column) or [`ConfigError::Field`] (naming the field,
    /// e.g. `transport.address`). No error ever contains the token.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let file = fs::File::open(path).map_err(|source| read_error(path, source))?;
        let mut bytes = Vec::new();
        file.take(MAX_BRIDGE_JSON_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| read_error(path, source))?;
        if bytes.len() as u64 > MAX_BRIDGE_JSON_BYTES {
            return Err(ConfigError::TooLarge {
                path: path.to_owned(),
                limit: MAX_BRIDGE_JSON_BYTES,
            });
        }
        Self::from_json_slice(&bytes).map_err(|e| e.at(path))
    }

    /// Parse the contents of a `bridge.json`.
    ///
    /// # Errors
    ///
    /// As [`BridgeConfig::read`], without the file-system errors; the path in the error is empty.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        // Parse to a tree first: serde_json's syntax errors never quote the input, so nothing
        // secret can end up in an error message; every field is then checked by hand.
        let value: Value = serde_json::from_slice(bytes).map_err(|e| ConfigError::Json {
            path: PathBuf::new(),
            line: e.line(),
            column: e.column(),
            message: json_error_kind(&e),
        })?;
        let obj = value
            .as_object()
            .ok_or_else(|| field_error("(top level)", "must be a JSON object"))?;

        let token = match obj.get("token") {
            None => return Err(field_error("token", "is missing")),
            Some(Value::String(s)) => Token::new(s.clone()).map_err(|e| match e {
                TokenError::Empty => field_error("token", "is empty"),
                other => field_error("token", other.to_string()),
            })?,
            Some(_) => return Err(field_error("token", "must be a string")),
        };

        // From here on, an error may quote a field's value; never let it quote the token (say, a
        // token pasted into the wrong field).
        Self::fields_after_token(obj, token).map_err(|e| match e {
            ConfigError::Field {
                path,
                field,
                problem,
            } => ConfigError::Field {
                path,
                field,
                problem: redact(problem, secret_of(obj)),
            },
            other => other,
        })
    }

    fn fields_after_token(obj: &Map<String, Value>, token: Token) -> Result<Self, ConfigError> {
        let transport = match obj.get("transport") {
            None => return Err(field_error("transport", "is missing")),
            Some(Value::Object(t)) => t,
            Some(_) => return Err(field_error("transport", "must be an object")),
        };
        let endpoint = read_transport(transport)?;

        let metadata = match obj.get("metadata") {
            None | Some(Value::Null) => BridgeMetadata::default(),
            Some(Value::Object(m)) => read_metadata(m)?,
            Some(_) => return Err(field_error("metadata", "must be an object")),
        };

        Ok(BridgeConfig {
            token,
            endpoint,
            metadata,
        })
    }

    /// The JSON text of this configuration, exactly as [`BridgeConfig::write_atomic`] writes it.
    ///
    /// The text contains the secret token: keep it out of logs.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Unwritable`] for an endpoint `bridge.json` cannot express (a non-loopback
    /// hand-built TCP address, a Unix path that is not valid UTF-8).
    pub fn to_json_string(&self) -> Result<String, ConfigError> {
        let (kind, address) = match &self.endpoint {
            Endpoint::Tcp(addr) => {
                crate::endpoint::check_loopback(addr)
                    .map_err(|e| ConfigError::Unwritable(e.to_string()))?;
                if addr.ip() == std::net::Ipv4Addr::LOCALHOST {
                    ("tcp", Some(addr.port().to_string()))
                } else {
                    ("tcp", Some(addr.to_string()))
                }
            }
            Endpoint::Unix(path) => {
                let s = path.to_str().ok_or_else(|| {
                    ConfigError::Unwritable("the unix socket path is not valid UTF-8".into())
                })?;
                ("pipe", Some(s.to_owned()))
            }
            Endpoint::Pipe(_) => ("pipe", self.endpoint.pipe_path()),
            Endpoint::Stdio => ("stdio", None),
        };
        let file = gabp_types::BridgeFile {
            token: self.token.expose_secret().to_owned(),
            transport: gabp_types::TransportInfo {
                kind: kind.to_owned(),
                address,
            },
            metadata: self.metadata.clone(),
        };
        let mut text = serde_json::to_string_pretty(&file)
            .map_err(|e| ConfigError::Unwritable(json_error_kind(&e)))?;
        text.push('\n');
        Ok(text)
    }

    /// Write this configuration to `path` atomically, readable by the current user only.
    ///
    /// Steps: create the parent directories (mode 0700 where created), write a temporary file in
    /// the same directory created with mode 0600, `fsync` it, `rename` it over `path`, `fsync` the
    /// directory, then check that `path` is a regular file with mode 0600 that is the file just
    /// written. A file already at `path` is replaced, never reused, so its old permissions do not
    /// survive. On Windows the file inherits the per-user ACL of `%APPDATA%` and the mode checks
    /// are skipped.
    ///
    /// This is blocking file-system work; from async code call it through
    /// `tokio::task::spawn_blocking`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Write`] naming the step that failed, [`ConfigError::NotPrivate`] if the
    /// written file does not have the expected owner-only permissions, or
    /// [`ConfigError::Unwritable`] (see [`BridgeConfig::to_json_string`]). The temporary file is
    /// removed on every error.
    pub fn write_atomic(&self, path: impl AsRef<Path>) -> Result<(), ConfigError> {
        let path = path.as_ref();
        let text = self.to_json_string()?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .ok_or_else(|| write_error("name the file", path, io::ErrorKind::InvalidInput.into()))?
            .to_string_lossy()
            .into_owned();
        create_private_dir_all(&dir).map_err(|e| write_error("create the directory", &dir, e))?;

        let (tmp_path, mut file) = create_temp_file(&dir, &file_name)?;
        let result = (|| {
            restrict_to_owner(&file).map_err(|e| write_error("set mode 0600 on", &tmp_path, e))?;
            file.write_all(text.as_bytes())
                .map_err(|e| write_error("write", &tmp_path, e))?;
            file.sync_all()
                .map_err(|e| write_error("fsync", &tmp_path, e))?;
            let identity =
                FileIdentity::of(&file).map_err(|e| write_error("stat", &tmp_path, e))?;
            fs::rename(&tmp_path, path).map_err(|e| write_error("rename into", path, e))?;
            Ok(identity)
        })();
        let identity = match result {
            Ok(identity) => identity,
            Err(e) => {
                let _ = fs::remove_file(&tmp_path);
                return Err(e);
            }
        };
        drop(file);
        sync_dir(&dir);
        identity.verify(path)
    }
}

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
    /// The file is larger than [`MAX_BRIDGE_JSON_BYTES`].
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
        /// The path read (empty for [`BridgeConfig::from_json_slice`]).
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
        /// The path read (empty for [`BridgeConfig::from_json_slice`]).
        path: PathBuf,
        /// The field, dotted (`transport.address`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The configuration cannot be expressed as `bridge.json`.
    #[error("cannot write bridge.json: {0}")]
    Unwritable(String),
    /// A step of [`BridgeConfig::write_atomic`] failed.
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

    fn at(mut self, at: &Path) -> Self {
        match &mut self {
            ConfigError::Json { path, .. } | ConfigError::Field { path, .. } => {
                at.clone_into(path);
            }
            _ => {}
        }
        self
    }
}

fn read_error(path: &Path, source: io::Error) -> ConfigError {
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

fn write_error(step: &'static str, path: &Path, source: io::Error) -> ConfigError {
    ConfigError::Write {
        step,
        path: path.to_owned(),
        source,
    }
}

fn field_error(field: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Field {
        path: PathBuf::new(),
        field,
        problem: problem.into(),
    }
}

/// The token's text in a parsed `bridge.json`, if it is a string.
fn secret_of(obj: &Map<String, Value>) -> &str {
    obj.get("token").and_then(Value::as_str).unwrap_or("")
}

/// `text` with every occurrence of `secret` replaced (secrets shorter than 4 characters are too
/// short to find without mangling the message, and too weak to matter).
fn redact(text: String, secret: &str) -> String {
    if secret.len() >= 4 && text.contains(secret) {
        text.replace(secret, "<redacted>")
    } else {
        text
    }
}

/// serde_json's message without the " at line L column C" suffix (we report those separately).
fn json_error_kind(e: &serde_json::Error) -> String {
    without_json_position(&e.to_string()).to_owned()
}

fn read_transport(t: &Map<String, Value>) -> Result<Endpoint, ConfigError> {
    let kind = match t.get("type") {
        None => return Err(field_error("transport.type", "is missing")),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(field_error("transport.type", "must be a string")),
    };
    let address = match t.get("address") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        // Liberal: a port written as a JSON number.
        Some(Value::Number(n)) => {
            return match (kind, n.as_u64()) {
                ("tcp", Some(port)) => tcp_from_port(&port.to_string()),
                _ => Err(field_error("transport.address", "must be a string")),
            }
        }
        Some(_) => return Err(field_error("transport.address", "must be a string")),
    };
    let need = |what: &str| {
        address
            .filter(|a| !a.is_empty())
            .ok_or_else(|| field_error("transport.address", format!("is required for {what}")))
    };
    let endpoint_error = |e: EndpointError| field_error("transport.address", e.to_string());
    match kind {
        "stdio" => Ok(Endpoint::Stdio),
        "tcp" => {
            let address = need("tcp")?;
            if address.bytes().all(|b| b.is_ascii_digit()) {
                tcp_from_port(address)
            } else if address.starts_with("tcp://") {
                address.parse().map_err(endpoint_error)
            } else {
                format!("tcp://{address}").parse().map_err(endpoint_error)
            }
            .and_then(|ep| match ep {
                Endpoint::Tcp(addr) if addr.port() == 0 => {
                    Err(field_error("transport.address", "has port 0"))
                }
                ep => Ok(ep),
            })
        }
        "pipe" | "unix" => {
            let address = need(kind)?;
            if address.contains("://") {
                let ep: Endpoint = address.parse().map_err(endpoint_error)?;
                return match ep {
                    Endpoint::Unix(_) | Endpoint::Pipe(_) => Ok(ep),
                    _ => Err(field_error(
                        "transport.address",
                        format!("is not a {kind} address"),
                    )),
                };
            }
            if address.starts_with('/') {
                Endpoint::unix(address).map_err(endpoint_error)
            } else if kind == "pipe" {
                if address.starts_with(r"\\.\pipe\") {
                    address.parse().map_err(endpoint_error)
                } else {
                    Endpoint::pipe(address).map_err(endpoint_error)
                }
            } else {
                Endpoint::unix(address).map_err(endpoint_error)
            }
        }
        _ => Err(field_error(
            "transport.type",
            "must be \"tcp\", \"pipe\", \"unix\" or \"stdio\"",
        )),
    }
}

fn tcp_from_port(port: &str) -> Result<Endpoint, ConfigError> {
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(field_error(
            "transport.address",
            "is not a TCP port (1-65535)",
        )),
        Ok(port) => Ok(Endpoint::tcp_v4(port)),
    }
}

fn read_metadata(m: &Map<String, Value>) -> Result<BridgeMetadata, ConfigError> {
    let pid = match m.get("pid") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| field_error("metadata.pid", "must be an integer in 0-4294967295"))?,
        ),
    };
    let string = |field: &'static str, key: &str| match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(field_error(field, "must be a string")),
    };
    Ok(BridgeMetadata {
        pid,
        start_time: string("metadata.startTime", "startTime")?,
        launch_id: string("metadata.launchId", "launchId")?,
    })
}

/// Create `dir` and its missing parents; those created get mode 0700 on Unix.
fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Create a new temporary file beside the target, mode 0600 from its creation on Unix.
fn create_temp_file(dir: &Path, file_name: &str) -> Result<(PathBuf, fs::File), ConfigError> {
    let mut last = None;
    for _ in 0..8 {
        let mut rnd = [0u8; 8];
        getrandom::fill(&mut rnd).map_err(|e| {
            write_error(
                "get random bytes for a temporary name in",
                dir,
                io::Error::other(e.to_string()),
            )
        })?;
        let tmp = dir.join(format!(".{file_name}.{}.tmp", crate::token::to_hex(&rnd)));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(write_error("create a temporary file in", dir, e)),
        }
    }
    Err(write_error(
        "create a temporary file in",
        dir,
        last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()),
    ))
}

/// Set mode 0600 on an open file (the umask may have taken the owner's bits away).
fn restrict_to_owner(file: &fs::File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Flush the directory entry of a rename to disk. Best effort: some file systems refuse it.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), error = %e, "fsync of the bridge.json directory failed");
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// What a written file must still be after the rename.
struct FileIdentity {
    #[cfg(unix)]
    dev: u64,
    #[cfg(unix)]
    ino: u64,
    #[cfg(unix)]
    uid: u32,
}

impl FileIdentity {
    fn of(file: &fs::File) -> io::Result<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = file.metadata()?;
            Ok(FileIdentity {
                dev: m.dev(),
                ino: m.ino(),
                uid: m.uid(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            Ok(FileIdentity {})
        }
    }

    fn verify(&self, path: &Path) -> Result<(), ConfigError> {
        let m = fs::symlink_metadata(path).map_err(|e| write_error("stat", path, e))?;
        let fail = |problem: String| ConfigError::NotPrivate {
            path: path.to_owned(),
            problem,
        };
        if !m.file_type().is_file() {
            return Err(fail("it is not a regular file".into()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let mode = m.mode() & 0o7777;
            if mode != 0o600 {
                return Err(fail(format!("its mode is {mode:04o}, not 0600")));
            }
            if (m.dev(), m.ino()) != (self.dev, self.ino) {
                return Err(fail("it was replaced by another file".into()));
            }
            if m.uid() != self.uid {
                return Err(fail(format!("it is owned by uid {}", m.uid())));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<BridgeConfig, ConfigError> {
        BridgeConfig::from_json_slice(s.as_bytes())
    }

    #[test]
    fn reads_upstream_tcp_example() {
        let c = parse(
            r#"{"token":"a1b2c3","transport":{"type":"tcp","address":"38917"},
               "metadata":{"pid":12345,"startTime":"2025-01-02T10:30:00Z","launchId":"session-uuid"}}"#,
        )
        .expect("valid");
        assert_eq!(c.endpoint, Endpoint::tcp_v4(38917));
        assert!(c.token.verify("a1b2c3"));
        assert_eq!(c.metadata.pid, Some(12345));
        assert_eq!(c.metadata.launch_id.as_deref(), Some("session-uuid"));
    }

    #[test]
    fn reads_pipe_and_unix_addresses() {
        let c =
            parse(r#"{"token":"t","transport":{"type":"pipe","address":"\\\\.\\pipe\\gabp-1"}}"#)
                .expect("pipe");
        assert_eq!(c.endpoint, Endpoint::Pipe("gabp-1".into()));
        let c = parse(r#"{"token":"t","transport":{"type":"pipe","address":"/tmp/gabp-1.sock"}}"#)
            .expect("unix as pipe");
        assert_eq!(c.endpoint, Endpoint::Unix("/tmp/gabp-1.sock".into()));
        let c =
            parse(r#"{"token":"t","transport":{"type":"unix","address":"unix:///tmp/g.sock"}}"#)
                .expect("unix url");
        assert_eq!(c.endpoint, Endpoint::Unix("/tmp/g.sock".into()));
        let c = parse(r#"{"token":"t","transport":{"type":"stdio"}}"#).expect("stdio");
        assert_eq!(c.endpoint, Endpoint::Stdio);
        let c =
            parse(r#"{"token":"t","transport":{"type":"tcp","address":"[::1]:9"}}"#).expect("v6");
        assert_eq!(c.endpoint, Endpoint::tcp_v6(9));
        let c = parse(r#"{"token":"t","transport":{"type":"tcp","address":4711}}"#)
            .expect("numeric port");
        assert_eq!(c.endpoint, Endpoint::tcp_v4(4711));
    }

    #[test]
    fn write_format_round_trips() {
        for ep in [
            Endpoint::tcp_v4(38917),
            Endpoint::tcp_v6(38917),
            Endpoint::Unix("/run/user/1000/gabp-x.sock".into()),
            Endpoint::Pipe("gabp-x".into()),
            Endpoint::Stdio,
        ] {
            let c = BridgeConfig::new(Token::new("tok").expect("token"), ep.clone())
                .with_metadata(BridgeMetadata::current_process(Some("launch".into())));
            let text = c.to_json_string().expect("writable");
            assert_eq!(parse(&text).expect("reads back"), c, "{text}");
        }
        let text = BridgeConfig::new(Token::new("tok").expect("token"), Endpoint::tcp_v4(5))
            .to_json_string()
            .expect("writable");
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(v["transport"]["address"], "5");
        assert!(v.get("metadata").is_none());
    }

    #[test]
    fn field_errors_name_the_field() {
        let cases: &[(&str, &str)] = &[
            (r#"[]"#, "(top level)"),
            (r#"{"transport":{"type":"stdio"}}"#, "token"),
            (r#"{"token":5,"transport":{"type":"stdio"}}"#, "token"),
            (r#"{"token":"","transport":{"type":"stdio"}}"#, "token"),
            (r#"{"token":"t"}"#, "transport"),
            (r#"{"token":"t","transport":"tcp"}"#, "transport"),
            (r#"{"token":"t","transport":{}}"#, "transport.type"),
            (
                r#"{"token":"t","transport":{"type":"udp"}}"#,
                "transport.type",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"0"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"70000"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"10.0.0.2:80"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":"127.0.0.1:0"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"pipe","address":"a/b"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"unix","address":"rel.sock"}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"tcp","address":true}}"#,
                "transport.address",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":1}"#,
                "metadata",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":{"pid":-1}}"#,
                "metadata.pid",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":{"startTime":1}}"#,
                "metadata.startTime",
            ),
            (
                r#"{"token":"t","transport":{"type":"stdio"},"metadata":{"launchId":[]}}"#,
                "metadata.launchId",
            ),
        ];
        for (text, want) in cases {
            match parse(text) {
                Err(ConfigError::Field { field, .. }) => assert_eq!(field, *want, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn loopback_refusal_in_address_mentions_loopback() {
        let err = parse(r#"{"token":"t","transport":{"type":"tcp","address":"0.0.0.0:80"}}"#)
            .expect_err("not loopback");
        assert!(err.to_string().contains("loopback"), "{err}");
    }

    #[test]
    fn json_errors_have_position_and_no_content() {
        let err = parse("{\"token\": \"sekrit-sekrit\", oops}").expect_err("bad json");
        match &err {
            ConfigError::Json { line, column, .. } => {
                assert_eq!(*line, 1);
                assert!(*column > 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(!err.to_string().contains("sekrit"), "{err}");
    }

    #[test]
    fn no_error_contains_the_token() {
        let secret = "tok-abcdef-0123456789";
        let bad = [
            format!(r#"{{"token":"{secret}","transport":{{"type":"tcp","address":"x"}}}}"#),
            format!(r#"{{"token":"{secret}","transport":{{"type":"bogus"}}}}"#),
            format!(
                r#"{{"token":"{secret}","transport":{{"type":"stdio"}},"metadata":{{"pid":"{secret}"}}}}"#
            ),
            format!(r#"{{"token":"{secret}","transport":{{"type":"stdio"}}"#),
            format!(r#"{{"token":"{secret}" "transport":{{}}}}"#),
        ];
        for text in &bad {
            let err = parse(text).expect_err(text);
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
