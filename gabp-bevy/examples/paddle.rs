//! A small headless Bevy game served as a GABP mod: a ball that moves one unit each fixed tick (60 a second)
//! and bounces between two walls, and a paddle that the arrow keys move one unit per keystroke. No window, no
//! GPU: agents see it through the ECS tools (`ecs/query` of `Transform`), play it through the input extension
//! (`input/key`), pause and step it (time control), and hear `ball/bounced` events.
//!
//! Like every example mod it takes its endpoint and token from the GABS environment (`GABP_SERVER_PORT`,
//! `GABP_TOKEN`) when a launcher set them, else listens on a free loopback port announced in `bridge.json`.
//! It exits cleanly on SIGINT, SIGTERM or, unless a launcher started it (`GABS_GAME_ID` set), the end of its
//! standard input.
//!
//! Run: `cargo run -p gabp-bevy --example paddle`, then `gabp tools` and `gabp call ecs/query
//! '{"components":["bevy_transform::components::transform::Transform"]}'`.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bevy_app::{App, AppExit, FixedUpdate, Update};
use bevy_ecs::prelude::*;
use bevy_input::keyboard::KeyCode;
use bevy_input::{ButtonInput, InputPlugin};
use bevy_reflect::Reflect;
use bevy_time::{Fixed, Time, TimePlugin};
use bevy_transform::components::Transform;
use gabp_bevy::{GabpAppExt, GabpPlugin, GabpRunnerPlugin};
use serde::Serialize;

/// The walls are at x = -WALL and x = WALL.
const WALL: f32 = 20.0;

#[derive(Component, Reflect)]
#[reflect(Component)]
struct Ball {
    /// Units per tick along x.
    velocity: f32,
}

#[derive(Component, Reflect)]
#[reflect(Component)]
struct Paddle;

/// Published on `ball/bounced` when the ball turns at a wall.
#[derive(Message, Serialize)]
struct Bounced {
    x: f32,
}

/// Set by a signal or the end of stdin.
#[derive(Resource)]
struct Quit(Arc<AtomicBool>);

fn setup(mut commands: Commands<'_, '_>) {
    commands.spawn((Ball { velocity: 1.0 }, Transform::from_xyz(0.0, 5.0, 0.0)));
    commands.spawn((Paddle, Transform::from_xyz(0.0, 0.0, 0.0)));
}

fn roll(
    mut balls: Query<'_, '_, (&mut Ball, &mut Transform)>,
    mut bounced: MessageWriter<'_, Bounced>,
) {
    for (mut ball, mut at) in &mut balls {
        at.translation.x += ball.velocity;
        if at.translation.x.abs() >= WALL {
            ball.velocity = -ball.velocity;
            bounced.write(Bounced {
                x: at.translation.x,
            });
        }
    }
}

fn steer(
    keys: Res<'_, ButtonInput<KeyCode>>,
    mut paddles: Query<'_, '_, &mut Transform, With<Paddle>>,
) {
    let step = f32::from(keys.just_pressed(KeyCode::ArrowRight))
        - f32::from(keys.just_pressed(KeyCode::ArrowLeft));
    for mut at in &mut paddles {
        at.translation.x = (at.translation.x + step).clamp(-WALL, WALL);
    }
}

fn quit_when_told(quit: Res<'_, Quit>, mut exit: MessageWriter<'_, AppExit>) {
    if quit.0.load(Ordering::Acquire) {
        exit.write(AppExit::Success);
    }
}

/// Sets `quit` on SIGINT or SIGTERM, and at the end of stdin unless a launcher started the game.
fn watch_for_quit(quit: Arc<AtomicBool>) {
    let on_signal = quit.clone();
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{signal, SignalKind};
                if let Ok(mut term) = signal(SignalKind::terminate()) {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                } else {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            #[cfg(not(unix))]
            let _ = tokio::signal::ctrl_c().await;
        });
        on_signal.store(true, Ordering::Release);
    });
    if std::env::var_os("GABS_GAME_ID").is_none() {
        std::thread::spawn(move || {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            quit.store(true, Ordering::Release);
        });
    }
}

fn main() -> AppExit {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let quit = Arc::new(AtomicBool::new(false));
    watch_for_quit(quit.clone());
    App::new()
        .add_plugins((TimePlugin, InputPlugin, GabpRunnerPlugin::default()))
        .add_plugins(GabpPlugin::new("paddle", env!("CARGO_PKG_VERSION")))
        .insert_resource(Time::<Fixed>::from_hz(60.0))
        .insert_resource(Quit(quit))
        .register_type::<Transform>()
        .register_type::<Ball>()
        .register_type::<Paddle>()
        .add_gabp_event::<Bounced>("ball/bounced")
        .add_systems(bevy_app::Startup, setup)
        .add_systems(FixedUpdate, roll)
        .add_systems(Update, (steer, quit_when_told))
        .run()
}
