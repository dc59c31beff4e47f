//! Where a GABP connection lives: [`Endpoint`] and its textual form.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use gabp_types::shorten;

use crate::error::TransportError;

/// The longest pipe name [`Endpoint::Pipe`] accepts (Windows allows 256 characters after
/// `\\.\pipe\`).
const MAX_PIPE_NAME: usize = 256;

/// The Windows prefix of a named pipe path.
const PIPE_PREFIX: &str = r"\\.\pipe\";

/// A transport address in the GABP sense.
///
/// The textual forms, accepted by [`str::parse`] and produced by [`Display`](fmt::Display), are:
///
/// | form | meaning |
/// |---|---|
/// | `tcp://127.0.0.1:PORT` | TCP on IPv4 loopback (any `127.0.0.0/8` address) |
/// | `tcp://[::1]:PORT` | TCP on IPv6 loopback |
/// | `tcp://localhost:PORT` | read as `tcp://127.0.0.1:PORT` (no name lookup is ever made) |
/// | `unix:///abs/path.sock` | a Unix domain socket at an absolute path |
/// | `pipe://NAME` | the Windows named pipe `\\.\pipe\NAME` (the raw `\\.\pipe\NAME` is accepted too) |
/// | `stdio` | the standard input and output of a process |
/// | `ws://127.0.0.1:PORT`, `ws://[::1]:PORT` | WebSocket on loopback, one envelope per text message |
///
/// TCP is loopback-only (SPEC/1.0/security.md §4): parsing refuses every other address, and so do
/// [`Listener::bind`](crate::Listener::bind) and [`connect`](crate::connect) for a hand-built
/// [`Endpoint::Tcp`]. Port `0` is accepted for binding (the system picks a free port; the
/// listener reports the real one).
///
/// ```
/// use gabp_transport::Endpoint;
///
/// let ep: Endpoint = "tcp://[::1]:4711".parse()?;
/// assert_eq!(ep.to_string(), "tcp://[::1]:4711");
///
/// let err = "tcp://0.0.0.0:4711".parse::<Endpoint>().unwrap_err();
/// assert!(err.to_string().contains("loopback"));
/// # Ok::<(), gabp_transport::TransportError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// TCP on a loopback address.
    Tcp(SocketAddr),
    /// A Unix domain socket at an absolute path.
    Unix(PathBuf),
    /// A Windows named pipe, by its short name (`NAME` in `\\.\pipe\NAME`).
    Pipe(String),
    /// The standard input and output of a process: the mod's own, or a spawned child's.
    Stdio,
    /// WebSocket on a loopback address (SPEC/1.0 transport.md §2.5).
    WebSocket(SocketAddr),
}

impl Endpoint {
    /// A TCP endpoint on `127.0.0.1` at `port` (`0` lets the system choose when binding).
    ///
    /// ```
    /// assert_eq!(gabp_transport::Endpoint::tcp_v4(4711).to_string(), "tcp://127.0.0.1:4711");
    /// ```
    #[must_use]
    pub fn tcp_v4(port: u16) -> Self {
        Endpoint::Tcp(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
    }

    /// A TCP endpoint on `::1` at `port` (`0` lets the system choose when binding).
    #[must_use]
    pub fn tcp_v6(port: u16) -> Self {
        Endpoint::Tcp(SocketAddr::new(
            IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            port,
        ))
    }

    /// A Unix socket endpoint, checking that `path` is absolute.
    ///
    /// # Errors
    ///
    /// [`TransportError::RelativeUnixPath`] for a relative path, [`TransportError::InvalidUnixPath`]
    /// for an empty one or one containing a NUL byte.
    pub fn unix(path: impl Into<PathBuf>) -> Result<Self, TransportError> {
        let path = path.into();
        check_unix_path(&path)?;
        Ok(Endpoint::Unix(path))
    }

    /// A Unix socket endpoint at an unpredictable path: `gabp-<128 random bits>.sock` in `dir`.
    ///
    /// Use it with [`Listener::bind`](crate::Listener::bind) to follow SPEC/1.0/transport.md §2.3
    /// (mode 0600, an unpredictable path); a good `dir` is `$XDG_RUNTIME_DIR` or
    /// [`std::env::temp_dir`].
    ///
    /// # Errors
    ///
    /// As [`Endpoint::unix`], plus [`TransportError::Random`] if the OS random source fails.
    pub fn unix_unique_in(dir: impl AsRef<Path>) -> Result<Self, TransportError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| TransportError::Random(e.to_string()))?;
        let name = format!("gabp-{}.sock", crate::token::to_hex(&bytes));
        Endpoint::unix(dir.as_ref().join(name))
    }

    /// A named pipe endpoint, checking the name.
    ///
    /// # Errors
    ///
    /// [`TransportError::InvalidPipeName`] for an empty name, one longer than 256 characters, or one
    /// containing `\`, `/` or a control character.
    pub fn pipe(name: impl Into<String>) -> Result<Self, TransportError> {
        let name = name.into();
        check_pipe_name(&name)?;
        Ok(Endpoint::Pipe(name))
    }

    /// For a [`Endpoint::Pipe`], the full Windows path `\\.\pipe\NAME`.
    #[must_use]
    pub fn pipe_path(&self) -> Option<String> {
        match self {
            Endpoint::Pipe(name) => Some(format!("{PIPE_PREFIX}{name}")),
            _ => None,
        }
    }

    /// The scheme of the textual form: `tcp`, `unix`, `pipe`, `stdio` or `ws`.
    #[must_use]
    pub fn scheme(&self) -> &'static str {
        match self {
            Endpoint::Tcp(_) => "tcp",
            Endpoint::Unix(_) => "unix",
            Endpoint::Pipe(_) => "pipe",
            Endpoint::Stdio => "stdio",
            Endpoint::WebSocket(_) => "ws",
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // SocketAddr's Display already brackets IPv6 addresses.
            Endpoint::Tcp(addr) => write!(f, "tcp://{addr}"),
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            Endpoint::Pipe(name) => write!(f, "pipe://{name}"),
            Endpoint::Stdio => f.write_str("stdio"),
            Endpoint::WebSocket(addr) => write!(f, "ws://{addr}"),
        }
    }
}

impl FromStr for Endpoint {
    type Err = TransportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "stdio" || s == "stdio://" {
            return Ok(Endpoint::Stdio);
        }
        if let Some(rest) = s.strip_prefix("tcp://") {
            return parse_tcp(rest).map(Endpoint::Tcp);
        }
        if let Some(rest) = s.strip_prefix("ws://") {
            // The one path a GABP WebSocket has is `/`.
            let rest = rest.strip_suffix('/').unwrap_or(rest);
            return parse_tcp(rest).map(Endpoint::WebSocket);
        }
        if let Some(rest) = s.strip_prefix("unix://") {
            return Endpoint::unix(rest);
        }
        if let Some(rest) = s.strip_prefix("pipe://") {
            return Endpoint::pipe(rest);
        }
        if let Some(rest) = s.strip_prefix(PIPE_PREFIX) {
            return Endpoint::pipe(rest);
        }
        Err(TransportError::UnknownForm(shown(s)))
    }
}

impl TryFrom<&str> for Endpoint {
    type Error = TransportError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// How much of the input an error echoes back, in characters, so a huge input never makes a huge
/// message.
const SHOWN_CHARS: usize = 120;

/// The input as an error echoes it back: cut to [`SHOWN_CHARS`].
fn shown(s: &str) -> String {
    shorten(s, SHOWN_CHARS).into_owned()
}

fn parse_tcp(rest: &str) -> Result<SocketAddr, TransportError> {
    // Split host and port at the last colon; an IPv6 host must be bracketed.
    let (host, port) = if let Some(after_bracket) = rest.strip_prefix('[') {
        let close = after_bracket
            .find(']')
            .ok_or_else(|| TransportError::InvalidTcpAddress(shown(rest)))?;
        let host = &after_bracket[..close];
        let port = after_bracket[close + 1..]
            .strip_prefix(':')
            .ok_or_else(|| TransportError::InvalidTcpAddress(shown(rest)))?;
        let ip: std::net::Ipv6Addr = host
            .parse()
            .map_err(|_| TransportError::InvalidTcpAddress(shown(rest)))?;
        (HostPart::Ip(IpAddr::V6(ip)), port)
    } else {
        let colon = rest
            .rfind(':')
            .ok_or_else(|| TransportError::InvalidTcpAddress(shown(rest)))?;
        let host = &rest[..colon];
        let port = &rest[colon + 1..];
        if host.is_empty() || host.contains(':') {
            // Empty host, or an unbracketed IPv6 address.
            return Err(TransportError::InvalidTcpAddress(shown(rest)));
        }
        let host = match host.parse::<Ipv4Addr>() {
            Ok(ip) => HostPart::Ip(IpAddr::V4(ip)),
            Err(_) => HostPart::Name(host),
        };
        (host, port)
    };
    let port = parse_port(port)?;
    let ip = match host {
        HostPart::Ip(ip) => ip,
        HostPart::Name(name) if name.eq_ignore_ascii_case("localhost") => {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
        HostPart::Name(name) => {
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            {
                return Err(TransportError::InvalidTcpAddress(shown(rest)));
            }
            return Err(TransportError::NotLoopback(shown(name)));
        }
    };
    let addr = SocketAddr::new(ip, port);
    check_loopback(&addr)?;
    Ok(addr)
}

enum HostPart<'a> {
    Ip(IpAddr),
    Name(&'a str),
}

fn parse_port(port: &str) -> Result<u16, TransportError> {
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TransportError::InvalidPort(shown(port)));
    }
    port.parse::<u16>()
        .map_err(|_| TransportError::InvalidPort(shown(port)))
}

/// Refuse any address that is not loopback.
pub(crate) fn check_loopback(addr: &SocketAddr) -> Result<(), TransportError> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(TransportError::NotLoopback(addr.ip().to_string()))
    }
}

fn check_unix_path(path: &Path) -> Result<(), TransportError> {
    let shown = shown(&path.to_string_lossy());
    if path.as_os_str().is_empty() || path.to_string_lossy().contains('\0') {
        return Err(TransportError::InvalidUnixPath(shown));
    }
    // `Path::is_absolute` on Windows wants a drive prefix; a Unix socket path is absolute when it
    // starts with a separator.
    if !(path.is_absolute() || path.to_string_lossy().starts_with('/')) {
        return Err(TransportError::RelativeUnixPath(shown));
    }
    Ok(())
}

fn check_pipe_name(name: &str) -> Result<(), TransportError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_PIPE_NAME
        && !name
            .chars()
            .any(|c| c == '\\' || c == '/' || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(TransportError::InvalidPipeName(shown(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Endpoint, TransportError> {
        s.parse()
    }

    #[test]
    fn round_trips_each_form() {
        for s in [
            "tcp://127.0.0.1:4711",
            "tcp://127.0.0.1:0",
            "tcp://127.1.2.3:65535",
            "tcp://[::1]:4711",
            "unix:///tmp/gabp.sock",
            "pipe://gabp-1234",
            "stdio",
            "ws://127.0.0.1:4711",
            "ws://[::1]:4711",
        ] {
            let ep = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(ep.to_string(), s);
        }
    }

    #[test]
    fn websocket_is_loopback_only_like_tcp() {
        assert_eq!(
            parse("ws://localhost:9/").expect("trailing slash"),
            Endpoint::WebSocket("127.0.0.1:9".parse().expect("addr"))
        );
        for s in ["ws://0.0.0.0:80", "ws://10.0.0.2:80", "ws://example.com:80"] {
            let err = parse(s).expect_err(s);
            assert!(err.to_string().contains("loopback"), "{s}: {err}");
        }
        for s in [
            "ws://127.0.0.1:80/x",
            "wss://127.0.0.1:80",
            "ws://127.0.0.1",
        ] {
            assert!(parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn localhost_reads_as_ipv4_loopback() {
        assert_eq!(parse("tcp://localhost:80").ok(), Some(Endpoint::tcp_v4(80)));
        assert_eq!(parse("tcp://LOCALHOST:80").ok(), Some(Endpoint::tcp_v4(80)));
    }

    #[test]
    fn raw_windows_pipe_path_is_accepted() {
        let ep = parse(r"\\.\pipe\gabp-x").expect("pipe");
        assert_eq!(ep, Endpoint::Pipe("gabp-x".into()));
        assert_eq!(ep.pipe_path().as_deref(), Some(r"\\.\pipe\gabp-x"));
        assert_eq!(parse("stdio://").ok(), Some(Endpoint::Stdio));
    }

    #[test]
    fn refuses_unspecified_v4() {
        let err = parse("tcp://0.0.0.0:80").expect_err("0.0.0.0");
        assert!(matches!(err, TransportError::NotLoopback(_)));
        assert!(err.to_string().contains("loopback"));
    }

    #[test]
    fn refuses_unspecified_v6() {
        let err = parse("tcp://[::]:80").expect_err("::");
        assert!(err.to_string().contains("loopback"));
    }

    #[test]
    fn refuses_lan_address() {
        let err = parse("tcp://192.168.1.20:80").expect_err("lan");
        assert!(matches!(err, TransportError::NotLoopback(_)));
        assert!(err.to_string().contains("loopback"));
    }

    #[test]
    fn refuses_non_loopback_host_name_without_looking_it_up() {
        let err = parse("tcp://example.com:80").expect_err("host name");
        assert!(matches!(&err, TransportError::NotLoopback(host) if host == "example.com"));
        assert!(err.to_string().contains("loopback"));
    }

    #[test]
    fn refuses_ipv4_mapped_loopback() {
        // ::ffff:127.0.0.1 is an IPv6 socket talking IPv4; SPEC/1.0/security.md §4 allows
        // 127.0.0.0/8 and ::1 only.
        let err = parse("tcp://[::ffff:127.0.0.1]:80").expect_err("mapped");
        assert!(err.to_string().contains("loopback"));
    }

    #[test]
    fn refuses_malformed_tcp() {
        for s in [
            "tcp://",
            "tcp://127.0.0.1",
            "tcp://127.0.0.1:",
            "tcp://:80",
            "tcp://::1:80",
            "tcp://[::1]",
            "tcp://[::1]80",
            "tcp://[nope]:80",
            "tcp://host name:80",
        ] {
            let err = parse(s).expect_err(s);
            assert!(
                matches!(
                    err,
                    TransportError::InvalidTcpAddress(_) | TransportError::InvalidPort(_)
                ),
                "{s}: {err:?}"
            );
        }
    }

    #[test]
    fn refuses_bad_ports() {
        for s in [
            "tcp://127.0.0.1:65536",
            "tcp://127.0.0.1:-1",
            "tcp://127.0.0.1:+80",
            "tcp://127.0.0.1:80x",
            "tcp://127.0.0.1:999999",
        ] {
            assert!(
                matches!(parse(s), Err(TransportError::InvalidPort(_))),
                "{s}"
            );
        }
    }

    #[test]
    fn refuses_relative_unix_path() {
        assert!(matches!(
            parse("unix://gabp.sock"),
            Err(TransportError::RelativeUnixPath(_))
        ));
        assert!(matches!(
            parse("unix://"),
            Err(TransportError::InvalidUnixPath(_))
        ));
        assert!(matches!(
            parse("unix:///tmp/a\0b"),
            Err(TransportError::InvalidUnixPath(_))
        ));
    }

    #[test]
    fn refuses_bad_pipe_names() {
        let long = format!("pipe://{}", "a".repeat(257));
        for s in ["pipe://", "pipe://a\\b", "pipe://a/b", "pipe://a\nb", &long] {
            assert!(
                matches!(parse(s), Err(TransportError::InvalidPipeName(_))),
                "{s}"
            );
        }
        assert!(parse(&format!("pipe://{}", "a".repeat(256))).is_ok());
    }

    #[test]
    fn refuses_unknown_forms() {
        for s in [
            "",
            "127.0.0.1:80",
            "http://127.0.0.1:80",
            "TCP://127.0.0.1:80",
            "stdin",
        ] {
            let err = parse(s).expect_err(s);
            assert!(matches!(err, TransportError::UnknownForm(_)), "{s}");
        }
    }

    #[test]
    fn errors_truncate_huge_input() {
        let huge = "x".repeat(10_000);
        let err = parse(&huge).expect_err("huge");
        assert!(err.to_string().len() < 400);
    }

    #[test]
    fn unique_unix_paths_differ() {
        let a = Endpoint::unix_unique_in("/tmp").expect("a");
        let b = Endpoint::unix_unique_in("/tmp").expect("b");
        assert_ne!(a, b);
        assert!(a.to_string().starts_with("unix:///tmp/gabp-"));
    }

    proptest::proptest! {
        #[test]
        fn display_parse_round_trip(port in 0u16.., v6 in proptest::bool::ANY, name in "[a-zA-Z0-9._-]{1,40}") {
            let tcp = if v6 { Endpoint::tcp_v6(port) } else { Endpoint::tcp_v4(port) };
            proptest::prop_assert_eq!(parse(&tcp.to_string()).ok(), Some(tcp));
            let pipe = Endpoint::pipe(name.clone()).expect("pipe name");
            proptest::prop_assert_eq!(parse(&pipe.to_string()).ok(), Some(pipe));
            let unix = Endpoint::unix(format!("/run/{name}.sock")).expect("unix");
            proptest::prop_assert_eq!(parse(&unix.to_string()).ok(), Some(unix));
        }

        #[test]
        fn parse_never_panics(s in ".{0,64}") {
            let _ = parse(&s);
        }
    }
}
