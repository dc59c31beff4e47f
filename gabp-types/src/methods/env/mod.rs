//! Params and results of `env/spaces`, `env/reset` and `env/step`, and the [`Space`] of their observations and
//! actions: the `env` extension (SPEC/1.0 extensions.md §env), which serves a game as a reinforcement-learning
//! environment in the shape of Gymnasium's `Env`.

mod check;
mod element;
mod space;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use self::space::{
    BoxSpace, DictSpace, DiscreteSpace, Dtype, MultiBinarySpace, MultiDiscreteSpace, Space,
    MAX_SPACE_DEPTH, MAX_SPACE_ELEMENTS,
};

/// The key of the `env` extension in `capabilities.extensions`.
pub const ENV_EXTENSION: &str = "env";

/// Params of `env/spaces`: none (an empty object when present).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvSpacesParams {}

/// The answer of `env/spaces`: the spaces of observations and of actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvSpacesResult {
    /// What `env/reset` and `env/step` answer as `observation`.
    pub observation: Space,
    /// What `env/step` takes as `action`.
    pub action: Space,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl EnvSpacesResult {
    /// `{observation, action}`.
    #[must_use]
    pub fn new(observation: Space, action: Space) -> Self {
        EnvSpacesResult {
            observation,
            action,
            extra: Map::new(),
        }
    }
}

/// Params of `env/reset`.
///
/// ```
/// use gabp_types::methods::EnvResetParams;
///
/// let p: EnvResetParams = serde_json::from_str(r#"{"seed": 42}"#)?;
/// assert_eq!(p.seed, Some(42));
/// assert!(serde_json::from_str::<EnvResetParams>(r#"{"seed": -1}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvResetParams {
    /// Seeds the episode: the same seed starts the same episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Options of the game's own, as Gymnasium's `reset(options=...)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
}

/// The answer of `env/reset`: the first observation of the episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvResetResult {
    /// An element of the observation space.
    pub observation: Value,
    /// What the game tells beside it.
    pub info: Map<String, Value>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl EnvResetResult {
    /// `{observation, info}`.
    #[must_use]
    pub fn new(observation: Value, info: Map<String, Value>) -> Self {
        EnvResetResult {
            observation,
            info,
            extra: Map::new(),
        }
    }
}

/// Params of `env/step`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvStepParams {
    /// An element of the action space.
    pub action: Value,
}

/// The answer of `env/step`, Gymnasium's `(observation, reward, terminated, truncated, info)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EnvStepResult {
    /// An element of the observation space, after the step.
    pub observation: Value,
    /// The reward of the step.
    pub reward: f64,
    /// Whether the episode reached an end of the task (won or lost).
    pub terminated: bool,
    /// Whether the episode was cut short (a step limit).
    pub truncated: bool,
    /// What the game tells beside it.
    pub info: Map<String, Value>,
    /// Members gabp/1 does not define, kept when a peer's answer is read liberally (SPEC/1.0 gabp.md §3.5).
    /// Empty in what our mod writes.
    #[serde(flatten, skip_serializing_if = "Map::is_empty")]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl EnvStepResult {
    /// A step that neither terminated nor was truncated, with no info.
    #[must_use]
    pub fn new(observation: Value, reward: f64) -> Self {
        EnvStepResult {
            observation,
            reward,
            terminated: false,
            truncated: false,
            info: Map::new(),
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_and_results() {
        assert!(serde_json::from_value::<EnvStepParams>(json!({})).is_err());
        assert!(serde_json::from_value::<EnvStepParams>(json!({"action": 1, "x": 1})).is_err());
        assert!(serde_json::from_value::<EnvResetParams>(json!({"seed": 1.5})).is_err());
        assert!(serde_json::from_value::<EnvResetParams>(json!({"options": 1})).is_err());
        let r: EnvStepResult = serde_json::from_value(
            json!({"observation": [1], "reward": -0.5, "terminated": false, "truncated": true, "info": {}}),
        )
        .unwrap();
        assert!(r.truncated && r.reward == -0.5);
        assert!(
            serde_json::from_value::<EnvStepResult>(json!({"observation": 1, "reward": 0}))
                .is_err()
        );
        assert!(serde_json::from_value::<EnvSpacesParams>(json!({"x": 1})).is_err());
    }
}
