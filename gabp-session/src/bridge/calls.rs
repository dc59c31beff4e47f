//! The bridge's named calls: one for each method a mod serves (tools, resources, state, attention, ping), the
//! tool list kept fresh by `tools/changed`, and tool calls that report their progress (SPEC/1.0 gabp.md §4,
//! extensions.md).

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use gabp_types::methods::{
    AttentionAck, AttentionAckParams, AttentionAckResult, AttentionCurrent, Method, PingResult,
    ResourceInfo, ResourcesList, ResourcesListParams, ResourcesRead, ResourcesReadParams,
    ResourcesReadResult, SessionPing, StateGet, StateGetParams, StateGetResult, StateSet,
    StateSetParams, StateSetResult, ToolFilter, ToolsCall, ToolsList, ToolsListParams,
    PROGRESS_EXTENSION, TOOLS_CHANGED_CHANNEL, TOOLS_CHANGED_EXTENSION,
};
use gabp_types::{Attention, NonEmptyString, ToolDescriptor, Uri};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::client::Bridge;
use super::progress::ProgressUpdates;
use super::request::BridgeRequest;
use super::response::BridgeResponse;
use crate::Error;

impl Bridge {
    /// Calls tool `name` with `arguments` (`null` for none, else a JSON object); returns the tool's result.
    ///
    /// # Errors
    ///
    /// See [`Error`]: [`Error::ToolNotFound`], [`Error::InvalidParams`],
    /// [`Error::ToolFailed`], [`Error::ToolTimeout`], ...
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, Error> {
        let request = BridgeRequest::tool_call(name, arguments)?;
        self.send(request).await.map(BridgeResponse::into_result)
    }

    /// Calls tool `name` with typed arguments and reads its result as `R`.
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// #[derive(serde::Serialize)]
    /// struct At { x: i64, y: i64, z: i64 }
    /// #[derive(serde::Deserialize)]
    /// struct Block { block: Option<String> }
    ///
    /// let found: Block = bridge.call_tool_as("world/get_block", &At { x: 1, y: 2, z: 3 }).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Bridge::call_tool`]; arguments that do not serialize to an object are
    /// [`Error::InvalidRequest`], a result that does not read as `R` is
    /// [`Error::InvalidResult`].
    pub async fn call_tool_as<A, R>(&self, name: &str, arguments: &A) -> Result<R, Error>
    where
        A: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let request = BridgeRequest::tool_call_as(name, arguments)?;
        self.send_as(request, ToolsCall::NAME).await
    }

    /// The mod's tools (`tools/list`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn list_tools(&self) -> Result<Vec<ToolDescriptor>, Error> {
        Ok(self
            .call::<ToolsList>(&ToolsListParams::default())
            .await?
            .tools)
    }

    /// The mod's tools matching `filter` (`tools/list` with a filter).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn list_tools_filtered(
        &self,
        filter: ToolFilter,
    ) -> Result<Vec<ToolDescriptor>, Error> {
        let params = ToolsListParams {
            filter: Some(filter),
        };
        Ok(self.call::<ToolsList>(&params).await?.tools)
    }

    /// The mod's tools, from a cache when the mod announces its changes.
    ///
    /// A mod that advertises the `tools-changed` extension announces every change of its tools on
    /// `tools/changed`: the first call subscribes to that channel (through the layers, like
    /// [`Bridge::subscribe`]), and from then on the list is asked for again (`tools/list`) only after such an
    /// event, a lost event, or a reconnect. With any other mod, every call asks (as [`Bridge::list_tools`]).
    ///
    /// ```no_run
    /// # async fn f(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// let tools = bridge.tools().await?;
    /// let again = bridge.tools().await?; // no round trip, unless the tools changed
    /// # let _ = (tools, again);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Bridge::list_tools`] and [`Bridge::subscribe`].
    pub async fn tools(&self) -> Result<Arc<[ToolDescriptor]>, Error> {
        if !self.follow_tool_changes().await? {
            return Ok(self.list_tools().await?.into());
        }
        let cache = &self.shared().tools;
        let (epoch, cached) = cache.current();
        if let Some(tools) = cached {
            return Ok(tools);
        }
        let tools: Arc<[ToolDescriptor]> = self.list_tools().await?.into();
        cache.store(epoch, tools.clone());
        Ok(tools)
    }

    /// Forgets the tool list cached by [`Bridge::tools`], so that the next call asks the mod.
    pub fn invalidate_tools(&self) {
        self.shared().tools.invalidate();
    }

    /// Whether the mod advertises the `tools-changed` extension and its events reach this bridge; subscribes
    /// to `tools/changed` when they do not yet.
    async fn follow_tool_changes(&self) -> Result<bool, Error> {
        if !self.offers(TOOLS_CHANGED_EXTENSION) {
            return Ok(false);
        }
        let shared = self.shared();
        let listens = || shared.router.lock().listens(TOOLS_CHANGED_CHANNEL);
        if listens() {
            return Ok(true);
        }
        let _one_at_a_time = shared.tools.following.lock().await;
        if listens() {
            return Ok(true);
        }
        let mut changes = self.subscribe([TOOLS_CHANGED_CHANNEL]).await?;
        // Changes before the subscription went unannounced.
        shared.tools.invalidate();
        if changes.channels().is_empty() {
            return Ok(false);
        }
        // The events themselves invalidate the cache as they arrive; this only keeps the queue empty.
        tokio::spawn(async move { while let Some(Ok(_)) = changes.next().await {} });
        Ok(true)
    }

    /// Readable resources (`resources/list`), optionally filtered.
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn list_resources(
        &self,
        params: ResourcesListParams,
    ) -> Result<Vec<ResourceInfo>, Error> {
        Ok(self.call::<ResourcesList>(&params).await?.resources)
    }

    /// Reads one resource (`resources/read`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for an invalid URI; [`Error::ResourceNotFound`]; see
    /// [`Error`].
    pub async fn read_resource(&self, uri: &str) -> Result<ResourcesReadResult, Error> {
        let uri = Uri::new(uri).map_err(|e| Error::invalid_request(e.to_string()))?;
        self.call::<ResourcesRead>(&ResourcesReadParams { uri })
            .await
    }

    /// The game state (`state/get`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn get_state(&self, params: StateGetParams) -> Result<StateGetResult, Error> {
        self.call::<StateGet>(&params).await
    }

    /// Applies state updates (`state/set`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn set_state(&self, params: StateSetParams) -> Result<StateSetResult, Error> {
        self.call::<StateSet>(&params).await
    }

    /// The open attention item, if any (`attention/current`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn current_attention(&self) -> Result<Option<Attention>, Error> {
        Ok(self
            .call::<AttentionCurrent>(&Default::default())
            .await?
            .attention)
    }

    /// Acknowledges attention item `attention_id` (`attention/ack`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for an empty id; see [`Error`].
    pub async fn ack_attention(&self, attention_id: &str) -> Result<AttentionAckResult, Error> {
        let attention_id =
            NonEmptyString::new(attention_id).map_err(|e| Error::invalid_request(e.to_string()))?;
        self.call::<AttentionAck>(&AttentionAckParams { attention_id })
            .await
    }

    /// Pings the mod (`session/ping`).
    ///
    /// # Errors
    ///
    /// See [`Error`].
    pub async fn ping(&self) -> Result<PingResult, Error> {
        self.call::<SessionPing>(&Default::default()).await
    }

    /// Whether the mod offers the `progress` extension.
    #[must_use]
    pub fn offers_progress(&self) -> bool {
        self.offers(PROGRESS_EXTENSION)
    }

    /// Whether the welcome advertises `extension` (SPEC/1.0 extensions.md).
    fn offers(&self, extension: &str) -> bool {
        self.welcome()
            .capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.get(extension).is_some())
    }

    /// A fresh progress token and the stream of the progress events the mod sends with it, for a request
    /// made with [`BridgeRequest::tool_call_with_progress`] (through layers or a gate of one's own). The
    /// stream ends when it is dropped.
    #[must_use]
    pub fn progress_updates(&self) -> ProgressUpdates {
        self.shared().progress.register()
    }

    /// Calls tool `name` asking the mod for its progress: the stream of progress items, and the call's result.
    /// Progress comes strictly before the result. A mod without the `progress` extension is called as by
    /// [`Bridge::call_tool`] (without the token), and the stream ends with the call.
    ///
    /// ```no_run
    /// use futures::StreamExt;
    /// # async fn run(bridge: gabp_session::bridge::Bridge) -> Result<(), gabp_session::Error> {
    /// let (mut progress, call) = bridge.call_tool_with_progress("demo/sleep", serde_json::json!({"ms": 500}));
    /// let printer = async {
    ///     while let Some(p) = progress.next().await {
    ///         println!("{} of {:?}", p.progress, p.total);
    ///     }
    /// };
    /// let (result, ()) = futures::join!(call, printer);
    /// println!("{}", result?);
    /// # Ok(()) }
    /// ```
    pub fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: Value,
    ) -> (ProgressUpdates, BoxFuture<'static, Result<Value, Error>>) {
        let updates = self.progress_updates();
        let end = updates.end_on_drop();
        let request = if self.offers_progress() {
            BridgeRequest::tool_call_with_progress(name, arguments, updates.token())
        } else {
            BridgeRequest::tool_call(name, arguments)
        };
        let bridge = self.clone();
        let call = async move {
            let _end = end;
            Ok(bridge.send(request?).await?.into_result())
        }
        .boxed();
        (updates, call)
    }
}
