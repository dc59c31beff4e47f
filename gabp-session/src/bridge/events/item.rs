//! [`SubscriptionItem`]: what a [`Subscription`](super::Subscription) stream yields.

use gabp_types::{ChannelName, Event};

/// One item of a [`Subscription`](super::Subscription) stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubscriptionItem {
    /// An event, in `seq` order for its channel.
    Event(Event),
    /// `missed` events of `channel` will never arrive: the mod dropped them (a gap in `seq`), or this
    /// subscription's queue was full. The next event of the channel follows the gap.
    Lagged {
        /// The channel that lost events.
        channel: ChannelName,
        /// How many.
        missed: u64,
    },
    /// The connection was lost and re-established, and the subscriptions were restored. Events published
    /// while disconnected are lost, and the `seq` of each channel is tracked afresh (a restarted mod counts
    /// from 0 again).
    Reconnected,
}
