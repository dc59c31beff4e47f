//! The `bridge.json` file a mod writes so that bridges can find and authenticate to it.
//!
//! This module only models the file's contents; reading (liberally, with secret-safe errors), writing
//! (atomically, mode 0600) and locating it is `gabp-transport`'s job. Unknown fields are ignored when reading,
//! since other tools write the file too.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::strict::present;

/// How to reach the mod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TransportInfo {
    /// Transport kind as written by mods: `tcp`, `pipe` (a Windows pipe path or a Unix socket path, as upstream
    /// writes both) or `stdio`; readers also accept `unix`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Transport address: for `tcp` a bare port on 127.0.0.1 or `HOST:PORT` on another loopback address, for
    /// `pipe` the socket or pipe path; absent for stdio.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub address: Option<String>,
}

/// Who wrote the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BridgeMetadata {
    /// Process id of the mod.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub pid: Option<u32>,
    /// When the mod started (RFC 3339).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub start_time: Option<String>,
    /// Identifier of this launch (a UUID when we write it; any string when read, as GABS may write others).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub launch_id: Option<String>,
}

impl BridgeMetadata {
    /// Metadata for the current process: its pid, the current time as `startTime`, and `launch_id`.
    pub fn current_process(launch_id: Option<String>) -> Self {
        BridgeMetadata {
            pid: Some(std::process::id()),
            start_time: Some(crate::Timestamp::now().as_str().to_owned()),
            launch_id,
        }
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self.pid.is_none() && self.start_time.is_none() && self.launch_id.is_none()
    }
}

/// The contents of `bridge.json`.
///
/// ```
/// use gabp_types::BridgeFile;
/// let file: BridgeFile = serde_json::from_str(r#"{
///     "token": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
///     "transport": {"type": "tcp", "address": "127.0.0.1:4711"},
///     "metadata": {"pid": 42, "launchId": "550e8400-e29b-41d4-a716-446655440001"}
/// }"#)?;
/// assert_eq!(file.transport.kind, "tcp");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BridgeFile {
    /// The shared secret (lower-case hex).
    pub token: String,
    /// How to reach the mod.
    pub transport: TransportInfo,
    /// Who wrote the file (omitted when empty).
    #[serde(default, skip_serializing_if = "BridgeMetadata::is_empty")]
    pub metadata: BridgeMetadata,
}

impl std::fmt::Debug for BridgeFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeFile")
            .field("token", &"<redacted>")
            .field("transport", &self.transport)
            .field("metadata", &self.metadata)
            .finish()
    }
}
