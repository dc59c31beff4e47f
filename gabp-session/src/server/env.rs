//! The `env` extension on the mod side (SPEC/1.0 extensions.md §env): [`EnvSpec`], and the episode the server
//! keeps for `env/reset` and `env/step`, whose game code runs on the game's thread.

use std::any::{type_name, Any};
use std::sync::Arc;
use std::time::Duration;

use gabp_types::methods::{
    EnvResetParams, EnvResetResult, EnvSpacesResult, EnvStepResult, Space, MAX_STEP_TICKS,
};
use gabp_types::{ErrorCode, ErrorObject, ExtraMembers, ResultValue};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::clock::GameClock;
use super::error::CallError;
use super::main_thread::{Job, MainThread, NotRun};
use super::session::internal_error;
use super::time_limit::Work;

/// What a mod serves as an environment: its spaces, the ticks one step runs, and the steps after which it cuts
/// an episode short.
///
/// ```
/// use gabp_session::server::EnvSpec;
/// use gabp_types::methods::{Dtype, Space};
///
/// let spec = EnvSpec::new(Space::bounded(0.0, 15.0, vec![8], Dtype::Float32), Space::discrete(5))
///     .ticks_per_step(2)
///     .max_episode_steps(500);
/// assert_eq!((spec.ticks(), spec.max_steps()), (2, Some(500)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EnvSpec {
    observation: Space,
    action: Space,
    ticks_per_step: u32,
    max_episode_steps: Option<u64>,
}

impl EnvSpec {
    /// The spaces of observations and actions; one tick a step, no step limit.
    #[must_use]
    pub fn new(observation: Space, action: Space) -> Self {
        EnvSpec {
            observation,
            action,
            ticks_per_step: 1,
            max_episode_steps: None,
        }
    }

    /// The game's ticks one `env/step` runs after the action, 0 to [`MAX_STEP_TICKS`] (0: the game moves only
    /// when acted on, and needs no time control).
    #[must_use]
    pub fn ticks_per_step(mut self, ticks: u32) -> Self {
        self.ticks_per_step = ticks;
        self
    }

    /// The steps after which the server answers `truncated: true` and ends the episode.
    #[must_use]
    pub fn max_episode_steps(mut self, steps: u64) -> Self {
        self.max_episode_steps = Some(steps);
        self
    }

    /// The observation space.
    #[must_use]
    pub fn observation(&self) -> &Space {
        &self.observation
    }

    /// The action space.
    #[must_use]
    pub fn action(&self) -> &Space {
        &self.action
    }

    /// The ticks of one step.
    #[must_use]
    pub fn ticks(&self) -> u32 {
        self.ticks_per_step
    }

    /// The step limit of an episode, if any.
    #[must_use]
    pub fn max_steps(&self) -> Option<u64> {
        self.max_episode_steps
    }

    /// Why the server cannot serve this spec: a space that breaks its rules, too many ticks, a step limit of 0.
    pub(crate) fn problem(&self) -> Option<String> {
        if let Err(e) = self.observation.check() {
            return Some(format!("the env observation space: {e}"));
        }
        if let Err(e) = self.action.check() {
            return Some(format!("the env action space: {e}"));
        }
        if self.ticks_per_step > MAX_STEP_TICKS {
            return Some(format!(
                "env ticks_per_step {} is above {MAX_STEP_TICKS}",
                self.ticks_per_step
            ));
        }
        (self.max_episode_steps == Some(0)).then(|| "env max_episode_steps is 0".to_owned())
    }

    /// The member `capabilities.extensions["env"]`.
    pub(crate) fn extension(&self) -> Value {
        let mut ext = json!({ "ticksPerStep": self.ticks_per_step });
        if let (Some(steps), Some(map)) = (self.max_episode_steps, ext.as_object_mut()) {
            map.insert("maxEpisodeSteps".into(), steps.into());
        }
        ext
    }
}

type ResetFn =
    Arc<dyn Fn(&mut dyn Any, EnvResetParams) -> Result<EnvResetResult, CallError> + Send + Sync>;
type ActFn = Arc<dyn Fn(&mut dyn Any, Value) -> Result<(), CallError> + Send + Sync>;
type ObserveFn = Arc<dyn Fn(&mut dyn Any) -> Result<EnvStepResult, CallError> + Send + Sync>;

/// Whether `env/step` may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No `env/reset` yet, or the episode ended.
    NeedsReset,
    /// Steps taken in the running episode.
    Running(u64),
}

/// The served environment: the spec, the game's three functions, and the episode.
pub(crate) struct Env {
    spec: EnvSpec,
    reset: ResetFn,
    act: ActFn,
    observe: ObserveFn,
    phase: Arc<Mutex<Phase>>,
    /// Done when the last env request read has been answered: each waits for the one before (SPEC/1.0
    /// extensions.md §env, one at a time in the order read).
    last: Mutex<Option<oneshot::Receiver<()>>>,
}

/// The game state `S` the game loop pumps with, or the `-32603` that says it pumps with another.
fn game<S: 'static>(state: &mut dyn Any) -> Result<&mut S, CallError> {
    state.downcast_mut::<S>().ok_or_else(|| {
        CallError::new(format!(
            "env needs the game state {}: the game loop must pump with MainThread::pump_with",
            type_name::<S>()
        ))
        .with_code(ErrorCode::INTERNAL_ERROR)
    })
}

/// `-32603` for an observation the game made outside its own space: the game's fault, not the bridge's.
fn check_observation(space: &Space, observation: &Value) -> Result<(), ErrorObject> {
    space.contains(observation).map_err(|e| {
        internal_error(format!(
            "the game's observation is outside its observation space: {e}"
        ))
    })
}

fn value_of<T: Serialize>(result: &T) -> Result<ResultValue, ErrorObject> {
    serde_json::to_value(result)
        .map(ResultValue::from)
        .map_err(|e| internal_error(format!("cannot serialize: {e}")))
}

/// The `-32401` of a step out of turn.
fn reset_needed() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::TOOL_UNAVAILABLE,
        "env/step: no episode is running; call env/reset first",
    )
    .with_data(json!({ "reason": "reset_needed", "retryable": false }))
}

impl Env {
    pub(crate) fn new<S: 'static>(
        spec: EnvSpec,
        reset: impl Fn(&mut S, EnvResetParams) -> Result<EnvResetResult, CallError>
            + Send
            + Sync
            + 'static,
        act: impl Fn(&mut S, Value) -> Result<(), CallError> + Send + Sync + 'static,
        observe: impl Fn(&mut S) -> Result<EnvStepResult, CallError> + Send + Sync + 'static,
    ) -> Self {
        Env {
            spec,
            reset: Arc::new(move |state, params| reset(game::<S>(state)?, params)),
            act: Arc::new(move |state, action| act(game::<S>(state)?, action)),
            observe: Arc::new(move |state| observe(game::<S>(state)?)),
            phase: Arc::new(Mutex::new(Phase::NeedsReset)),
            last: Mutex::new(None),
        }
    }

    pub(crate) fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// `env/spaces`.
    pub(crate) fn spaces(&self) -> EnvSpacesResult {
        EnvSpacesResult::new(self.spec.observation.clone(), self.spec.action.clone())
    }

    /// `-32602` unless `action` is in the action space, naming the offending element.
    pub(crate) fn check_action(&self, action: &Value) -> Result<(), ErrorObject> {
        self.spec.action.contains(action).map_err(|e| {
            let (pointer, reason) = match &e {
                gabp_types::Error::OutsideSpace {
                    pointer, reason, ..
                } => (format!("/params/action{pointer}"), reason.clone()),
                other => ("/params/action".to_owned(), other.to_string()),
            };
            let message = format!("the action is not in the action space: {reason}");
            ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("invalid params: {pointer}: {message}"),
            )
            .with_data(json!({ "errors": [{ "path": pointer, "message": message }] }))
        })
    }

    /// Takes this request's turn: the receiver is done when the request before it has been answered; this
    /// request's turn ends when the returned sender is dropped.
    pub(crate) fn turn(&self) -> (Option<oneshot::Receiver<()>>, oneshot::Sender<()>) {
        let (done, next) = oneshot::channel();
        (self.last.lock().replace(next), done)
    }

    /// `env/reset`: pauses time (settled: no tick is running once it answers), then resets the game on its
    /// thread and starts the episode.
    pub(crate) async fn reset(
        &self,
        params: EnvResetParams,
        main_thread: &MainThread,
        clock: Option<&GameClock>,
        limit: Duration,
    ) -> Result<ResultValue, ErrorObject> {
        let deadline = Instant::now() + limit;
        if let Some(clock) = clock {
            if let Err(settled) = clock.pause_settled() {
                let _ = tokio::time::timeout_at(deadline, settled).await;
            }
        }
        let (reset, phase, space) = (
            self.reset.clone(),
            self.phase.clone(),
            self.spec.observation.clone(),
        );
        let job: Job = Box::new(move |state| {
            // A failed reset leaves no episode running.
            *phase.lock() = Phase::NeedsReset;
            let mut result = reset(state, params).map_err(CallError::into_error_object)?;
            result.clear_extra();
            check_observation(&space, &result.observation)?;
            *phase.lock() = Phase::Running(0);
            value_of(&result)
        });
        on_game_thread(main_thread, deadline, limit, "env/reset", job).await
    }

    /// `env/step`, its action already checked: gives the game the action, runs the step's ticks, then asks the
    /// game what followed; counts the step and ends the episode when it terminated or was truncated.
    pub(crate) async fn step(
        &self,
        action: Value,
        main_thread: &MainThread,
        clock: Option<&GameClock>,
        limit: Duration,
    ) -> Result<ResultValue, ErrorObject> {
        if *self.phase.lock() == Phase::NeedsReset {
            return Err(reset_needed());
        }
        let deadline = Instant::now() + limit;
        let ticks = self.spec.ticks_per_step;
        // The step's ticks are owed from the game thread, once the action was taken: a loop that ticks before
        // it pumps cannot run one of them first.
        let (ticks_tx, ticks_rx) = oneshot::channel();
        let (act, clock_on_thread) = (self.act.clone(), clock.cloned());
        let job: Job = Box::new(move |state| {
            act(state, action).map_err(CallError::into_error_object)?;
            if let (Some(clock), Ok(ticks)) =
                (clock_on_thread, gabp_types::methods::StepTicks::new(ticks))
            {
                let _ = ticks_tx.send(clock.step(ticks));
            }
            Ok(Value::Null.into())
        });
        on_game_thread(main_thread, deadline, limit, "env/step", job).await?;
        if let Ok(ran) = ticks_rx.await {
            if tokio::time::timeout_at(deadline, ran).await.is_err() {
                return Err(Work::Method("env/step")
                    .timed_out(&format!("did not run its {ticks} ticks within its"), limit));
            }
        }
        let (observe, phase, space, max_steps) = (
            self.observe.clone(),
            self.phase.clone(),
            self.spec.observation.clone(),
            self.spec.max_episode_steps,
        );
        let job: Job = Box::new(move |state| {
            let mut result = observe(state).map_err(CallError::into_error_object)?;
            result.clear_extra();
            check_observation(&space, &result.observation)?;
            if !result.reward.is_finite() {
                return Err(internal_error("the game's reward is not a finite number"));
            }
            let mut phase = phase.lock();
            let steps = match *phase {
                Phase::Running(steps) => steps + 1,
                // A reset failed meanwhile: the step still answers.
                Phase::NeedsReset => 1,
            };
            if max_steps.is_some_and(|max| steps >= max) {
                result.truncated = true;
            }
            *phase = if result.terminated || result.truncated {
                Phase::NeedsReset
            } else {
                Phase::Running(steps)
            };
            value_of(&result)
        });
        on_game_thread(main_thread, deadline, limit, "env/step", job).await
    }
}

/// Runs `job` on the game's thread and waits for it until `deadline`.
async fn on_game_thread(
    main_thread: &MainThread,
    deadline: Instant,
    limit: Duration,
    method: &str,
    job: Job,
) -> Result<ResultValue, ErrorObject> {
    let not_run = |n: NotRun| n.answer(Work::Method(method), limit);
    let queued = main_thread.submit(deadline, job).map_err(not_run)?;
    queued.answer().await.unwrap_or_else(|n| Err(not_run(n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::methods::{Dtype, Space};

    #[test]
    fn spec_problems_and_extension() {
        let ok = EnvSpec::new(Space::discrete(2), Space::discrete(3));
        assert_eq!(ok.problem(), None);
        assert_eq!(ok.extension(), json!({"ticksPerStep": 1}));
        assert_eq!(
            ok.clone()
                .ticks_per_step(0)
                .max_episode_steps(9)
                .extension(),
            json!({"ticksPerStep": 0, "maxEpisodeSteps": 9})
        );
        let bad_space = EnvSpec::new(Space::discrete(0), Space::discrete(3));
        assert!(bad_space.problem().unwrap().contains("observation"));
        let bad_action = EnvSpec::new(
            Space::discrete(1),
            Space::bounded(1.0, 0.0, vec![1], Dtype::Float32),
        );
        assert!(bad_action.problem().unwrap().contains("action"));
        assert!(ok
            .clone()
            .ticks_per_step(MAX_STEP_TICKS + 1)
            .problem()
            .is_some());
        assert!(ok.max_episode_steps(0).problem().is_some());
    }

    #[test]
    fn actions_outside_the_space_name_the_element() {
        let env = Env::new::<()>(
            EnvSpec::new(Space::discrete(1), Space::multi_discrete(vec![2, 2])),
            |_, _| Ok(EnvResetResult::new(json!(0), serde_json::Map::new())),
            |_, _| Ok(()),
            |_| Ok(EnvStepResult::new(json!(0), 0.0)),
        );
        assert!(env.check_action(&json!([1, 0])).is_ok());
        let e = env.check_action(&json!([1, 2])).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(e.data.unwrap()["errors"][0]["path"], "/params/action/1");
    }
}
