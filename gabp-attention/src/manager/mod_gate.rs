//! The optional mod-side gate ([`ModGateLayer`]): refuses game-bound calls while a blocking item is open
//! (SPEC/1.0/attention.md §6.3).

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, FutureExt};
use gabp_session::server::{ServerRequest, ToolCatalog};
use gabp_types::{Attention, ErrorCode, ErrorObject, Response};
use serde_json::json;
use tower::{Layer, Service};

use super::{AttentionManager, BLOCKED_REASON};
use crate::policy::Allowlist;

/// The error object the mod-side gate answers a refused `tools/call` with: `-32401` and
/// `data: {executed: false, reason: "blocked_by_attention", attention}`.
///
/// ```
/// use gabp_attention::blocked_error;
/// use gabp_types::{Attention, ErrorCode};
///
/// let attention: Attention = serde_json::from_value(serde_json::json!({
///     "attentionId": "att-1", "state": "open", "severity": "error", "blocking": true,
///     "stateInvalidated": true, "summary": "chunk 0,0 failed to save",
///     "openedAtSequence": 4, "latestSequence": 4, "totalUrgentEntries": 1
/// }))?;
/// let error = blocked_error(&attention);
/// assert_eq!(error.code, ErrorCode::TOOL_UNAVAILABLE);
/// let data = error.data.unwrap();
/// assert_eq!(data["executed"], false);
/// assert_eq!(data["reason"], "blocked_by_attention");
/// assert_eq!(data["attention"]["attentionId"], "att-1");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[must_use]
pub fn blocked_error(attention: &Attention) -> ErrorObject {
    let data = json!({
        "executed": false,
        "reason": BLOCKED_REASON,
        "attention": attention,
    });
    ErrorObject::new(
        ErrorCode::TOOL_UNAVAILABLE,
        format!(
            "blocked by attention {}; acknowledge it with attention/ack",
            attention.attention_id
        ),
    )
    .with_data(data)
}

/// The mod-side gate, added by [`AttentionManager::install`] when the manager was built with
/// [`mod_gate`](super::AttentionManagerBuilder::mod_gate): while a blocking item is open, a `tools/call` of a tool
/// the [`Allowlist`] does not let through is answered with [`blocked_error`] and never reaches the tool. Other
/// methods, unknown tools (answered `-32400` as usual) and allowed tools pass.
#[derive(Clone)]
pub struct ModGateLayer {
    pub(super) manager: AttentionManager,
    pub(super) allow: Arc<Allowlist>,
    pub(super) catalog: ToolCatalog,
}

impl fmt::Debug for ModGateLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModGateLayer")
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

impl<S> Layer<S> for ModGateLayer {
    type Service = ModGate<S>;

    fn layer(&self, inner: S) -> ModGate<S> {
        ModGate {
            inner,
            gate: self.clone(),
        }
    }
}

/// The service of [`ModGateLayer`].
pub struct ModGate<S> {
    inner: S,
    gate: ModGateLayer,
}

impl<S> fmt::Debug for ModGate<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModGate")
            .field("allow", &self.gate.allow)
            .finish_non_exhaustive()
    }
}

impl ModGateLayer {
    /// The item that refuses this request, if any.
    fn refusal(&self, req: &ServerRequest) -> Option<Attention> {
        let tool = req.tool_name()?;
        let tool = tool.as_ref();
        let attention = self.manager.blocking()?;
        let allowed = match self.catalog.get(tool) {
            Some(descriptor) => self.allow.allows(tool, crate::policy::tags_of(&descriptor)),
            // An unknown tool runs nothing: the router answers -32400.
            None => self.catalog.is_built() || self.allow.allows(tool, std::iter::empty::<&str>()),
        };
        (!allowed).then_some(attention)
    }
}

impl<S> Service<ServerRequest> for ModGate<S>
where
    S: Service<ServerRequest, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        if let Some(attention) = self.gate.refusal(&req) {
            tracing::debug!(
                tool = req.tool_name().as_deref().unwrap_or_default(),
                attention = %attention.attention_id,
                "tools/call refused: a blocking attention item is open"
            );
            let answer = req.error(blocked_error(&attention));
            return futures::future::ready(Ok(answer)).boxed();
        }
        self.inner.call(req).boxed()
    }
}
