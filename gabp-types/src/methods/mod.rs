//! Params and result types of every core method, and the [`Method`] trait that ties them to a method name.

mod attention;
mod content;
mod env;
mod events;
mod input;
mod resources;
mod session;
mod state;
mod time;
mod tools;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use self::attention::{
    AttentionAckParams, AttentionAckResult, AttentionCurrentParams, AttentionCurrentResult,
};
pub use self::content::{ContentItem, ToolResult, WithContent, CONTENT_EXTENSION, CONTENT_MEMBER};
pub use self::env::{
    BoxSpace, DictSpace, DiscreteSpace, Dtype, EnvResetParams, EnvResetResult, EnvSpacesParams,
    EnvSpacesResult, EnvStepParams, EnvStepResult, MultiBinarySpace, MultiDiscreteSpace, Space,
    ENV_EXTENSION, MAX_SPACE_DEPTH, MAX_SPACE_ELEMENTS,
};
pub use self::events::{ChannelsParams, SubscribeResult, UnsubscribeResult};
pub use self::input::{
    ButtonAction, CursorPosition, InputKeyParams, InputMouseParams, InputResult, InputText,
    InputTextParams, KeyAction, KeyName, MouseButton, INPUT_EXTENSION, KEY_NAMES,
    MAX_INPUT_TEXT_CHARS,
};
pub use self::resources::{
    ContentEncoding, ResourceInfo, ResourcesListParams, ResourcesListResult, ResourcesReadParams,
    ResourcesReadResult,
};
pub use self::session::{
    AppInfo, ClientInfo, GoodbyeParams, GoodbyeResult, HelloParams, HelloToken, PingParams,
    PingResult, Platform, SchemaVersion, ServerInfo, WelcomeResult,
};
pub use self::state::{
    StateGetParams, StateGetResult, StateSetError, StateSetParams, StateSetResult,
};
pub use self::time::{
    StepTicks, TimeParams, TimeState, TimeStepParams, MAX_STEP_TICKS, TIME_CHANGED_CHANNEL,
    TIME_CONTROL_EXTENSION,
};
pub use self::tools::{
    CallMeta, ProgressPayload, ProgressToken, ToolFilter, ToolsCallParams, ToolsCancelParams,
    ToolsCancelResult, ToolsChangedPayload, ToolsListParams, ToolsListResult, CANCEL_EXTENSION,
    PROGRESS_CHANNEL, PROGRESS_EXTENSION, PROGRESS_MIN_INTERVAL_MS, TOOLS_CHANGED_CHANNEL,
    TOOLS_CHANGED_EXTENSION,
};

/// A core method: its name and the types of its params and result.
///
/// ```
/// use gabp_types::methods::{Method, ToolsCall};
/// assert_eq!(ToolsCall::NAME, "tools/call");
/// assert!(ToolsCall::PARAMS_REQUIRED);
/// ```
pub trait Method {
    /// The method name on the wire.
    const NAME: &'static str;
    /// Whether a request must carry `params`.
    const PARAMS_REQUIRED: bool;
    /// The params type.
    type Params: Serialize + DeserializeOwned + JsonSchema;
    /// The success result type.
    type Result: Serialize + DeserializeOwned + JsonSchema;
}

macro_rules! method {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $required:literal, $params:ty, $result:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty;

        impl Method for $ty {
            const NAME: &'static str = $name;
            const PARAMS_REQUIRED: bool = $required;
            type Params = $params;
            type Result = $result;
        }
    };
}

method!(
    /// `session/hello`: authenticate and open the session; answered by the welcome.
    SessionHello, "session/hello", true, HelloParams, WelcomeResult
);
method!(
    /// `session/ping`: keep-alive.
    SessionPing, "session/ping", false, PingParams, PingResult
);
method!(
    /// `session/goodbye`: graceful close; the mod answers, then closes.
    SessionGoodbye, "session/goodbye", false, GoodbyeParams, GoodbyeResult
);
method!(
    /// `tools/list`: the mod's tools, optionally filtered.
    ToolsList, "tools/list", false, ToolsListParams, ToolsListResult
);
method!(
    /// `tools/call`: invoke a tool; the result is the tool's own value, with content items when the mod has
    /// the `content` extension.
    ToolsCall, "tools/call", true, ToolsCallParams, ToolResult
);
method!(
    /// `tools/cancel`: cancel a `tools/call` in flight (the `cancel` extension, SPEC/1.0 extensions.md §cancel).
    ToolsCancel, "tools/cancel", true, ToolsCancelParams, ToolsCancelResult
);
method!(
    /// `events/subscribe`: subscribe to channels.
    EventsSubscribe, "events/subscribe", true, ChannelsParams, SubscribeResult
);
method!(
    /// `events/unsubscribe`: unsubscribe from channels.
    EventsUnsubscribe, "events/unsubscribe", true, ChannelsParams, UnsubscribeResult
);
method!(
    /// `resources/list`: readable resources, optionally filtered.
    ResourcesList, "resources/list", false, ResourcesListParams, ResourcesListResult
);
method!(
    /// `resources/read`: read one resource.
    ResourcesRead, "resources/read", true, ResourcesReadParams, ResourcesReadResult
);
method!(
    /// `state/get`: the game state or some of its components.
    StateGet, "state/get", false, StateGetParams, StateGetResult
);
method!(
    /// `state/set`: apply state updates.
    StateSet, "state/set", true, StateSetParams, StateSetResult
);
method!(
    /// `attention/current`: the open attention item, if any.
    AttentionCurrent, "attention/current", false, AttentionCurrentParams, AttentionCurrentResult
);
method!(
    /// `attention/ack`: acknowledge an attention item.
    AttentionAck, "attention/ack", true, AttentionAckParams, AttentionAckResult
);

method!(
    /// `time/status`: whether time is paused, and the tick (the `time-control` extension, SPEC/1.0
    /// extensions.md §time-control).
    TimeStatus, "time/status", false, TimeParams, TimeState
);
method!(
    /// `time/pause`: freeze the simulation (the `time-control` extension).
    TimePause, "time/pause", false, TimeParams, TimeState
);
method!(
    /// `time/resume`: let the simulation run again (the `time-control` extension).
    TimeResume, "time/resume", false, TimeParams, TimeState
);
method!(
    /// `time/step`: run some ticks and answer once they have run (the `time-control` extension).
    TimeStep, "time/step", true, TimeStepParams, TimeState
);

method!(
    /// `input/key`: press, release or tap a key (the `input` extension, SPEC/1.0 extensions.md §input).
    InputKey, "input/key", true, InputKeyParams, InputResult
);
method!(
    /// `input/text`: type text (the `input` extension).
    InputTextMethod, "input/text", true, InputTextParams, InputResult
);
method!(
    /// `input/mouse`: press, release or click a mouse button, moving the cursor first (the `input` extension).
    InputMouse, "input/mouse", true, InputMouseParams, InputResult
);

method!(
    /// `env/spaces`: the observation and action spaces (the `env` extension, SPEC/1.0 extensions.md §env).
    EnvSpaces, "env/spaces", false, EnvSpacesParams, EnvSpacesResult
);
method!(
    /// `env/reset`: start an episode, optionally seeded; answers the first observation (the `env` extension).
    EnvReset, "env/reset", false, EnvResetParams, EnvResetResult
);
method!(
    /// `env/step`: take an action and run the game's ticks of one step; answers observation, reward,
    /// terminated, truncated and info (the `env` extension).
    EnvStep, "env/step", true, EnvStepParams, EnvStepResult
);

/// Methods the extensions of SPEC/1.0 extensions.md define, whose params and results are typed here like
/// those of the core methods.
pub const EXTENSION_METHODS: &[&str] = &[
    ToolsCancel::NAME,
    TimeStatus::NAME,
    TimePause::NAME,
    TimeResume::NAME,
    TimeStep::NAME,
    InputKey::NAME,
    InputTextMethod::NAME,
    InputMouse::NAME,
    EnvSpaces::NAME,
    EnvReset::NAME,
    EnvStep::NAME,
];

/// Channels the extensions of SPEC/1.0 extensions.md define, whose payloads are typed here.
pub const EXTENSION_CHANNELS: &[&str] = &[
    TOOLS_CHANGED_CHANNEL,
    PROGRESS_CHANNEL,
    TIME_CHANGED_CHANNEL,
];

/// Names of every core method, in registry order.
pub const CORE_METHODS: &[&str] = &[
    SessionHello::NAME,
    SessionPing::NAME,
    SessionGoodbye::NAME,
    ToolsList::NAME,
    ToolsCall::NAME,
    EventsSubscribe::NAME,
    EventsUnsubscribe::NAME,
    ResourcesList::NAME,
    ResourcesRead::NAME,
    StateGet::NAME,
    StateSet::NAME,
    AttentionCurrent::NAME,
    AttentionAck::NAME,
];
