//! gabp-mcp: the MCP front of gabp-rs, on the official Rust SDK `rmcp`.
//!
//! [`GabpMcp`] serves a [`gabp_hub::Hub`] to any MCP client (Claude Desktop, Cursor, VS Code, ...) with the
//! same tools as GABS 1.1 (`games_list`, `games_start`, `games_call_tool`, `games_get_attention`, ...), so
//! that a GABS configuration works unchanged, plus `games_subscribe`, `games_unsubscribe` and `games_events`
//! for game events. With [`McpOptions::mirror_tools`] every game tool is also an MCP tool of its own, named
//! `<gameId>_<tool>` (`voxel_world_get_block`), and clients are told when the list changes. Game resources are
//! MCP resources under `gabp-game://<gameId>/<uri>`. See `docs/mcp.md` for the mapping.
//!
//! Layering: the top of the stack, on `gabp-hub` (games, their bridges, attention and events) and `rmcp`; the
//! `gabp mcp` command runs it.
//!
//! ```no_run
//! use gabp_hub::{Hub, HubConfig};
//! use gabp_mcp::{GabpMcp, McpOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let hub = Hub::new(HubConfig::load("/home/me/.gabs")?);
//! GabpMcp::new(hub, McpOptions::default()).serve_stdio().await?;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod catalog;
mod error;
mod event_resources;
mod handlers;
pub mod http;
mod images;
mod push;
mod reply;
mod resources;

pub use error::ServeError;
pub use images::ImageLimits;

use std::collections::BTreeSet;
use std::sync::Arc;

use gabp_hub::{Hub, HubEvent, LiveHub, ToolNaming};
use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult,
    MetaObject, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler, ServiceExt};

use crate::catalog::{HubTool, HUB_TOOLS};

/// What an MCP client is told at `initialize`.
const INSTRUCTIONS: &str = "gabp mcp drives the games configured for it over GABP. Start with games_list or \
games_status, then games_start (or games_connect) with a gameId. To act in a game: games_tool_names with \
brief=true, games_tool_detail for one tool, then games_call_tool. When a call is refused as blocked_by_attention, \
read games_get_attention and acknowledge with games_ack_attention before acting again.";

/// Options of the MCP front.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct McpOptions {
    /// List every connected game's tools as MCP tools of their own (`<gameId>_<tool>`), and send
    /// `notifications/tools/list_changed` when they change.
    pub mirror_tools: bool,
    /// How large a picture in a tool's answer may be; larger ones are scaled down.
    pub images: ImageLimits,
}

impl McpOptions {
    /// With [`McpOptions::mirror_tools`] set as given.
    #[must_use]
    pub fn mirror_tools(mut self, mirror: bool) -> Self {
        self.mirror_tools = mirror;
        self
    }

    /// With [`McpOptions::images`] as given.
    #[must_use]
    pub fn images(mut self, limits: ImageLimits) -> Self {
        self.images = limits;
        self
    }
}

/// The MCP server: a hub behind the GABS tool set. Cheap to clone; clones share the hub and the clients.
#[derive(Clone)]
pub struct GabpMcp {
    /// The hub of the configuration in effect, read again when `config.json` changes.
    live: LiveHub,
    options: McpOptions,
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    /// Resource URIs clients subscribed to (`resources/subscribe`).
    subscribed: Arc<Mutex<BTreeSet<String>>>,
    /// This MCP session (one per HTTP session), and all of them.
    session: Arc<push::Session>,
    sessions: push::Sessions,
}

impl std::fmt::Debug for GabpMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GabpMcp")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl GabpMcp {
    /// A front for `hub` (a [`Hub`] as it is, or a [`LiveHub`] that follows `config.json`). Within a Tokio
    /// runtime, a task passes the hub's changes on to connected clients.
    #[must_use]
    pub fn new(hub: impl Into<LiveHub>, options: McpOptions) -> GabpMcp {
        let front = GabpMcp {
            live: hub.into(),
            options,
            peers: Arc::new(Mutex::new(Vec::new())),
            subscribed: Arc::new(Mutex::new(BTreeSet::new())),
            session: Arc::default(),
            sessions: Arc::default(),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(front.clone().pass_on_changes());
            tokio::spawn(push::forward_logs(
                front.live.clone(),
                front.sessions.clone(),
            ));
            event_resources::start(front.live.clone(), front.sessions.clone());
        }
        front
    }

    /// A front for one more MCP session (of the HTTP transport), sharing the hub and the other sessions.
    #[must_use]
    pub(crate) fn for_session(&self) -> GabpMcp {
        GabpMcp {
            session: Arc::default(),
            ..self.clone()
        }
    }

    /// The hub of the configuration in effect now.
    #[must_use]
    pub fn hub(&self) -> Hub {
        self.live.current()
    }

    /// Serves one client on stdin and stdout until it goes away, then stops the games the hub started.
    ///
    /// # Errors
    ///
    /// [`ServeError::Initialize`] when the MCP session cannot be set up (the client did not initialize),
    /// [`ServeError::Session`] when the task serving it fails.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        self.serve_until_closed(rmcp::transport::stdio()).await
    }

    async fn serve_until_closed<T, E, A>(self, transport: T) -> Result<(), ServeError>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let live = self.live.clone();
        let result = match self.serve(transport).await {
            Ok(running) => running
                .waiting()
                .await
                .map(|_| ())
                .map_err(ServeError::Session),
            Err(e) => Err(ServeError::Initialize(Box::new(e))),
        };
        live.shutdown().await;
        result
    }

    /// Tells every client about the hub's changes: tool list changes when tools are mirrored, resource list
    /// changes when a game connects or goes away.
    async fn pass_on_changes(self) {
        let mut changes = self.hub().changes();
        loop {
            let change = match changes.recv().await {
                Ok(change) => Some(change),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let peers: Vec<Peer<RoleServer>> = self.peers.lock().clone();
            // A game's resources may have changed when its status or tools did: GABP has no change
            // notification for resources, so subscribers hear of it then (docs/mcp.md).
            let updated: Vec<String> = match &change {
                Some(HubEvent::StatusChanged { game, .. } | HubEvent::ToolsChanged { game }) => {
                    let prefix = format!("{}{game}/", resources::SCHEME);
                    self.subscribed
                        .lock()
                        .iter()
                        .filter(|uri| uri.starts_with(&prefix))
                        .cloned()
                        .collect()
                }
                _ => Vec::new(),
            };
            let mut gone = false;
            for peer in &peers {
                let sent = match &change {
                    Some(HubEvent::ToolsChanged { .. }) | None if self.options.mirror_tools => {
                        peer.notify_tool_list_changed().await
                    }
                    Some(HubEvent::ToolListChanged) => peer.notify_tool_list_changed().await,
                    Some(HubEvent::StatusChanged { .. } | HubEvent::GamesChanged) => {
                        peer.notify_resource_list_changed().await
                    }
                    _ => Ok(()),
                };
                gone |= sent.is_err();
                for uri in &updated {
                    let sent = peer
                        .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone()))
                        .await;
                    gone |= sent.is_err();
                }
            }
            if gone {
                self.peers.lock().retain(|p| !p.is_transport_closed());
            }
        }
    }

    fn mirrored_tools(&self) -> Vec<Tool> {
        let hub = self.hub();
        let strip = hub.config().strip_output_schema;
        hub.mirrored_tools()
            .into_iter()
            .map(|(name, found)| {
                let t = &found.tool;
                let mut tool = Tool::new(
                    name,
                    format!("{} (Game: {})", t.description.as_str(), found.game.id()),
                    Arc::new(t.input_schema.clone()),
                )
                .with_title(t.title.as_str())
                .with_meta(meta("gabpName", t.name.as_str()));
                if !strip && !t.output_schema.is_empty() {
                    tool = tool.with_raw_output_schema(Arc::new(t.output_schema.clone()));
                }
                tool
            })
            .collect()
    }
}

fn meta(key: &str, value: &str) -> MetaObject {
    let mut object = serde_json::Map::new();
    object.insert(key.to_owned(), serde_json::Value::from(value));
    MetaObject(object)
}

/// A hub tool as listed under `toolNormalization`: `games_list` with GABS's dotted name in
/// `_meta.originalName` (and in its description with `preserveOriginalName`), or `games.list` itself.
fn hub_tool(t: &HubTool, naming: ToolNaming) -> Tool {
    let dotted = t.dotted_name();
    let tool = if !naming.normalize {
        Tool::new(dotted, t.description, t.input_schema())
    } else if naming.preserve_original {
        let description = format!("{} (Original: {dotted})", t.description);
        Tool::new(t.name, description, t.input_schema()).with_meta(meta("originalName", &dotted))
    } else {
        Tool::new(t.name, t.description, t.input_schema()).with_meta(meta("originalName", &dotted))
    };
    tool.with_annotations(ToolAnnotations::new().read_only(t.read_only))
}

impl ServerHandler for GabpMcp {
    #[allow(deprecated)] // the logging capability: MCP 2025-06-18 clients use it.
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("gabp-mcp", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let _ = self.session.peer.set(context.peer.clone());
        self.sessions.lock().push(self.session.clone());
        self.peers.lock().push(context.peer);
    }

    #[allow(deprecated)] // logging/setLevel is what 2025-06-18 clients send.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session.set_level(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let naming = self.hub().config().tool_naming;
        let mut tools: Vec<Tool> = HUB_TOOLS.iter().map(|t| hub_tool(t, naming)).collect();
        if self.options.mirror_tools {
            tools.extend(self.mirrored_tools());
        }
        Ok(ListToolsResult {
            tools,
            ..Default::default()
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| (token, context.peer.clone()));
        let timeout = handlers::meta_timeout(&context.meta)?;
        let hub = self.hub();
        let mut result = if let Some(tool) = HubTool::find(&request.name) {
            let result = handlers::run(
                &hub,
                tool,
                request.arguments.as_ref(),
                &context.ct,
                progress,
                timeout,
            )
            .await;
            // The event resources (event_resources.rs) follow the subscribed channels.
            if matches!(tool.name, "games_subscribe" | "games_unsubscribe")
                && result.is_error != Some(true)
            {
                let peers: Vec<Peer<RoleServer>> = self.peers.lock().clone();
                for peer in peers {
                    let _ = peer.notify_resource_list_changed().await;
                }
            }
            result
        } else if let Err(e) = hub.check_config() {
            reply::Reply::from(e).into_result()
        } else {
            // A game tool by its mirrored name (listed with --mirror-tools; always callable).
            let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
            handlers::call_game_tool(
                &hub,
                &request.name,
                None,
                arguments,
                timeout.unwrap_or_else(|| hub.config().tool_call_timeout()),
                &context.ct,
                progress,
            )
            .await
            .unwrap_or_else(reply::Reply::into_result)
        };
        images::fit_content(&mut result.content, self.options.images).await;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        resources::list(&self.hub()).await
    }

    #[allow(deprecated)] // resources/subscribe is what 2025 clients send.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (game, inner) = resources::check_uri(&self.hub(), &request.uri)?;
        if let Some(channel) = event_resources::channel_of(inner) {
            return event_resources::subscribe(&self.session, &request.uri, &game, channel);
        }
        self.subscribed.lock().insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        event_resources::unsubscribe(&self.session, &request.uri);
        self.subscribed.lock().remove(&request.uri);
        Ok(())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (game, inner) = resources::check_uri(&self.hub(), &request.uri)?;
        if let Some(channel) = event_resources::channel_of(inner) {
            let contents = event_resources::read(&self.session, &request.uri, &game, channel)?;
            return Ok(rmcp::model::ReadResourceResult::new(vec![contents]).into());
        }
        resources::read(&self.hub(), &request.uri).await
    }
}

#[cfg(test)]
mod tests {
    use gabp_hub::HubConfig;

    use super::*;

    fn front_without_games() -> GabpMcp {
        let config = HubConfig::from_json_slice(br#"{"version":"1.0","games":{}}"#).unwrap();
        GabpMcp::new(Hub::new(config), McpOptions::default())
    }

    #[tokio::test]
    async fn a_client_that_leaves_before_initializing_is_a_serve_error() {
        let front = front_without_games();
        let (ours, theirs) = tokio::io::duplex(64);
        drop(theirs);
        let error = front
            .serve_until_closed(tokio::io::split(ours))
            .await
            .unwrap_err();
        assert!(matches!(error, ServeError::Initialize(_)), "{error:?}");
        assert!(error.to_string().starts_with("MCP on stdio: "), "{error}");
    }

    #[tokio::test]
    async fn http_off_loopback_is_refused_before_binding() {
        let front = front_without_games();
        let addr = "0.0.0.0:0".parse().unwrap();
        let error = http::HttpServer::bind(front, addr, http::Access::Open, &[])
            .await
            .unwrap_err();
        assert!(
            matches!(error, ServeError::NotLoopback(a) if a == addr),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("not a loopback address"),
            "{error}"
        );
    }
}
