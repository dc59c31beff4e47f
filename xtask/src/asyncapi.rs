//! `asyncapi.yaml`: the event channels of `gabp/1` as an AsyncAPI 2.6 document.
//!
//! Everything protocol-specific comes from `gabp-types`: the event envelope, the attention object and the
//! tools-changed payload schemas from [`gabp_types::schema::schema_files`], the name pattern from
//! [`gabp_types::format::NAME_PATTERN`], the schema line from [`SchemaVersion::CURRENT`], and the
//! examples are typed [`Event`]s serialized by the same code that puts them on the wire.

use gabp_types::methods::{SchemaVersion, TOOLS_CHANGED_CHANNEL};
use gabp_types::{
    Attention, AttentionSample, AttentionState, BoundedU64, ChannelName, Event, Message, MessageId,
    NonEmptyString, Severity, Timestamp,
};
use serde_json::{json, Map, Value};

use crate::yaml;

/// The attention lifecycle channels, in lifecycle order, with what each one announces.
const ATTENTION_CHANNELS: [(&str, &str, &str); 3] = [
    (
        "attention/opened",
        "receiveAttentionOpened",
        "An attention item was opened. Sent once per item.",
    ),
    (
        "attention/updated",
        "receiveAttentionUpdated",
        "The open attention item changed (more entries, higher severity). Bursts are coalesced: at most one update per coalescing window, carrying the latest state.",
    ),
    (
        "attention/cleared",
        "receiveAttentionCleared",
        "The attention item was cleared, by attention/ack or by the mod. The payload is the item with state cleared.",
    ),
];

/// Generates the text of `asyncapi.yaml`.
///
/// # Panics
///
/// Only if the generated schemas lack the event or attention files, which the schema tests rule out.
pub fn render() -> String {
    let files = gabp_types::schema::schema_files();
    let find = |path: &str| {
        files
            .iter()
            .find(|f| f.path == path)
            .map(|f| embeddable(f.schema.clone()))
            .unwrap_or_else(|| panic!("gabp-types generates no {path}"))
    };
    let event_schema = find("events/event.message.json");
    let attention_schema = find("events/attention.payload.schema.json");
    let tools_changed_schema = find("events/tools-changed.payload.schema.json");

    let mut channels = Map::new();
    channels.insert(
        "{channel}".into(),
        json!({
            "description": "A game channel: any channel the mod advertises in capabilities.events outside the attention namespace and other than tools/changed, such as player/move or world/block_change. Its payload is defined by the game. Events of one channel arrive in seq order; seq counts from 0 per channel, mod-wide, without gaps, so a missing number means the subscriber lost events.",
            "parameters": {
                "channel": {
                    "description": "The channel name. Channels a conforming mod produces match the registry name pattern.",
                    "schema": {
                        "type": "string",
                        "pattern": gabp_types::format::NAME_PATTERN,
                        "not": { "anyOf": [{ "pattern": "^attention/" }, { "const": TOOLS_CHANGED_CHANNEL }] }
                    }
                }
            },
            "subscribe": {
                "operationId": "receiveGameEvent",
                "summary": "Events of a game channel the bridge subscribed to with events/subscribe.",
                "message": { "$ref": "#/components/messages/gameEvent" }
            }
        }),
    );
    let mut messages = Map::new();
    messages.insert(
        "gameEvent".into(),
        json!({
            "name": "gameEvent",
            "title": "Game event",
            "summary": "An event message on a game channel.",
            "contentType": "application/json",
            "payload": { "$ref": "#/components/schemas/Event" },
            "examples": [{
                "name": "blockChange",
                "summary": "A block placed in the demo game's world.",
                "payload": example_game_event()
            }]
        }),
    );
    for (seq, (channel, operation_id, description)) in ATTENTION_CHANNELS.iter().enumerate() {
        let message_name = operation_id.trim_start_matches("receive");
        let message_name = format!(
            "{}{}",
            message_name[..1].to_ascii_lowercase(),
            &message_name[1..]
        );
        channels.insert(
            (*channel).into(),
            json!({
                "description": description,
                "subscribe": {
                    "operationId": operation_id,
                    "summary": format!("Events of {channel}, after events/subscribe."),
                    "message": { "$ref": format!("#/components/messages/{message_name}") }
                }
            }),
        );
        messages.insert(
            message_name.clone(),
            json!({
                "name": message_name,
                "title": format!("{channel} event"),
                "summary": format!("An event message on {channel}; its payload is an attention object."),
                "contentType": "application/json",
                "payload": {
                    "allOf": [
                        { "$ref": "#/components/schemas/Event" },
                        {
                            "properties": {
                                "channel": { "const": channel },
                                "payload": { "$ref": "#/components/schemas/Attention" }
                            }
                        }
                    ]
                },
                "examples": [{
                    "name": message_name,
                    "payload": example_attention_event(channel, seq as u64)
                }]
            }),
        );
    }

    channels.insert(
        TOOLS_CHANGED_CHANNEL.into(),
        json!({
            "description": "The mod's tools changed: the tools-changed extension (SPEC/1.0 extensions.md). Sent after each change takes effect, with the names added and removed; a bridge lists the tools again for the details.",
            "subscribe": {
                "operationId": "receiveToolsChanged",
                "summary": "Events of tools/changed, after events/subscribe.",
                "message": { "$ref": "#/components/messages/toolsChanged" }
            }
        }),
    );
    messages.insert(
        "toolsChanged".into(),
        json!({
            "name": "toolsChanged",
            "title": "tools/changed event",
            "summary": "An event message on tools/changed; its payload names the tools added and removed.",
            "contentType": "application/json",
            "payload": {
                "allOf": [
                    { "$ref": "#/components/schemas/Event" },
                    {
                        "properties": {
                            "channel": { "const": TOOLS_CHANGED_CHANNEL },
                            "payload": { "$ref": "#/components/schemas/ToolsChanged" }
                        }
                    }
                ]
            },
            "examples": [{
                "name": "toolsChanged",
                "payload": example_tools_changed_event()
            }]
        }),
    );

    let description = "The event channels of the Game Agent Bridge Protocol, wire version gabp/1. \
        The application described here is the mod, the GABP server inside a game: it publishes events, \
        and a bridge receives those of the channels it subscribed to with the events/subscribe request. \
        Every message is a JSON envelope framed with a Content-Length header over stdio, loopback TCP, a Unix socket \
        or a Windows named pipe, on the same connection as requests and responses. \
        Generated by `cargo xtask gen-schemas` from the gabp-types crate; the schemas match SCHEMA/1.0.";

    yaml::document(&[
        ("asyncapi", json!("2.6.0")),
        (
            "info",
            json!({
                "title": "GABP events",
                "version": SchemaVersion::CURRENT,
                "description": description,
                "license": {
                    "name": "Apache-2.0",
                    "url": "https://www.apache.org/licenses/LICENSE-2.0"
                }
            }),
        ),
        ("defaultContentType", json!("application/json")),
        ("channels", Value::Object(channels)),
        (
            "components",
            json!({
                "schemas": {
                    "Event": event_schema,
                    "Attention": attention_schema,
                    "ToolsChanged": tools_changed_schema
                },
                "messages": Value::Object(messages)
            }),
        ),
    ])
}

/// A generated schema file's schema without its file identity (`$schema`, `$id`), so that it can sit
/// inside the AsyncAPI document.
fn embeddable(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("$id");
    }
    schema
}

fn id(text: &str) -> MessageId {
    MessageId::parse(text).unwrap_or_else(|_| panic!("{text} is a hyphenated UUID"))
}

fn text(s: &str) -> NonEmptyString {
    NonEmptyString::new(s).unwrap_or_else(|_| panic!("{s:?} is not empty"))
}

fn message_json(message: Message) -> Value {
    serde_json::to_value(&message).unwrap_or(Value::Null)
}

fn example_game_event() -> Value {
    let channel = ChannelName::new("world/block_change").unwrap_or_else(|e| panic!("{e}"));
    let mut event = Event::new(
        channel,
        0,
        json!({ "x": 8, "y": 5, "z": 9, "block": "oak_log" }),
    );
    event.id = id("3f6c2a1e-7b4d-4e8f-9a0b-1c2d3e4f5a60");
    event.timestamp = Timestamp::new("2026-03-01T12:00:01.004Z").ok();
    message_json(event.into())
}

fn example_tools_changed_event() -> Value {
    let channel = ChannelName::new(TOOLS_CHANGED_CHANNEL).unwrap_or_else(|e| panic!("{e}"));
    let mut event = Event::new(
        channel,
        0,
        json!({ "added": ["demo/bonus"], "removed": [] }),
    );
    event.id = id("5d2e8f1a-3b4c-4d5e-8f6a-7b8c9d0e1f2a");
    event.timestamp = Timestamp::new("2026-03-01T12:00:02.500Z").ok();
    message_json(event.into())
}

fn example_attention_event(channel: &str, seq: u64) -> Value {
    let cleared = channel == "attention/cleared";
    let updated = channel != "attention/opened";
    let attention = Attention {
        attention_id: text("att-chunk-save-2"),
        state: if cleared {
            AttentionState::Cleared
        } else {
            AttentionState::Open
        },
        severity: Severity::Error,
        blocking: true,
        state_invalidated: true,
        summary: text(
            "Chunk 0,0 failed to save after a block change; earlier world reads may be stale.",
        ),
        causal_operation_id: None,
        causal_method: Some(text("world/place_block")),
        opened_at_sequence: 40,
        latest_sequence: if updated { 43 } else { 40 },
        diagnostics_cursor: None,
        total_urgent_entries: if updated { 3 } else { 1 },
        sample: Some(vec![AttentionSample {
            level: Severity::Error,
            message: text("I/O error while writing chunk 0,0"),
            repeat_count: BoundedU64::new(if updated { 3 } else { 1 })
                .unwrap_or_else(|e| panic!("{e}")),
            latest_sequence: if updated { 43 } else { 40 },
            extra: Map::new(),
        }]),
        extra: Map::new(),
    };
    let channel = ChannelName::new(channel).unwrap_or_else(|e| panic!("{e}"));
    let payload = serde_json::to_value(&attention).unwrap_or(Value::Null);
    let mut event = Event::new(channel, 0, payload);
    event.id = id(&format!("9b1f4c2d-5e6a-4b7c-8d9e-0f1a2b3c4d5{seq}"));
    message_json(event.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_pass_the_strict_decoder() {
        let mut examples = vec![example_game_event(), example_tools_changed_event()];
        for (seq, (channel, _, _)) in ATTENTION_CHANNELS.iter().enumerate() {
            examples.push(example_attention_event(channel, seq as u64));
        }
        for example in examples {
            let body = serde_json::to_vec(&example).unwrap_or_default();
            if let Err(e) = gabp_types::decode::decode_strict(&body) {
                panic!("{example}: {e}");
            }
        }
    }

    #[test]
    fn render_is_deterministic() {
        assert_eq!(render(), render());
        assert!(render().starts_with("asyncapi: \"2.6.0\"\ninfo:\n"));
    }
}
