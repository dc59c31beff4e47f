//! [`Target`]: the mod under test, and how to open a connection to it.

use std::ffi::OsStr;
use std::fmt;
use std::process::{Command, Stdio};
use std::sync::Arc;

use gabp_transport::{ByteStream, Endpoint, Token, GABP_TOKEN};

#[derive(Clone)]
enum Kind {
    Endpoint(Endpoint),
    Spawn(Arc<dyn Fn() -> Command + Send + Sync>),
    InMemory(Arc<dyn Fn() -> ByteStream + Send + Sync>),
}

/// The mod under test: where to reach it, and the token it expects.
///
/// The suite opens many connections (a wrong token or a malformed header must end one), so a target is a way
/// to open connections rather than one connection:
///
/// - [`Target::endpoint`]: a listening mod (`tcp://127.0.0.1:PORT`, `unix:///path.sock`, `pipe://NAME`);
/// - [`Target::spawn`]: a command that runs a mod on its stdin/stdout, started once per connection;
/// - [`Target::in_memory`]: a closure that opens an in-memory connection (tests).
///
/// ```
/// use gabp_testkit::conformance::Target;
/// use gabp_transport::{Endpoint, Token};
///
/// let token = Token::generate()?;
/// let tcp = Target::endpoint("tcp://127.0.0.1:4711".parse()?, token.clone());
/// assert_eq!(tcp.to_string(), "tcp://127.0.0.1:4711");
/// let stdio = Target::spawn("gabp", ["mod", "--stdio"], token);
/// assert_eq!(stdio.to_string(), "spawn: gabp mod --stdio");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Target {
    kind: Kind,
    token: Token,
    description: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

impl Target {
    /// A mod listening at `endpoint` that expects `token`.
    #[must_use]
    pub fn endpoint(endpoint: Endpoint, token: Token) -> Target {
        Target {
            description: endpoint.to_string(),
            kind: Kind::Endpoint(endpoint),
            token,
        }
    }

    /// A mod started as `program args...` for each connection, talking over its stdin and stdout. The
    /// child gets `token` in its `GABP_TOKEN` environment variable (so a freshly generated token works with
    /// any mod that reads the GABS environment), and its stderr is discarded. The child is killed when its
    /// connection is done.
    #[must_use]
    pub fn spawn<I, S>(program: impl AsRef<OsStr>, args: I, token: Token) -> Target
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref().to_owned();
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut description = format!("spawn: {}", program.to_string_lossy());
        for arg in &args {
            description.push(' ');
            description.push_str(&arg.to_string_lossy());
        }
        let secret = token.expose_secret().to_owned();
        let make = move || {
            let mut command = Command::new(&program);
            command
                .args(&args)
                .env(GABP_TOKEN, &secret)
                .stderr(Stdio::null());
            command
        };
        Target {
            kind: Kind::Spawn(Arc::new(make)),
            token,
            description,
        }
    }

    /// A mod started by the command `make` returns, once per connection, talking over its stdin and stdout
    /// (stdin and stdout are replaced by pipes; everything else, the environment and stderr included, is as
    /// `make` sets it). `description` names it in the report.
    #[must_use]
    pub fn spawn_with(
        token: Token,
        description: impl Into<String>,
        make: impl Fn() -> Command + Send + Sync + 'static,
    ) -> Target {
        Target {
            kind: Kind::Spawn(Arc::new(make)),
            token,
            description: description.into(),
        }
    }

    /// A mod reached through `connect`, which opens a new connection each time it is called (for example
    /// one end of a `tokio::io::duplex` pair whose other end a mod serves). It is called within the Tokio
    /// runtime of the run, so it may spawn tasks.
    #[must_use]
    pub fn in_memory(
        token: Token,
        connect: impl Fn() -> ByteStream + Send + Sync + 'static,
    ) -> Target {
        Target {
            kind: Kind::InMemory(Arc::new(connect)),
            token,
            description: "in-memory".to_owned(),
        }
    }

    /// The same target, named `description` in the report.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Target {
        self.description = description.into();
        self
    }

    /// The token the mod expects.
    #[must_use]
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Opens a new raw connection. The error is one line.
    pub(crate) async fn open(&self) -> Result<ByteStream, String> {
        match &self.kind {
            Kind::Endpoint(endpoint) => gabp_transport::connect_stream(endpoint)
                .await
                .map_err(|e| e.to_string()),
            Kind::Spawn(make) => {
                let (connection, _process) =
                    gabp_transport::spawn(make()).map_err(|e| e.to_string())?;
                // The stream keeps the child alive; dropping it kills the child.
                Ok(connection.into_framed().into_parts().io)
            }
            Kind::InMemory(connect) => Ok(connect()),
        }
    }
}
