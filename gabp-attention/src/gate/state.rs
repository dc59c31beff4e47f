//! What the gate knows about the mod's attention item (`GateCore`), and how each event, snapshot,
//! acknowledgement and refusal changes it.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use futures::Stream;
use gabp_session::bridge::{Subscription, SubscriptionItem};
use gabp_session::Error as SessionError;
use gabp_types::methods::AttentionAckResult;
use gabp_types::{Attention, AttentionState, ErrorCode, Event};
use serde_json::Value;

use super::{BlockedByAttention, CLEARED_MEMORY};
use crate::item::{CHANNELS, CLEARED, OPENED, UPDATED};
use crate::manager::BLOCKED_REASON;

/// What the gate knows. Every change to the item goes through here, under one lock.
#[derive(Default)]
pub(super) struct GateCore {
    pub(super) subscription: Option<Subscription>,
    /// The waker of the task that follows the connection: draining with it keeps that task woken by events.
    pub(super) waker: Option<Waker>,
    /// Whether the mod advertises attention (`None` before the first sync).
    pub(super) supported: Option<bool>,
    /// The connection generation the gate is in sync with.
    pub(super) synced: Option<u64>,
    /// Counts the gaps and reconnects seen: each asks for a refresh of the item.
    pub(super) refresh_wanted: u64,
    /// The value of `refresh_wanted` the last completed refresh answered. The gate is in sync when they are
    /// equal; a refresh in flight does not count until it completes.
    pub(super) refreshed: u64,
    /// No usable subscription: each gated call refreshes the item (GABS's way).
    pub(super) refresh_each_call: bool,
    pub(super) current: Option<Attention>,
    /// Bumped by every event, gap, reconnect and acknowledgement: a snapshot (`attention/current`, the item
    /// in an `attention/ack` answer) taken before a bump is older than what the gate knows, and is ignored.
    pub(super) epoch: u64,
    /// Bumped whenever an item opens or changes; `last_raised` is that item.
    pub(super) raised: u64,
    pub(super) last_raised: Option<Attention>,
    /// Recently cleared ids: late `opened`/`updated` events and snapshots about them are stale.
    pub(super) cleared: VecDeque<String>,
    /// Tool tags, from `tools/list`.
    pub(super) tags: HashMap<String, Vec<String>>,
}

/// The gate's decision on a call.
pub(super) enum Admission {
    Admitted(Ticket),
    Blocked(Box<BlockedByAttention>),
    /// The gate must bring itself in sync (after a handshake or a gap) before it can decide.
    NeedsSync,
}

/// What a call noted when it was let through.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticket {
    pub(super) epoch: u64,
    pub(super) raised: u64,
    pub(super) kind: CallKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallKind {
    Current,
    Ack,
    ToolsList,
    Other,
}

impl GateCore {
    /// Applies every item already received on the subscription, without waiting.
    pub(super) fn drain(&mut self) {
        let Some(subscription) = self.subscription.as_mut() else {
            return;
        };
        let waker = self
            .waker
            .as_ref()
            .unwrap_or_else(|| futures::task::noop_waker_ref());
        let mut cx = Context::from_waker(waker);
        let mut ended = false;
        let mut items = Vec::new();
        loop {
            match Pin::new(&mut *subscription).poll_next(&mut cx) {
                Poll::Ready(Some(Ok(item))) => items.push(item),
                Poll::Ready(Some(Err(_)) | None) => {
                    ended = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if ended {
            self.subscription = None;
        }
        for item in items {
            match item {
                SubscriptionItem::Event(event) => self.apply_event(&event),
                SubscriptionItem::Lagged { channel, missed } => {
                    tracing::debug!(%channel, missed, "attention events lost; refreshing the item");
                    self.epoch += 1;
                    self.refresh_wanted += 1;
                }
                SubscriptionItem::Reconnected => {
                    self.epoch += 1;
                    self.refresh_wanted += 1;
                    // A new connection may be a new mod instance, whose ids may repeat old ones.
                    self.cleared.clear();
                }
                _ => {}
            }
        }
    }

    fn is_cleared(&self, id: &str) -> bool {
        self.cleared.iter().any(|c| c == id)
    }

    fn mark_cleared(&mut self, id: &str) {
        if !self.is_cleared(id) {
            if self.cleared.len() == CLEARED_MEMORY {
                self.cleared.pop_front();
            }
            self.cleared.push_back(id.to_owned());
        }
        if self
            .current
            .as_ref()
            .is_some_and(|c| c.attention_id.as_str() == id)
        {
            self.current = None;
        }
    }

    fn raise(&mut self, attention: Attention) {
        self.raised += 1;
        self.last_raised = Some(attention.clone());
        self.current = Some(attention);
    }

    fn apply_event(&mut self, event: &Event) {
        let channel = event.channel.as_str();
        if !CHANNELS.contains(&channel) {
            return;
        }
        let attention: Attention = match serde_json::from_value(event.payload.clone()) {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(%channel, error = %e, "ignoring an attention event without an attention object");
                return;
            }
        };
        self.epoch += 1;
        let id = attention.attention_id.as_str().to_owned();
        if channel == CLEARED || attention.state == AttentionState::Cleared {
            if self
                .last_raised
                .as_ref()
                .is_some_and(|r| r.attention_id == attention.attention_id)
            {
                self.last_raised = Some(attention);
            }
            self.mark_cleared(&id);
            return;
        }
        debug_assert!(channel == OPENED || channel == UPDATED);
        if self.is_cleared(&id) {
            tracing::debug!(attention = %id, "ignoring a late event about a cleared item");
            return;
        }
        self.raise(attention);
    }

    /// Applies what the mod said the open item was, unless the gate learned something since it asked.
    pub(super) fn apply_snapshot(&mut self, snapshot: Option<Attention>, asked_at: u64) {
        if self.epoch != asked_at {
            return;
        }
        match snapshot {
            None => self.current = None,
            Some(a) if a.state == AttentionState::Cleared || self.is_cleared(&a.attention_id) => {
                self.mark_cleared(&a.attention_id.clone());
            }
            Some(a) => {
                if self.current.as_ref() != Some(&a) {
                    self.raise(a);
                }
            }
        }
    }

    pub(super) fn apply_ack(&mut self, result: &AttentionAckResult, asked_at: u64) {
        self.apply_snapshot(result.current_attention.clone(), asked_at);
        if result.acknowledged {
            self.epoch += 1;
            self.mark_cleared(result.attention_id.as_str());
        }
    }

    /// Learns the item from a mod-side gate's refusal (`-32401` with `reason: blocked_by_attention`).
    pub(super) fn apply_refusal(&mut self, error: &SessionError) {
        let Some(object) = error.error_object() else {
            return;
        };
        if object.code != ErrorCode::TOOL_UNAVAILABLE {
            return;
        }
        let Some(data) = object.data.as_ref() else {
            return;
        };
        if data.get("reason").and_then(Value::as_str) != Some(BLOCKED_REASON) {
            return;
        }
        let Some(Ok(attention)) = data
            .get("attention")
            .map(|a| serde_json::from_value::<Attention>(a.clone()))
        else {
            return;
        };
        if attention.state == AttentionState::Open
            && !self.is_cleared(&attention.attention_id)
            && self.current.as_ref() != Some(&attention)
        {
            self.epoch += 1;
            self.raise(attention);
        }
    }

    pub(super) fn learn_tools(&mut self, listing: &Value, replace: bool) {
        let Some(tools) = listing.get("tools").and_then(Value::as_array) else {
            return;
        };
        if replace {
            self.tags.clear();
        }
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let tags = tool
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            self.tags.insert(name.to_owned(), tags);
        }
    }

    pub(super) fn blocking(&self) -> Option<&Attention> {
        self.current
            .as_ref()
            .filter(|a| a.blocking && a.state == AttentionState::Open)
    }

    pub(super) fn in_sync(&self, generation: u64) -> bool {
        self.synced == Some(generation) && self.refreshed == self.refresh_wanted
    }
}
