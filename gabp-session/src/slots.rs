//! [`Slots`]: a count of slots given out the way a semaphore gives out permits (a connection's requests in
//! flight, on either side). Taking a free slot, and giving one back while nobody waits, take no lock; a taker
//! that finds none free waits on a tokio semaphore, to which a slot given back is handed while anyone waits.

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Semaphore;

/// Why a slot could not be taken at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TryTake {
    /// Every slot is taken.
    Full,
    /// The slots were closed.
    Closed,
}

/// The slots were closed while a taker waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

pub(crate) struct Slots {
    /// Slots free to take at once.
    free: AtomicUsize,
    /// Takers that found none free and wait on `handed` (or are about to).
    waiting: AtomicUsize,
    /// Slots given back while takers waited.
    handed: Semaphore,
    closed: AtomicBool,
}

/// A slot taken from the [`Slots`] behind `S`; given back when dropped.
pub(crate) struct Taken<S: Deref<Target = Slots>> {
    slots: S,
}

impl Slots {
    pub(crate) fn new(slots: usize) -> Self {
        Slots {
            free: AtomicUsize::new(slots),
            waiting: AtomicUsize::new(0),
            handed: Semaphore::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// A free slot, if there is one.
    pub(crate) fn try_take<S: Deref<Target = Slots>>(slots: S) -> Result<Taken<S>, TryTake> {
        slots.take_free()?;
        Ok(Taken { slots })
    }

    /// A slot: a free one, or the next one given back.
    pub(crate) async fn take<S: Deref<Target = Slots>>(slots: S) -> Result<Taken<S>, Closed> {
        slots.waiting.fetch_add(1, Ordering::SeqCst);
        let waiting = Waiting(&slots);
        // Counted as waiting first: a slot given back from now on is either still free here or handed over.
        let taken = match slots.take_free() {
            Ok(()) => Ok(()),
            Err(TryTake::Closed) => Err(Closed),
            Err(TryTake::Full) => match slots.handed.acquire().await {
                Ok(permit) => {
                    permit.forget();
                    Ok(())
                }
                Err(_) => Err(Closed),
            },
        };
        drop(waiting);
        taken?;
        Ok(Taken { slots })
    }

    fn take_free(&self) -> Result<(), TryTake> {
        if self.closed.load(Ordering::Acquire) {
            return Err(TryTake::Closed);
        }
        // Sequentially consistent, as `give_back`'s: a taker that counted itself waiting and then finds none free
        // is seen waiting by whoever frees one after that.
        let mut free = self.free.load(Ordering::SeqCst);
        loop {
            if free == 0 {
                return Err(TryTake::Full);
            }
            match self.free.compare_exchange_weak(
                free,
                free - 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => free = now,
            }
        }
    }

    fn give_back(&self) {
        // Freed first, then the waiters counted: a taker that counted itself after this sees the slot free.
        self.free.fetch_add(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 && self.take_free().is_ok() {
            self.handed.add_permits(1);
        }
    }

    /// Refuses every taker from now on, the waiting ones included.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.handed.close();
    }

    /// Removes up to `n` slots that are not taken.
    pub(crate) fn forget(&self, n: usize) {
        let mut left = n;
        while left > 0 && self.take_free().is_ok() {
            left -= 1;
        }
        self.handed.forget_permits(left);
    }

    /// The slots not taken.
    pub(crate) fn available(&self) -> usize {
        self.free.load(Ordering::Relaxed) + self.handed.available_permits()
    }
}

impl fmt::Debug for Slots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slots")
            .field("available", &self.available())
            .finish_non_exhaustive()
    }
}

impl<S: Deref<Target = Slots>> Drop for Taken<S> {
    fn drop(&mut self) {
        self.slots.give_back();
    }
}

/// Counts a taker as waiting while it lives (its wait may be dropped).
struct Waiting<'a>(&'a Slots);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// Waits for every taker, each within `limit`: none waits for ever.
    async fn all_finish(tasks: Vec<tokio::task::JoinHandle<()>>, limit: Duration) {
        for task in tasks {
            tokio::time::timeout(limit, task)
                .await
                .expect("no taker waits for ever")
                .unwrap();
        }
    }

    #[test]
    fn slots_are_taken_until_none_is_free_and_given_back_on_drop() {
        let slots = Slots::new(2);
        let a = Slots::try_take(&slots).unwrap();
        let b = Slots::try_take(&slots).unwrap();
        assert_eq!(Slots::try_take(&slots).err(), Some(TryTake::Full));
        drop(a);
        assert_eq!(slots.available(), 1);
        let _c = Slots::try_take(&slots).unwrap();
        drop(b);
        slots.forget(5);
        assert_eq!(slots.available(), 0);
        slots.close();
        assert_eq!(Slots::try_take(&slots).err(), Some(TryTake::Closed));
    }

    #[tokio::test]
    async fn a_waiter_gets_the_slot_given_back_and_closing_refuses_the_others() {
        let slots = Arc::new(Slots::new(1));
        let held = Slots::try_take(slots.clone()).unwrap();
        let waiter = tokio::spawn(Slots::take(slots.clone()));
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(held);
        let taken = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("handed the slot")
            .unwrap();
        assert!(taken.is_ok());
        let refused = tokio::spawn(Slots::take(slots.clone()));
        tokio::task::yield_now().await;
        slots.close();
        let refused = tokio::time::timeout(Duration::from_secs(5), refused).await;
        assert!(matches!(refused, Ok(Ok(Err(Closed)))));
    }

    /// Takers racing slots given back, some giving up their wait: every slot comes back, and no taker waits for
    /// ever while one is free.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn racing_takers_never_lose_a_slot() {
        let slots = Arc::new(Slots::new(3));
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let slots = slots.clone();
                tokio::spawn(async move {
                    for round in 0..300u32 {
                        if (round + i) % 7 == 0 {
                            // A wait dropped now and then, handed a slot or not.
                            let _ = tokio::time::timeout(
                                Duration::from_micros(50),
                                Slots::take(slots.clone()),
                            )
                            .await;
                            continue;
                        }
                        let taken = Slots::take(slots.clone()).await.unwrap();
                        tokio::task::yield_now().await;
                        drop(taken);
                    }
                })
            })
            .collect();
        all_finish(tasks, Duration::from_secs(20)).await;
        assert_eq!(slots.available(), 3);
    }

    /// One slot passed back and forth between two takers on two threads, as fast as they go: each slot given
    /// back reaches the taker waiting for it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_slot_passed_between_two_threads_never_strands_a_taker() {
        for _ in 0..20 {
            let slots = Arc::new(Slots::new(1));
            let tasks: Vec<_> = (0..2)
                .map(|_| {
                    let slots = slots.clone();
                    tokio::spawn(async move {
                        for _ in 0..2000 {
                            drop(Slots::take(slots.clone()).await.unwrap());
                        }
                    })
                })
                .collect();
            all_finish(tasks, Duration::from_secs(10)).await;
            assert_eq!(slots.available(), 1);
        }
    }
}
