//! [`GabpRunnerPlugin`]: a headless app loop that wakes at once for the game's calls.

use std::time::{Duration, Instant};

use bevy_app::{App, Plugin, PluginsState};

use crate::server::GabpServer;

/// Runs a headless app (a server, a test, a game without a window) at a frame rate, like bevy_app's
/// `ScheduleRunnerPlugin::run_loop`, but waits between frames on the mod's call queue instead of sleeping:
/// a call or a `time/step` arriving starts the next frame at once, so an idle or paused game answers in
/// microseconds, not a frame. A windowed app keeps its own runner (bevy_winit) and is woken by its frames.
#[derive(Debug, Clone, Copy)]
pub struct GabpRunnerPlugin {
    frame: Duration,
}

impl Default for GabpRunnerPlugin {
    /// 60 frames a second.
    fn default() -> Self {
        GabpRunnerPlugin::new(Duration::from_secs_f64(1.0 / 60.0))
    }
}

impl GabpRunnerPlugin {
    /// A frame every `frame` at most (a frame that takes longer is followed by the next at once).
    #[must_use]
    pub fn new(frame: Duration) -> Self {
        GabpRunnerPlugin { frame }
    }
}

impl Plugin for GabpRunnerPlugin {
    fn build(&self, app: &mut App) {
        let frame = self.frame;
        app.set_runner(move |mut app: App| {
            if app.plugins_state() != PluginsState::Cleaned {
                while app.plugins_state() == PluginsState::Adding {
                    std::thread::yield_now();
                }
                app.finish();
                app.cleanup();
            }
            let main_thread = app
                .world()
                .get_resource::<GabpServer>()
                .map(|s| s.main_thread().clone());
            loop {
                let started = Instant::now();
                app.update();
                if let Some(exit) = app.should_exit() {
                    return exit;
                }
                let Some(rest) = frame.checked_sub(started.elapsed()) else {
                    continue;
                };
                match &main_thread {
                    Some(main_thread) => {
                        main_thread.wait(rest);
                    }
                    None => std::thread::sleep(rest),
                }
            }
        });
    }
}
