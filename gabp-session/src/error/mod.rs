//! [`Error`]: every way this crate's API can fail, typed.

mod remote;

use std::error::Error as StdError;
use std::time::Duration;

use gabp_transport::TransportError;
use gabp_types::ErrorObject;

pub use remote::{
    ParamError, LIBGAB_AUTHENTICATION_FAILED, LIBGAB_NOT_ESTABLISHED, LIBGAB_TOOL_NOT_FOUND,
};

/// Why a call of this crate failed: a bridge call or connecting, building a
/// [`ModServer`](crate::server::ModServer), changing its [`ToolRegistry`](crate::server::ToolRegistry), or
/// publishing with an [`EventPublisher`](crate::server::EventPublisher).
///
/// Each variant's documentation starts with where it comes from:
///
/// - **answered by the mod**: the errors a mod answers a bridge call with, mapped to typed variants by code,
///   ours and Lib.GAB's alike (-31000, -31001 and -31002 read as -32101, -32100 and -32400). Each keeps the
///   whole [`ErrorObject`] (message, `data`, `retryable`): see [`Error::error_object`] and [`Error::code`];
/// - **bridge**: the connection, or the bridge's own checks; **local** ones were raised on this side (a local
///   [`Error::Timeout`] is not the mod's [`Error::ToolTimeout`], and [`Error::NotAdvertised`] and
///   [`Error::Rejected`] never sent anything). [`Error::InvalidResponse`], [`Error::InvalidResult`] and
///   [`Error::InvalidWelcome`]: the mod answered with something this side cannot use;
/// - **building a server** ([`ModServerBuilder::build`](crate::ModServerBuilder::build));
/// - **changing the tools** of a running server ([`ToolRegistry`](crate::server::ToolRegistry)); nothing
///   changed. A duplicate or an invalid tool is the builder's variant;
/// - **publishing** an event ([`EventPublisher`](crate::server::EventPublisher)); no sequence number is used
///   up.
///
/// No variant ever contains the session token.
///
/// ```
/// use gabp_session::Error;
/// use gabp_types::{ErrorCode, ErrorObject};
///
/// let libgab = Error::from_remote(ErrorObject::new(-31000, "Invalid token"), "session/hello", None);
/// assert!(matches!(libgab, Error::AuthenticationFailed { .. }));
/// assert_eq!(libgab.code(), Some(ErrorCode(-31000)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Answered by the mod: it refused the token (-32101, or Lib.GAB's -31000). The mod closes the
    /// connection.
    #[error("the mod refused the token: {error}")]
    AuthenticationFailed {
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: the session is not established (-32100, or Lib.GAB's -31001).
    #[error("not authenticated: {error}")]
    NotAuthenticated {
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: it does not know the method (-32601).
    #[error("method {method} not found: {error}")]
    MethodNotFound {
        /// The method that was called.
        method: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: the params, or a tool's arguments, failed their schema (-32602).
    #[error("invalid params: {error}")]
    InvalidParams {
        /// Each failure the mod listed in `data.errors` (empty if it listed none).
        errors: Vec<ParamError>,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: it does not know the tool (-32400, or Lib.GAB's -31002).
    #[error("tool {tool} not found: {error}")]
    ToolNotFound {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: the tool exists but is unavailable, for example blocked by attention (-32401).
    #[error("tool {tool} unavailable: {error}")]
    ToolUnavailable {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: the tool ran and returned an error (-32402).
    #[error("tool {tool} failed: {error}")]
    ToolFailed {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: the tool exceeded the mod's time limit (-32403). Compare [`Error::Timeout`].
    #[error("tool {tool} timed out in the mod: {error}")]
    ToolTimeout {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: it does not know the resource (-32300).
    #[error("resource not found: {error}")]
    ResourceNotFound {
        /// The mod's error.
        error: ErrorObject,
    },
    /// Answered by the mod: any other error, a tool's own code included.
    #[error("{method} failed: {error}")]
    Remote {
        /// The method that was called.
        method: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// Bridge, local: no response arrived within the call's time limit. The request may still run in the
    /// mod; its late response is discarded.
    #[error("no response to {method} within {after:?}")]
    Timeout {
        /// The method that was called.
        method: String,
        /// The time limit.
        after: Duration,
    },
    /// Bridge: the connection ended before the call was answered, or there is no connection (before the
    /// first handshake completes, while reconnecting, or after it was lost). Every pending call fails with
    /// this at once when the connection ends.
    #[error("disconnected from the mod")]
    Disconnected,
    /// Bridge: the mod broke the framing (SPEC/1.0 transport.md §1.2, §7), so the connection was closed;
    /// every call pending on it fails with this. The fault says at which byte the broken frame starts and
    /// shows the start of the header seen there (a `Content-Length` counted in UTF-16 code units, say, leaves
    /// the end of a body in front of the next header).
    #[error("the mod broke the framing: {fault}")]
    Framing {
        /// Where and how.
        fault: gabp_transport::FrameFault,
    },
    /// Bridge, local: the bridge was closed ([`Bridge::close`](crate::bridge::Bridge::close),
    /// [`Bridge::goodbye`](crate::bridge::Bridge::goodbye), or every handle dropped).
    #[error("the bridge is closed")]
    Closed,
    /// Bridge, local: the welcome did not advertise the method, so nothing was sent (see
    /// [`BridgeBuilder::check_advertised`](crate::bridge::BridgeBuilder::check_advertised)).
    #[error("the mod does not advertise {method}; nothing was sent")]
    NotAdvertised {
        /// The method that was refused.
        method: String,
    },
    /// Bridge, local: a layer refused the call before it was sent (nothing was sent). The layer's own error
    /// is the source; [`Error::rejection`] downcasts it.
    #[error("refused before sending: {source}")]
    Rejected {
        /// The layer's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// Bridge, local: the request could not be built: an invalid method or tool name, arguments that are not
    /// a JSON object, params that do not serialize (nothing was sent).
    #[error("invalid request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// Bridge, local: the request is larger than the connection's message size limit (nothing was sent).
    /// Compare [`Error::EventTooLarge`].
    #[error("request of {len} bytes exceeds the maximum message size of {limit} bytes")]
    TooLarge {
        /// The serialized length.
        len: usize,
        /// The limit (the smaller of ours and the mod's `maxMessageSize`).
        limit: usize,
    },
    /// Bridge: the connection could not be established.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// Bridge, local: no attempt to reach the mod succeeded before the deadline of
    /// [`ConnectRetry`](crate::bridge::ConnectRetry).
    #[error(
        "no mod reachable at {endpoint} within {waited:.1?} ({attempts} attempts); last: {last}"
    )]
    Unreachable {
        /// What was being reached: the endpoint, as text.
        endpoint: String,
        /// How many attempts were made.
        attempts: u32,
        /// How long they took in all.
        waited: Duration,
        /// The error of the last attempt.
        #[source]
        last: Box<Error>,
    },
    /// Bridge: `bridge.json` could not be found or read
    /// ([`Bridge::discover`](crate::bridge::Bridge::discover)).
    #[error(transparent)]
    Config(gabp_transport::TransportError),
    /// Bridge, the mod's answer is unusable: a frame carrying a pending call's id is not a valid response.
    #[error("invalid response to {method}: {reason}")]
    InvalidResponse {
        /// The method that was called.
        method: String,
        /// What is wrong.
        reason: String,
    },
    /// Bridge, the mod's answer is unusable: a success result does not have the shape of the method's result
    /// type.
    #[error("invalid result of {method}: {reason}")]
    InvalidResult {
        /// The method that was called.
        method: String,
        /// What is wrong.
        reason: String,
    },
    /// Bridge, the mod's answer is unusable: its welcome is not a valid welcome, even read liberally.
    /// Compare [`Error::InvalidWelcomeConfig`].
    #[error("invalid welcome: {reason}")]
    InvalidWelcome {
        /// What is wrong.
        reason: String,
    },
    /// Building a server: no token; call [`ModServerBuilder::token`](crate::ModServerBuilder::token) or
    /// [`ModServerBuilder::settings`](crate::ModServerBuilder::settings).
    #[error("no token: set one with ModServerBuilder::token or ModServerBuilder::settings")]
    MissingToken,
    /// Building a server: the token is shorter than the 32 characters `session/hello` requires, so no bridge
    /// could present it.
    #[error("the token is {len} characters long; session/hello requires at least 32")]
    TokenTooShort {
        /// The token's length (never the token).
        len: usize,
    },
    /// Building a server, or adding a tool: a tool, method, channel or resource name is invalid.
    #[error("invalid {kind} name: {reason}")]
    InvalidName {
        /// `tool`, `method`, `channel` or `resource`.
        kind: &'static str,
        /// Why.
        reason: String,
    },
    /// Building a server, or adding a tool: the same tool, method, channel or resource was registered twice,
    /// or a tool of this name is already served.
    #[error("{kind} {name} is already registered")]
    Duplicate {
        /// `tool`, `method`, `channel` or `resource`.
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// Building a server: a custom method uses the name of a method the mod serves itself.
    #[error("{0} is served by the mod itself and cannot be registered as a custom method")]
    ReservedMethod(String),
    /// Building a server, or adding a tool: a handler takes [`State<T>`](crate::server::State) of a type
    /// never registered with [`ModServerBuilder::with_state`](crate::ModServerBuilder::with_state).
    #[error(
        "{handler} takes State<{state}>, but no state of that type was registered with with_state"
    )]
    MissingState {
        /// What takes it: `tool NAME`, `resource URI` or `method NAME`.
        handler: String,
        /// The state's type (`std::any::type_name`).
        state: &'static str,
    },
    /// Building a server, or adding a tool: a tool's schema is not a valid JSON Schema object, or a
    /// descriptor field is invalid.
    #[error("tool {tool}: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// Building a server: a limit is out of range.
    #[error("limit {limit} {reason}")]
    InvalidLimit {
        /// The field of [`ServerLimits`](crate::server::ServerLimits).
        limit: &'static str,
        /// Why.
        reason: String,
    },
    /// Building a server: the app info, agent id or a capability extension, which the server's welcome
    /// would carry, is invalid. Compare [`Error::InvalidWelcome`].
    #[error("invalid welcome configuration: {0}")]
    InvalidWelcomeConfig(String),
    /// Changing the tools: the server is not built yet; register tools with
    /// [`ModServerBuilder::tool`](crate::ModServerBuilder::tool) until then.
    #[error("the server is not built yet; register tools with ModServerBuilder::tool until then")]
    ServerNotBuilt,
    /// Changing the tools: the server was built without
    /// [`ModServerBuilder::dynamic_tools`](crate::ModServerBuilder::dynamic_tools).
    #[error("this server's tools are fixed; build it with ModServerBuilder::dynamic_tools(true)")]
    DynamicToolsDisabled,
    /// Publishing: the channel was never registered with
    /// [`ModServerBuilder::channel`](crate::ModServerBuilder::channel).
    #[error("unknown event channel {0:?}")]
    UnknownChannel(String),
    /// Publishing: the payload could not be serialized to JSON.
    #[error("cannot serialize the event payload: {0}")]
    EventSerialization(#[source] serde_json::Error),
    /// Publishing: the payload of an `attention/*` event is not an attention object.
    #[error("the payload of {channel} must be an attention object: {reason}")]
    InvalidAttention {
        /// The channel.
        channel: String,
        /// What is wrong.
        reason: String,
    },
    /// Publishing: the serialized event is larger than the maximum message size. Compare
    /// [`Error::TooLarge`].
    #[error("event of {len} bytes exceeds the maximum message size of {limit} bytes")]
    EventTooLarge {
        /// The size of the serialized event.
        len: usize,
        /// The limit.
        limit: usize,
    },
}

impl Error {
    /// A layer's refusal: the call was not sent. See [`Error::rejection`].
    pub fn rejected(source: impl Into<Box<dyn StdError + Send + Sync>>) -> Error {
        Error::Rejected {
            source: source.into(),
        }
    }

    /// The layer's error of an [`Error::Rejected`], if it is an `E`.
    ///
    /// ```
    /// use gabp_session::Error;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("blocked")]
    /// struct Blocked;
    ///
    /// let e = Error::rejected(Blocked);
    /// assert!(e.rejection::<Blocked>().is_some());
    /// ```
    pub fn rejection<E: StdError + 'static>(&self) -> Option<&E> {
        match self {
            Error::Rejected { source } => source.downcast_ref::<E>(),
            _ => None,
        }
    }

    pub(crate) fn invalid_request(reason: impl Into<String>) -> Error {
        Error::InvalidRequest {
            reason: reason.into(),
        }
    }
}
