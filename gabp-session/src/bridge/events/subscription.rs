//! [`Subscription`]: a stream of the events of some channels, and subscribing and unsubscribing at the mod
//! (`events/subscribe`, `events/unsubscribe`).

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use gabp_types::methods::{
    ChannelsParams, EventsSubscribe, EventsUnsubscribe, Method, SubscribeResult,
};
use gabp_types::{NonEmptyString, UniqueVec};

use super::item::SubscriptionItem;
use super::queue::{End, SubQueue};
use crate::bridge::link::{call_link, Link};
use crate::bridge::request::BridgeRequest;
use crate::bridge::response::{typed_result, BridgeResponse};
use crate::bridge::shared::Shared;
use crate::Error;

/// A stream of the events of some channels, from
/// [`Bridge::subscribe`](crate::bridge::Bridge::subscribe).
///
/// Items are [`SubscriptionItem`]s: events in `seq` order per channel, [`SubscriptionItem::Lagged`] where events
/// were lost, [`SubscriptionItem::Reconnected`] after a reconnect. When the connection ends for good the stream
/// yields the items already received, then one `Err` ([`Error::Disconnected`] or
/// [`Error::Closed`]), then ends. See the [module documentation](super) for the ordering policy.
///
/// Dropping a subscription unsubscribes: channels no other subscription of this bridge listens to are
/// unsubscribed from the mod in the background. [`Subscription::unsubscribe`] does the same and waits for the
/// mod's answer.
pub struct Subscription {
    id: u64,
    queue: Arc<SubQueue>,
    shared: Option<Arc<Shared>>,
}

impl Subscription {
    fn new(id: u64, queue: Arc<SubQueue>, shared: Arc<Shared>) -> Self {
        Subscription {
            id,
            queue,
            shared: Some(shared),
        }
    }

    /// Forgets the bridge, so that dropping does not unsubscribe (the caller undoes the registration).
    fn detach(&mut self) {
        self.shared = None;
    }

    /// The channels this subscription receives: those the mod granted (unknown channels are left out by
    /// the mod). Before the first handshake, or while reconnecting, the channels asked for.
    pub fn channels(&self) -> Vec<String> {
        self.queue.channels()
    }

    /// Unsubscribes now and waits for the mod's answer (channels other subscriptions of this bridge still
    /// listen to stay subscribed).
    ///
    /// # Errors
    ///
    /// As any call; the subscription is gone locally whatever the outcome.
    pub async fn unsubscribe(mut self) -> Result<(), Error> {
        match self.shared.take() {
            Some(shared) => unsubscribe(&shared, self.id).await,
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("channels", &self.queue.channels())
            .finish_non_exhaustive()
    }
}

impl Stream for Subscription {
    type Item = Result<SubscriptionItem, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut q = self.queue.inner.lock();
        if let Some(item) = q.pop_front() {
            return Poll::Ready(Some(Ok(item)));
        }
        if !q.dropped.is_empty() {
            q.flush_dropped();
            if let Some(item) = q.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
        }
        match std::mem::replace(&mut q.end, End::Done) {
            End::Pending(error) => Poll::Ready(Some(Err(error))),
            End::Done => Poll::Ready(None),
            End::Open => {
                q.end = End::Open;
                if !q.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    q.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            unsubscribe_in_background(shared, self.id);
        }
    }
}

/// Registers a subscription to `channels` and asks the mod through `send`.
pub(crate) async fn subscribe<F, Fut>(
    shared: &Arc<Shared>,
    channels: Vec<String>,
    send: F,
) -> Result<Subscription, Error>
where
    F: FnOnce(BridgeRequest) -> Fut,
    Fut: Future<Output = Result<BridgeResponse, Error>>,
{
    let mut unique: Vec<String> = Vec::with_capacity(channels.len());
    for channel in channels {
        if channel.is_empty() {
            return Err(Error::invalid_request("a channel name is empty"));
        }
        if !unique.contains(&channel) {
            unique.push(channel);
        }
    }
    if unique.is_empty() {
        return Err(Error::invalid_request("no channels to subscribe to"));
    }
    let request = channels_request::<EventsSubscribe>(&unique)?;
    let _order = shared.subscriptions.lock().await;
    if shared.state.borrow().is_terminal() || shared.shutdown.is_cancelled() {
        return Err(shared.no_link_error_terminal());
    }
    let settings = shared.settings();
    let (capacity, max_bytes) = (
        settings.subscription_queue,
        settings.subscription_queue_bytes,
    );
    let (id, queue) = shared.router.lock().add(unique, capacity, max_bytes);
    // From here on, dropping `subscription` (this future cancelled) undoes the registration.
    let mut subscription = Subscription::new(id, queue, shared.clone());
    if shared.current.read().clone().is_none() {
        // Connecting or reconnecting: the next handshake asks the mod, before reporting itself connected.
        return Ok(subscription);
    }
    match send(request)
        .await
        .and_then(|r| typed_result(EventsSubscribe::NAME, r.result_as::<SubscribeResult>()))
    {
        Ok(result) => {
            let granted: HashSet<&str> = result.subscribed.iter().map(String::as_str).collect();
            shared.router.lock().retain_granted(id, &granted);
            Ok(subscription)
        }
        Err(e) => {
            subscription.detach();
            shared.router.lock().remove(id);
            Err(e)
        }
    }
}

/// Removes a subscription and unsubscribes the channels nobody listens to any more.
async fn unsubscribe(shared: &Shared, id: u64) -> Result<(), Error> {
    let _order = shared.subscriptions.lock().await;
    let emptied = shared.router.lock().remove(id);
    if emptied.is_empty() {
        return Ok(());
    }
    let Some(link) = shared.current.read().clone() else {
        return Ok(());
    };
    if !link.allows(EventsUnsubscribe::NAME) {
        // Nothing to undo at a mod that cannot unsubscribe; its events for these channels are dropped here.
        return Ok(());
    }
    let request = channels_request::<EventsUnsubscribe>(&emptied)?;
    call_link(&link, request, link.settings.request_timeout)
        .await
        .map(drop)
}

/// Asks the mod of a new connection for the channels subscribed here, and drops from the subscriptions those it
/// does not grant. The caller holds the subscription lock.
pub(crate) async fn restore(shared: &Shared, link: &Link, timeout: Duration) -> Result<(), Error> {
    let mut asked: HashSet<String> = HashSet::new();
    loop {
        let wanted: Vec<String> = shared
            .router
            .lock()
            .channels()
            .into_iter()
            .filter(|c| !asked.contains(c))
            .collect();
        if wanted.is_empty() {
            break;
        }
        if !link.allows(EventsSubscribe::NAME) {
            tracing::warn!(channels = ?wanted, "the mod does not offer events/subscribe; subscriptions dropped");
            shared.router.lock().drop_channels(&wanted);
            break;
        }
        let request = channels_request::<EventsSubscribe>(&wanted)?;
        let value = call_link(link, request, timeout).await?;
        let result: SubscribeResult = typed_result(EventsSubscribe::NAME, value.decode())?;
        let granted: HashSet<&str> = result.subscribed.iter().map(String::as_str).collect();
        let refused = wanted.iter().filter(|c| !granted.contains(c.as_str()));
        shared.router.lock().drop_channels(refused);
        asked.extend(wanted);
    }
    Ok(())
}

/// [`unsubscribe`] from a `Drop`: in a task when there is a runtime; else only locally.
fn unsubscribe_in_background(shared: Arc<Shared>, id: u64) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move {
                if let Err(e) = unsubscribe(&shared, id).await {
                    tracing::debug!(error = %e, "unsubscribing a dropped subscription failed");
                }
            });
        }
        Err(_) => {
            shared.router.lock().remove(id);
        }
    }
}

/// The request of method `M` (`events/subscribe` or `events/unsubscribe`) for `channels`.
fn channels_request<M: Method<Params = ChannelsParams>>(
    channels: &[String],
) -> Result<BridgeRequest, Error> {
    let names = channels
        .iter()
        .map(|c| NonEmptyString::new(c.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::invalid_request(e.to_string()))?;
    let channels = UniqueVec::new(names).map_err(|e| Error::invalid_request(e.to_string()))?;
    BridgeRequest::typed::<M>(&ChannelsParams { channels })
}
