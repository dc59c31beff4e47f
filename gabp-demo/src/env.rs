//! The `env` extension (SPEC/1.0 extensions.md §env): herd the sheep into the pen. The player walks one block a
//! step (or stays); sheep within reach flee it; a sheep in the pen stays there. Reward 1 for each sheep newly
//! penned; the episode ends when all are, and is cut short after [`ENV_MAX_STEPS`] steps.

use gabp_session::server::{CallError, EnvSpec, EventPublisher};
use gabp_types::methods::{Dtype, EnvResetParams, EnvResetResult, EnvStepResult, Space};
use serde_json::{json, Map, Value};

use crate::pen::FLOCK_SIZE;
use crate::tools::tool_error;
use crate::world::{Position, World, WORLD_SIZE};
use crate::DemoGame;

/// The game ticks one step runs.
pub const ENV_TICKS_PER_STEP: u32 = 2;

/// The steps after which an episode is truncated.
pub const ENV_MAX_STEPS: u64 = 500;

/// The actions of `env/step`, by number: stay, or walk one block north (-z), east (+x), south (+z) or west (-x).
pub const ENV_ACTIONS: [(i64, i64); 5] = [(0, 0), (0, -1), (1, 0), (0, 1), (-1, 0)];

/// The environment: observations `[player x, player z, then x and z of each sheep]`, block coordinates
/// 0..=15; actions `Discrete(5)` ([`ENV_ACTIONS`]).
pub fn env_spec() -> EnvSpec {
    let len = 2 + 2 * FLOCK_SIZE as u64;
    let top = (WORLD_SIZE - 1) as f64;
    EnvSpec::new(
        Space::bounded(0.0, top, vec![len], Dtype::Float32),
        Space::discrete(ENV_ACTIONS.len() as u64),
    )
    .ticks_per_step(ENV_TICKS_PER_STEP)
    .max_episode_steps(ENV_MAX_STEPS)
}

/// The episode beside the world: the seeds of resets that bring none, and the sheep penned at the last answer.
#[derive(Debug, Default)]
pub(crate) struct Herd {
    unseeded: u64,
    penned: usize,
}

fn observation(world: &World) -> Value {
    let (x, z) = world.player_cell();
    let mut values = vec![x, z];
    for sheep in world.entities() {
        values.extend([sheep.x, sheep.z]);
    }
    json!(values)
}

fn info(penned: usize) -> Map<String, Value> {
    let mut info = Map::new();
    info.insert("penned".into(), penned.into());
    info
}

impl DemoGame {
    /// `env/reset`: a fresh herding world drawn from the seed (or, without one, from the seeds the game draws
    /// itself, so that unseeded episodes differ).
    pub(super) fn env_reset(&self, params: &EnvResetParams) -> EnvResetResult {
        let seed = match params.seed {
            Some(seed) => seed,
            None => {
                let mut herd = self.herd.lock();
                herd.unseeded = herd.unseeded.wrapping_add(0x9e37_79b9_7f4a_7c15);
                herd.unseeded
            }
        };
        let world = World::herding(seed);
        let observed = observation(&world);
        *self.world.lock() = world;
        self.herd.lock().penned = 0;
        EnvResetResult::new(observed, info(0))
    }

    /// `env/step`, before the ticks: the player walks one block, unless the edge of the world is in the way.
    pub(super) fn env_act(&self, action: &Value, events: &EventPublisher) -> Result<(), CallError> {
        let Some(&(dx, dz)) = action
            .as_u64()
            .and_then(|a| usize::try_from(a).ok())
            .and_then(|a| ENV_ACTIONS.get(a))
        else {
            return Err(CallError::new(format!("unknown action {action}")));
        };
        if (dx, dz) == (0, 0) {
            return Ok(());
        }
        let (x, z) = self.world.lock().player_cell();
        let (x, z) = (x + dx, z + dz);
        if !(0..WORLD_SIZE).contains(&x) || !(0..WORLD_SIZE).contains(&z) {
            return Ok(());
        }
        let to = Position {
            x: x as f64 + 0.5,
            y: 5.0,
            z: z as f64 + 0.5,
        };
        self.move_player(None, to, events)
            .map(drop)
            .map_err(|e| tool_error(&e))
    }

    /// `env/step`, after the ticks: the sheep newly penned are the reward; all penned ends the episode.
    pub(super) fn env_observe(&self) -> EnvStepResult {
        let world = self.world.lock();
        let penned = world.penned();
        let mut herd = self.herd.lock();
        let reward = penned.saturating_sub(herd.penned) as f64;
        herd.penned = penned;
        let mut result = EnvStepResult::new(observation(&world), reward);
        result.terminated = penned == FLOCK_SIZE;
        result.info = info(penned);
        result
    }
}
