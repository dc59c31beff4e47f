//! The requests a connection is handling on tasks of their own, and among them the `tools/call` requests the
//! bridge may cancel with `tools/cancel` (SPEC/1.0 extensions.md §cancel). A request answered at its first poll
//! never gets here: it is finished before a cancel could name it.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::FutureExt;
use gabp_types::{ErrorCode, ErrorObject, MessageId, Response};
use parking_lot::Mutex;
use tokio::task::{AbortHandle, Id, JoinSet};

use super::backlog::Charge;
use super::body::{encode, panicked};

/// The answer of a call cancelled with `tools/cancel`.
fn cancelled_error() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::TOOL_CANCELLED,
        "the call was cancelled (tools/cancel)",
    )
}

/// The requests being handled on tasks of their own; each task yields its serialized answer.
pub(crate) struct Handling {
    tasks: JoinSet<Bytes>,
    /// The requests that can be cancelled, when the role answers `tools/cancel`.
    in_flight: Option<Arc<InFlight>>,
    /// The largest answer written (SPEC/1.0 security.md §7).
    max: usize,
}

impl Handling {
    pub(crate) fn new(in_flight: Option<Arc<InFlight>>, max: usize) -> Self {
        Handling {
            tasks: JoinSet::new(),
            in_flight,
            max,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether `tools/call` requests can be cancelled here.
    pub(crate) fn cancellable(&self) -> bool {
        self.in_flight.is_some()
    }

    /// Handles request `id` on a task of its own, its bytes counted by `charge` until it ends; `cancellable`: the
    /// peer may name it in `tools/cancel`.
    pub(crate) fn spawn<F>(&mut self, id: MessageId, answer: F, charge: Charge, cancellable: bool)
    where
        F: Future<Output = Result<Response, Infallible>> + Send + 'static,
    {
        let max = self.max;
        let handle = self.tasks.spawn(async move {
            let _charge = charge;
            let response = match AssertUnwindSafe(answer).catch_unwind().await {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(_) => panicked(id),
            };
            encode(response, max)
        });
        if let (true, Some(in_flight)) = (cancellable, &self.in_flight) {
            in_flight.register(id, handle);
        }
    }

    /// The serialized answer of a request that finished (one cancelled with `tools/cancel` is answered `-32404`);
    /// pending once none has. An empty set has nothing to wake the engine for, so it is not polled: a turn that
    /// spawns a task is always followed by another.
    #[inline]
    pub(crate) fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        if self.tasks.is_empty() {
            return Poll::Pending;
        }
        self.poll_finished(cx)
    }

    fn poll_finished(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        loop {
            let Poll::Ready(Some(done)) = self.tasks.poll_join_next_with_id(cx) else {
                return Poll::Pending;
            };
            let task = match &done {
                Ok((task, _)) => *task,
                Err(e) => e.id(),
            };
            let cancelled = self
                .in_flight
                .as_ref()
                .and_then(|f| f.finished(task))
                .filter(|(_, cancelled)| *cancelled);
            match done {
                Ok((_, answer)) => return Poll::Ready(answer),
                Err(e) if e.is_cancelled() => {
                    if let Some((id, _)) = cancelled {
                        return Poll::Ready(encode(
                            Response::error(id, cancelled_error()),
                            self.max,
                        ));
                    }
                }
                Err(e) => tracing::error!(error = %e, "a request task failed"),
            }
        }
    }

    /// Whatever is still being handled has nobody to answer to (SPEC/1.0 gabp.md §7).
    pub(crate) fn abort_all(&mut self) {
        self.tasks.abort_all();
    }
}

/// A call in flight: its request, its task, whether `tools/cancel` aborted it.
struct Entry {
    request: MessageId,
    task: AbortHandle,
    cancelled: bool,
}

/// One connection's cancellable requests: a few at a time (at most the connection's concurrent requests), so
/// a list searched in place costs less than hashing on every call.
#[derive(Default)]
pub(crate) struct InFlight {
    entries: Mutex<Vec<Entry>>,
}

impl InFlight {
    /// Request `id` runs as the task of `handle`.
    pub(crate) fn register(&self, id: MessageId, handle: AbortHandle) {
        self.entries.lock().push(Entry {
            request: id,
            task: handle,
            cancelled: false,
        });
    }

    /// Cancels request `id`: its task is aborted (its handler's cancellation token fires) and it is answered
    /// `-32404` when the engine sees the task end. `false` when no such request is running here.
    pub(crate) fn cancel(&self, id: &MessageId) -> bool {
        let mut entries = self.entries.lock();
        let running = entries
            .iter_mut()
            .rev()
            .find(|e| e.request == *id && !e.task.is_finished());
        match running {
            Some(entry) => {
                entry.cancelled = true;
                entry.task.abort();
                true
            }
            None => false,
        }
    }

    /// The task `task` ended: its request, and whether it ended because it was cancelled here.
    pub(crate) fn finished(&self, task: Id) -> Option<(MessageId, bool)> {
        let mut entries = self.entries.lock();
        let at = entries.iter().position(|e| e.task.id() == task)?;
        let entry = entries.swap_remove(at);
        Some((entry.request, entry.cancelled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancelled_task_is_reported_once_and_a_finished_one_is_not_cancelled() {
        let in_flight = InFlight::default();
        let mut tasks = tokio::task::JoinSet::new();
        let slow = MessageId::new_v4();
        let handle = tasks.spawn(std::future::pending::<()>());
        in_flight.register(slow, handle);
        assert!(in_flight.cancel(&slow));
        let Some(Err(e)) = tasks.join_next_with_id().await else {
            panic!("the task was not aborted")
        };
        assert!(e.is_cancelled());
        assert_eq!(in_flight.finished(e.id()), Some((slow, true)));
        assert_eq!(in_flight.finished(e.id()), None);
        assert!(
            !in_flight.cancel(&slow),
            "a finished request is not cancelled"
        );

        let quick = MessageId::new_v4();
        let handle = tasks.spawn(async {});
        in_flight.register(quick, handle);
        let Some(Ok((task, ()))) = tasks.join_next_with_id().await else {
            panic!("the task failed")
        };
        assert!(!in_flight.cancel(&quick));
        assert_eq!(in_flight.finished(task), Some((quick, false)));
        assert!(!in_flight.cancel(&MessageId::new_v4()));
    }

    /// The next answer of `handling`, waiting for one.
    async fn next_answer(handling: &mut Handling) -> gabp_types::Message {
        let answer = std::future::poll_fn(|cx| handling.poll_answer(cx));
        let body = tokio::time::timeout(std::time::Duration::from_secs(10), answer)
            .await
            .expect("an answer in time");
        gabp_types::decode::decode(&body, gabp_types::decode::DecodeMode::Strict).unwrap()
    }

    #[tokio::test]
    async fn finished_requests_are_answered_and_a_cancelled_one_with_its_error() {
        let mut handling = Handling::new(Some(Arc::new(InFlight::default())), 1 << 20);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(handling.poll_answer(&mut cx).is_pending(), "nothing runs");
        let backlog = super::super::backlog::Backlog::new(4, 1 << 20);
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let quick = MessageId::new_v4();
        let answer = Box::pin(async move {
            let _ = wait.await;
            Ok(Response::success(quick, serde_json::Value::from(1)))
        });
        handling.spawn(quick, answer, backlog.charge(10), false);
        assert!(handling.poll_answer(&mut cx).is_pending(), "still running");
        go.send(()).unwrap();
        let gabp_types::Message::Response(response) = next_answer(&mut handling).await else {
            panic!("not a response")
        };
        assert_eq!(response.id, quick);
        assert!(handling.is_empty());

        let slow = MessageId::new_v4();
        handling.spawn(
            slow,
            Box::pin(std::future::pending()),
            backlog.charge(10),
            true,
        );
        assert!(handling.in_flight.as_ref().unwrap().cancel(&slow));
        let gabp_types::Message::Response(response) = next_answer(&mut handling).await else {
            panic!("not a response")
        };
        assert_eq!(response.id, slow);
        assert!(
            matches!(response.outcome, gabp_types::Outcome::Error(e) if e.code == ErrorCode::TOOL_CANCELLED)
        );
        assert!(handling.poll_answer(&mut cx).is_pending());
    }
}
