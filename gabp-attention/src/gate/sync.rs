//! Keeping the gate in sync with the mod: the attention channels, `attention/current` after each handshake
//! and gap, and the task that follows the connection (SPEC/1.0/attention.md §6.2).

use std::sync::Arc;
use std::task::{Context, Poll};

use gabp_session::bridge::{BridgeRequest, BridgeResponse};
use gabp_session::Error as SessionError;
use gabp_types::methods::AttentionCurrentResult;
use serde_json::Value;

use super::state::GateCore;
use super::{Shared, SYNC_ROUNDS};
use crate::item::CHANNELS;

impl Shared {
    /// Brings the gate in sync with the current connection, if it is not (after a handshake, a gap, or when
    /// there is no subscription). Returns at once when not connected.
    pub(super) async fn ensure_synced(&self) {
        let mut forced = self.core.lock().refresh_each_call;
        for _ in 0..SYNC_ROUNDS {
            let Some(generation) = self.generation() else {
                return;
            };
            let needed = |core: &mut GateCore| {
                core.drain();
                !core.in_sync(generation)
            };
            if !forced && !needed(&mut self.core.lock()) {
                return;
            }
            let _one_at_a_time = self.sync.lock().await;
            if !forced && !needed(&mut self.core.lock()) {
                return;
            }
            forced = false;
            self.sync_once(generation).await;
        }
    }

    async fn request(&self, method: &str) -> Result<Value, SessionError> {
        let request =
            BridgeRequest::from_json(method, Value::Null)?.with_timeout(self.sync_timeout);
        self.service
            .send(request)
            .await
            .map(BridgeResponse::into_result)
    }

    async fn sync_once(&self, generation: u64) {
        let welcome = self.service.welcome();
        let caps = welcome.as_deref().map(|w| &w.capabilities);
        if !caps.is_some_and(|c| c.has_method("attention/current")) {
            let mut core = self.core.lock();
            core.supported = Some(false);
            core.current = None;
            core.synced = Some(generation);
            core.refreshed = core.refresh_wanted;
            core.refresh_each_call = false;
            return;
        }
        let has_subscription = self.core.lock().subscription.is_some();
        if !has_subscription {
            let channels: Vec<&str> = CHANNELS
                .iter()
                .copied()
                .filter(|c| caps.is_some_and(|caps| caps.has_event(c)))
                .collect();
            if !channels.is_empty() {
                match self.service.subscribe(channels).await {
                    Ok(subscription) => {
                        let mut core = self.core.lock();
                        core.subscription = Some(subscription);
                        core.cleared.clear();
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot subscribe to the attention channels; each gated call will ask attention/current");
                    }
                }
            }
        }
        let (asked_at, answers) = {
            let mut core = self.core.lock();
            core.drain();
            (core.epoch, core.refresh_wanted)
        };
        let wants_tools = caps.is_some_and(|c| c.has_method("tools/list"));
        let (current, tools) = futures::join!(self.request("attention/current"), async {
            if wants_tools {
                Some(self.request("tools/list").await)
            } else {
                None
            }
        });
        let mut core = self.core.lock();
        core.drain();
        match current.map(serde_json::from_value::<AttentionCurrentResult>) {
            Ok(Ok(result)) => core.apply_snapshot(result.attention, asked_at),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "invalid attention/current result; keeping the last known item");
            }
            Err(e) => {
                tracing::warn!(error = %e, "attention/current failed; keeping the last known item");
            }
        }
        if let Some(Ok(listing)) = tools {
            core.learn_tools(&listing, true);
        }
        core.supported = Some(true);
        core.synced = Some(generation);
        core.refreshed = answers;
        core.refresh_each_call = core
            .subscription
            .as_ref()
            .is_none_or(|s| s.channels().is_empty());
    }

    /// Ready when the item must be refreshed on a live connection; keeps the follower task woken by events.
    fn poll_refresh_needed(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut core = self.core.lock();
        if !core.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            core.waker = Some(cx.waker().clone());
        }
        core.drain();
        let stale = self
            .generation()
            .is_some_and(|g| !core.refresh_each_call && !core.in_sync(g));
        if stale {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// The task that follows the connection: syncs after each handshake and after gaps, until the bridge ends.
pub(super) async fn follow(shared: Arc<Shared>) {
    let mut states = shared.service.connection_state();
    loop {
        if states.borrow_and_update().is_terminal() {
            break;
        }
        shared.ensure_synced().await;
        tokio::select! {
            changed = states.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            () = futures::future::poll_fn(|cx| shared.poll_refresh_needed(cx)) => {}
        }
    }
    let mut core = shared.core.lock();
    core.waker = None;
    core.subscription = None;
}
