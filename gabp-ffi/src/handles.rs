//! Handles: the numbers the caller holds for mods, calls and bridges. A number is never reused, so a
//! handle used after it was freed is an error with a message ([`GabpStatus::Handle`]), never a dangling
//! pointer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::status::{FfiError, GabpStatus};

/// The live handles of one kind.
pub(crate) struct Handles<T> {
    kind: &'static str,
    /// The next number to give; 0 is never given (it stands for "no handle").
    next: AtomicU64,
    live: LazyLock<Mutex<HashMap<u64, Arc<T>>>>,
}

impl<T> Handles<T> {
    pub(crate) const fn new(kind: &'static str) -> Handles<T> {
        Handles {
            kind,
            next: AtomicU64::new(1),
            live: LazyLock::new(|| Mutex::new(HashMap::new())),
        }
    }

    /// Keeps `value` and returns its handle.
    pub(crate) fn insert(&self, value: T) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.live.lock().insert(id, Arc::new(value));
        id
    }

    fn gone(&self, id: u64) -> FfiError {
        if id != 0 && id < self.next.load(Ordering::Relaxed) {
            FfiError::new(
                GabpStatus::Handle,
                format!("{} handle {id} was already freed", self.kind),
            )
        } else {
            FfiError::new(
                GabpStatus::Handle,
                format!("{id} is not a {} handle", self.kind),
            )
        }
    }

    /// The value of handle `id`.
    pub(crate) fn get(&self, id: u64) -> Result<Arc<T>, FfiError> {
        self.live
            .lock()
            .get(&id)
            .cloned()
            .ok_or_else(|| self.gone(id))
    }

    /// Frees handle `id`, returning its value.
    pub(crate) fn remove(&self, id: u64) -> Result<Arc<T>, FfiError> {
        self.live.lock().remove(&id).ok_or_else(|| self.gone(id))
    }

    /// Whether `id` was given out at some point (live or freed).
    pub(crate) fn was_issued(&self, id: u64) -> bool {
        id != 0 && id < self.next.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_handle_says_so_and_a_made_up_one_too() {
        static THINGS: Handles<&str> = Handles::new("thing");
        let id = THINGS.insert("a");
        assert_eq!(*THINGS.get(id).unwrap(), "a");
        THINGS.remove(id).unwrap();
        let freed = THINGS.get(id).err().unwrap();
        assert_eq!(freed.status, GabpStatus::Handle);
        assert!(freed.message.contains("already freed"), "{}", freed.message);
        let never = THINGS.get(9_999).err().unwrap();
        assert!(
            never.message.contains("is not a thing handle"),
            "{}",
            never.message
        );
        assert!(THINGS.get(0).is_err());
        assert!(THINGS.was_issued(id) && !THINGS.was_issued(0));
    }
}
