//! [`Input`]: what the `input` extension delivers to the game (SPEC/1.0 extensions.md §input).

use std::any::{type_name, Any};
use std::sync::Arc;

use gabp_types::methods::{InputKeyParams, InputMouseParams, InputTextParams};
use gabp_types::ErrorCode;

use super::error::CallError;

/// One input from a bridge, for the game to apply on its thread as if a player had made it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Input {
    /// `input/key`: press, release or tap a key.
    Key(InputKeyParams),
    /// `input/text`: type text.
    Text(InputTextParams),
    /// `input/mouse`: press, release or click a button, moving the cursor first.
    Mouse(InputMouseParams),
}

/// Applies an input to the game's state, on the game's thread.
pub(crate) type InputFn = Arc<dyn Fn(&mut dyn Any, Input) -> Result<(), CallError> + Send + Sync>;

/// `apply` over the game state `S` that the game loop pumps with.
pub(crate) fn input_fn<S: 'static>(
    apply: impl Fn(&mut S, Input) -> Result<(), CallError> + Send + Sync + 'static,
) -> InputFn {
    Arc::new(move |state: &mut dyn Any, input| {
        let state = state.downcast_mut::<S>().ok_or_else(|| {
            CallError::new(format!(
                "input needs the game state {}: the game loop must pump with MainThread::pump_with",
                type_name::<S>()
            ))
            .with_code(ErrorCode::INTERNAL_ERROR)
        })?;
        apply(state, input)
    })
}
