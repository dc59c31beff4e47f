//! Whether a call may go to the mod: admitting it, refusing it, or asking for a sync first
//! (SPEC/1.0/attention.md §6.2).

use gabp_session::bridge::{BridgeRequest, BridgeResponse};
use gabp_session::Error as SessionError;
use gabp_types::methods::{AttentionAckResult, AttentionCurrentResult};

use super::state::{Admission, CallKind, Ticket};
use super::{BlockedByAttention, RelatedAttention, Shared};
use crate::policy::never_gated;

impl Shared {
    fn gated(&self, request: &BridgeRequest) -> bool {
        let method = request.method().as_str();
        !never_gated(method) && self.gated.contains(method)
    }

    pub(super) fn generation(&self) -> Option<u64> {
        self.service.state().generation()
    }

    /// Decides a call without waiting, when the gate is in sync; says so when it must sync first.
    pub(super) fn try_admit(&self, request: &BridgeRequest, synced: bool) -> Admission {
        let gated = self.gated(request);
        let mut core = self.core.lock();
        core.drain();
        if gated {
            // With a subscription, a reconnect shows in it (drained above) before calls can go through, so
            // the connection's generation need not be read on this path.
            let stale = core.refresh_each_call
                || core.synced.is_none()
                || core.refreshed != core.refresh_wanted
                || (core.subscription.is_none()
                    && self.generation().is_some_and(|g| !core.in_sync(g)));
            if stale && !synced {
                return Admission::NeedsSync;
            }
            if let Some(attention) = core.blocking() {
                let tool = request.tool_name();
                let allowed = tool
                    .as_deref()
                    .is_some_and(|t| self.allow.allows(t, core.tags.get(t).into_iter().flatten()));
                if !allowed {
                    return Admission::Blocked(Box::new(BlockedByAttention {
                        attention: attention.clone(),
                        method: request.method().as_str().to_owned(),
                        tool: tool.map(std::borrow::Cow::into_owned),
                    }));
                }
            }
        }
        let kind = match request.method().as_str() {
            "attention/current" => CallKind::Current,
            "attention/ack" => CallKind::Ack,
            "tools/list" => CallKind::ToolsList,
            _ => CallKind::Other,
        };
        Admission::Admitted(Ticket {
            epoch: core.epoch,
            raised: core.raised,
            kind,
        })
    }

    /// Decides a call, bringing the gate in sync first if it must: refused with the blocking item, or let
    /// through with a ticket.
    pub(super) async fn admit(
        &self,
        request: &BridgeRequest,
    ) -> Result<Ticket, BlockedByAttention> {
        let mut synced = false;
        loop {
            match self.try_admit(request, synced) {
                Admission::Admitted(ticket) => return Ok(ticket),
                Admission::Blocked(blocked) => return Err(*blocked),
                Admission::NeedsSync => {
                    self.ensure_synced().await;
                    synced = true;
                }
            }
        }
    }

    /// Learns from a completed call, and attaches the item that opened or changed while it ran.
    pub(super) fn complete(
        &self,
        ticket: Ticket,
        result: &mut Result<BridgeResponse, SessionError>,
    ) {
        let mut core = self.core.lock();
        core.drain();
        match (&*result, ticket.kind) {
            (Ok(response), CallKind::Current) => {
                if let Ok(r) =
                    serde_json::from_value::<AttentionCurrentResult>(response.result().clone())
                {
                    core.apply_snapshot(r.attention, ticket.epoch);
                }
            }
            (Ok(response), CallKind::Ack) => {
                if let Ok(r) =
                    serde_json::from_value::<AttentionAckResult>(response.result().clone())
                {
                    core.apply_ack(&r, ticket.epoch);
                }
            }
            (Ok(response), CallKind::ToolsList) => core.learn_tools(response.result(), false),
            (Err(error), _) => core.apply_refusal(error),
            _ => {}
        }
        if core.raised > ticket.raised {
            if let (Ok(response), Some(attention)) = (result.as_mut(), core.last_raised.clone()) {
                response
                    .extensions_mut()
                    .insert(RelatedAttention { attention });
            }
        }
    }
}
