//! [`BlockingClient`]: the [`RawClient`] for blocking tests, on a runtime of its own.

use std::collections::VecDeque;
use std::io;
use std::process::{ChildStdin, ChildStdout};
use std::time::Duration;

use gabp_transport::{Endpoint, TransportError};
use gabp_types::{ErrorObject, Event, Message, MessageId, Response};
use serde_json::Value;
use tokio::runtime::Runtime;

use super::RawClient;
use crate::TestkitError;

/// A [`RawClient`] driven from blocking code (a test of a spawned process, say): each method runs the
/// client's method to completion on a single-threaded runtime the client owns. Nothing is read between
/// calls, as with the async client. Must not be used inside a Tokio runtime.
pub struct BlockingClient {
    client: RawClient,
    runtime: Runtime,
}

/// Blocking forms of [`RawClient`] methods, each documented there.
macro_rules! blocking {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        #[doc = concat!("[`RawClient::", stringify!($name), "`], blocking.")]
        pub fn $name(&mut self, $($arg: $ty),*) -> $out {
            self.runtime.block_on(self.client.$name($($arg),*))
        }
    )*};
}

impl BlockingClient {
    /// Connects to a mod at `endpoint`.
    ///
    /// # Errors
    ///
    /// As [`RawClient::connect`]; [`TestkitError::Transport`] with an I/O error if the runtime cannot start.
    pub fn connect(endpoint: &Endpoint) -> Result<Self, TestkitError> {
        let runtime = runtime().map_err(|source| TransportError::Io {
            op: "start a runtime for",
            target: endpoint.to_string(),
            source,
        })?;
        let client = runtime.block_on(RawClient::connect(endpoint))?;
        Ok(BlockingClient { client, runtime })
    }

    /// A client on a child process's stdin and stdout (SPEC/1.0 transport.md §2.1).
    ///
    /// # Errors
    ///
    /// [`TestkitError::Transport`] with an I/O error if the runtime cannot start or cannot take the pipes.
    pub fn child(stdin: ChildStdin, stdout: ChildStdout) -> Result<Self, TestkitError> {
        let failed = |op: &'static str| {
            move |source: io::Error| TransportError::Io {
                op,
                target: "a child process".to_owned(),
                source,
            }
        };
        let runtime = runtime().map_err(failed("start a runtime for"))?;
        let client = {
            let _inside = runtime.enter();
            let stdin =
                tokio::process::ChildStdin::from_std(stdin).map_err(failed("take the stdin of"))?;
            let stdout = tokio::process::ChildStdout::from_std(stdout)
                .map_err(failed("take the stdout of"))?;
            RawClient::from_parts(stdout, stdin)
        };
        Ok(BlockingClient { client, runtime })
    }

    /// See [`RawClient::set_patience`].
    pub fn set_patience(&mut self, patience: Duration) {
        self.client.set_patience(patience);
    }

    /// See [`RawClient::events`].
    #[must_use]
    pub fn events(&self) -> &VecDeque<Event> {
        self.client.events()
    }

    blocking! {
        send_frame(body: &[u8]) -> ();
        send_value(message: &Value) -> ();
        shutdown_write() -> ();
        next_message() -> Option<Message>;
        response(id: MessageId) -> Response;
        next_event() -> Event;
        until_closed() -> Vec<Message>;
        send_request(message: &Value) -> Response;
        call(method: &str, params: Option<Value>) -> Response;
        ok(method: &str, params: Option<Value>) -> Value;
        err(method: &str, params: Option<Value>) -> ErrorObject;
        call_tool(name: &str, arguments: Value) -> Response;
        hello(token: &str) -> Value;
    }
}

fn runtime() -> io::Result<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
