//! `gabp demo`: a guided tour of the protocol. The demo game is served in this process on an ephemeral
//! loopback port, a bridge connects to it, and every step prints what the bridge sent and what the mod
//! answered: handshake, tools, a call with a validation error, events, resources, state, attention raise and
//! acknowledgement, goodbye.
//!
//! The transcript is the same on every run except for the port and the attention item's id (a random prefix
//! per mod run): no timestamps, no timings.

use std::io::Write;
use std::time::Duration;

use futures::StreamExt;
use gabp_attention::{AttentionGate, BlockedByAttention};
use gabp_session::bridge::{Bridge, Subscription, SubscriptionItem};
use gabp_session::Error as SessionError;
use gabp_types::methods::{StateGetParams, StateSetParams};
use gabp_types::Event;
use serde_json::{json, Value};

use crate::target::describe_call_error;
use crate::terminal::Palette;
use gabp_demo::InProcessGame;
use gabp_demo::{BLOCK_CHANGE, MOD_INFO_URI, PLAYER_MOVE, WORLD_URI};

/// Long help of `gabp demo`.
pub const EXAMPLES: &str = "\
Starts the demo game (a 16x16x16 voxel world with one player) in this process on a free loopback TCP port,
connects a bridge to it, and prints each exchange: handshake, tools, a call with a validation error, events,
resources, state, and an attention item raised, blocking a call, and acknowledged. Coloured on a terminal;
plain when NO_COLOR is set or stdout is not a terminal. Takes well under a second.

Examples:
  gabp demo
  cargo run --release -p gabp-cli -- demo
  NO_COLOR=1 gabp demo | less";

/// How long the tour waits for an event that a call it just made publishes (generous: a loaded machine).
const EVENT_PATIENCE: Duration = Duration::from_secs(10);
/// The whole tour's limit: it never hangs.
const TOUR_LIMIT: Duration = Duration::from_secs(60);

/// Runs the tour, writing the transcript to `out`.
///
/// # Errors
///
/// One line: what failed (the tour never fails against its own game unless the machine is in trouble).
pub async fn run(out: &mut dyn Write) -> Result<(), String> {
    run_with(out, Palette::stdout()).await
}

/// Runs the tour with `palette`.
///
/// # Errors
///
/// As [`run`].
pub async fn run_with(out: &mut dyn Write, palette: Palette) -> Result<(), String> {
    let game = InProcessGame::start().await.map_err(|e| e.to_string())?;
    let mut transcript = Transcript { out, palette };
    let outcome = tokio::time::timeout(TOUR_LIMIT, tour(&game, &mut transcript)).await;
    game.handle.shutdown().await;
    match outcome {
        Ok(result) => result,
        Err(_) => Err(format!("the tour did not finish within {TOUR_LIMIT:?}")),
    }
}

/// Writes the steps.
struct Transcript<'a> {
    out: &'a mut dyn Write,
    palette: Palette,
}

const INDENT: &str = "             ";

impl Transcript<'_> {
    fn line(&mut self, text: &str) -> Result<(), String> {
        writeln!(self.out, "{text}").map_err(|e| format!("cannot write to stdout: {e}"))
    }

    fn heading(&mut self, text: &str) -> Result<(), String> {
        let text = self.palette.heading(text);
        self.line("")?;
        self.line(&text)
    }

    fn sent(&mut self, method: &str, params: Option<&Value>) -> Result<(), String> {
        let mut text = format!("  bridge  -> {method}");
        if let Some(params) = params {
            text.push_str(&format!("  {params}"));
        }
        let text = self.palette.sent(&text);
        self.line(&text)
    }

    fn sent_tool(&mut self, tool: &str, arguments: &Value) -> Result<(), String> {
        self.sent(&format!("tools/call {tool}"), Some(arguments))
    }

    fn answer(&mut self, text: &str) -> Result<(), String> {
        let text = self.palette.answer(&format!("  mod     <- {text}"));
        self.line(&text)
    }

    fn error(&mut self, who: &str, text: &str) -> Result<(), String> {
        let text = self.palette.error(&format!("  {who:<7} <- {text}"));
        self.line(&text)
    }

    fn event(&mut self, event: &Event) -> Result<(), String> {
        let payload = if event.channel.as_str().starts_with("attention/") {
            // The attention object is long: its headline fields (the sample and sequence numbers left out).
            let keep = [
                "attentionId",
                "state",
                "severity",
                "blocking",
                "stateInvalidated",
                "summary",
                "totalUrgentEntries",
            ];
            let headline: serde_json::Map<String, Value> = event
                .payload
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| keep.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            format!("{} ...", Value::Object(headline))
        } else {
            event.payload.to_string()
        };
        let text = self.palette.event(&format!(
            "  event   ** {} #{}  {payload}",
            event.channel, event.seq
        ));
        self.line(&text)
    }

    /// A continuation line under the previous one.
    fn more(&mut self, text: &str) -> Result<(), String> {
        self.line(&format!("{INDENT}{text}"))
    }

    fn note(&mut self, text: &str) -> Result<(), String> {
        let text = self.palette.dim(&format!("{INDENT}({text})"));
        self.line(&text)
    }
}

/// Calls `tool`, printing the request and the result.
async fn call(
    t: &mut Transcript<'_>,
    bridge: &Bridge,
    tool: &str,
    arguments: Value,
) -> Result<Value, String> {
    t.sent_tool(tool, &arguments)?;
    let result = bridge
        .call_tool(tool, arguments)
        .await
        .map_err(|e| format!("{tool}: {e}"))?;
    t.answer(&result.to_string())?;
    Ok(result)
}

/// The next event on `events` (skipping anything else), within [`EVENT_PATIENCE`].
async fn next_event(events: &mut Subscription, what: &str) -> Result<Event, String> {
    let wait = async {
        while let Some(item) = events.next().await {
            match item {
                Ok(SubscriptionItem::Event(event)) => return Ok(event),
                Ok(_) => continue,
                Err(e) => return Err(format!("waiting for {what}: {e}")),
            }
        }
        Err(format!("waiting for {what}: the subscription ended"))
    };
    tokio::time::timeout(EVENT_PATIENCE, wait)
        .await
        .map_err(|_| format!("no {what} event within {EVENT_PATIENCE:?}"))?
}

fn join(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

async fn tour(game: &InProcessGame, t: &mut Transcript<'_>) -> Result<(), String> {
    let endpoint = game.handle.endpoint().clone();
    let intro = t
        .palette
        .heading("gabp demo: the Game Agent Bridge Protocol (gabp/1), end to end");
    t.line(&intro)?;
    t.line("The demo game, a 16x16x16 voxel world with one player (steve), serves GABP in this process; a bridge")?;
    t.line(
        "connects to it over loopback TCP. Every line below is a real exchange between the two.",
    )?;

    // 1. Handshake.
    t.heading("1. Handshake")?;
    t.line(&format!("  mod        listening on {endpoint}"))?;
    let builder =
        Bridge::builder(game.token.clone()).client_info("gabp demo", env!("CARGO_PKG_VERSION"));
    let gate = AttentionGate::new(&builder.service());
    t.sent(
        "session/hello",
        Some(&json!({
            "token": "(64 hex digits, never printed)",
            "clientInfo": {"name": "gabp demo", "version": env!("CARGO_PKG_VERSION")},
        })),
    )?;
    let bridge = builder
        .layer(gate.layer())
        .connect(&endpoint)
        .await
        .map_err(|e| {
            format!(
                "cannot connect to the demo game: {}",
                describe_call_error(&e)
            )
        })?;
    let welcome = bridge.welcome();
    t.answer(&format!(
        "welcome: {} {}, agentId {}, schemaVersion {}",
        welcome.app.name,
        welcome.app.version,
        welcome.agent_id,
        welcome.schema_version.as_str()
    ))?;
    let caps = &welcome.capabilities;
    if let Some(methods) = &caps.methods {
        t.more(&format!(
            "methods    {}",
            join(methods.iter().map(|m| m.to_string()))
        ))?;
    }
    if let Some(events) = &caps.events {
        t.more(&format!(
            "events     {}",
            join(events.iter().map(|c| c.to_string()))
        ))?;
    }
    if let Some(resources) = &caps.resources {
        t.more(&format!(
            "resources  {}",
            join(resources.iter().map(|u| u.to_string()))
        ))?;
    }
    if let Some(limits) = &caps.limits {
        let limits = serde_json::to_value(limits).map_err(|e| e.to_string())?;
        t.more(&format!("limits     {limits}"))?;
    }
    t.note("a wrong token is answered -32101 and the connection closes; requests before hello get -32100")?;

    // 2. Tools.
    t.heading("2. Tools")?;
    t.sent("tools/list", None)?;
    let tools = bridge
        .list_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    t.answer(&format!(
        "{} tools, each with a JSON Schema for its arguments and result",
        tools.len()
    ))?;
    for row in crate::tools::table(&tools).lines() {
        t.more(row)?;
    }

    // 3. Calls, and a validation error.
    t.heading("3. Calls, and a call with a validation error")?;
    call(
        t,
        &bridge,
        "world/get_block",
        json!({"x": 3, "y": 5, "z": 3}),
    )
    .await?;
    let bad = json!({"x": "three", "y": 5, "z": 3});
    t.sent_tool("world/get_block", &bad)?;
    match bridge.call_tool("world/get_block", bad).await {
        Err(SessionError::InvalidParams { errors, error }) => {
            t.error(
                "mod",
                &format!("error {} {}", error.code.code(), error.message),
            )?;
            for e in errors {
                t.more(&format!("{}: {}", e.path, e.message))?;
            }
            t.note("arguments are checked against the tool's inputSchema before the tool runs")?;
        }
        Ok(v) => return Err(format!("world/get_block accepted bad arguments: {v}")),
        Err(e) => return Err(format!("world/get_block: expected -32602, got {e}")),
    }
    let outside = json!({"x": 3, "y": 99, "z": 3});
    t.sent_tool("world/get_block", &outside)?;
    match bridge.call_tool("world/get_block", outside).await {
        Err(e @ SessionError::ToolFailed { .. }) => {
            if let Some(error) = e.error_object() {
                t.error(
                    "mod",
                    &format!("error {} {}", error.code.code(), error.message),
                )?;
                if let Some(data) = &error.data {
                    t.more(&format!("data {data}"))?;
                }
            }
            t.note(
                "valid arguments, but the tool itself refused: a tool error, with details in data",
            )?;
        }
        Ok(v) => return Err(format!("world/get_block accepted y 99: {v}")),
        Err(e) => return Err(format!("world/get_block: expected -32402, got {e}")),
    }

    // 4. Events.
    t.heading("4. Events")?;
    let channels = [PLAYER_MOVE, BLOCK_CHANGE];
    t.sent("events/subscribe", Some(&json!({ "channels": channels })))?;
    let mut events = bridge
        .subscribe(channels)
        .await
        .map_err(|e| format!("events/subscribe: {e}"))?;
    t.answer(&format!("subscribed to {}", join(events.channels())))?;
    call(
        t,
        &bridge,
        "player/teleport",
        json!({"x": 2.5, "y": 5, "z": 2.5}),
    )
    .await?;
    let event = next_event(&mut events, PLAYER_MOVE).await?;
    t.event(&event)?;
    call(
        t,
        &bridge,
        "world/place_block",
        json!({"x": 2, "y": 5, "z": 3, "blockType": "torch"}),
    )
    .await?;
    let event = next_event(&mut events, BLOCK_CHANGE).await?;
    t.event(&event)?;
    t.note("seq counts per channel from 0 with no gaps; a bridge that sees a gap knows events were lost")?;

    // 5. Resources.
    t.heading("5. Resources")?;
    t.sent("resources/list", None)?;
    let resources = bridge
        .list_resources(Default::default())
        .await
        .map_err(|e| format!("resources/list: {e}"))?;
    t.answer(&format!("{} resources", resources.len()))?;
    for resource in &resources {
        let resource = serde_json::to_value(resource).map_err(|e| e.to_string())?;
        t.more(&resource.to_string())?;
    }
    for uri in [WORLD_URI, MOD_INFO_URI] {
        t.sent("resources/read", Some(&json!({ "uri": uri })))?;
        let read = bridge
            .read_resource(uri)
            .await
            .map_err(|e| format!("resources/read {uri}: {e}"))?;
        let encoding = read
            .encoding
            .as_ref()
            .and_then(|e| serde_json::to_value(e).ok())
            .and_then(|e| e.as_str().map(str::to_owned));
        let content = read.content.as_str().unwrap_or_default();
        match encoding.as_deref() {
            Some("base64") => {
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(content)
                    .map_err(|e| format!("resources/read {uri}: bad base64: {e}"))?;
                t.answer(&format!(
                    "{} bytes of {}, sent base64",
                    bytes.len(),
                    read.mime_type.as_deref().unwrap_or("binary")
                ))?;
                t.more(&format!("decoded: {}", String::from_utf8_lossy(&bytes)))?;
            }
            _ => t.answer(content)?,
        }
    }

    // 6. State.
    t.heading("6. State")?;
    let get = StateGetParams {
        components: Some(vec!["player".into()]),
        ..Default::default()
    };
    t.sent(
        "state/get",
        Some(&serde_json::to_value(&get).map_err(|e| e.to_string())?),
    )?;
    let state = bridge
        .get_state(get)
        .await
        .map_err(|e| format!("state/get: {e}"))?;
    t.answer(&format!("state {}", Value::Object(state.state)))?;
    t.note("the result also carries the Unix time it was captured at")?;
    let updates =
        json!({"player": {"position": {"x": 8.5, "y": 5, "z": 8.5}}, "world": {"tick": 0}});
    let set = StateSetParams {
        updates: updates.as_object().cloned().unwrap_or_default(),
        player_id: None,
        validate: None,
    };
    t.sent(
        "state/set",
        Some(&serde_json::to_value(&set).map_err(|e| e.to_string())?),
    )?;
    let result = bridge
        .set_state(set)
        .await
        .map_err(|e| format!("state/set: {e}"))?;
    t.answer(&format!("applied {}", Value::Object(result.applied)))?;
    for error in result.errors.unwrap_or_default() {
        t.more(&format!(
            "not applied: {}: {} ({})",
            error.field,
            error.message,
            error.code.unwrap_or_default()
        ))?;
    }
    let event = next_event(&mut events, PLAYER_MOVE).await?;
    t.event(&event)?;

    // 7. Attention.
    attention(t, &bridge, &gate).await?;

    // 8. Goodbye.
    t.heading("8. Goodbye")?;
    t.sent("session/goodbye", Some(&json!({"reason": "tour over"})))?;
    bridge
        .goodbye(Some("tour over"))
        .await
        .map_err(|e| format!("session/goodbye: {e}"))?;
    t.answer("{} and the connection closes")?;
    t.line("")?;
    t.line("Next: `gabp mod` serves this game for your own bridge; `gabp tools`, `gabp call` and `gabp tail` talk")?;
    t.line("to any mod; `gabp conformance` checks one; `gabp bench --self` measures this implementation.")?;
    Ok(())
}

/// Step 7: an error in the game opens a blocking attention item; the bridge's gate refuses the next
/// game-bound call without sending it, until the bridge acknowledges the item.
async fn attention(
    t: &mut Transcript<'_>,
    bridge: &Bridge,
    gate: &AttentionGate,
) -> Result<(), String> {
    t.heading("7. Attention")?;
    let channels = gabp_attention::CHANNELS;
    t.sent("events/subscribe", Some(&json!({ "channels": channels })))?;
    let mut events = bridge
        .subscribe(channels)
        .await
        .map_err(|e| format!("events/subscribe: {e}"))?;
    t.answer(&format!("subscribed to {}", join(events.channels())))?;
    gate.sync().await;
    call(
        t,
        bridge,
        "demo/raise_error",
        json!({"message": "chunk 2,0 failed to save: disk full"}),
    )
    .await?;
    let opened = next_event(&mut events, gabp_attention::OPENED).await?;
    t.event(&opened)?;
    t.note("the game hit an error: one summarized item, blocking, that the agent must look at")?;

    let place = json!({"x": 4, "y": 5, "z": 4, "blockType": "stone"});
    t.sent_tool("world/place_block", &place)?;
    match bridge.call_tool("world/place_block", place.clone()).await {
        Err(e) => match BlockedByAttention::from_error(&e) {
            Some(blocked) => {
                t.error(
                    "gate",
                    "refused by the bridge's attention gate; nothing was sent",
                )?;
                t.more(&blocked.to_string())?;
            }
            None => {
                return Err(format!(
                    "world/place_block: expected the gate's refusal, got {e}"
                ))
            }
        },
        Ok(v) => {
            return Err(format!(
                "world/place_block ran while attention blocked: {v}"
            ))
        }
    }

    call(t, bridge, "demo/status", json!({})).await?;
    t.note("tools tagged read-only, status or diagnostic still run: the agent can look around")?;

    let current = gate.current().ok_or("the gate sees no attention item")?;
    t.sent(
        "attention/ack",
        Some(&json!({"attentionId": current.attention_id})),
    )?;
    let acked = gate
        .ack()
        .await
        .map_err(|e| format!("attention/ack: {e}"))?;
    let acked = serde_json::to_value(&acked).map_err(|e| e.to_string())?;
    t.answer(&acked.to_string())?;
    let cleared = next_event(&mut events, gabp_attention::CLEARED).await?;
    t.event(&cleared)?;
    call(t, bridge, "world/place_block", place).await?;
    t.note("acknowledged: game-bound calls go through again")?;
    Ok(())
}
