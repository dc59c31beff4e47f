//! The `tools/call` requests a mod is handling on tasks of their own, which the bridge may cancel with
//! `tools/cancel` (SPEC/1.0 extensions.md §cancel). A request answered at its first poll never gets here: it is
//! finished before a cancel could name it.

use gabp_types::{ErrorCode, ErrorObject, MessageId};
use parking_lot::Mutex;
use tokio::task::{AbortHandle, Id};

/// The answer of a call cancelled with `tools/cancel`.
pub(crate) fn cancelled_error() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::TOOL_CANCELLED,
        "the call was cancelled (tools/cancel)",
    )
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
}
