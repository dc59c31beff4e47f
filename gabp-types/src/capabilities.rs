//! Capabilities advertised in the welcome, and the tool descriptor of `tools/list`.

use std::collections::BTreeMap;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::format;
use crate::strict::{present, NonEmptyString, UniqueVec, Uri};
use crate::{Error, MethodName, ToolName};

/// An unsigned integer with a lower bound `MIN` (`minimum: MIN`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoundedU64<const MIN: u64>(u64);

impl<const MIN: u64> BoundedU64<MIN> {
    /// Checks `value >= MIN`.
    pub fn new(value: u64) -> Result<Self, Error> {
        if value >= MIN {
            Ok(Self(value))
        } else {
            Err(Error::BelowMinimum { value, min: MIN })
        }
    }

    /// The value.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<const MIN: u64> fmt::Debug for BoundedU64<MIN> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<const MIN: u64> fmt::Display for BoundedU64<MIN> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl<const MIN: u64> TryFrom<u64> for BoundedU64<MIN> {
    type Error = Error;
    fn try_from(value: u64) -> Result<Self, Error> {
        Self::new(value)
    }
}

impl<const MIN: u64> Serialize for BoundedU64<MIN> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de, const MIN: u64> Deserialize<'de> for BoundedU64<MIN> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::new(u64::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

impl<const MIN: u64> JsonSchema for BoundedU64<MIN> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("BoundedU64_{MIN}").into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": MIN })
    }
}

/// Implementation limits the mod advertises (and enforces).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Limits {
    /// Largest message body accepted, in bytes (at least 1024).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub max_message_size: Option<BoundedU64<1024>>,
    /// Requests a connection may have in flight at once.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub max_concurrent_requests: Option<BoundedU64<1>>,
    /// Request time limit, in seconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub request_timeout: Option<BoundedU64<1>>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Capability extensions: each key (`^[a-z][a-z0-9_-]*$`) maps to an object of that extension's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions(BTreeMap<String, Map<String, Value>>);

impl Extensions {
    /// No extensions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an extension.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: Map<String, Value>,
    ) -> Result<(), Error> {
        let key = key.into();
        if !format::is_extension_key(&key) {
            return Err(Error::InvalidExtensionKey(key));
        }
        self.0.insert(key, value);
        Ok(())
    }

    /// The extension object under `key`.
    pub fn get(&self, key: &str) -> Option<&Map<String, Value>> {
        self.0.get(key)
    }

    /// Iterates over the extensions in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Map<String, Value>)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether there are no extensions.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Extensions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Extensions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, Map<String, Value>>::deserialize(deserializer)?;
        if let Some(bad) = map.keys().find(|k| !format::is_extension_key(k)) {
            return Err(serde::de::Error::custom(Error::InvalidExtensionKey(
                bad.clone(),
            )));
        }
        Ok(Extensions(map))
    }
}

inline_schema!(Extensions, {
    "type": "object",
    "description": "Extension capabilities, one object per extension.",
    "patternProperties": { (format::EXTENSION_KEY_PATTERN): { "type": "object" } },
    "additionalProperties": false
});

/// What a mod supports, advertised in the welcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
#[schemars(
    title = "GABP Capabilities",
    description = "What a mod supports, advertised in the welcome."
)]
pub struct Capabilities {
    /// Supported method names.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub methods: Option<UniqueVec<MethodName>>,
    /// Available event channels.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub events: Option<UniqueVec<String>>,
    /// Readable resource URIs.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub resources: Option<UniqueVec<Uri>>,
    /// Extension capabilities.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub extensions: Option<Extensions>,
    /// Implementation limits.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub limits: Option<Limits>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl Capabilities {
    /// Whether `method` is advertised.
    pub fn has_method(&self, method: &str) -> bool {
        self.methods
            .as_ref()
            .is_some_and(|m| m.iter().any(|n| n.as_str() == method))
    }

    /// Whether `channel` is advertised.
    pub fn has_event(&self, channel: &str) -> bool {
        self.events
            .as_ref()
            .is_some_and(|e| e.iter().any(|c| c == channel))
    }
}

/// A tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
#[schemars(
    title = "GABP Tool Definition",
    description = "A tool a mod offers, as listed by tools/list."
)]
pub struct ToolDescriptor {
    /// The tool's canonical name.
    pub name: ToolName,
    /// Human-readable title.
    pub title: NonEmptyString,
    /// What the tool does.
    pub description: NonEmptyString,
    /// JSON Schema of the tool's arguments.
    pub input_schema: Map<String, Value>,
    /// JSON Schema of the tool's result.
    pub output_schema: Map<String, Value>,
    /// Tags for filtering (`diagnostic`, `read-only`, ...).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub tags: Option<UniqueVec<String>>,
    /// Whether the tool is deprecated.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub deprecated: Option<bool>,
    /// The tool's version.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub version: Option<String>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl ToolDescriptor {
    /// Whether the tool carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags
            .as_ref()
            .is_some_and(|t| t.iter().any(|x| x == tag))
    }
}
