//! Progress of the bridge's calls (SPEC/1.0 extensions.md §progress): a token per call, and the events of the
//! mod routed to it by token, as a stream.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream};
use gabp_types::methods::{ProgressPayload, ProgressToken, PROGRESS_EXTENSION};
use parking_lot::Mutex;
use serde_json::{json, Value};

use super::shared::Shared;
use super::{Bridge, BridgeRequest};
use crate::Error;

/// How many progress items of one call may wait for its reader; more are dropped (the next one carries the
/// news).
const PROGRESS_BUFFER: usize = 32;

/// The progress streams of calls in flight, by token.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    next: AtomicU64,
    routes: Mutex<HashMap<ProgressToken, mpsc::Sender<ProgressPayload>>>,
}

impl ProgressRoutes {
    fn register(&self) -> (ProgressToken, mpsc::Receiver<ProgressPayload>) {
        let token = ProgressToken::String(format!(
            "progress-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = mpsc::channel(PROGRESS_BUFFER);
        self.routes.lock().insert(token.clone(), tx);
        (token, rx)
    }

    /// A `tools/progress` payload from the mod: to the stream of its token, if anyone still listens.
    pub(crate) fn deliver(&self, payload: Value) {
        let Ok(payload) = serde_json::from_value::<ProgressPayload>(payload) else {
            tracing::debug!("dropping a malformed progress event");
            return;
        };
        if let Some(tx) = self.routes.lock().get_mut(&payload.progress_token) {
            let _ = tx.try_send(payload);
        }
    }
}

/// The progress items of one call, in the order the mod sent them; ends when the call ends. Dropping it stops
/// the routing (the call goes on).
pub struct ProgressUpdates {
    token: ProgressToken,
    rx: mpsc::Receiver<ProgressPayload>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ProgressUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressUpdates")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl ProgressUpdates {
    /// The token the call's request carries.
    #[must_use]
    pub fn token(&self) -> &ProgressToken {
        &self.token
    }
}

impl Stream for ProgressUpdates {
    type Item = ProgressPayload;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ProgressPayload>> {
        Pin::new(&mut self.rx).poll_next(cx)
    }
}

impl Drop for ProgressUpdates {
    fn drop(&mut self) {
        self.shared.progress.routes.lock().remove(&self.token);
    }
}

/// Ends the stream of `token` when the call is over.
struct EndOnDrop {
    token: ProgressToken,
    shared: Arc<Shared>,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        // Dropping the sender ends the stream once the items already queued are read.
        self.shared.progress.routes.lock().remove(&self.token);
    }
}

impl Bridge {
    /// Whether the mod offers the `progress` extension.
    #[must_use]
    pub fn offers_progress(&self) -> bool {
        self.welcome()
            .capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.get(PROGRESS_EXTENSION).is_some())
    }

    /// A fresh progress token and the stream of the progress events the mod sends with it, for a request
    /// made with [`BridgeRequest::tool_call_with_progress`] (through layers or a gate of one's own). The
    /// stream ends when it is dropped.
    #[must_use]
    pub fn progress_updates(&self) -> ProgressUpdates {
        let shared = self.inner.raw.shared.clone();
        let (token, rx) = shared.progress.register();
        ProgressUpdates { token, rx, shared }
    }

    /// Calls tool `name` asking the mod for its progress: the stream of progress items, and the call's result.
    /// Progress comes strictly before the result. A mod without the `progress` extension is called as by
    /// [`Bridge::call_tool`] (without the token), and the stream ends with the call.
    ///
    /// ```no_run
    /// use futures::StreamExt;
    /// # async fn run(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// let (mut progress, call) = bridge.call_tool_with_progress("demo/sleep", serde_json::json!({"ms": 500}));
    /// let printer = async {
    ///     while let Some(p) = progress.next().await {
    ///         println!("{} of {:?}", p.progress, p.total);
    ///     }
    /// };
    /// let (result, ()) = futures::join!(call, printer);
    /// println!("{}", result?);
    /// # Ok(()) }
    /// ```
    pub fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: Value,
    ) -> (ProgressUpdates, BoxFuture<'static, Result<Value, Error>>) {
        let updates = self.progress_updates();
        let token = updates.token.clone();
        let shared = self.inner.raw.shared.clone();
        let request = if self.offers_progress() {
            BridgeRequest::tool_call_with_progress(name, arguments, &token)
        } else {
            BridgeRequest::tool_call(name, arguments)
        };
        let bridge = self.clone();
        let call = async move {
            let _end = EndOnDrop { token, shared };
            Ok(bridge.send(request?).await?.into_result())
        }
        .boxed();
        (updates, call)
    }
}

impl BridgeRequest {
    /// A `tools/call` request whose params carry `_meta.progressToken` (SPEC/1.0 extensions.md §progress).
    ///
    /// # Errors
    ///
    /// As [`BridgeRequest::tool_call`].
    pub fn tool_call_with_progress(
        name: &str,
        arguments: Value,
        token: &ProgressToken,
    ) -> Result<Self, Error> {
        let arguments = match arguments {
            Value::Null => json!({}),
            v @ Value::Object(_) => v,
            other => {
                return Err(Error::invalid_request(format!(
                    "tool arguments must be a JSON object or null, not {other}"
                )))
            }
        };
        BridgeRequest::from_json(
            "tools/call",
            json!({ "name": name, "arguments": arguments, "_meta": { "progressToken": token } }),
        )
    }
}
