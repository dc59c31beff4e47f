//! The requests this side sent and still waits for (SPEC/1.0 gabp.md §6: responses are matched by `id`).
//!
//! The table lives inside the engine's loop and nowhere else: a call is entered as soon as its caller queues
//! it (before its frame is written) and leaves it when its answer is read, when its caller gives up, when its
//! time limit passes (gabp.md §7), or when the connection ends. No lock. One timer serves every call: it is
//! set for the earliest time limit, moved when a call with an earlier one arrives, and set for the next one
//! when it fires.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use gabp_types::MessageId;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

use super::queue::FrameQueue;
use super::result::{CallResult, Failure};

/// What the engine hands to a waiting caller.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// A frame with the call's id arrived: its result, or why the call failed.
    Answered(Result<CallResult, Failure>),
    /// The call's time limit passed with no answer; `written`: its request had been written (so the peer may
    /// be working on it), else it was taken out unwritten.
    TimedOut { written: bool },
}

/// What the local side asks the engine to send.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A request (serialized, id `id`) whose answer goes to `reply`, or [`Delivery::TimedOut`] at `deadline`.
    Call {
        id: MessageId,
        body: Bytes,
        reply: oneshot::Sender<Delivery>,
        deadline: Instant,
    },
    /// The caller of `id` gave up (timed out or dropped): forget it, discard its answer, and write `cancel`
    /// (a `tools/cancel` request, whose answer is discarded too) when given.
    Forget {
        id: MessageId,
        cancel: Option<Bytes>,
    },
}

impl super::queue::Queued for Outgoing {
    fn bytes(&self) -> usize {
        match self {
            Outgoing::Call { body, .. } => body.len(),
            Outgoing::Forget { cancel, .. } => cancel.as_ref().map_or(0, Bytes::len),
        }
    }
}

/// A call waiting for its answer.
struct Waiting {
    reply: oneshot::Sender<Delivery>,
    deadline: Instant,
}

/// The table of calls in flight and the frames of those not yet written. Calls whose caller is gone are swept
/// lazily, so the table stays bounded even when a `Forget` could not be queued.
pub(crate) struct Calls {
    /// Keyed by id, which compares case-blind (SPEC/1.0 gabp.md §3.1).
    pending: crate::OwnKeyMap<MessageId, Waiting>,
    /// Frames taken from the caller's queue and not yet written, in order: a call's request (with its id) or a
    /// `tools/cancel` (without). A call that fails or is forgotten before its frame is written takes it out.
    unsent: VecDeque<(Option<MessageId>, Bytes)>,
    /// The most frames held in `unsent`; past it the caller's queue is left to fill. Requests are at most the
    /// calls allowed in flight (each holds a slot) and a keepalive ping; cancels are kept only below `expected`,
    /// so the bound is a backstop.
    unsent_max: usize,
    /// The calls allowed in flight.
    expected: usize,
    /// Taking stopped at that bound, so the caller's queue was not polled (nothing wakes the engine for it).
    stalled: bool,
    /// Every call failed (reading stopped): what is taken from the queue now fails at once.
    failed: bool,
    /// Fires at `armed`, no later than the earliest time limit in the table.
    timer: Option<Pin<Box<Sleep>>>,
    armed: Option<Instant>,
    /// A sweep of abandoned entries runs when the table grows past this.
    sweep_at: usize,
    sweep_floor: usize,
}

impl Calls {
    /// A table that sweeps abandoned entries once it holds more than `expected` (the calls allowed in flight).
    pub(crate) fn new(expected: usize) -> Self {
        let expected = expected.max(1);
        let floor = expected.saturating_mul(2);
        Calls {
            pending: crate::OwnKeyMap::default(),
            unsent: VecDeque::new(),
            unsent_max: floor.saturating_add(2),
            expected,
            stalled: false,
            failed: false,
            timer: None,
            armed: None,
            sweep_at: floor,
            sweep_floor: floor,
        }
    }

    /// Takes what the caller queued: calls enter the table (their time limit counts from now on, whether or not
    /// the sink is ready) and their frames wait in order for the sink.
    pub(crate) fn poll_outgoing(
        &mut self,
        outgoing: &mut Option<FrameQueue<Outgoing>>,
        cx: &mut Context<'_>,
    ) {
        if let Some(queue) = outgoing {
            loop {
                // Each item adds at most one frame.
                let room = self.unsent_max.saturating_sub(self.unsent.len());
                self.stalled = room == 0;
                if self.stalled {
                    return;
                }
                match queue.poll_take(cx, room) {
                    Poll::Ready(Some(taken)) => taken.for_each(|item| self.take(item)),
                    Poll::Ready(None) => break,
                    Poll::Pending => return,
                }
            }
        }
        *outgoing = None;
        self.stalled = false;
    }

    /// Enters a call taken from the caller's queue, or forgets one.
    fn take(&mut self, item: Outgoing) {
        match item {
            // Nothing can answer it now: dropped, its caller sees the connection lost.
            _ if self.failed => {}
            Outgoing::Call {
                id,
                body,
                reply,
                deadline,
            } => {
                if self.insert(id, reply, deadline) {
                    self.unsent.push_back((Some(id), body));
                }
            }
            Outgoing::Forget { id, cancel } => {
                self.pending.remove(&id);
                // Never written: nothing to cancel. Else SPEC/1.0 extensions.md §cancel: the mod stops work
                // nobody waits for (best effort: dropped when many cancels already wait).
                if !self.unwrite(&id) && self.unsent.len() < self.expected {
                    self.unsent.extend(cancel.map(|c| (None, c)));
                }
            }
        }
    }

    /// Whether taking stopped at the bound and there is room again: the engine must take another turn, as no
    /// waker is registered with the caller's queue.
    pub(crate) fn has_room_again(&self) -> bool {
        self.stalled && self.unsent.len() < self.unsent_max
    }

    /// The next request frame to write.
    pub(crate) fn next_unsent(&mut self) -> Option<Bytes> {
        self.unsent.pop_front().map(|(_, body)| body)
    }

    /// Takes the request of `id` out of the frames not yet written; `false` if it is not there.
    fn unwrite(&mut self, id: &MessageId) -> bool {
        match self.unsent.iter().position(|(i, _)| i.as_ref() == Some(id)) {
            Some(at) => {
                self.unsent.remove(at);
                true
            }
            None => false,
        }
    }

    /// Whether request frames wait for the sink.
    pub(crate) fn has_unsent(&self) -> bool {
        !self.unsent.is_empty()
    }

    /// Enters a call; `false` when its caller is already gone.
    fn insert(
        &mut self,
        id: MessageId,
        reply: oneshot::Sender<Delivery>,
        deadline: Instant,
    ) -> bool {
        if reply.is_closed() {
            return false;
        }
        self.pending.insert(id, Waiting { reply, deadline });
        if self.pending.len() > self.sweep_at {
            self.pending.retain(|_, w| !w.reply.is_closed());
            self.sweep_at = self.sweep_floor.max(self.pending.len().saturating_mul(2));
        }
        if self.armed.is_none_or(|at| deadline < at) {
            self.arm(deadline);
        }
        true
    }

    fn arm(&mut self, at: Instant) {
        self.armed = Some(at);
        match &mut self.timer {
            Some(timer) => timer.as_mut().reset(at),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    /// Fails with [`Delivery::TimedOut`] every call whose time limit has passed, and sets the timer for the
    /// earliest one left.
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) {
        loop {
            let Some(timer) = self.timer.as_mut().filter(|_| self.armed.is_some()) else {
                return;
            };
            if timer.as_mut().poll(cx).is_pending() {
                return;
            }
            self.armed = None;
            let now = Instant::now();
            let expired: Vec<MessageId> = self
                .pending
                .iter()
                .filter(|(_, w)| w.deadline <= now)
                .map(|(id, _)| *id)
                .collect();
            for id in expired {
                let written = !self.unwrite(&id);
                self.deliver(&id, Delivery::TimedOut { written });
            }
            match self.pending.values().map(|w| w.deadline).min() {
                Some(next) => self.arm(next),
                None => return,
            }
        }
    }

    /// Hands `delivery` to the caller of `id`; `false` if no such call is waiting.
    pub(crate) fn deliver(&mut self, id: &MessageId, delivery: Delivery) -> bool {
        let Some(waiting) = self.pending.remove(id) else {
            return false;
        };
        // A caller that gave up a moment ago is not an error: its answer is discarded.
        let _ = waiting.reply.send(delivery);
        true
    }

    pub(crate) fn contains(&self, id: &MessageId) -> bool {
        self.pending.contains_key(id)
    }

    /// Whether no call is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// How many calls are in the table (abandoned ones included until they are swept).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Fails every waiting call (their callers see the connection lost) and drops the frames not yet written; the
    /// calls taken from the queue from now on fail too.
    pub(crate) fn fail_all(&mut self) {
        self.failed = true;
        self.pending.clear();
        self.unsent.clear();
        self.stalled = false;
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::frame_queue;
    use super::*;
    use oneshot::error::TryRecvError;
    use serde_json::Value;
    use std::task::Waker;
    use std::time::Duration;

    fn table() -> Calls {
        Calls::new(2)
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    /// Queues `items` and lets the table take them.
    fn take(calls: &mut Calls, items: Vec<Outgoing>) -> Option<FrameQueue<Outgoing>> {
        let (tx, rx) = frame_queue(items.len().max(1), None);
        for item in items {
            tx.try_send(item).unwrap();
        }
        let mut rx = Some(rx);
        calls.poll_outgoing(&mut rx, &mut Context::from_waker(std::task::Waker::noop()));
        rx
    }

    type Reply = oneshot::Receiver<Delivery>;

    fn call(id: MessageId, body: &'static str, deadline: Instant) -> (Outgoing, Reply) {
        let (reply, rx) = oneshot::channel();
        let body = Bytes::from_static(body.as_bytes());
        (
            Outgoing::Call {
                id,
                body,
                reply,
                deadline,
            },
            rx,
        )
    }

    /// `n` calls with a distant limit, and the receivers of their answers.
    fn calls_of(n: usize) -> (Vec<Outgoing>, Vec<Reply>) {
        (0..n)
            .map(|_| call(MessageId::new_v4(), "x", later()))
            .unzip()
    }

    #[tokio::test]
    async fn an_answer_reaches_its_caller_once() {
        let mut calls = table();
        let id = MessageId::new_v4();
        let (item, mut rx) = call(id, "a", later());
        take(&mut calls, vec![item]);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls.next_unsent().as_deref(), Some(&b"a"[..]));
        let null = Delivery::Answered(Ok(CallResult::Value(Value::Null)));
        assert!(calls.deliver(&id, null));
        let again = Delivery::Answered(Err(Failure::Invalid("again".into())));
        assert!(!calls.deliver(&id, again));
        assert!(matches!(
            rx.try_recv(),
            Ok(Delivery::Answered(Ok(CallResult::Value(Value::Null))))
        ));
        assert_eq!(calls.len(), 0);
    }

    #[tokio::test]
    async fn an_answer_finds_its_call_whatever_the_case_of_its_id() {
        let mut calls = Calls::new(8);
        // Ids that differ only in digits the key does not hash share a bucket and are still told apart.
        let ids = [
            "550e8400-e29b-41d4-a716-44665544000a",
            "550e8400-e29b-41d4-a716-44665544000b",
            "550e8400-ffff-41d4-a716-44665544000a",
        ]
        .map(|text| MessageId::parse(text).unwrap());
        let (items, mut replies): (Vec<_>, Vec<_>) =
            ids.iter().map(|id| call(*id, "x", later())).unzip();
        take(&mut calls, items);
        let upper = MessageId::parse("550E8400-FFFF-41D4-A716-44665544000A").unwrap();
        assert!(calls.contains(&upper));
        let null = || Delivery::Answered(Ok(CallResult::Value(Value::Null)));
        assert!(calls.deliver(&upper, null()));
        assert!(replies[2].try_recv().is_ok());
        assert!(replies[0].try_recv().is_err(), "only the call of that id");
        assert!(calls.contains(&ids[0]) && calls.contains(&ids[1]));
        let unknown = MessageId::parse("550e8400-0000-41d4-a716-44665544000a").unwrap();
        assert!(!calls.deliver(&unknown, null()));
        assert_eq!(calls.len(), 2);
    }

    #[tokio::test]
    async fn frames_wait_in_order_and_a_forget_writes_its_cancel() {
        let mut calls = Calls::new(8);
        let (a, _ra) = call(MessageId::new_v4(), "a", later());
        let (b, _rb) = call(MessageId::new_v4(), "b", later());
        let forget = Outgoing::Forget {
            id: MessageId::new_v4(),
            cancel: Some(Bytes::from_static(b"c")),
        };
        take(&mut calls, vec![a, b, forget]);
        let order: Vec<Bytes> = std::iter::from_fn(|| calls.next_unsent()).collect();
        assert_eq!(
            order,
            ["a", "b", "c"].map(|s| Bytes::from_static(s.as_bytes()))
        );
    }

    #[tokio::test]
    async fn a_call_forgotten_before_it_is_written_is_taken_out_and_not_cancelled() {
        let mut calls = table();
        let id = MessageId::new_v4();
        let (a, _ra) = call(id, "a", later());
        let (b, _rb) = call(MessageId::new_v4(), "b", later());
        let forget = Outgoing::Forget {
            id,
            cancel: Some(Bytes::from_static(b"c")),
        };
        take(&mut calls, vec![a, b, forget]);
        let order: Vec<Bytes> = std::iter::from_fn(|| calls.next_unsent()).collect();
        assert_eq!(order, [Bytes::from_static(b"b")]);
        assert_eq!(calls.len(), 1);
    }

    #[tokio::test]
    async fn ending_while_stalled_does_not_ask_for_another_turn() {
        let mut calls = table();
        let (items, _replies) = calls_of(8);
        let _queue = take(&mut calls, items);
        assert!(calls.stalled);
        calls.next_unsent();
        assert!(calls.has_room_again());
        calls.fail_all();
        assert!(
            !calls.has_room_again(),
            "no busy turn after the calls failed"
        );
        take(&mut calls, Vec::new());
        let mut gone = None;
        calls.poll_outgoing(&mut gone, &mut Context::from_waker(Waker::noop()));
        assert!(!calls.has_room_again(), "nor once the queue is gone");
    }

    #[tokio::test]
    async fn a_call_taken_after_all_failed_fails_at_once() {
        let mut calls = table();
        calls.fail_all();
        let (item, mut reply) = call(MessageId::new_v4(), "late", later());
        let forget = Outgoing::Forget {
            id: MessageId::new_v4(),
            cancel: Some(Bytes::from_static(b"c")),
        };
        let queue = take(&mut calls, vec![item, forget]);
        assert_eq!(queue.map(|q| q.len()), Some(0), "both were taken");
        assert!(
            matches!(reply.try_recv(), Err(TryRecvError::Closed)),
            "its caller sees it fail"
        );
        assert_eq!(calls.len(), 0);
        assert!(calls.next_unsent().is_none(), "nothing to write");
    }

    #[tokio::test]
    async fn taking_stops_when_unwritten_frames_reach_their_bound() {
        let mut calls = table();
        let (items, _replies) = calls_of(8);
        let rx = take(&mut calls, items).expect("the queue stays open");
        assert_eq!(calls.unsent.len(), 6);
        assert_eq!(rx.len(), 2, "the rest stays in the caller's queue");
    }

    #[tokio::test(start_paused = true)]
    async fn calls_past_their_time_limit_fail_and_the_timer_moves_to_the_next() {
        let mut calls = Calls::new(8);
        let start = Instant::now();
        let (slow, mut slow_rx) = call(MessageId::new_v4(), "s", start + Duration::from_secs(30));
        let (fast, mut fast_rx) = call(MessageId::new_v4(), "f", start + Duration::from_secs(1));
        take(&mut calls, vec![slow, fast]);
        assert_eq!(calls.armed, Some(start + Duration::from_secs(1)));
        // Polled first with another waker: the task below must still be the one woken.
        calls.poll_expired(&mut Context::from_waker(Waker::noop()));
        let mut polls = 0;
        let woken = futures::future::poll_fn(|cx| {
            polls += 1;
            calls.poll_expired(cx);
            if fast_rx.try_recv().is_ok() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        });
        tokio::time::timeout(Duration::from_secs(3600), woken)
            .await
            .expect("the timer wakes the task that polled the table last");
        assert!(Instant::now() >= start + Duration::from_secs(1));
        assert!(Instant::now() < start + Duration::from_secs(30));
        assert!(polls >= 2, "the timer woke the table");
        assert!(slow_rx.try_recv().is_err());
        assert_eq!(calls.len(), 1);
        assert_eq!(calls.armed, Some(start + Duration::from_secs(30)));
        let woken = futures::future::poll_fn(|cx| {
            calls.poll_expired(cx);
            match slow_rx.try_recv() {
                Ok(Delivery::TimedOut { .. }) => Poll::Ready(()),
                Ok(other) => panic!("unexpected {other:?}"),
                Err(_) => Poll::Pending,
            }
        });
        tokio::time::timeout(Duration::from_secs(3600), woken)
            .await
            .expect("the timer set for the next call wakes the task");
        assert_eq!(calls.len(), 0);
        assert_eq!(calls.armed, None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_timer_is_set_even_when_the_task_has_spent_its_budget() {
        let mut calls = table();
        let limit = Instant::now() + Duration::from_secs(1);
        let (item, mut rx) = call(MessageId::new_v4(), "a", limit);
        take(&mut calls, vec![item]);
        let mut first = true;
        let woken = futures::future::poll_fn(|cx| {
            if std::mem::take(&mut first) {
                // Spend the task's cooperative budget, as a busy engine turn does.
                super::super::tests::spend_budget(cx);
            }
            calls.poll_expired(cx);
            match rx.try_recv() {
                Ok(_) => Poll::Ready(()),
                Err(_) => Poll::Pending,
            }
        });
        tokio::time::timeout(Duration::from_secs(3600), woken)
            .await
            .expect("the call fails at its limit");
        assert!(Instant::now() < limit + Duration::from_secs(1));
    }

    #[tokio::test]
    async fn abandoned_calls_are_swept_when_the_table_grows() {
        let mut calls = Calls::new(5);
        let (gone, replies) = calls_of(10);
        drop(replies);
        take(&mut calls, gone);
        // Callers that were already gone are never entered, nor their frames written.
        assert_eq!(calls.len(), 0);
        assert!(!calls.has_unsent());
        let (live, replies) = calls_of(10);
        take(&mut calls, live);
        assert_eq!(calls.len(), 10);
        while calls.next_unsent().is_some() {}
        drop(replies);
        let (one, _reply) = call(MessageId::new_v4(), "x", later());
        take(&mut calls, vec![one]);
        assert_eq!(calls.len(), 1);
    }

    #[tokio::test]
    async fn ending_fails_every_waiting_call() {
        let mut calls = table();
        let (item, mut rx) = call(MessageId::new_v4(), "a", later());
        take(&mut calls, vec![item]);
        calls.fail_all();
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Closed)));
        assert_eq!(calls.len(), 0);
        assert!(!calls.has_unsent());
    }
}
