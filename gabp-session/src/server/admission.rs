//! Which connections the mod serves (SPEC/1.0 security.md §7): at most `max_connections` at once. When all
//! slots are taken, the oldest connection that has not completed `session/hello` makes room for the new one,
//! so connections opened and dropped (or left idle) without a hello cannot lock a bridge out; a new connection
//! is refused only when every slot holds an established session.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The connection slots of one mod.
pub(crate) struct Admission {
    max: usize,
    state: Mutex<State>,
}

struct State {
    /// Connections holding a slot (one that made room gives its slot up at once: it is closing).
    count: usize,
    next_id: u64,
    /// Connections without a successful hello, oldest first, and how to close each.
    without_hello: VecDeque<(u64, CancellationToken)>,
}

/// One connection's slot; dropping it frees the slot.
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    id: u64,
    displaced: CancellationToken,
    established: bool,
}

impl Admission {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Admission {
            max,
            state: Mutex::new(State {
                count: 0,
                next_id: 0,
                without_hello: VecDeque::new(),
            }),
        })
    }

    /// A slot for a new connection, or `None` when every slot holds an established session. A connection that
    /// makes room gives its slot up at once: it ends at its next turn, having written nothing more.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut state = self.state.lock();
        if state.count >= self.max {
            let (_, oldest) = state.without_hello.pop_front()?;
            tracing::debug!("full: the oldest connection without session/hello makes room");
            oldest.cancel();
            state.count -= 1;
        }
        state.count += 1;
        state.next_id += 1;
        let id = state.next_id;
        let displaced = CancellationToken::new();
        state.without_hello.push_back((id, displaced.clone()));
        Some(Admitted {
            admission: self.clone(),
            id,
            displaced,
            established: false,
        })
    }

    /// Connections holding a slot.
    pub(crate) fn count(&self) -> usize {
        self.state.lock().count
    }
}

impl Admitted {
    /// The session is established: this connection no longer makes room for others.
    pub(crate) fn established(&mut self) {
        if !self.established {
            self.established = true;
            self.forget();
        }
    }

    /// Fires when this connection has to make room for a new one.
    pub(crate) fn displaced(&self) -> CancellationToken {
        self.displaced.clone()
    }

    fn forget(&self) {
        self.admission.state.lock().forget(self.id);
    }
}

impl State {
    fn forget(&mut self, id: u64) {
        if let Some(at) = self.without_hello.iter().position(|(held, _)| *held == id) {
            self.without_hello.remove(at);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        // One that made room gave its slot up then (only admission fires the token).
        if self.displaced.is_cancelled() {
            return;
        }
        let mut state = self.admission.state.lock();
        if !self.established {
            state.forget(self.id);
        }
        state.count -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_connection_without_hello_makes_room() {
        let admission = Admission::new(2);
        let first = admission.admit().unwrap();
        let mut second = admission.admit().unwrap();
        second.established();
        let third = admission.admit().expect("room made");
        assert!(first.displaced().is_cancelled(), "the oldest without hello");
        assert!(!second.displaced().is_cancelled());
        assert_eq!(admission.count(), 2, "the displaced one gave its slot up");
        drop(first);
        assert_eq!(admission.count(), 2);
        let mut third = third;
        third.established();
        assert!(admission.admit().is_none(), "every slot established");
        drop(second);
        assert!(admission.admit().is_some());
    }

    #[test]
    fn each_new_connection_displaces_the_oldest_without_hello() {
        let admission = Admission::new(2);
        let held: Vec<_> = std::iter::from_fn(|| admission.admit()).take(5).collect();
        let displaced: Vec<bool> = held.iter().map(|a| a.displaced().is_cancelled()).collect();
        assert_eq!(displaced, [true, true, true, false, false]);
        assert_eq!(admission.count(), 2);
        drop(held);
        assert_eq!(admission.count(), 0);
    }
}
