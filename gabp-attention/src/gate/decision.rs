//! What the gate answers besides the call's own result: [`BlockedByAttention`] (not executed),
//! [`RelatedAttention`] and [`Gated`] (executed, with the item that appeared meanwhile), [`GateError`].

use gabp_session::Error as SessionError;
use gabp_types::Attention;

/// A game-bound call refused by the gate because a blocking attention item is open. **The call was not
/// executed**: nothing was sent to the mod.
///
/// The [`AttentionGateLayer`] returns it as the source of a [`gabp_session::Error::Rejected`]; get it back with
/// [`BlockedByAttention::from_error`] (or [`gabp_session::Error::rejection`]). Acknowledge the item
/// ([`AttentionGate::ack`]) and call again.
///
/// [`AttentionGateLayer`]: super::AttentionGateLayer
/// [`AttentionGate::ack`]: super::AttentionGate::ack
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} was not executed: {}", call_name(.method, .tool), blocked_by(.attention))]
#[non_exhaustive]
pub struct BlockedByAttention {
    /// The item that blocked the call.
    pub attention: Attention,
    /// The method of the refused call (`tools/call`, or another method the gate was told to gate).
    pub method: String,
    /// The tool of a refused `tools/call`.
    pub tool: Option<String>,
}

fn call_name(method: &str, tool: &Option<String>) -> String {
    match tool {
        Some(tool) => format!("tools/call of {tool}"),
        None => method.to_owned(),
    }
}

fn blocked_by(a: &Attention) -> String {
    format!(
        "blocked by attention item {} ({}, {:?}): {}; acknowledge it with attention/ack",
        a.attention_id,
        if a.state_invalidated {
            "earlier reads may be stale"
        } else {
            "earlier reads stay valid"
        },
        a.severity,
        a.summary
    )
}

impl BlockedByAttention {
    /// Always `false`: a blocked call never ran.
    #[must_use]
    pub fn executed(&self) -> bool {
        false
    }

    /// The refusal inside a [`gabp_session::Error::Rejected`], if it is one.
    ///
    /// ```
    /// use gabp_attention::BlockedByAttention;
    /// use gabp_session::Error;
    ///
    /// assert!(BlockedByAttention::from_error(&Error::Disconnected).is_none());
    /// ```
    #[must_use]
    pub fn from_error(error: &SessionError) -> Option<&BlockedByAttention> {
        error.rejection::<BlockedByAttention>()
    }
}

/// Attached to the [`BridgeResponse`] extensions of a call that ran while an attention item opened (or
/// changed): the call completed normally — it was executed — and this is the item that appeared meanwhile.
/// The next game-bound call is blocked if the item is blocking.
///
/// [`BridgeResponse`]: gabp_session::bridge::BridgeResponse
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelatedAttention {
    /// The item, as last seen when the call completed.
    pub attention: Attention,
}

/// The result of a call made through [`AttentionGate::call_tool`]: the tool's value, and the attention item
/// that opened or changed while the call ran, if any (see [`RelatedAttention`]).
///
/// [`AttentionGate::call_tool`]: super::AttentionGate::call_tool
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Gated<T> {
    /// The call's result.
    pub value: T,
    /// The item that opened or changed while the call ran.
    pub attention: Option<Attention>,
}

/// Why an [`AttentionGate`](super::AttentionGate) operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The mod's welcome does not advertise `attention/current`.
    #[error("the mod does not advertise attention")]
    NotSupported,
    /// There is no open item to acknowledge.
    #[error("no attention item is open")]
    NothingOpen,
    /// The bridge failed.
    #[error(transparent)]
    Bridge(#[from] SessionError),
}
