//! The mock's game: the `input` and `env` extensions of [`MockModBuilder::demo`](super::MockModBuilder::demo),
//! and the game thread that runs their work (SPEC/1.0 extensions.md §input, §env).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use gabp_session::server::{EnvSpec, MainThread, ModServerBuilder};
use gabp_types::methods::{DiscreteSpace, EnvResetResult, EnvStepResult, Space};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

/// Where the walker of the mock's environment starts and ends: positions 0..=WALK_END.
const WALK_END: i64 = 10;

/// Adds the mock's game to `builder`: `input/*` taken and forgotten; an environment where a walker on a line of
/// 0..=10 moves by its action (`Discrete(3)` from -1), rewarded 1 at the end, which terminates the episode.
/// The seed picks the start; steps run no ticks; episodes are truncated after 50 steps.
pub(super) fn add(builder: ModServerBuilder) -> ModServerBuilder {
    let at = Arc::new(Mutex::new(0_i64));
    let observation = Space::bounded(
        0.0,
        WALK_END as f64,
        vec![1],
        gabp_types::methods::Dtype::Int64,
    );
    let action = Space::Discrete(DiscreteSpace { n: 3, start: -1 });
    let spec = EnvSpec::new(observation, action)
        .ticks_per_step(0)
        .max_episode_steps(50);
    let (reset_at, act_at, observe_at) = (at.clone(), at.clone(), at);
    builder.input(|_: &mut (), _| Ok(())).env(
        spec,
        move |_: &mut (), params| {
            let start = i64::try_from(params.seed.unwrap_or(0) % 5).unwrap_or(0);
            *reset_at.lock() = start;
            Ok(EnvResetResult::new(json!([start]), Map::new()))
        },
        move |_: &mut (), action: Value| {
            let mut at = act_at.lock();
            *at = (*at + action.as_i64().unwrap_or(0)).clamp(0, WALK_END);
            Ok(())
        },
        move |_: &mut ()| {
            let at = *observe_at.lock();
            let mut outcome =
                EnvStepResult::new(json!([at]), if at == WALK_END { 1.0 } else { 0.0 });
            outcome.terminated = at == WALK_END;
            Ok(outcome)
        },
    )
}

/// The mock's game thread: runs what the server queues for the game (inputs, resets, steps) until the last
/// clone of the mock is dropped.
pub(super) struct GameThread {
    stop: Arc<AtomicBool>,
    main_thread: MainThread,
    thread: Option<JoinHandle<()>>,
}

impl GameThread {
    pub(super) fn start(main_thread: MainThread) -> Option<GameThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let (stopping, queue) = (stop.clone(), main_thread.clone());
        let thread = std::thread::Builder::new()
            .name("gabp-testkit-mock-game".into())
            .spawn(move || {
                while !stopping.load(Ordering::Acquire) {
                    queue.wait(Duration::from_millis(100));
                    queue.pump(Duration::from_millis(5));
                }
            })
            .ok()?;
        Some(GameThread {
            stop,
            main_thread,
            thread: Some(thread),
        })
    }
}

impl Drop for GameThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.main_thread.wake();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the mock's game thread panicked");
            }
        }
    }
}
