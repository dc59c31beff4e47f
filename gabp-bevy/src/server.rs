//! [`GabpServer`]: the running mod, as a resource of the app; and what the app registers before it starts.

use std::time::Duration;

use bevy_ecs::prelude::*;
use gabp_session::server::{EventPublisher, GameClock, MainThread, ServeHandle, Tool};
use gabp_session::ModServerBuilder;
use gabp_transport::{BridgeJsonGuard, Endpoint, Listener, ModSettings};
use parking_lot::Mutex;
use serde::Serialize;

/// The mod the app serves: where it listens, its events, its game clock. Inserted by
/// [`GabpPlugin`](crate::GabpPlugin) when the app's plugins finish; absent when serving failed (logged).
#[derive(Resource)]
pub struct GabpServer {
    runtime: Option<tokio::runtime::Runtime>,
    serve: Option<ServeHandle>,
    endpoint: Endpoint,
    main_thread: MainThread,
    events: EventPublisher,
    budget: Duration,
    _bridge_json: Option<BridgeJsonGuard>,
}

impl std::fmt::Debug for GabpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GabpServer")
            .field("endpoint", &self.endpoint.to_string())
            .finish_non_exhaustive()
    }
}

impl GabpServer {
    /// Builds the server, listens where `settings` say and announces it in `bridge.json` when it owns one.
    pub(crate) fn start(
        builder: ModServerBuilder,
        settings: &ModSettings,
        budget: Duration,
    ) -> Result<GabpServer, String> {
        let main_thread = builder.main_thread();
        let events = builder.event_publisher();
        let server = builder
            .settings(settings)
            .build()
            .map_err(|e| e.to_string())?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("gabp-bevy")
            .enable_all()
            .build()
            .map_err(|e| format!("starting its runtime: {e}"))?;
        let listener = runtime
            .block_on(Listener::bind(&settings.endpoint))
            .map_err(|e| format!("listening on {}: {e}", settings.endpoint))?;
        let endpoint = listener.endpoint().clone();
        let bridge_json = settings
            .publish_bridge_json(&endpoint)
            .map_err(|e| format!("writing bridge.json: {e}"))?;
        let serve = {
            let _entered = runtime.enter();
            server.serve(listener)
        };
        Ok(GabpServer {
            runtime: Some(runtime),
            serve: Some(serve),
            endpoint,
            main_thread,
            events,
            budget,
            _bridge_json: bridge_json,
        })
    }

    /// Where the mod listens (`tcp://127.0.0.1:PORT` with the real port).
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The queue of the game's calls; [`GabpRunnerPlugin`](crate::GabpRunnerPlugin) waits on it.
    #[must_use]
    pub fn main_thread(&self) -> &MainThread {
        &self.main_thread
    }

    /// The game clock, with time control on.
    #[must_use]
    pub fn clock(&self) -> Option<GameClock> {
        self.main_thread.clock()
    }

    /// Publishes `payload` on `channel` (one the app declared with
    /// [`GabpAppExt::add_gabp_event`](crate::GabpAppExt::add_gabp_event) or
    /// [`GabpAppExt::add_gabp_channel`](crate::GabpAppExt::add_gabp_channel)); its sequence number.
    ///
    /// # Errors
    ///
    /// An undeclared channel, or a payload that does not serialize to JSON.
    pub fn publish(
        &self,
        channel: &str,
        payload: &impl Serialize,
    ) -> Result<u64, gabp_session::Error> {
        self.events.publish(channel, payload).map(|p| p.seq)
    }
}

impl Drop for GabpServer {
    /// The app has stopped: calls still waiting for a frame are answered at once (the game is shutting
    /// down), those in flight elsewhere get up to 5 s, then the connections close.
    fn drop(&mut self) {
        self.main_thread.close();
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        if let Some(serve) = self.serve.take() {
            runtime.block_on(async {
                let _ = tokio::time::timeout(Duration::from_secs(5), serve.shutdown()).await;
            });
        }
        runtime.shutdown_timeout(Duration::from_secs(1));
    }
}

/// Runs the game's queued calls with the world, up to the budget (in `First`, after time is updated).
pub(crate) fn pump(world: &mut World) {
    let Some(server) = world.get_resource::<GabpServer>() else {
        return;
    };
    let (main_thread, budget) = (server.main_thread.clone(), server.budget);
    main_thread.pump_with(world, budget);
}

/// What the app registers before the server starts: tools and channels.
#[derive(Resource, Default)]
pub(crate) struct Pending {
    registered: Mutex<Registered>,
}

#[derive(Default)]
pub(crate) struct Registered {
    tools: Vec<Tool>,
    channels: Vec<String>,
}

impl Registered {
    pub(crate) fn into_builder(self, mut builder: ModServerBuilder) -> ModServerBuilder {
        for tool in self.tools {
            builder = builder.tool(tool);
        }
        for channel in self.channels {
            builder = builder.channel(channel);
        }
        builder
    }
}

impl Pending {
    pub(crate) fn init(world: &mut World) {
        world.init_resource::<Pending>();
    }

    /// Adds to what the server will serve; after it has started, logs that it came too late.
    pub(crate) fn add(world: &mut World, what: &str, change: impl FnOnce(&mut Registered)) {
        if world.contains_resource::<GabpServer>() {
            tracing::error!(
                "gabp-bevy: {what} was added after the app started serving: it is not served"
            );
            return;
        }
        world.init_resource::<Pending>();
        change(&mut world.resource::<Pending>().registered.lock());
    }

    pub(crate) fn add_tool(world: &mut World, tool: Tool) {
        let what = format!("tool {}", tool.name());
        Pending::add(world, &what, |r| r.tools.push(tool));
    }

    pub(crate) fn add_channel(world: &mut World, channel: String) {
        Pending::add(world, &format!("channel {channel}"), |r| {
            if !r.channels.contains(&channel) {
                r.channels.push(channel);
            }
        });
    }

    pub(crate) fn take(world: &mut World) -> Registered {
        world
            .remove_resource::<Pending>()
            .map(|p| p.registered.into_inner())
            .unwrap_or_default()
    }
}
