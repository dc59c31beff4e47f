//! Params and results of `time/status`, `time/pause`, `time/resume` and `time/step`, and the payload of the
//! `time/changed` event: the `time-control` extension (SPEC/1.0 extensions.md §time-control).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::Error;

/// The key of the `time-control` extension in `capabilities.extensions`.
pub const TIME_CONTROL_EXTENSION: &str = "time-control";

/// The channel on which a mod with the `time-control` extension announces that time was paused or resumed.
pub const TIME_CHANGED_CHANNEL: &str = "time/changed";

/// The most ticks one `time/step` may ask for.
pub const MAX_STEP_TICKS: u32 = 10_000;

/// Params of `time/status`, `time/pause` and `time/resume`: none (an empty object when present).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeParams {}

/// Params of `time/step`.
///
/// ```
/// use gabp_types::methods::TimeStepParams;
///
/// let p: TimeStepParams = serde_json::from_str(r#"{"ticks": 3}"#)?;
/// assert_eq!(p.ticks.get(), 3);
/// assert!(serde_json::from_str::<TimeStepParams>(r#"{"ticks": 0}"#).is_err());
/// assert!(serde_json::from_str::<TimeStepParams>(r#"{"ticks": 10001}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeStepParams {
    /// How many ticks to run, 1..=10000.
    pub ticks: StepTicks,
}

/// A number of ticks for `time/step`: 1 to [`MAX_STEP_TICKS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct StepTicks(#[schemars(range(min = 1, max = 10000))] u32);

impl StepTicks {
    /// `ticks`, when it is from 1 to [`MAX_STEP_TICKS`].
    ///
    /// # Errors
    ///
    /// [`Error::StepTicksOutOfRange`] otherwise.
    pub fn new(ticks: u32) -> Result<Self, Error> {
        if (1..=MAX_STEP_TICKS).contains(&ticks) {
            Ok(StepTicks(ticks))
        } else {
            Err(Error::StepTicksOutOfRange {
                ticks: u64::from(ticks),
            })
        }
    }

    /// The number of ticks.
    #[must_use]
    pub fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for StepTicks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for StepTicks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ticks = u64::deserialize(deserializer)?;
        u32::try_from(ticks)
            .ok()
            .and_then(|t| StepTicks::new(t).ok())
            .ok_or_else(|| serde::de::Error::custom(Error::StepTicksOutOfRange { ticks }))
    }
}

/// The answer of every `time/*` method and the payload of `time/changed`: whether the game's time is paused
/// and how many ticks it has run.
///
/// ```
/// use gabp_types::methods::TimeState;
///
/// let state = TimeState::new(true, 42);
/// assert_eq!(serde_json::to_value(&state)?, serde_json::json!({"paused": true, "tick": 42}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TimeState {
    /// Whether the simulation is paused.
    pub paused: bool,
    /// Ticks the simulation has run since the mod started.
    pub tick: u64,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl TimeState {
    /// `{paused, tick}`.
    #[must_use]
    pub fn new(paused: bool, tick: u64) -> Self {
        TimeState {
            paused,
            tick,
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn step_ticks_bounds() {
        for ok in [1, 3, MAX_STEP_TICKS] {
            let p: TimeStepParams = serde_json::from_value(json!({ "ticks": ok })).unwrap();
            assert_eq!(p.ticks.get(), ok);
        }
        for bad in [
            json!(0),
            json!(10_001),
            json!(u64::MAX),
            json!(-1),
            json!(1.5),
        ] {
            assert!(
                serde_json::from_value::<TimeStepParams>(json!({ "ticks": bad })).is_err(),
                "{bad}"
            );
        }
        let e = serde_json::from_value::<TimeStepParams>(json!({ "ticks": 0 })).unwrap_err();
        assert!(e.to_string().contains("from 1 to 10000"), "{e}");
        assert!(StepTicks::new(0).is_err() && StepTicks::new(10_001).is_err());
    }

    #[test]
    fn time_params_allow_nothing() {
        assert!(serde_json::from_value::<TimeParams>(json!({})).is_ok());
        assert!(serde_json::from_value::<TimeParams>(json!({ "x": 1 })).is_err());
    }
}
