//! [`GameClock`]: pausing, resuming and stepping the game's simulation (SPEC/1.0 extensions.md
//! §time-control).

use std::fmt;
use std::sync::Arc;

use gabp_types::methods::{StepTicks, TimeState, TIME_CHANGED_CHANNEL};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::events::EventPublisher;

/// Wakes the game loop (a [`MainThread::wait`](super::MainThread::wait) in progress).
pub(crate) type Waker = Box<dyn Fn() + Send + Sync>;

/// The game's clock, for the `time-control` extension: whether the simulation is paused, how many ticks it
/// has run, and how many it still owes to `time/step` requests.
///
/// A mod enables it with [`ModServerBuilder::time_control`](super::ModServerBuilder::time_control); the server
/// then answers `time/status`, `time/pause`, `time/resume` and `time/step` from it and announces every pause and
/// resume on `time/changed`. The game loop asks the clock before each tick and tells it after:
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::ModServer;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .time_control(true)
///     .build()?;
/// let main_thread = server.main_thread();
/// let clock = main_thread.clock().expect("time control is on");
/// let mut world_ticks = 0;
/// for _frame in 0..3 {
///     main_thread.pump(Duration::from_millis(2));
///     clock.run_tick(|| world_ticks += 1); // runs unless paused (or while a step is owed)
/// }
/// clock.pause(); // the player paused: bridges get `time/changed`
/// clock.run_tick(|| world_ticks += 1);
/// assert_eq!((world_ticks, clock.status().tick), (3, 3));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct GameClock {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<ClockState>,
    events: EventPublisher,
    wake: Waker,
}

#[derive(Default)]
struct ClockState {
    paused: bool,
    tick: u64,
    /// Ticks run while paused until the tick counter reaches this (the steps owed).
    step_until: u64,
    /// Steps waiting for their tick, each answered when the counter reaches it.
    steps: Vec<(u64, oneshot::Sender<TimeState>)>,
    /// Whether [`GameClock::run_tick`] is running a tick now.
    ticking: bool,
}

impl ClockState {
    fn snapshot(&self) -> TimeState {
        TimeState::new(self.paused, self.tick)
    }
}

impl fmt::Debug for GameClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("GameClock")
            .field("paused", &state.paused)
            .field("tick", &state.tick)
            .field("step_until", &state.step_until)
            .finish_non_exhaustive()
    }
}

impl GameClock {
    pub(crate) fn new(events: EventPublisher, wake: Waker) -> Self {
        GameClock {
            inner: Arc::new(Inner {
                state: Mutex::new(ClockState::default()),
                events,
                wake,
            }),
        }
    }

    /// Whether the simulation is paused and the tick counter.
    #[must_use]
    pub fn status(&self) -> TimeState {
        self.inner.state.lock().snapshot()
    }

    /// Whether the simulation is paused (steps may still run ticks: see [`GameClock::should_tick`]).
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.inner.state.lock().paused
    }

    /// Whether the game may run a tick now: time runs, or a `time/step` still owes ticks.
    #[must_use]
    pub fn should_tick(&self) -> bool {
        let state = self.inner.state.lock();
        !state.paused || state.tick < state.step_until
    }

    /// Whether time is paused and a `time/step` owes ticks: a game loop runs them at once rather than at its
    /// frame rate, so that a step of many ticks answers quickly.
    #[must_use]
    pub fn is_stepping(&self) -> bool {
        let state = self.inner.state.lock();
        state.paused && state.tick < state.step_until
    }

    /// Counts one tick the game ran, answers the steps it completes, and returns the tick counter.
    pub fn ticked(&self) -> u64 {
        let mut state = self.inner.state.lock();
        state.tick += 1;
        state.ticking = false;
        let tick = state.tick;
        if !state.steps.iter().any(|(target, _)| *target <= tick) {
            return tick;
        }
        let snapshot = state.snapshot();
        let (done, owed): (Vec<_>, Vec<_>) = std::mem::take(&mut state.steps)
            .into_iter()
            .partition(|(target, _)| *target <= tick);
        state.steps = owed;
        drop(state);
        for (_, reply) in done {
            // The bridge may have given up meanwhile.
            let _ = reply.send(snapshot.clone());
        }
        tick
    }

    /// Ticks a `time/step` still owes while paused (0 while time runs): for an engine that schedules its
    /// fixed-timestep updates itself (Bevy's `FixedMain`) and runs that many.
    #[must_use]
    pub fn steps_owed(&self) -> u64 {
        let state = self.inner.state.lock();
        if state.paused {
            state.step_until.saturating_sub(state.tick)
        } else {
            0
        }
    }

    /// Marks the start of a tick an engine runs itself, ended by [`GameClock::ticked`]: a `time/pause`
    /// arriving meanwhile is answered once the tick has ended. Whether the clock would run it
    /// ([`GameClock::should_tick`]); the mark is set either way, since the engine runs the tick regardless.
    pub fn begin_tick(&self) -> bool {
        let mut state = self.inner.state.lock();
        state.ticking = true;
        !state.paused || state.tick < state.step_until
    }

    /// Runs `tick` (the game's own simulation step) when [`GameClock::should_tick`], then counts it; whether it
    /// ran.
    ///
    /// A `time/pause` that arrives during the tick is answered once the tick has ended, so that a bridge that
    /// saw its answer sees a world that no longer moves.
    pub fn run_tick(&self, tick: impl FnOnce()) -> bool {
        {
            let mut state = self.inner.state.lock();
            if state.paused && state.tick >= state.step_until {
                return false;
            }
            state.ticking = true;
        }
        tick();
        self.ticked();
        true
    }

    /// Pauses the simulation (for the player's pause button as for `time/pause`); announces it on
    /// `time/changed` unless it was paused already. Steps already owed still run.
    pub fn pause(&self) -> TimeState {
        self.set_paused(true)
    }

    /// Lets the simulation run again; announces it on `time/changed` unless it was running already.
    pub fn resume(&self) -> TimeState {
        self.set_paused(false)
    }

    fn set_paused(&self, paused: bool) -> TimeState {
        let (state, changed) = {
            let mut state = self.inner.state.lock();
            let changed = state.paused != paused;
            state.paused = paused;
            (state.snapshot(), changed)
        };
        if changed {
            if let Err(e) = self.inner.events.publish(TIME_CHANGED_CHANNEL, &state) {
                tracing::warn!("time/changed was not published: {e}");
            }
            (self.inner.wake)();
        }
        state
    }

    /// `time/pause`: pauses, and returns the state at once, or, when a tick is running, a receiver that gets
    /// it once that tick has ended.
    pub(crate) fn pause_settled(&self) -> Result<TimeState, oneshot::Receiver<TimeState>> {
        self.pause();
        let mut clock = self.inner.state.lock();
        if !clock.ticking {
            return Ok(clock.snapshot());
        }
        let (reply, rx) = oneshot::channel();
        let target = clock.tick + 1;
        clock.steps.push((target, reply));
        Err(rx)
    }

    /// Owes `ticks` more ticks: the receiver gets the state once they have run. While paused, they run after
    /// the steps already owed; while running, they are the next `ticks` ticks.
    pub(crate) fn step(&self, ticks: StepTicks) -> oneshot::Receiver<TimeState> {
        let (reply, rx) = oneshot::channel();
        {
            let mut state = self.inner.state.lock();
            // Steps whose requests were answered otherwise (time limit, lost peer) are forgotten.
            state.steps.retain(|(_, reply)| !reply.is_closed());
            let from = if state.paused {
                state.tick.max(state.step_until)
            } else {
                state.tick
            };
            let target = from.saturating_add(u64::from(ticks.get()));
            state.step_until = state.step_until.max(target);
            state.steps.push((target, reply));
        }
        (self.inner.wake)();
        rx
    }
}

#[cfg(test)]
mod tests;
