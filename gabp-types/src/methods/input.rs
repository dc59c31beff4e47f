//! Params and results of `input/key`, `input/text` and `input/mouse`: the `input` extension (SPEC/1.0
//! extensions.md §input), through which an agent plays the game as a player would.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The key of the `input` extension in `capabilities.extensions`.
pub const INPUT_EXTENSION: &str = "input";

/// The most characters one `input/text` may type.
pub const MAX_INPUT_TEXT_CHARS: usize = 1024;

/// The key names `input/key` takes: physical keys, named as the `code` of the W3C UI Events
/// (`KeyboardEvent.code`), which engines such as Bevy (`KeyCode`) and browsers use too.
pub const KEY_NAMES: &[&str] = &[
    "KeyA",
    "KeyB",
    "KeyC",
    "KeyD",
    "KeyE",
    "KeyF",
    "KeyG",
    "KeyH",
    "KeyI",
    "KeyJ",
    "KeyK",
    "KeyL",
    "KeyM",
    "KeyN",
    "KeyO",
    "KeyP",
    "KeyQ",
    "KeyR",
    "KeyS",
    "KeyT",
    "KeyU",
    "KeyV",
    "KeyW",
    "KeyX",
    "KeyY",
    "KeyZ",
    "Digit0",
    "Digit1",
    "Digit2",
    "Digit3",
    "Digit4",
    "Digit5",
    "Digit6",
    "Digit7",
    "Digit8",
    "Digit9",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Space",
    "Enter",
    "Escape",
    "Tab",
    "Backspace",
    "Delete",
    "Insert",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "ShiftLeft",
    "ShiftRight",
    "ControlLeft",
    "ControlRight",
    "AltLeft",
    "AltRight",
    "SuperLeft",
    "SuperRight",
    "CapsLock",
    "Minus",
    "Equal",
    "BracketLeft",
    "BracketRight",
    "Backslash",
    "Semicolon",
    "Quote",
    "Backquote",
    "Comma",
    "Period",
    "Slash",
    "Numpad0",
    "Numpad1",
    "Numpad2",
    "Numpad3",
    "Numpad4",
    "Numpad5",
    "Numpad6",
    "Numpad7",
    "Numpad8",
    "Numpad9",
    "NumpadAdd",
    "NumpadSubtract",
    "NumpadMultiply",
    "NumpadDivide",
    "NumpadDecimal",
    "NumpadEnter",
];

/// A key name from [`KEY_NAMES`].
///
/// ```
/// use gabp_types::methods::KeyName;
///
/// assert_eq!(serde_json::from_str::<KeyName>(r#""ArrowLeft""#)?.as_str(), "ArrowLeft");
/// let unknown = serde_json::from_str::<KeyName>(r#""LeftArrow""#).unwrap_err();
/// assert!(unknown.to_string().contains("LeftArrow"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct KeyName(&'static str);

impl KeyName {
    /// The key called `name`, if [`KEY_NAMES`] has it.
    #[must_use]
    pub fn new(name: &str) -> Option<Self> {
        KEY_NAMES.iter().find(|k| **k == name).map(|k| KeyName(k))
    }

    /// The name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl<'de> Deserialize<'de> for KeyName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        KeyName::new(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown key {name:?}: key names are W3C KeyboardEvent.code values such as \"KeyA\", \"Space\" or \"ArrowLeft\" (SPEC/1.0 extensions.md §input)"
            ))
        })
    }
}

impl JsonSchema for KeyName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "KeyName".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": KEY_NAMES,
            "description": "A physical key, named as the W3C UI Events KeyboardEvent.code."
        })
    }
}

/// What `input/key` does with the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyAction {
    /// Holds the key down until a `release`.
    Press,
    /// Lets it go.
    Release,
    /// Presses it in one frame and lets it go in the next, as a quick keystroke does.
    Tap,
}

/// Params of `input/key`.
///
/// ```
/// use gabp_types::methods::{InputKeyParams, KeyAction};
///
/// let p: InputKeyParams = serde_json::from_str(r#"{"key": "Space", "action": "tap"}"#)?;
/// assert_eq!((p.key.as_str(), p.action), ("Space", KeyAction::Tap));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputKeyParams {
    /// The key.
    pub key: KeyName,
    /// Press, release or tap.
    pub action: KeyAction,
}

/// Params of `input/text`: text typed as a player types it, character by character.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputTextParams {
    /// 1 to 1024 characters.
    pub text: InputText,
}

/// The text of `input/text`: 1 to [`MAX_INPUT_TEXT_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct InputText(#[schemars(length(min = 1, max = 1024))] String);

impl InputText {
    /// `text`, when it has 1 to [`MAX_INPUT_TEXT_CHARS`] characters.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Option<Self> {
        let text = text.into();
        (1..=MAX_INPUT_TEXT_CHARS)
            .contains(&text.chars().count())
            .then_some(InputText(text))
    }

    /// The text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for InputText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let chars = text.chars().count();
        InputText::new(text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "the text has {chars} characters: from 1 to {MAX_INPUT_TEXT_CHARS} are allowed"
            ))
        })
    }
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MouseButton {
    /// The primary button.
    Left,
    /// The secondary button.
    Right,
    /// The wheel button.
    Middle,
}

/// What `input/mouse` does with the button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ButtonAction {
    /// Holds the button down until a `release`.
    Press,
    /// Lets it go.
    Release,
    /// Presses it in one frame and lets it go in the next.
    Click,
}

/// Where the cursor is, in the game window's logical pixels from its top left corner.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CursorPosition {
    /// Pixels from the left edge.
    pub x: f64,
    /// Pixels from the top edge.
    pub y: f64,
}

/// Params of `input/mouse`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputMouseParams {
    /// The button.
    pub button: MouseButton,
    /// Press, release or click.
    pub action: ButtonAction,
    /// Where the cursor moves first, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<CursorPosition>,
}

/// The answer of every `input/*` method, once the game has taken the input: an empty object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct InputResult {
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_refused_by_name() {
        for bad in [
            r#"{"key": "Spacebar", "action": "tap"}"#,
            r#"{"key": "Space", "action": "hold"}"#,
            r#"{"key": "Space"}"#,
            r#"{"key": "Space", "action": "tap", "extra": 1}"#,
        ] {
            assert!(
                serde_json::from_str::<InputKeyParams>(bad).is_err(),
                "{bad}"
            );
        }
        assert!(serde_json::from_str::<InputTextParams>(r#"{"text": ""}"#).is_err());
        let long = format!(r#"{{"text": "{}"}}"#, "é".repeat(MAX_INPUT_TEXT_CHARS + 1));
        assert!(serde_json::from_str::<InputTextParams>(&long).is_err());
        let most = format!(r#"{{"text": "{}"}}"#, "é".repeat(MAX_INPUT_TEXT_CHARS));
        assert!(serde_json::from_str::<InputTextParams>(&most).is_ok());
        assert!(serde_json::from_str::<InputMouseParams>(
            r#"{"button": "left", "action": "drag"}"#
        )
        .is_err());
        let click: InputMouseParams = serde_json::from_str(
            r#"{"button": "right", "action": "click", "position": {"x": 10, "y": 20.5}}"#,
        )
        .unwrap();
        assert_eq!(click.position, Some(CursorPosition { x: 10.0, y: 20.5 }));
    }

    #[test]
    fn every_key_name_is_unique_and_round_trips() {
        let mut seen = std::collections::HashSet::new();
        for name in KEY_NAMES {
            assert!(seen.insert(name), "{name} twice");
            let key: KeyName = serde_json::from_value(Value::from(*name)).unwrap();
            assert_eq!(serde_json::to_value(key).unwrap(), Value::from(*name));
        }
    }
}
