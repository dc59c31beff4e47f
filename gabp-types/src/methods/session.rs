//! Params and results of `session/hello`, `session/ping` and `session/goodbye`: the hello and its welcome, ping, goodbye.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::strict::{present, NonEmptyString};
use crate::{Capabilities, Error};

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

impl HelloToken {
    /// Minimum length in characters.
    pub const MIN_LEN: usize = 32;

    /// Wraps a token of at least 32 characters.
    pub fn new(token: impl Into<String>) -> Result<Self, Error> {
        let token = token.into();
        if token.chars().count() >= Self::MIN_LEN {
            Ok(Self(token))
        } else {
            Err(Error::ShortToken)
        }
    }

    /// Wraps a token of any length, for a bridge presenting a short token a mod was given (Lib.GAB accepts any
    /// token; SPEC/1.0 gabp.md §3.5): what it sends is then not strictly valid, and a mod built on gabp-rs
    /// refuses it. An empty token is refused.
    pub fn new_short(token: impl Into<String>) -> Result<Self, Error> {
        let token = token.into();
        if token.is_empty() {
            return Err(Error::ShortToken);
        }
        Ok(Self(token))
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

inline_schema!(HelloToken, { "type": "string", "minLength": 32 });

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
#[schemars(deny_unknown_fields)]
pub struct AppInfo {
    /// Game or application name.
    pub name: NonEmptyString,
    /// Game or application version.
    pub version: NonEmptyString,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Information about the mod itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
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
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// A schema line version such as `1.0` or `1.1` (`^1\.\d+(?:\.\d+)?$`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaVersion(String);

impl SchemaVersion {
    /// The schema line this crate implements.
    pub const CURRENT: &'static str = "1.1";

    /// Validates `s`.
    pub fn new(s: impl Into<String>) -> Result<Self, Error> {
        let s = s.into();
        if crate::format::is_schema_version(&s) {
            Ok(Self(s))
        } else {
            Err(Error::InvalidSchemaVersion(s))
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

inline_schema!(SchemaVersion, { "type": "string", "pattern": crate::format::SCHEMA_VERSION_PATTERN });

/// The welcome: result of `session/hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
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
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Params of `session/ping` (none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingParams {}

/// Result of `session/ping`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct PingResult {
    /// The mod's clock, in Unix milliseconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub timestamp: Option<u64>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl PingResult {
    /// The result carrying the mod's clock, in Unix milliseconds.
    pub fn at(timestamp: u64) -> Self {
        Self {
            timestamp: Some(timestamp),
            extra: Map::new(),
        }
    }
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct GoodbyeResult {
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}
