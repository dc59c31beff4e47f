//! The lines of a recording (SPEC/1.0 recording.md §2): a [`Header`] first, then one [`Record`] per line.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` member of every header.
pub const FORMAT: &str = "gabp-recording";

/// The format version this crate writes and reads (SPEC/1.0 recording.md §2.1).
pub const VERSION: u64 = 1;

/// What replaces a redacted value (SPEC/1.0 recording.md §3).
pub const REDACTED: &str = "[redacted]";

/// The members of `session/hello` params that are always redacted (SPEC/1.0 recording.md §3).
pub const HELLO_REDACTED: &[&str] = &["/params/token", "/params/auth"];

/// Which way a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Direction {
    /// Sent by the bridge, towards the mod.
    BridgeToMod,
    /// Sent by the mod, towards the bridge.
    ModToBridge,
}

impl Direction {
    /// The name used in the file: `bridge-to-mod` or `mod-to-bridge`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::BridgeToMod => "bridge-to-mod",
            Direction::ModToBridge => "mod-to-bridge",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which side ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Side {
    /// The bridge closed or broke its end.
    Bridge,
    /// The mod closed or broke its end.
    Mod,
    /// The recorder ended it (a signal, or a bridge that failed the recorder's token check).
    Recorder,
}

/// One line of a recording, the header or a record: what `SCHEMA/1.0/recording.schema.json` describes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Line {
    /// The first line, and only the first.
    Header(Header),
    /// Any later line.
    Record(Record),
}

/// The `kind` of a header line: always `header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HeaderKind {
    /// `header`.
    #[default]
    Header,
}

/// The first line of a recording (SPEC/1.0 recording.md §2.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct Header {
    /// Always `header`.
    pub kind: HeaderKind,
    /// Always `gabp-recording`.
    #[schemars(extend("const" = "gabp-recording"))]
    pub format: String,
    /// The format version, 1.
    #[schemars(extend("const" = 1))]
    pub version: u64,
    /// The program that wrote the recording.
    pub recorder: Software,
    /// Who the mod was, from the first welcome; absent when no welcome came before the header had to be
    /// written.
    #[serde(rename = "mod", default, skip_serializing_if = "Option::is_none")]
    pub mod_identity: Option<ModIdentity>,
    /// What was redacted.
    pub redaction: Redaction,
}

impl Header {
    /// A header of this version written by `recorder`.
    #[must_use]
    pub fn new(
        recorder: Software,
        mod_identity: Option<ModIdentity>,
        redaction: Redaction,
    ) -> Self {
        Header {
            kind: HeaderKind::Header,
            format: FORMAT.to_owned(),
            version: VERSION,
            recorder,
            mod_identity,
            redaction,
        }
    }
}

/// A program's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Software {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Software {
    /// `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Software {
            name: name.into(),
            version: version.into(),
        }
    }
}

/// The mod's identity and capabilities, as its welcome gave them (SPEC/1.0 gabp.md §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModIdentity {
    /// The welcome's `agentId`.
    pub agent_id: Value,
    /// The welcome's `app` (`name`, `version`).
    pub app: Value,
    /// The welcome's `capabilities`.
    pub capabilities: Value,
}

impl ModIdentity {
    /// The identity in a welcome result; `None` unless it is an object.
    #[must_use]
    pub fn from_welcome(result: &Value) -> Option<Self> {
        let welcome = result.as_object()?;
        let member = |name: &str| welcome.get(name).cloned().unwrap_or(Value::Null);
        Some(ModIdentity {
            agent_id: member("agentId"),
            app: member("app"),
            capabilities: member("capabilities"),
        })
    }
}

/// What was redacted before writing (SPEC/1.0 recording.md §3).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct Redaction {
    /// JSON pointers into `session/hello` requests that were replaced, always `/params/token` and
    /// `/params/auth`.
    pub hello: Vec<String>,
    /// JSON pointers the user asked for, replaced in every message that has them.
    pub pointers: Vec<String>,
    /// Whether every occurrence of a session token in any string was replaced (always true when written by
    /// gabp-rs).
    pub tokens: bool,
    /// The string that replaced each redacted value.
    pub replacement: String,
}

impl Redaction {
    /// The redaction every recording has, plus the user's `pointers`.
    #[must_use]
    pub fn with_pointers(pointers: Vec<String>) -> Self {
        Redaction {
            hello: HELLO_REDACTED.iter().map(|p| (*p).to_owned()).collect(),
            pointers,
            tokens: true,
            replacement: REDACTED.to_owned(),
        }
    }
}

/// A line after the header (SPEC/1.0 recording.md §2.2). Every record has the time since the recording
/// started, in microseconds of a monotonic clock, and the connection it belongs to, counted from 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Record {
    /// A bridge connected (and the recorder reached the mod for it).
    #[serde(rename_all = "camelCase")]
    Open {
        /// Microseconds since the recording started.
        elapsed_us: u64,
        /// The connection.
        connection: u64,
    },
    /// One message, as it was on the wire (redactions aside).
    #[serde(rename_all = "camelCase")]
    Message {
        /// Microseconds since the recording started.
        elapsed_us: u64,
        /// The connection.
        connection: u64,
        /// Which way it went.
        direction: Direction,
        /// The envelope: any JSON object, valid or not.
        message: serde_json::Map<String, Value>,
    },
    /// A frame that was forwarded but is not a JSON object.
    #[serde(rename_all = "camelCase")]
    Undecodable {
        /// Microseconds since the recording started.
        elapsed_us: u64,
        /// The connection.
        connection: u64,
        /// Which way it went.
        direction: Direction,
        /// Why it could not be recorded as a message.
        reason: String,
        /// Its length in bytes, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        length: Option<u64>,
    },
    /// Traffic that was forwarded but not recorded, because the recorder fell behind the wire.
    #[serde(rename_all = "camelCase")]
    Dropped {
        /// Microseconds since the recording started.
        elapsed_us: u64,
        /// The connection.
        connection: u64,
        /// Which way it went.
        direction: Direction,
        /// Bytes left out: chunks the recorder's queue had no room for, and what it skipped of the frames they
        /// cut, up to the next frame's header.
        bytes: u64,
    },
    /// A connection ended.
    #[serde(rename_all = "camelCase")]
    Close {
        /// Microseconds since the recording started.
        elapsed_us: u64,
        /// The connection.
        connection: u64,
        /// Which side ended it.
        by: Side,
        /// Why, when there was an error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Record {
    /// The time of the record, in microseconds since the recording started.
    #[must_use]
    pub fn elapsed_us(&self) -> u64 {
        match self {
            Record::Open { elapsed_us, .. }
            | Record::Message { elapsed_us, .. }
            | Record::Undecodable { elapsed_us, .. }
            | Record::Dropped { elapsed_us, .. }
            | Record::Close { elapsed_us, .. } => *elapsed_us,
        }
    }

    /// The connection of the record.
    #[must_use]
    pub fn connection(&self) -> u64 {
        match self {
            Record::Open { connection, .. }
            | Record::Message { connection, .. }
            | Record::Undecodable { connection, .. }
            | Record::Dropped { connection, .. }
            | Record::Close { connection, .. } => *connection,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_use_the_names_of_the_spec() {
        let header = Header::new(
            Software::new("gabp", "0.1.0"),
            None,
            Redaction::with_pointers(vec!["/params/secret".into()]),
        );
        let text = serde_json::to_value(&header).unwrap();
        assert_eq!(text["kind"], "header");
        assert_eq!(text["format"], FORMAT);
        assert!(text.get("mod").is_none());
        assert_eq!(
            text["redaction"]["hello"],
            json!(["/params/token", "/params/auth"])
        );
        let record: Record = serde_json::from_value(json!({
            "kind": "message", "elapsedUs": 5, "connection": 0, "direction": "mod-to-bridge",
            "message": {"v": "gabp/1"}
        }))
        .unwrap();
        let Record::Message { direction, .. } = record else {
            panic!("{record:?}")
        };
        assert_eq!(direction, Direction::ModToBridge);
    }

    #[test]
    fn the_welcome_gives_the_identity() {
        let id = ModIdentity::from_welcome(&json!({
            "agentId": "demo", "app": {"name": "Demo", "version": "1"}, "capabilities": {"methods": []}
        }))
        .unwrap();
        assert_eq!(id.agent_id, "demo");
        assert_eq!(id.app["name"], "Demo");
        assert!(ModIdentity::from_welcome(&json!([1])).is_none());
    }
}
