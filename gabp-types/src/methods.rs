//! Params and result types of every core method, and the [`Method`] trait that ties them to a method name.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::strict::{present, NonEmptyString, UniqueVec, Uri};
use crate::{Attention, Capabilities, ToolDescriptor, ToolName};

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
    /// `tools/call`: invoke a tool; the result is the tool's own value.
    ToolsCall, "tools/call", true, ToolsCallParams, Value
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

/// The operating system of the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// Windows.
    Windows,
    /// macOS.
    Macos,
    /// Linux.
    Linux,
}

impl Platform {
    /// The platform this program was compiled for (Linux for anything that is neither Windows nor macOS).
    pub fn current() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::Macos
        } else {
            Platform::Linux
        }
    }
}

/// The authentication token as sent in `session/hello` (at least 32 characters). Its `Debug` output never shows
/// the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct HelloToken(String);

/// Error returned for a token shorter than 32 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the token must be at least 32 characters long")]
#[non_exhaustive]
pub struct ShortToken;

impl HelloToken {
    /// Minimum length in characters.
    pub const MIN_LEN: usize = 32;

    /// Wraps a token of at least 32 characters.
    pub fn new(token: impl Into<String>) -> Result<Self, ShortToken> {
        let token = token.into();
        if token.chars().count() >= Self::MIN_LEN {
            Ok(Self(token))
        } else {
            Err(ShortToken)
        }
    }

    /// The secret. Handle with care: never log it.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for HelloToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HelloToken(<redacted>)")
    }
}

impl Serialize for HelloToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for HelloToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for HelloToken {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HelloToken".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "minLength": 32 })
    }
}

/// Information about the bridge application.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientInfo {
    /// Application name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name: Option<String>,
    /// Application version.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub version: Option<String>,
}

/// Params of `session/hello`.
///
/// `launchId` is a UUID on the wire; the strict decoder enforces that, while the lenient one accepts any string
/// (SPEC/1.0/gabp.md §3.5), which is why the field is a plain `String`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloParams {
    /// The shared secret.
    pub token: HelloToken,
    /// The bridge's software version.
    pub bridge_version: NonEmptyString,
    /// The bridge's operating system.
    pub platform: Platform,
    /// Identifier of this launch (a UUID).
    #[schemars(schema_with = "launch_id_schema")]
    pub launch_id: String,
    /// The bridge application.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub client_info: Option<ClientInfo>,
}

fn launch_id_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::MessageId::json_schema(generator)
}

/// The host application named in the welcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppInfo {
    /// Game or application name.
    pub name: NonEmptyString,
    /// Game or application version.
    pub version: NonEmptyString,
}

/// Information about the mod itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerInfo {
    /// Mod name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name: Option<String>,
    /// Mod version.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub version: Option<String>,
    /// Mod author.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub author: Option<String>,
}

/// A schema line version such as `1.0` or `1.1` (`^1\.\d+(?:\.\d+)?$`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaVersion(String);

/// Error returned for a schema version outside the 1.x line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schema version {0:?} does not match ^1\\.\\d+(?:\\.\\d+)?$")]
#[non_exhaustive]
pub struct InvalidSchemaVersion(pub String);

impl SchemaVersion {
    /// The schema line this crate implements.
    pub const CURRENT: &'static str = "1.1";

    /// Validates `s`.
    pub fn new(s: impl Into<String>) -> Result<Self, InvalidSchemaVersion> {
        let s = s.into();
        if crate::format::is_schema_version(&s) {
            Ok(Self(s))
        } else {
            Err(InvalidSchemaVersion(s))
        }
    }

    /// The version this crate implements ([`SchemaVersion::CURRENT`]).
    pub fn current() -> Self {
        Self(Self::CURRENT.to_owned())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for SchemaVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SchemaVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::new(String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for SchemaVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SchemaVersion".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": crate::format::SCHEMA_VERSION_PATTERN })
    }
}

/// The welcome: result of `session/hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WelcomeResult {
    /// Identifier of this mod instance.
    pub agent_id: NonEmptyString,
    /// The host application.
    pub app: AppInfo,
    /// What the mod supports.
    pub capabilities: Capabilities,
    /// The schema line the mod implements.
    pub schema_version: SchemaVersion,
    /// The mod itself.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub server_info: Option<ServerInfo>,
}

/// Params of `session/ping` (none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingParams {}

/// Result of `session/ping`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingResult {
    /// The mod's clock, in Unix milliseconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub timestamp: Option<u64>,
}

/// Params of `session/goodbye`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoodbyeParams {
    /// Why the bridge is leaving.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub reason: Option<String>,
}

/// Result of `session/goodbye` (empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoodbyeResult {}

/// Filter of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolFilter {
    /// Keep tools that carry any of these tags.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub tags: Option<Vec<String>>,
    /// Keep tools whose name matches this glob.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name_pattern: Option<String>,
}

/// Params of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsListParams {
    /// Optional filter.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub filter: Option<ToolFilter>,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsListResult {
    /// The tools.
    pub tools: Vec<ToolDescriptor>,
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsCallParams {
    /// The tool to invoke.
    pub name: ToolName,
    /// The tool's arguments (absent reads as `{}`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub arguments: Option<Map<String, Value>>,
}

/// Params of `events/subscribe` and `events/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelsParams {
    /// The channels (at least one, no repeats).
    pub channels: UniqueVec<NonEmptyString, 1>,
}

/// Result of `events/subscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscribeResult {
    /// The channels now subscribed (unknown ones are left out).
    pub subscribed: Vec<String>,
}

/// Result of `events/unsubscribe`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeResult {
    /// The channels no longer subscribed.
    pub unsubscribed: Vec<String>,
}

/// Params of `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesListParams {
    /// Keep resources whose URI matches this glob.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub pattern: Option<String>,
    /// Keep resources in this namespace (`gabp://NAMESPACE/...`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub namespace: Option<String>,
}

/// One resource of `resources/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceInfo {
    /// The resource's URI.
    pub uri: Uri,
    /// Human-readable name.
    pub name: String,
    /// Description.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub description: Option<String>,
    /// MIME type hint.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub size: Option<u64>,
}

/// Result of `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesListResult {
    /// The resources.
    pub resources: Vec<ResourceInfo>,
}

/// Params of `resources/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourcesReadParams {
    /// The resource to read.
    pub uri: Uri,
}

/// How resource content is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ContentEncoding {
    /// UTF-8 text.
    #[serde(rename = "utf-8")]
    Utf8,
    /// Base64 of binary data.
    #[serde(rename = "base64")]
    Base64,
    /// ASCII text.
    #[serde(rename = "ascii")]
    Ascii,
    /// Binary (implementation-defined representation).
    #[serde(rename = "binary")]
    Binary,
}

/// Result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcesReadResult {
    /// The content (text, or base64 for binary).
    #[schemars(schema_with = "crate::strict::any_value")]
    pub content: Value,
    /// MIME type of the content.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub mime_type: Option<String>,
    /// Encoding of the content.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub encoding: Option<ContentEncoding>,
}

/// Params of `state/get`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StateGetParams {
    /// Components to return (all when absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub components: Option<Vec<String>>,
    /// Player for player-specific state.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub player_id: Option<String>,
}

/// Result of `state/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateGetResult {
    /// The state, by component.
    pub state: Map<String, Value>,
    /// When it was captured, in Unix seconds.
    pub timestamp: u64,
}

/// Params of `state/set`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StateSetParams {
    /// Updates to apply.
    pub updates: Map<String, Value>,
    /// Player for player-specific updates.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub player_id: Option<String>,
    /// Whether to validate the updates before applying them.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub validate: Option<bool>,
}

/// One failed update of `state/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateSetError {
    /// The field that failed.
    pub field: String,
    /// Why.
    pub message: String,
    /// Machine-readable reason.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub code: Option<String>,
}

/// Result of `state/set`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateSetResult {
    /// The updates that were applied.
    pub applied: Map<String, Value>,
    /// The updates that failed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub errors: Option<Vec<StateSetError>>,
}

/// Params of `attention/current` (none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttentionCurrentParams {}

/// Result of `attention/current`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttentionCurrentResult {
    /// The open item, or `null` when none is open.
    #[serde(deserialize_with = "nullable")]
    #[schemars(required, schema_with = "crate::strict::nullable_schema::<Attention>")]
    pub attention: Option<Attention>,
}

/// Params of `attention/ack`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttentionAckParams {
    /// The item to acknowledge.
    pub attention_id: NonEmptyString,
}

/// Result of `attention/ack`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttentionAckResult {
    /// Whether the item was acknowledged (false when the id is not the open item's).
    pub acknowledged: bool,
    /// The id that was requested.
    pub attention_id: NonEmptyString,
    /// The item still open after the ack, or `null`.
    #[serde(deserialize_with = "nullable")]
    #[schemars(required, schema_with = "crate::strict::nullable_schema::<Attention>")]
    pub current_attention: Option<Attention>,
}

/// A required field whose value may be `null` (unlike serde's default for `Option`, absence is an error).
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}
