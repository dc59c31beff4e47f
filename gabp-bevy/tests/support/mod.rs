//! Shared setup: a headless app served on a free loopback port with a fixed token, and a bridge to it.
// Each test binary uses a part of it.
#![allow(dead_code)]

pub mod world;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy_app::{App, AppExit, Update};
use bevy_ecs::prelude::*;
use bevy_time::TimePlugin;
use gabp_bevy::{GabpPlugin, GabpRunnerPlugin};
use gabp_session::Bridge;
use gabp_transport::{Endpoint, ExplicitSettings, ModSettings, Token};

pub const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[derive(Resource)]
struct Stop(Arc<AtomicBool>);

fn stop_when_told(stop: Res<'_, Stop>, mut exit: MessageWriter<'_, AppExit>) {
    if stop.0.load(Ordering::Acquire) {
        exit.write(AppExit::Success);
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// A running game: its port, and the flag that stops it.
pub struct Game {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<AppExit>,
}

impl Game {
    /// Runs an app on a thread of its own at a frame every 16 ms: `plugin` configures GabpPlugin, `setup`
    /// adds the game.
    pub fn start(
        plugin: impl FnOnce(GabpPlugin) -> GabpPlugin + Send + 'static,
        setup: impl FnOnce(&mut App) + Send + 'static,
    ) -> Game {
        Game::start_at(Duration::from_millis(16), plugin, setup)
    }

    /// As [`Game::start`], with a frame every `frame`.
    pub fn start_at(
        frame: Duration,
        plugin: impl FnOnce(GabpPlugin) -> GabpPlugin + Send + 'static,
        setup: impl FnOnce(&mut App) + Send + 'static,
    ) -> Game {
        let port = free_port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let _ = tracing_subscriber::fmt().with_test_writer().try_init();
        let thread = std::thread::spawn(move || {
            let explicit = ExplicitSettings {
                endpoint: Some(Endpoint::tcp_v4(port)),
                token: Some(Token::new(TOKEN).unwrap()),
                ..ExplicitSettings::default()
            };
            let home = tempfile::tempdir().unwrap();
            let home_path = home.path().as_os_str().to_owned();
            let env = |name: &str| {
                (name == "HOME" || name == "XDG_CONFIG_HOME").then(|| home_path.clone())
            };
            let settings = ModSettings::resolve_or_default(explicit, env).unwrap();
            let mut app = App::new();
            app.add_plugins((TimePlugin, GabpRunnerPlugin::new(frame)))
                .add_plugins(plugin(
                    GabpPlugin::new("bevy-test", "1.0.0").settings(settings),
                ))
                .insert_resource(Stop(flag))
                .add_systems(Update, stop_when_told);
            setup(&mut app);
            app.run()
        });
        Game { port, stop, thread }
    }

    /// A bridge to the game, once it serves.
    pub async fn connect(&self) -> Bridge {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match Bridge::connect(&Endpoint::tcp_v4(self.port), Token::new(TOKEN).unwrap()).await {
                Ok(bridge) => return bridge,
                Err(e) if Instant::now() > deadline => {
                    panic!("the game did not start serving: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Tells the game to exit in its next frame.
    pub fn ask_to_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Stops the game and waits for it to exit.
    pub async fn stop(self, bridge: Bridge) {
        self.stop.store(true, Ordering::Release);
        bridge.close().await;
        assert_eq!(self.thread.join().unwrap(), AppExit::Success);
    }
}

/// Builds target `name` of `package` (`kind` is `--bin` or `--example`; `cargo test` alone builds neither for
/// this package's tests) in the tests' profile, and returns its executable as cargo names it.
pub fn built(package: &str, kind: &str, name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap().to_owned();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build = Command::new(cargo);
    build.args([
        "build",
        "--quiet",
        "--message-format=json",
        "-p",
        package,
        kind,
        name,
    ]);
    if profile.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let out = build.output().unwrap();
    assert!(
        out.status.success(),
        "cargo build -p {package} {kind} {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo names the executable of {name}"))
}
