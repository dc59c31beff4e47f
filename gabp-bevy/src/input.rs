//! The `input` extension (SPEC/1.0 extensions.md §input) through Bevy's own input messages: a key an agent
//! presses is a `KeyboardInput` message like one from the window, so `ButtonInput<KeyCode>`, `just_pressed`
//! and text fields behave as for a player.

use bevy_app::{App, First};
use bevy_ecs::prelude::*;
use bevy_input::keyboard::{Key, KeyCode, KeyboardInput, NativeKey, NativeKeyCode};
use bevy_input::mouse::{MouseButton as BevyButton, MouseButtonInput};
use bevy_input::ButtonState;
use gabp_session::server::{CallError, Input};
use gabp_types::methods::{ButtonAction, KeyAction, KeyName, MouseButton};
use gabp_types::ErrorCode;

use crate::server::pump;

/// Where an agent last put the cursor with `input/mouse` (logical pixels from the window's top left), for a
/// game without a window to move; `None` until one did.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq)]
pub struct AgentCursor {
    /// `(x, y)`.
    pub position: Option<(f64, f64)>,
}

/// Keys and buttons a tap or click lets go of in the next frame.
#[derive(Resource, Default)]
struct Releases {
    keys: Vec<KeyCode>,
    buttons: Vec<BevyButton>,
}

/// Whether the app has Bevy's keyboard and mouse input (`InputPlugin`).
pub(crate) fn available(world: &World) -> bool {
    world.contains_resource::<Messages<KeyboardInput>>()
        && world.contains_resource::<Messages<MouseButtonInput>>()
}

pub(crate) fn add_systems(app: &mut App) {
    app.init_resource::<Releases>()
        .init_resource::<AgentCursor>()
        .add_systems(First, release_taps.before(pump));
}

/// Gives one input to the world, on the app's thread.
pub(crate) fn apply(world: &mut World, input: Input) -> Result<(), CallError> {
    match input {
        Input::Key(key) => {
            let code = key_code(key.key)?;
            let state = match key.action {
                KeyAction::Release => ButtonState::Released,
                KeyAction::Press | KeyAction::Tap => ButtonState::Pressed,
            };
            world.write_message(keyboard(code, logical_key(key.key), state, None));
            if key.action == KeyAction::Tap {
                world.resource_mut::<Releases>().keys.push(code);
            }
        }
        Input::Text(text) => {
            let unidentified = KeyCode::Unidentified(NativeKeyCode::Unidentified);
            for ch in text.text.as_str().chars() {
                let ch = ch.to_string();
                let key = Key::Character(ch.as_str().into());
                let typed = Some(ch.as_str());
                world.write_message(keyboard(
                    unidentified,
                    key.clone(),
                    ButtonState::Pressed,
                    typed,
                ));
                world.write_message(keyboard(unidentified, key, ButtonState::Released, None));
            }
        }
        Input::Mouse(mouse) => {
            if let Some(position) = mouse.position {
                world.resource_mut::<AgentCursor>().position = Some((position.x, position.y));
            }
            let button = match mouse.button {
                MouseButton::Left => BevyButton::Left,
                MouseButton::Right => BevyButton::Right,
                MouseButton::Middle => BevyButton::Middle,
            };
            let state = match mouse.action {
                ButtonAction::Release => ButtonState::Released,
                _ => ButtonState::Pressed,
            };
            world.write_message(MouseButtonInput {
                button,
                state,
                window: Entity::PLACEHOLDER,
            });
            if mouse.action == ButtonAction::Click {
                world.resource_mut::<Releases>().buttons.push(button);
            }
        }
        _ => return Err(invalid("this kind of input is not known to the game")),
    }
    Ok(())
}

fn invalid(message: &str) -> CallError {
    CallError::new(message).with_code(ErrorCode::INVALID_PARAMS)
}

fn keyboard(
    key_code: KeyCode,
    logical_key: Key,
    state: ButtonState,
    text: Option<&str>,
) -> KeyboardInput {
    KeyboardInput {
        key_code,
        logical_key,
        state,
        text: text.map(Into::into),
        repeat: false,
        window: Entity::PLACEHOLDER,
    }
}

/// Bevy's `KeyCode` for a key name: both are the W3C `KeyboardEvent.code` names.
fn key_code(key: KeyName) -> Result<KeyCode, CallError> {
    serde_json::from_value(serde_json::Value::from(key.as_str()))
        .map_err(|_| invalid(&format!("the key {key} has no Bevy KeyCode")))
}

/// The key's meaning on a US layout, for games that read `ButtonInput<Key>`.
fn logical_key(key: KeyName) -> Key {
    let name = key.as_str();
    let character = name
        .strip_prefix("Key")
        .map(str::to_lowercase)
        .or_else(|| name.strip_prefix("Digit").map(str::to_owned));
    if let Some(character) = character {
        return Key::Character(character.as_str().into());
    }
    match name {
        "Space" => Key::Space,
        "Enter" => Key::Enter,
        "Escape" => Key::Escape,
        "Tab" => Key::Tab,
        "Backspace" => Key::Backspace,
        "ArrowUp" => Key::ArrowUp,
        "ArrowDown" => Key::ArrowDown,
        "ArrowLeft" => Key::ArrowLeft,
        "ArrowRight" => Key::ArrowRight,
        _ => Key::Unidentified(NativeKey::Unidentified),
    }
}

/// Lets go of last frame's taps and clicks, before this frame's inputs are applied.
fn release_taps(
    mut releases: ResMut<'_, Releases>,
    mut keys: MessageWriter<'_, KeyboardInput>,
    mut buttons: MessageWriter<'_, MouseButtonInput>,
) {
    for code in std::mem::take(&mut releases.keys) {
        keys.write(keyboard(
            code,
            Key::Unidentified(NativeKey::Unidentified),
            ButtonState::Released,
            None,
        ));
    }
    for button in std::mem::take(&mut releases.buttons) {
        buttons.write(MouseButtonInput {
            button,
            state: ButtonState::Released,
            window: Entity::PLACEHOLDER,
        });
    }
}
