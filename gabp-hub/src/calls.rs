//! What a client asks of a connected game: its tools, tool calls through the attention gate, attention,
//! events from the log, resources.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use gabp_attention::{GateError, Gated};
use gabp_session::bridge::{BridgeRequest, ProgressUpdates};
use gabp_session::Error as SessionError;
use gabp_types::methods::{
    AttentionAckResult, ResourceInfo, ResourcesListParams, ResourcesReadResult,
};
use gabp_types::{Attention, ToolDescriptor};
use serde_json::Value;
use tokio::time::Instant;

use crate::console::ConsoleTail;
use crate::error::HubError;
use crate::events::{Cursor, EventBatch};
use crate::game::Game;

/// A game tool call under way: its result, with the attention item that opened while it ran.
pub type GameCall = BoxFuture<'static, Result<Gated<Value>, HubError>>;

/// The longest `events` waits for new events.
pub const MAX_EVENT_WAIT: Duration = Duration::from_secs(30);

/// Whether a game offers attention, and its open item.
#[derive(Debug, Clone, PartialEq)]
pub enum AttentionView {
    /// The game does not advertise `attention/current` and `attention/ack`.
    Unsupported,
    /// The open item, if any.
    Current(Option<Attention>),
}

impl Game {
    /// The game's tools as last listed (empty when not connected).
    #[must_use]
    pub fn cached_tools(&self) -> Arc<[ToolDescriptor]> {
        let state = self.shared.state.lock();
        if state.link.is_some() {
            state.tools.clone()
        } else {
            Arc::from(Vec::new())
        }
    }

    /// The game's tools, asked for again unless the game announces its changes.
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], [`HubError::Bridge`].
    pub async fn tools(&self) -> Result<Arc<[ToolDescriptor]>, HubError> {
        let link = self.require_link()?;
        let tools = link
            .bridge
            .tools()
            .await
            .map_err(|e| HubError::bridge(self.id(), e))?;
        self.shared.state.lock().tools = tools.clone();
        Ok(tools)
    }

    /// Calls tool `name` through the attention gate: refused without a message to the game while a blocking
    /// item is open; one `tools/call` otherwise. The result carries the item that opened while the call ran.
    ///
    /// # Errors
    ///
    /// [`HubError::Blocked`] (not executed), [`HubError::NotConnected`], [`HubError::Bridge`].
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Gated<Value>, HubError> {
        let link = self.require_link()?;
        link.gate
            .call_tool(name, arguments)
            .await
            .map_err(|e| HubError::bridge(self.id(), e))
    }

    /// As [`Game::call_tool`], asking the game for its progress when it offers the `progress` extension
    /// (SPEC/1.0 extensions.md §progress): the progress items as a stream, and the call. Dropping the call
    /// cancels it on the game (`tools/cancel`, when offered).
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], or the request cannot be made; the call's own errors as
    /// [`Game::call_tool`].
    pub fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<(ProgressUpdates, GameCall), HubError> {
        let link = self.require_link()?;
        let updates = link.bridge.progress_updates();
        let request = if link.bridge.offers_progress() {
            BridgeRequest::tool_call_with_progress(name, arguments, updates.token())
        } else {
            BridgeRequest::tool_call(name, arguments)
        }
        .map_err(|e| HubError::bridge(self.id(), e))?;
        let game = self.id().to_owned();
        let call = async move {
            link.gate
                .call(request)
                .await
                .map_err(|e| HubError::bridge(&game, e))
        }
        .boxed();
        Ok((updates, call))
    }

    /// Sends `method` of the time-control or input extension (SPEC/1.0 extensions.md §time-control, §input)
    /// with `params` through the attention gate, which refuses those that move or play the game
    /// ([`GATED_METHODS`](crate::GATED_METHODS)) while a blocking item is open. A method the game does not advertise fails without a
    /// round trip.
    ///
    /// # Errors
    ///
    /// [`HubError::Blocked`] (not sent), [`HubError::NotConnected`], [`HubError::Bridge`] (the game's error
    /// answer, or the method not advertised).
    pub async fn request(&self, method: &str, params: Value) -> Result<Gated<Value>, HubError> {
        let link = self.require_link()?;
        let request =
            BridgeRequest::from_json(method, params).map_err(|e| HubError::bridge(self.id(), e))?;
        link.gate
            .call(request)
            .await
            .map_err(|e| HubError::bridge(self.id(), e))
    }

    /// Whether the game offers attention, and its open item, asked for now.
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], [`HubError::Bridge`].
    pub async fn attention(&self) -> Result<AttentionView, HubError> {
        let link = self.require_link()?;
        match link.gate.refresh().await {
            Ok(item) => Ok(AttentionView::Current(item)),
            Err(GateError::NotSupported) => Ok(AttentionView::Unsupported),
            Err(e) => Err(self.gate_error(e)),
        }
    }

    /// The open item as the hub follows it from the game's attention events (no request).
    #[must_use]
    pub fn blocking_attention(&self) -> Option<Attention> {
        self.link().and_then(|link| link.gate.blocking())
    }

    /// Acknowledges item `attention_id`.
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], [`HubError::Bridge`] (an unknown id is the game's error answer).
    pub async fn ack_attention(&self, attention_id: &str) -> Result<AttentionAckResult, HubError> {
        let link = self.require_link()?;
        link.gate
            .ack_id(attention_id)
            .await
            .map_err(|e| self.gate_error(e))
    }

    fn gate_error(&self, error: GateError) -> HubError {
        match error {
            GateError::Bridge(e) => HubError::bridge(self.id(), e),
            other => HubError::Bridge {
                game: self.id().to_owned(),
                source: SessionError::rejected(other),
            },
        }
    }

    /// The logged events after `cursor` (from the oldest kept when `None`), waiting up to `wait` (at most
    /// 30 s) for one to arrive when there is none yet.
    ///
    /// # Errors
    ///
    /// [`HubError::BadCursor`] for a cursor this hub did not hand out.
    pub async fn events(
        &self,
        cursor: Option<&str>,
        wait: Duration,
    ) -> Result<EventBatch, HubError> {
        let cursor: Option<Cursor> = cursor.map(str::parse).transpose()?;
        let deadline = Instant::now() + wait.min(MAX_EVENT_WAIT);
        loop {
            let arrived = self.shared.events_arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let batch = self.shared.state.lock().events.read(cursor);
            if !batch.events.is_empty() || !batch.gaps.is_empty() || Instant::now() >= deadline {
                return Ok(batch);
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return Ok(self.shared.state.lock().events.read(cursor));
            }
        }
    }

    /// The logged events of `channel` after `cursor` (from the oldest kept when `None`), without waiting.
    #[must_use]
    pub fn channel_events(&self, channel: &str, cursor: Option<Cursor>) -> EventBatch {
        self.shared
            .state
            .lock()
            .events
            .read_channel(cursor, channel)
    }

    /// The cursor past the newest logged event.
    #[must_use]
    pub fn events_end(&self) -> Cursor {
        self.shared.state.lock().events.end()
    }

    /// Completes when events arrive in the log after it was enabled (`Notified::enable`) or first polled.
    pub fn events_arrived(&self) -> tokio::sync::futures::Notified<'_> {
        self.shared.events_arrived.notified()
    }

    /// The last `max` lines the game printed (of the processes this hub started) whose text `filter` accepts.
    #[must_use]
    pub fn console_tail(&self, max: usize, filter: &dyn Fn(&str) -> bool) -> ConsoleTail {
        self.shared.console.tail(max, filter)
    }

    /// The channels subscribed with [`Game::subscribe`].
    #[must_use]
    pub fn subscribed_channels(&self) -> Vec<String> {
        self.shared.state.lock().channels.iter().cloned().collect()
    }

    /// The game's resources.
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], [`HubError::Bridge`].
    pub async fn resources(&self) -> Result<Vec<ResourceInfo>, HubError> {
        let link = self.require_link()?;
        if !link.bridge.is_advertised("resources/list") {
            return Ok(Vec::new());
        }
        link.bridge
            .list_resources(ResourcesListParams::default())
            .await
            .map_err(|e| HubError::bridge(self.id(), e))
    }

    /// Reads resource `uri`.
    ///
    /// # Errors
    ///
    /// [`HubError::NotConnected`], [`HubError::Bridge`].
    pub async fn read_resource(&self, uri: &str) -> Result<ResourcesReadResult, HubError> {
        let link = self.require_link()?;
        link.bridge
            .read_resource(uri)
            .await
            .map_err(|e| HubError::bridge(self.id(), e))
    }
}
