//! Event subscriptions: [`Subscription`], [`SubscriptionItem`], and the per-connection router that puts events
//! in `seq` order.
//!
//! # Ordering policy
//!
//! `seq` is per channel, mod-wide and contiguous (SPEC/1.0 gabp.md §6). The router keeps, per channel, the next `seq` it
//! expects; the first event seen on a channel after subscribing (or after a reconnect) sets it, whatever its
//! value (a mod may start at 1, and a subscriber joins mid-stream). Then:
//!
//! - the expected event is delivered at once, followed by any held events it makes contiguous;
//! - an event *ahead* of the expected one is held back, in a buffer bounded by the reorder capacity and the
//!   subscription's bytes, for at most the reorder window. If the missing events arrive meanwhile, everything is
//!   delivered in `seq` order (a mod that writes events out of order, as GABS's peers may, loses nothing). When the
//!   window expires or the buffer is full, the gap is given up: a [`SubscriptionItem::Lagged`] item says how many
//!   events are missing, then the held events follow in order. A zero window reports every gap at once;
//! - an event *behind* the expected one (a duplicate, or one already reported missing by `Lagged`) is
//!   dropped, with a `debug` log.
//!
//! So a subscriber sees each channel's events in strictly increasing `seq` order, and every hole in the
//! sequence is either filled or reported; nothing is reordered and nothing is skipped silently.
//!
//! Each subscription has its own bounded queue. The connection's reader never waits for a subscriber: when a
//! queue is full, further events for it are counted and dropped, and the subscriber sees a `Lagged` item with
//! the count when it catches up.

mod item;
pub(super) mod order;
mod queue;
pub(super) mod router;
pub(super) mod subscription;

pub use item::SubscriptionItem;
pub use subscription::Subscription;

#[cfg(test)]
mod tests;
