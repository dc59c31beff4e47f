//! Progress of the bridge's calls (SPEC/1.0 extensions.md §progress): a token per call, and the events of the
//! mod routed to it by token, as a stream.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::channel::mpsc;
use futures::Stream;
use gabp_types::methods::{ProgressPayload, ProgressToken};
use parking_lot::Mutex;
use serde_json::Value;

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
    /// A fresh token, and the stream of the progress events the mod sends with it.
    pub(crate) fn register(self: &Arc<Self>) -> ProgressUpdates {
        let token = ProgressToken::String(format!(
            "progress-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = mpsc::channel(PROGRESS_BUFFER);
        self.routes.lock().insert(token.clone(), tx);
        ProgressUpdates {
            rx,
            route: Route {
                token,
                routes: self.clone(),
            },
        }
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
    rx: mpsc::Receiver<ProgressPayload>,
    route: Route,
}

impl std::fmt::Debug for ProgressUpdates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressUpdates")
            .field("token", &self.route.token)
            .finish_non_exhaustive()
    }
}

impl ProgressUpdates {
    /// The token the call's request carries.
    #[must_use]
    pub fn token(&self) -> &ProgressToken {
        &self.route.token
    }

    /// What ends this stream when the call is over: the call holds it.
    pub(crate) fn end_on_drop(&self) -> Route {
        self.route.clone()
    }
}

impl Stream for ProgressUpdates {
    type Item = ProgressPayload;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ProgressPayload>> {
        Pin::new(&mut self.rx).poll_next(cx)
    }
}

/// The route of one token, until the first of its holders (the stream, its call) is dropped.
#[derive(Clone)]
pub(crate) struct Route {
    token: ProgressToken,
    routes: Arc<ProgressRoutes>,
}

impl Drop for Route {
    fn drop(&mut self) {
        // Dropping the sender ends the stream once the items already queued are read.
        self.routes.routes.lock().remove(&self.token);
    }
}
