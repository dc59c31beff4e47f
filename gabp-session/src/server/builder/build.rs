//! Building a [`ModServer`] from what a [`ModServerBuilder`] registered: the names checked, the welcome
//! written (SPEC/1.0 gabp.md §4), the router and the layers assembled.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use gabp_types::methods::{
    AttentionAck, AttentionCurrent, EnvReset, EnvSpaces, EnvStep, HelloToken, InputKey, InputMouse,
    InputTextMethod, Method, StateGet, StateSet, TimePause, TimeResume, TimeStatus, TimeStep,
    ToolsCancel, CORE_METHODS, EXTENSION_METHODS, TIME_CHANGED_CHANNEL, TOOLS_CHANGED_CHANNEL,
};
use gabp_types::{ChannelName, MethodName, Uri};

use super::ModServerBuilder;
use crate::server::admission::Admission;
use crate::server::clock::GameClock;
use crate::server::events::EventPublisher;
use crate::server::layer::{AuthLayer, CapabilityLayer, TimeoutLayer};
use crate::server::router::{Router, Routes};
use crate::server::serve::{self, ModServer};
use crate::server::{welcome, ServeHandle, Tool};
use crate::Error;

impl ModServerBuilder {
    /// Checks everything registered and builds the server.
    ///
    /// # Errors
    ///
    /// [`Error`]: no token or a short one, an invalid or duplicate name, a tool schema that does not
    /// compile, a custom method named like one the mod serves itself, an out-of-range limit, invalid app info
    /// or extension.
    pub fn build(mut self) -> Result<ModServer, Error> {
        self.check_states()?;
        let token = self.token.ok_or(Error::MissingToken)?;
        let len = token.expose_secret().chars().count();
        if len < HelloToken::MIN_LEN {
            return Err(Error::TokenTooShort { len });
        }
        self.limits.check()?;
        self.hub.set_max_message_size(self.limits.max_message_size);
        self.hub.set_patterns(self.channel_patterns);
        self.main_thread.set_capacity(self.limits.main_thread_queue);

        // SPEC/1.0 extensions.md §env: a step runs ticks through the clock.
        if let Some(env) = &self.env {
            if let Some(problem) = env.spec().problem() {
                return Err(Error::InvalidWelcomeConfig(problem));
            }
            self.time_control |= env.spec().ticks() > 0;
        }

        // Tools, and the channel announcing their changes (SPEC/1.0 extensions.md §tools-changed).
        let tools = self
            .tools
            .into_iter()
            .map(Tool::register)
            .collect::<Result<Vec<_>, _>>()?;
        let mut channels = self.channels;
        if self.dynamic_tools {
            channels.push(TOOLS_CHANGED_CHANNEL.to_owned());
        }
        if self.time_control {
            channels.push(TIME_CHANGED_CHANNEL.to_owned());
        }

        // Resources.
        let mut resources = Vec::with_capacity(self.resources.len());
        let mut resource_index = HashMap::new();
        for resource in self.resources {
            let registered = resource.register()?;
            let uri = registered.info.uri.as_str().to_owned();
            if resource_index
                .insert(uri.clone(), resources.len())
                .is_some()
            {
                return Err(Error::Duplicate {
                    kind: "resource",
                    name: uri,
                });
            }
            resources.push(Arc::new(registered));
        }

        // Channels.
        for name in channels {
            let channel = ChannelName::new(name).map_err(|e| Error::InvalidName {
                kind: "channel",
                reason: e.to_string(),
            })?;
            let text = channel.to_string();
            if !self.hub.register(channel) {
                return Err(Error::Duplicate {
                    kind: "channel",
                    name: text,
                });
            }
        }

        // Methods: the core ones the mod serves (the attention methods are custom ones), then custom ones.
        let core = CORE_METHODS
            .iter()
            .copied()
            .filter(|m| ![AttentionCurrent::NAME, AttentionAck::NAME].contains(m));
        let served: HashSet<&str> = core.clone().collect();
        let mut methods: Vec<String> = core
            .filter(|m| match *m {
                StateGet::NAME => self.state_get.is_some(),
                StateSet::NAME => self.state_set.is_some(),
                _ => true,
            })
            .map(str::to_owned)
            .collect();
        // SPEC/1.0 extensions.md §cancel, §time-control, §input, §env: the extensions' methods.
        methods.push(ToolsCancel::NAME.to_owned());
        if self.time_control {
            let time = [
                TimeStatus::NAME,
                TimePause::NAME,
                TimeResume::NAME,
                TimeStep::NAME,
            ];
            methods.extend(time.map(str::to_owned));
        }
        if self.input.is_some() {
            let input = [InputKey::NAME, InputTextMethod::NAME, InputMouse::NAME];
            methods.extend(input.map(str::to_owned));
        }
        if self.env.is_some() {
            let env = [EnvSpaces::NAME, EnvReset::NAME, EnvStep::NAME];
            methods.extend(env.map(str::to_owned));
        }
        let mut custom = HashMap::new();
        for (name, handler) in self.methods {
            MethodName::new(name.clone()).map_err(|e| Error::InvalidName {
                kind: "method",
                reason: e.to_string(),
            })?;
            if served.contains(name.as_str()) || EXTENSION_METHODS.contains(&name.as_str()) {
                return Err(Error::ReservedMethod(name));
            }
            if custom.insert(name.clone(), handler).is_some() {
                return Err(Error::Duplicate {
                    kind: "method",
                    name,
                });
            }
            methods.push(name);
        }

        // The welcome.
        let uris: Vec<Uri> = resources.iter().map(|r| r.info.uri.clone()).collect();
        let welcome = welcome::build(welcome::Parts {
            app: self.app,
            agent_id: self.agent_id,
            server_info: self.server_info,
            channel_patterns: self.channel_patterns,
            tools_changed: self.dynamic_tools,
            time_control: self.time_control,
            input: self.input.is_some(),
            env: self.env.as_ref().map(|env| env.spec().extension()),
            extensions: self.extensions,
            methods: &methods,
            channels: self
                .hub
                .channel_names()
                .into_iter()
                .map(|c| c.to_string())
                .collect(),
            resources: uris,
            limits: &self.limits,
        })?;
        let welcome_error = |e: &dyn fmt::Display| Error::InvalidWelcomeConfig(e.to_string());
        let welcome_value = serde_json::to_value(&welcome).map_err(|e| welcome_error(&e))?;
        let announce = self
            .dynamic_tools
            .then(|| EventPublisher::new(self.hub.clone()));
        let shared = Arc::new(self.shared);
        self.table.fill(tools, announce, shared.clone())?;
        let clock = self.time_control.then(|| {
            let clock = GameClock::new(
                EventPublisher::new(self.hub.clone()),
                self.main_thread.waker(),
            );
            self.main_thread.set_clock(clock.clone());
            clock
        });

        let router = Router::new(Routes {
            welcome: welcome_value,
            tools: self.table.clone(),
            resources,
            resource_index,
            state_get: self.state_get,
            state_set: self.state_set,
            methods: custom,
            hub: self.hub.clone(),
            main_thread: self.main_thread.clone(),
            request_timeout: self.limits.request_timeout,
            content_limit: self.limits.content_limit(),
            clock,
            input: self.input,
            env: self.env.map(Arc::new),
            state: shared,
        });
        Ok(ModServer::new(serve::Parts {
            router,
            auth: AuthLayer::new(token),
            capability: CapabilityLayer::new(methods),
            timeout: TimeoutLayer::new(self.limits.request_timeout)
                .with_tool_table(self.table.clone()),
            admission: Admission::new(self.limits.max_connections),
            limits: self.limits,
            welcome,
            tools: self.table,
            layers: self.layers,
            publisher: EventPublisher::new(self.hub),
            main_thread: self.main_thread,
        }))
    }

    /// Each shared state a handler takes was registered with [`ModServerBuilder::with_state`].
    fn check_states(&self) -> Result<(), Error> {
        match self
            .states
            .iter()
            .find(|(_, state)| !self.shared.contains(*state))
        {
            Some((handler, state)) => Err(Error::MissingState {
                handler: handler.clone(),
                state: state.name(),
            }),
            None => Ok(()),
        }
    }

    /// Builds the server and serves `listener` at once: [`ModServerBuilder::build`], then
    /// [`ModServer::serve`]. Must be called within a Tokio runtime.
    ///
    /// ```
    /// use gabp_session::server::ModServer;
    /// use gabp_transport::{Endpoint, Listener, Token};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let handle = ModServer::builder()
    ///     .token(Token::generate()?)
    ///     .serve(Listener::bind(&Endpoint::tcp_v4(0)).await?)?;
    /// let events = handle.server().event_publisher();
    /// # let _ = events;
    /// handle.shutdown().await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`ModServerBuilder::build`].
    pub fn serve(self, listener: gabp_transport::Listener) -> Result<ServeHandle, Error> {
        Ok(self.build()?.serve(listener))
    }
}
