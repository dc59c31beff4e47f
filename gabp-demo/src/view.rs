//! The tools that look at the world as it moves: `world/entities` (the sheep) and `world/render` (a PNG from
//! above, SPEC/1.0 extensions.md §content).

use gabp_session::server::{CallContext, CallError, Tool};
use gabp_types::methods::{ContentItem, WithContent};
use gabp_types::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::render::{Picture, DEFAULT_SCALE, MAX_SCALE};
use super::sheep::Entity;
use super::tools::NoArguments;
use super::DemoGame;

/// What `world/entities` reports.
#[derive(Debug, Serialize, JsonSchema)]
struct Entities {
    /// The tick the world was at.
    tick: u64,
    /// The sheep, in id order.
    entities: Vec<Entity>,
}

fn default_scale() -> u32 {
    DEFAULT_SCALE
}

/// How big to draw.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Render {
    /// Pixels per block, 1..=32 (default 8: a 128x128 picture).
    #[serde(default = "default_scale")]
    #[schemars(range(min = 1, max = 32))]
    scale: u32,
}

/// What `world/render` drew; the picture itself is the result's image content item.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Rendered {
    /// Width of the picture in pixels.
    width: u32,
    /// Height of the picture in pixels.
    height: u32,
    /// Pixels per block.
    scale: u32,
    /// The tick the world was at.
    tick: u64,
    /// Size of the PNG file in bytes.
    png_bytes: usize,
}

impl DemoGame {
    pub(super) fn entities_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("world/entities", move |_: NoArguments| {
            game.count_call();
            let world = game.world.lock();
            let entities = Entities {
                tick: world.ticks(),
                entities: world.entities(),
            };
            async move { Ok::<_, CallError>(entities) }
        })
        .title("List entities")
        .description(
            "The sheep of the world with their block positions and the blocks each has walked; they walk one \
             block per tick, and stand still while time is paused (time/pause).",
        )
        .tags(["world", "read-only"])
    }

    pub(super) fn render_tool(&self) -> Tool {
        let game = self.clone();
        Tool::new("world/render", move |ctx: CallContext, p: Render| {
            game.count_call();
            let (picture, tick) = {
                let world = game.world.lock();
                let player = world.position(None).unwrap_or(super::world::SPAWN);
                let picture = Picture::draw(&world, &world.entities(), player, p.scale);
                (picture, world.ticks())
            };
            async move {
                if !(1..=MAX_SCALE).contains(&p.scale) {
                    return Err(CallError::new(format!(
                        "scale {} is outside 1..={MAX_SCALE}",
                        p.scale
                    ))
                    .with_code(ErrorCode::INVALID_PARAMS)
                    .with_data(json!({ "field": "scale", "min": 1, "max": MAX_SCALE })));
                }
                let png = picture.png().map_err(|e| CallError::new(e.to_string()))?;
                if png.len() > ctx.max_content_bytes() {
                    return Err(CallError::new(format!(
                        "the picture is {} bytes, over the {} bytes this mod may send; ask for a smaller scale",
                        png.len(),
                        ctx.max_content_bytes()
                    ))
                    .with_data(json!({ "pngBytes": png.len(), "maxBytes": ctx.max_content_bytes() })));
                }
                let rendered = Rendered {
                    width: picture.size,
                    height: picture.size,
                    scale: p.scale,
                    tick,
                    png_bytes: png.len(),
                };
                Ok(WithContent::new(
                    rendered,
                    vec![ContentItem::image("image/png", &png)],
                ))
            }
        })
        .title("Render the world")
        .description(
            "The world seen from above as a PNG image (north up): each column shows its top block, shaded by \
             height; sheep are white squares and the player a red one. scale is pixels per block (1..=32, \
             default 8: 128x128).",
        )
        .tags(["world", "read-only"])
    }
}
