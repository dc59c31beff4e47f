//! Windows named pipes (`pipe://NAME`, i.e. `\\.\pipe\NAME`), on tokio's named-pipe support.
//!
//! **Untested:** this module only compiles on Windows, and this crate's tests run on Linux. It
//! follows tokio's documented server and client patterns.
//!
//! Security: the server is created with `first_pipe_instance(true)`, so a pipe name that another
//! process already owns is refused rather than shared (no squatting), and with
//! `reject_remote_clients(true)`, so only local processes connect. The pipe keeps Windows' default
//! security descriptor (full control for the creator, SYSTEM and administrators; read for
//! everyone): restricting it further needs a raw security descriptor, which this `unsafe`-free
//! crate does not build. The session token remains the gate.

use std::time::Duration;

use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeServer, ServerOptions};
use tokio::sync::Mutex;

use crate::endpoint::Endpoint;
use crate::error::TransportError;
use crate::stream::ByteStream;

/// `ERROR_PIPE_BUSY`: the pipe exists but no server instance is waiting.
const ERROR_PIPE_BUSY: i32 = 231;
/// How long a client keeps retrying a busy pipe.
const BUSY_RETRIES: u32 = 100;
const BUSY_PAUSE: Duration = Duration::from_millis(50);

/// A named-pipe listener: always one server instance waiting for the next client.
#[derive(Debug)]
pub(crate) struct PipeListener {
    name: String,
    path: String,
    next: Mutex<NamedPipeServer>,
}

impl PipeListener {
    pub(crate) fn bind(name: &str) -> Result<Self, TransportError> {
        let endpoint = Endpoint::Pipe(name.to_owned());
        let path = format!(r"\\.\pipe\{name}");
        let server = ServerOptions::new()
            .first_pipe_instance(true)
            .reject_remote_clients(true)
            .create(&path)
            .map_err(|e| TransportError::io("create the named pipe", &endpoint, e))?;
        tracing::debug!(pipe = %path, "listening on a named pipe");
        Ok(PipeListener {
            name: name.to_owned(),
            path,
            next: Mutex::new(server),
        })
    }

    /// Cancel-safe: the waiting instance stays in place if the future is dropped.
    pub(crate) async fn accept(&self) -> Result<ByteStream, TransportError> {
        let endpoint = || Endpoint::Pipe(self.name.clone());
        let mut next = self.next.lock().await;
        next.connect()
            .await
            .map_err(|e| TransportError::io("accept on", endpoint(), e))?;
        let fresh = ServerOptions::new()
            .reject_remote_clients(true)
            .create(&self.path)
            .map_err(|e| TransportError::io("create the next instance of", endpoint(), e))?;
        let connected = std::mem::replace(&mut *next, fresh);
        Ok(ByteStream::new(connected))
    }
}

/// Open the client end of `\\.\pipe\NAME`, waiting up to about five seconds while it is busy.
pub(crate) async fn connect(name: &str) -> Result<ByteStream, TransportError> {
    let endpoint = Endpoint::Pipe(name.to_owned());
    let path = format!(r"\\.\pipe\{name}");
    let mut retries = 0;
    loop {
        match ClientOptions::new().open(&path) {
            Ok(client) => return Ok(ByteStream::new(client)),
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY) && retries < BUSY_RETRIES => {
                retries += 1;
            }
            Err(e) => return Err(TransportError::io("connect to", &endpoint, e)),
        }
        tokio::time::sleep(BUSY_PAUSE).await;
    }
}
