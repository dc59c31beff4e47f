//! The game's tools: their arguments and results, and how each one reads or changes the world
//! (SPEC/1.0/gabp.md §4.5).

use std::time::Duration;

use gabp_session::server::{CallContext, CallError, EventPublisher, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{
    BlockType, DemoError, DemoGame, Position, Slot, BLOCK_CHANGE, PLAYER_ID, PLAYER_MOVE,
    WORLD_SIZE,
};

/// Block coordinates.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BlockPosition {
    /// East-west, an integer 0..=15.
    x: i64,
    /// Height, an integer 0..=15.
    y: i64,
    /// North-south, an integer 0..=15.
    z: i64,
}

/// The block at a position.
#[derive(Debug, Serialize, JsonSchema)]
struct BlockAt {
    /// East-west.
    x: i64,
    /// Height.
    y: i64,
    /// North-south.
    z: i64,
    /// The block type, or `null` for air.
    #[schemars(schema_with = "nullable_string")]
    block: Option<String>,
}

/// A string or `null` (schemars leaves `null` out of a required `Option<String>`).
fn nullable_string(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"] })
}

/// A block to place.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlaceBlock {
    /// East-west, an integer 0..=15.
    x: i64,
    /// Height, an integer 0..=15.
    y: i64,
    /// North-south, an integer 0..=15.
    z: i64,
    /// The block to put there; `air` removes the block.
    block_type: BlockType,
}

/// What `world/place_block` did.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Placed {
    /// Whether the block was placed.
    success: bool,
    /// The block now at the position.
    block_placed: BlockType,
}

/// The payload of `world/block_change`.
#[derive(Debug, Serialize)]
struct BlockChange {
    x: i64,
    y: i64,
    z: i64,
    block: Option<String>,
}

/// Which player.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PlayerArgs {
    /// The player (default and only one: `steve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    player_id: Option<String>,
}

/// A player's inventory.
#[derive(Debug, Serialize, JsonSchema)]
struct Inventory {
    /// The occupied slots, in slot order.
    slots: Vec<Slot>,
}

/// Where to move a player.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Teleport {
    /// The player (default and only one: `steve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    player_id: Option<String>,
    /// East-west, a number 0..=16.
    x: f64,
    /// Height, a number 0..=16.
    y: f64,
    /// North-south, a number 0..=16.
    z: f64,
}

/// A player and where it now is: the result of `player/teleport` and the payload of `player/move`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PlayerMoved {
    /// The player.
    player_id: String,
    /// Its position.
    pub(super) position: Position,
}

/// Any JSON value.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Echo {
    /// Returned unchanged.
    value: Value,
}

/// How long to sleep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sleep {
    /// Milliseconds, 0..=60000.
    #[schemars(range(max = 60000))]
    ms: u64,
}

/// How long the tool slept.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Slept {
    /// Milliseconds.
    slept_ms: u64,
}

fn default_blocking() -> bool {
    true
}

/// The error to raise.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RaiseError {
    /// What went wrong, as the game would log it.
    #[schemars(length(min = 1))]
    message: String,
    /// Whether the attention item blocks bridges until it is acknowledged.
    #[serde(default = "default_blocking")]
    blocking: bool,
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NoArguments {}

/// What `demo/status` reports.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Status {
    /// How many tool calls the game has executed, `demo/status` excluded.
    tool_calls: u64,
}

/// The attention item opened.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Raised {
    /// Its id, for `attention/ack`.
    attention_id: String,
}

/// A world error as the tool's `-32402` answer, with details in `data`.
pub(crate) fn tool_error(e: &DemoError) -> CallError {
    let data = match e {
        DemoError::BlockOutOfBounds { axis, value } => {
            json!({ "field": axis, "value": value, "min": 0, "max": WORLD_SIZE - 1 })
        }
        DemoError::PositionOutOfBounds { axis, value } => {
            json!({ "field": axis, "value": value, "min": 0, "max": WORLD_SIZE })
        }
        DemoError::UnknownPlayer(id) => json!({ "playerId": id, "players": [PLAYER_ID] }),
        DemoError::Picture(_)
        | DemoError::Token(_)
        | DemoError::Build(_)
        | DemoError::GameThread(_)
        | DemoError::Listen { .. } => json!({}),
    };
    CallError::new(e.to_string())
        .with_data(data)
        .retryable(false)
}

impl DemoGame {
    pub(super) fn get_block_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("world/get_block", move |p: BlockPosition| {
            game.count_call();
            let block = game.world.lock().block(p.x, p.y, p.z);
            async move {
                let block = block.map_err(|e| tool_error(&e))?;
                Ok(BlockAt {
                    x: p.x,
                    y: p.y,
                    z: p.z,
                    block: block.reported(),
                })
            }
        })
        .title("Get block")
        .description(
            "The block at integer coordinates x, y, z (each 0..=15) of the 16x16x16 world; block is null \
             for air.",
        )
        .tags(["world", "read-only"])
    }

    pub(super) fn place_block_tool(&self, events: EventPublisher) -> Tool {
        let game = self.clone();
        Tool::on_main_thread("world/place_block", move |p: PlaceBlock| {
            game.count_call();
            let mut world = game.world.lock();
            world
                .place(p.x, p.y, p.z, p.block_type)
                .map_err(|e| tool_error(&e))?;
            // Published under the world's lock, so the events' seq order is the order of the changes.
            let change = BlockChange {
                x: p.x,
                y: p.y,
                z: p.z,
                block: p.block_type.reported(),
            };
            if let Err(e) = events.publish(BLOCK_CHANGE, &change) {
                tracing::error!(error = %e, "cannot publish world/block_change");
            }
            Ok(Placed {
                success: true,
                block_placed: p.block_type,
            })
        })
        .title("Place block")
        .description(
            "Puts a block at integer coordinates x, y, z (each 0..=15); blockType air removes the block. \
             Publishes world/block_change. Runs on the game thread.",
        )
        .tags(["world", "write"])
    }

    pub(super) fn inventory_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("inventory/get", move |p: PlayerArgs| {
            game.count_call();
            let slots = game
                .world.lock()
                .inventory(p.player_id.as_deref())
                .map(<[Slot]>::to_vec);
            async move {
                Ok(Inventory {
                    slots: slots.map_err(|e| tool_error(&e))?,
                })
            }
        })
        .title("Get inventory")
        .description("The item stacks a player carries, by slot (playerId defaults to steve, the only player).")
        .tags(["inventory", "player", "read-only"])
    }

    pub(super) fn teleport_tool(&self, events: EventPublisher) -> Tool {
        let game = self.clone();
        Tool::on_main_thread("player/teleport", move |p: Teleport| {
            game.count_call();
            let position = Position {
                x: p.x,
                y: p.y,
                z: p.z,
            };
            game.move_player(p.player_id.as_deref(), position, &events)
                .map_err(|e| tool_error(&e))
        })
        .title("Teleport player")
        .description(
            "Moves a player to x, y, z (numbers 0..=16; playerId defaults to steve, the only player) and \
             publishes player/move with the same payload. Runs on the game thread.",
        )
        .tags(["player", "write"])
    }

    pub(super) fn echo_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/echo", move |e: Echo| {
            game.count_call();
            async move { Ok::<_, CallError>(e) }
        })
        .title("Echo")
        .description("Returns value unchanged.")
        .tags(["demo", "read-only"])
    }

    pub(super) fn sleep_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/sleep", move |ctx: CallContext, s: Sleep| {
            game.count_call();
            async move {
                // Progress at least every 100 ms (SPEC/1.0 extensions.md §progress).
                let total = Duration::from_millis(s.ms);
                let started = tokio::time::Instant::now();
                loop {
                    let slept = started.elapsed().min(total);
                    ctx.progress(slept.as_millis() as f64, Some(s.ms as f64), Some("sleeping"));
                    if slept >= total {
                        break;
                    }
                    tokio::time::sleep((total - slept).min(Duration::from_millis(100))).await;
                }
                Ok::<_, CallError>(Slept { slept_ms: s.ms })
            }
        })
        .title("Sleep")
        .description(
            "Waits ms milliseconds (0..=60000), then answers, reporting progress every 100 ms when asked. \
             A sleep longer than the request timeout (30 s) is answered -32403.",
        )
        .tags(["demo", "timing", "read-only"])
    }

    pub(super) fn raise_error_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/raise_error", move |r: RaiseError| {
            game.count_call();
            let outcome = game.raise(&r.message, r.blocking);
            async move { outcome.map(|attention_id| Raised { attention_id }) }
        })
        .title("Raise error")
        .description(
            "Records message as a game error and opens an attention item (or adds to the open one), \
             blocking unless blocking is false; answers the item's attentionId.",
        )
        .tags(["demo", "attention"])
    }

    pub(super) fn status_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("demo/status", move |_: NoArguments| {
            // Not counted: it reports the count.
            let calls = game.tool_calls();
            async move { Ok::<_, CallError>(Status { tool_calls: calls }) }
        })
        .title("Status")
        .description(
            "How many tool calls the game has executed (this one excluded; calls refused before reaching \
             a tool are not counted). Tagged status, so it answers while an attention item blocks.",
        )
        .tags(["demo", "status", "read-only"])
    }

    /// Moves the player and publishes `player/move` (under the world's lock, so `seq` follows the moves).
    pub(super) fn move_player(
        &self,
        player_id: Option<&str>,
        position: Position,
        events: &EventPublisher,
    ) -> Result<PlayerMoved, DemoError> {
        let mut world = self.world.lock();
        let id = world.teleport(player_id, position)?;
        let moved = PlayerMoved {
            player_id: id.to_owned(),
            position,
        };
        if let Err(e) = events.publish(PLAYER_MOVE, &moved) {
            tracing::error!(error = %e, "cannot publish player/move");
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use gabp_types::ErrorCode;

    use super::*;

    #[test]
    fn tool_errors_carry_details() {
        let e = tool_error(&DemoError::BlockOutOfBounds {
            axis: "y",
            value: 99,
        })
        .to_error_object();
        assert_eq!(e.code, ErrorCode::TOOL_EXECUTION_FAILED);
        assert_eq!(
            e.data.unwrap(),
            json!({"field": "y", "value": 99, "min": 0, "max": 15, "retryable": false})
        );
        let e = tool_error(&DemoError::UnknownPlayer("alex".into())).to_error_object();
        assert_eq!(e.data.unwrap()["players"], json!(["steve"]));
    }
}
