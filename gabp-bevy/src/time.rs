//! Time control (SPEC/1.0 extensions.md §time-control) over Bevy's clocks: `time/pause` and `time/resume`
//! pause `Time<Virtual>`; each tick is one run of `FixedMain` (one fixed timestep), counted by the game clock;
//! `time/step {ticks}` runs exactly that many while paused, in the frame after it arrives.

use bevy_app::{App, First, FixedFirst, FixedLast, RunFixedMainLoop, RunFixedMainLoopSystems};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimeSystems, Virtual};
use gabp_session::server::GameClock;

use crate::server::GabpServer;

pub(crate) fn add_systems(app: &mut App) {
    app.add_systems(First, follow_pause.before(TimeSystems))
        .add_systems(
            RunFixedMainLoop,
            schedule_steps.in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop),
        )
        .add_systems(FixedFirst, begin_tick)
        .add_systems(FixedLast, end_tick);
}

fn clock(server: Option<Res<'_, GabpServer>>) -> Option<GameClock> {
    server.and_then(|s| s.clock())
}

/// Pauses or unpauses `Time<Virtual>` as the clock says, before Bevy updates it this frame, so that a paused
/// game's virtual time (and so its fixed loop) does not move.
fn follow_pause(server: Option<Res<'_, GabpServer>>, mut virtual_time: ResMut<'_, Time<Virtual>>) {
    let Some(clock) = clock(server) else { return };
    let paused = clock.is_paused();
    if paused != virtual_time.is_paused() {
        if paused {
            virtual_time.pause();
        } else {
            virtual_time.unpause();
        }
    }
}

/// While paused, the fixed loop of this frame runs exactly the ticks a `time/step` owes, and no leftover.
fn schedule_steps(server: Option<Res<'_, GabpServer>>, mut fixed: ResMut<'_, Time<Fixed>>) {
    let Some(clock) = clock(server) else { return };
    if !clock.is_paused() {
        return;
    }
    let leftover = fixed.overstep();
    fixed.discard_overstep(leftover);
    let owed = u32::try_from(clock.steps_owed()).unwrap_or(u32::MAX);
    let step = fixed.timestep();
    fixed.accumulate_overstep(step.saturating_mul(owed));
}

fn begin_tick(server: Option<Res<'_, GabpServer>>) {
    if let Some(clock) = clock(server) {
        clock.begin_tick();
    }
}

/// Counts the tick; when a pause arrived during this frame's fixed loop, no further tick runs in it.
fn end_tick(server: Option<Res<'_, GabpServer>>, mut fixed: ResMut<'_, Time<Fixed>>) {
    let Some(clock) = clock(server) else { return };
    clock.ticked();
    if clock.is_paused() && clock.steps_owed() == 0 {
        let leftover = fixed.overstep();
        fixed.discard_overstep(leftover);
    }
}
