//! The answers one connection owes: serialized answers waiting for the sink, and the requests still being
//! handled. Both count against one bound in bytes and one in answers, so that a peer that never reads its
//! answers holds a bounded amount of memory (SPEC/1.0 security.md §7).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;

/// Answers waiting to be written, in order, and the bytes of the requests being handled on tasks.
pub(crate) struct Backlog {
    answers: VecDeque<Bytes>,
    /// Bytes of the answers in `answers`.
    bytes: usize,
    /// Bytes of the requests being handled on tasks of their own (their [`Charge`]s).
    handling: Arc<AtomicUsize>,
    max_answers: usize,
    max_bytes: usize,
}

impl Backlog {
    pub(crate) fn new(max_answers: usize, max_bytes: usize) -> Self {
        Backlog {
            answers: VecDeque::new(),
            bytes: 0,
            handling: Arc::new(AtomicUsize::new(0)),
            max_answers,
            max_bytes,
        }
    }

    pub(crate) fn push(&mut self, answer: Bytes) {
        self.bytes += answer.len();
        self.answers.push_back(answer);
    }

    pub(crate) fn pop(&mut self) -> Option<Bytes> {
        let answer = self.answers.pop_front()?;
        self.bytes -= answer.len();
        Some(answer)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.answers.len()
    }

    pub(crate) fn clear(&mut self) {
        self.answers.clear();
        self.bytes = 0;
    }

    /// Bytes owed: answers waiting plus requests being handled.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes + self.handling.load(Ordering::Relaxed)
    }

    /// No more requests are read while this holds: the peer is not reading its answers fast enough.
    pub(crate) fn is_full(&self) -> bool {
        self.answers.len() >= self.max_answers || self.bytes() >= self.max_bytes
    }

    /// Counts a request of `bytes` until the returned charge is dropped (its task ends, or is aborted).
    pub(crate) fn charge(&self, bytes: usize) -> Charge {
        self.handling.fetch_add(bytes, Ordering::Relaxed);
        Charge {
            bytes,
            handling: self.handling.clone(),
        }
    }
}

/// A request's bytes, counted against the backlog while its handler runs.
pub(crate) struct Charge {
    bytes: usize,
    handling: Arc<AtomicUsize>,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.handling.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_by_answers_or_by_bytes() {
        let mut backlog = Backlog::new(2, 100);
        backlog.push(Bytes::from_static(b"ab"));
        assert!(!backlog.is_full());
        backlog.push(Bytes::from_static(b"cd"));
        assert!(backlog.is_full(), "two answers");
        assert_eq!(backlog.pop().as_deref(), Some(&b"ab"[..]));
        assert!(!backlog.is_full());
        backlog.push(Bytes::from(vec![0; 98]));
        assert_eq!(backlog.bytes(), 100);
        assert!(backlog.is_full(), "100 bytes");
        backlog.clear();
        assert_eq!(backlog.bytes(), 0);
        assert!(backlog.is_empty());
    }

    #[test]
    fn a_request_counts_until_its_charge_drops() {
        let backlog = Backlog::new(10, 100);
        let charge = backlog.charge(100);
        assert!(backlog.is_full());
        drop(charge);
        assert!(!backlog.is_full());
        assert_eq!(backlog.bytes(), 0);
    }
}
