//! The game's resources: `gabp://game/world` (JSON text) and `gabp://mod/info` (binary)
//! (SPEC/1.0/gabp.md §4.7, §4.8).

use gabp_session::server::Resource;
use gabp_types::methods::SchemaVersion;
use gabp_types::PROTOCOL_VERSION;
use serde_json::{json, Map, Value};

use super::{BlockType, DemoGame, APP_NAME, MOD_INFO_URI, PLAYER_ID, WORLD_SIZE, WORLD_URI};

/// The content of `gabp://mod/info`: JSON bytes, served as binary (base64 on the wire).
fn mod_info() -> Vec<u8> {
    json!({
        "name": APP_NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": PROTOCOL_VERSION,
        "schemaVersion": SchemaVersion::CURRENT,
        "implementation": "gabp-rs",
        "repository": env!("CARGO_PKG_REPOSITORY"),
    })
    .to_string()
    .into_bytes()
}

pub(super) fn mod_info_resource() -> Resource {
    let size = u64::try_from(mod_info().len()).unwrap_or(u64::MAX);
    Resource::binary(MOD_INFO_URI, "Mod info", || async { Ok(mod_info()) })
        .mime_type("application/json")
        .size(size)
        .description("Name, version and protocol of the demo mod, as JSON bytes (sent base64)")
}

impl DemoGame {
    pub(super) fn world_resource(&self) -> Resource {
        let game = self.clone();
        Resource::text(WORLD_URI, "World", move || {
            let text = game.world_json();
            async move { Ok(text) }
        })
        .mime_type("application/json")
        .description("Size, block palette, block counts and players of the 16x16x16 world")
    }

    /// The content of `gabp://game/world`.
    fn world_json(&self) -> String {
        let world = self.world.lock();
        let counts: Map<String, Value> = world
            .counts()
            .into_iter()
            .map(|(block, n)| (block.as_str().to_owned(), json!(n)))
            .collect();
        let position = world.position(None).ok();
        json!({
            "size": { "x": WORLD_SIZE, "y": WORLD_SIZE, "z": WORLD_SIZE },
            "palette": BlockType::ALL.map(BlockType::as_str),
            "counts": counts,
            "blockChanges": world.block_changes(),
            "players": [{ "id": PLAYER_ID, "position": position }],
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_resource_and_mod_info() {
        let game = DemoGame::new();
        let world: Value = serde_json::from_str(&game.world_json()).unwrap();
        assert_eq!(world["counts"]["grass"], 256);
        assert_eq!(world["palette"][0], "air");
        assert_eq!(world["players"][0]["id"], "steve");
        let info: Value = serde_json::from_slice(&mod_info()).unwrap();
        assert_eq!(info["name"], APP_NAME);
        assert_eq!(info["protocol"], "gabp/1");
    }
}
