//! The `input` extension (SPEC/1.0 extensions.md §input): the arrow keys and WASD walk the player one block.

use gabp_session::server::{CallError, EventPublisher, Input};
use gabp_types::methods::KeyAction;

use crate::tools::tool_error;
use crate::world::{Position, World};
use crate::DemoGame;

impl DemoGame {
    /// Takes one input on the game thread: a key pressed or tapped walks the player one block (north is -z)
    /// and publishes `player/move`; at the edge of the world the player stays, as a wall would stop it. Other
    /// keys, releases, text and the mouse do nothing in this game.
    pub(super) fn take_input(
        &self,
        input: Input,
        events: &EventPublisher,
    ) -> Result<(), CallError> {
        let Input::Key(key) = input else {
            return Ok(());
        };
        if key.action == KeyAction::Release {
            return Ok(());
        }
        let (dx, dz) = match key.key.as_str() {
            "ArrowLeft" | "KeyA" => (-1.0, 0.0),
            "ArrowRight" | "KeyD" => (1.0, 0.0),
            "ArrowUp" | "KeyW" => (0.0, -1.0),
            "ArrowDown" | "KeyS" => (0.0, 1.0),
            _ => return Ok(()),
        };
        let at = self
            .world
            .lock()
            .position(None)
            .map_err(|e| tool_error(&e))?;
        let to = Position {
            x: at.x + dx,
            y: at.y,
            z: at.z + dz,
        };
        if World::check_position(to).is_err() {
            return Ok(());
        }
        self.move_player(None, to, events)
            .map(drop)
            .map_err(|e| tool_error(&e))
    }
}
