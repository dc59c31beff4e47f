//! The requests this side sent and still waits for (SPEC/1.0 gabp.md §6: responses are matched by `id`).
//!
//! The table lives inside the engine's loop and nowhere else: a call is entered before its frame is written
//! and leaves it when its answer is read, when its caller gives up, or when the connection ends. No lock.

use std::collections::HashMap;

use bytes::Bytes;
use gabp_types::decode::DecodeMode;
use gabp_types::{ErrorObject, Message, MessageId, Outcome, Response};
use serde_json::Value;
use tokio::sync::oneshot;

use super::result::CallResult;

/// What the engine hands to a waiting caller.
#[derive(Debug)]
pub(crate) enum Delivery {
    /// The peer answered with a result.
    Result(CallResult),
    /// The peer answered with an error.
    Error(ErrorObject),
    /// A frame with the call's id that is not a valid response.
    Invalid(String),
}

impl From<Outcome> for Delivery {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Result(value) => Delivery::Result(CallResult::Value(value)),
            Outcome::Error(error) => Delivery::Error(error),
        }
    }
}

/// What the local side asks the engine to send.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A request (serialized, id `id`) whose answer goes to `reply`.
    Call {
        id: MessageId,
        body: Bytes,
        reply: oneshot::Sender<Delivery>,
    },
    /// The caller of `id` gave up (timed out or dropped): forget it, discard its answer, and write `cancel`
    /// (a `tools/cancel` request, whose answer is discarded too) when given.
    Forget {
        id: MessageId,
        cancel: Option<Bytes>,
    },
}

/// The table of calls in flight. Calls whose caller is gone are swept lazily, so the table stays bounded even
/// when a `Forget` could not be queued.
pub(crate) struct Calls {
    pending: HashMap<MessageId, oneshot::Sender<Delivery>>,
    /// A sweep of abandoned entries runs when the table grows past this.
    sweep_at: usize,
    sweep_floor: usize,
}

impl Calls {
    /// A table that sweeps abandoned entries once it holds more than `expected` (the calls allowed in flight).
    pub(crate) fn new(expected: usize) -> Self {
        let floor = expected.max(1).saturating_mul(2);
        Calls {
            pending: HashMap::new(),
            sweep_at: floor,
            sweep_floor: floor,
        }
    }

    pub(crate) fn insert(&mut self, id: MessageId, reply: oneshot::Sender<Delivery>) {
        if reply.is_closed() {
            return;
        }
        self.pending.insert(id, reply);
        if self.pending.len() > self.sweep_at {
            self.pending.retain(|_, reply| !reply.is_closed());
            self.sweep_at = self.sweep_floor.max(self.pending.len().saturating_mul(2));
        }
    }

    pub(crate) fn forget(&mut self, id: &MessageId) {
        self.pending.remove(id);
    }

    /// Hands `delivery` to the caller of `id`; `false` if no such call is waiting.
    pub(crate) fn deliver(&mut self, id: &MessageId, delivery: Delivery) -> bool {
        let Some(reply) = self.pending.remove(id) else {
            return false;
        };
        // A caller that gave up a moment ago is not an error: its answer is discarded.
        let _ = reply.send(delivery);
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

    /// Fails every waiting call (their callers see the sender dropped).
    pub(crate) fn fail_all(&mut self) {
        self.pending.clear();
    }
}

/// Lib.GAB writes `"result": null` beside an `error`; read it as the error (SPEC/1.0 gabp.md §3.5).
pub(super) fn null_result_beside_error(body: &Bytes) -> Option<Response> {
    let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    if map.get("result") != Some(&Value::Null) || !map.get("error").is_some_and(Value::is_object) {
        return None;
    }
    map.remove("result");
    match gabp_types::decode::decode_value(Value::Object(map), DecodeMode::Lenient) {
        Ok(Message::Response(response)) => Some(response),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn table() -> Calls {
        Calls::new(2)
    }

    #[test]
    fn an_answer_reaches_its_caller_once() {
        let mut calls = table();
        let id = MessageId::new_v4();
        let (tx, mut rx) = oneshot::channel();
        calls.insert(id, tx);
        assert_eq!(calls.len(), 1);
        assert!(calls.deliver(&id, Outcome::Result(Value::Null).into()));
        assert!(!calls.deliver(&id, Delivery::Invalid("again".into())));
        assert!(matches!(
            rx.try_recv(),
            Ok(Delivery::Result(CallResult::Value(Value::Null)))
        ));
        assert_eq!(calls.len(), 0);
    }

    #[test]
    fn abandoned_calls_are_swept_when_the_table_grows() {
        let mut calls = table();
        for _ in 0..10 {
            let (tx, rx) = oneshot::channel();
            drop(rx);
            calls.insert(MessageId::new_v4(), tx);
        }
        // Callers that were already gone are never entered; none is left.
        assert_eq!(calls.len(), 0);
        let mut live = Vec::new();
        for _ in 0..10 {
            let (tx, rx) = oneshot::channel();
            calls.insert(MessageId::new_v4(), tx);
            live.push(rx);
        }
        live.clear();
        let (tx, _rx) = oneshot::channel();
        calls.insert(MessageId::new_v4(), tx);
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn ending_fails_every_waiting_call() {
        let mut calls = table();
        let (tx, mut rx) = oneshot::channel();
        calls.insert(MessageId::new_v4(), tx);
        calls.fail_all();
        assert!(matches!(
            rx.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert_eq!(calls.len(), 0);
    }
}
