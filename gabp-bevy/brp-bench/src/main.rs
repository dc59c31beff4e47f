//! gabp-bevy against the Bevy Remote Protocol, in one run on one app.
//!
//! 1. One headless app serves both BRP (`RemotePlugin` + `RemoteHttpPlugin`, JSON-RPC over HTTP) and GABP
//!    (`GabpPlugin`), with 100 entities that have a `Transform`, running frames back to back (as a game that
//!    renders does: neither protocol waits for a frame timer). The same query, every entity's `Transform`, is
//!    asked alternately through BRP's `world.query` over a keep-alive HTTP/1.1 connection and through GABP's
//!    `ecs/query` over gabp-session's `Bridge`; both answers are checked to hold the same 100 values.
//! 2. An idle app (`GabpRunnerPlugin` at 60 frames a second, nothing else happening) answers a main-thread
//!    tool (`add_gabp_tool`): the runner waits on the call queue, so a call does not wait for the next frame.
//!
//! Floors in the same run: a loopback TCP echo of the same request (what no protocol can beat), a
//! main-thread tool that does nothing on the busy app (GABP's per-call cost without the query), and the
//! query's own work with no protocol at all: the 100 `Transform`s read by reflection and written as JSON
//! text by bevy_reflect's `TypedReflectSerializer`, in this process, which both protocols must do; and the
//! client's own work, BRP's answer read into a `serde_json::Value` (as both clients here read theirs). Their
//! sum with the call doing nothing is the floor of the query through any protocol.
//!
//! Run: `cargo run --release` in this directory (its own workspace and lock file). `--calls N` sets the
//! calls per protocol (default 2000). Exits 1 when an answer is wrong, not when a target is missed: timings on a
//! shared machine are reported, not asserted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bevy_app::{App, AppExit, TaskPoolPlugin, Update};
use bevy_ecs::prelude::*;
use bevy_ecs::reflect::{AppTypeRegistry, ReflectComponent};
use bevy_reflect::serde::TypedReflectSerializer;
use bevy_remote::http::RemoteHttpPlugin;
use bevy_remote::RemotePlugin;
use bevy_time::TimePlugin;
use bevy_transform::components::Transform;
use gabp_bevy::schemars::JsonSchema;
use gabp_bevy::{GabpAppExt, GabpPlugin, GabpRunnerPlugin};
use gabp_session::Bridge;
use gabp_transport::{Endpoint, ExplicitSettings, ModSettings, Token};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const TRANSFORM: &str = "bevy_transform::components::transform::Transform";
const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const ENTITIES: usize = 100;
/// Calls of each kind before any is timed.
const WARMUP: usize = 200;
/// The timed calls are taken in rounds of this many of each kind, alternating, so that both see the same load.
const ROUND: usize = 50;

type Failure = Box<dyn std::error::Error>;

#[derive(Resource)]
struct Stop(Arc<AtomicBool>);

fn stop_when_told(stop: Res<'_, Stop>, mut exit: MessageWriter<'_, AppExit>) {
    if stop.0.load(Ordering::Acquire) {
        exit.write(AppExit::Success);
    }
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "gabp_bevy::schemars")]
struct Nothing {}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "gabp_bevy::schemars")]
struct Counted {
    transforms: usize,
}

/// The main-thread tool timed on the idle app: it reads the world (counts the Transforms).
fn count(In(_): In<Nothing>, transforms: Query<'_, '_, &Transform>) -> Counted {
    Counted {
        transforms: transforms.iter().count(),
    }
}

/// The busy app's floor tool: nothing.
fn nothing(In(_): In<Nothing>) -> Counted {
    Counted { transforms: 0 }
}

fn free_port() -> Result<u16, Failure> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// GABP on `port` with the fixed token, `bridge.json` in `dir`.
fn settings(port: u16, dir: &std::path::Path) -> Result<ModSettings, Failure> {
    let explicit = ExplicitSettings {
        endpoint: Some(Endpoint::tcp_v4(port)),
        token: Some(Token::new(TOKEN)?),
        bridge_json: Some(dir.join("bridge.json")),
        ..ExplicitSettings::default()
    };
    let home = dir.as_os_str().to_owned();
    let env = move |name: &str| (name == "HOME" || name == "XDG_CONFIG_HOME").then(|| home.clone());
    Ok(ModSettings::resolve_or_default(explicit, env)?)
}

/// A running app: the flag that stops it, and its thread.
struct Running {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<AppExit>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs `setup`'s app on a thread of its own with GABP on `gabp_port`; frames every `frame` (zero: back to
/// back).
fn run_app(
    gabp_port: u16,
    dir: PathBuf,
    frame: Duration,
    setup: impl FnOnce(&mut App) + Send + 'static,
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let settings = match settings(gabp_port, &dir) {
            Ok(settings) => settings,
            Err(e) => {
                eprintln!("settings: {e}");
                return AppExit::error();
            }
        };
        let mut app = App::new();
        app.add_plugins((
            TaskPoolPlugin::default(),
            TimePlugin,
            GabpRunnerPlugin::new(frame),
        ))
        .add_plugins(GabpPlugin::new("brp-bench", "0.0.0").settings(settings))
        .register_type::<Transform>()
        .insert_resource(Stop(flag))
        .add_systems(Update, stop_when_told);
        for i in 0..ENTITIES {
            let x = i as f32;
            app.world_mut().spawn(Transform::from_xyz(x, x * 0.5, -x));
        }
        setup(&mut app);
        app.run()
    });
    Running {
        stop,
        thread: Some(thread),
    }
}

/// A world with the bench's 100 `Transform`s and no app: what the reflection floor reads.
fn floor_world() -> World {
    let mut world = World::new();
    let registry = AppTypeRegistry::default();
    registry.write().register::<Transform>();
    world.insert_resource(registry);
    for i in 0..ENTITIES {
        let x = i as f32;
        world.spawn(Transform::from_xyz(x, x * 0.5, -x));
    }
    world
}

/// The query's own work, no protocol: every entity's `Transform` read by reflection and written as JSON text by
/// bevy_reflect's serializer. Returns the bytes written.
fn reflect_floor(world: &mut World) -> Result<usize, Failure> {
    let registry = world.resource::<AppTypeRegistry>().clone();
    let registry = registry.read();
    let reflect = registry
        .get_with_type_path(TRANSFORM)
        .and_then(|r| r.data::<ReflectComponent>())
        .ok_or("Transform is not registered")?;
    let mut query = world.query_filtered::<Entity, With<Transform>>();
    let mut bytes = 0;
    for entity in query.iter(world) {
        let value = reflect
            .reflect(world.entity(entity))
            .ok_or("an entity lost its Transform")?;
        let text = serde_json::value::to_raw_value(&TypedReflectSerializer::new(
            value.as_partial_reflect(),
            &registry,
        ))?;
        bytes += text.get().len();
    }
    Ok(bytes)
}

/// A keep-alive HTTP/1.1 connection posting JSON-RPC to BRP.
struct Http {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    host: String,
}

impl Http {
    fn connect(port: u16) -> Result<Http, Failure> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let stream = loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(stream) => break stream,
                Err(e) if Instant::now() > deadline => {
                    return Err(format!("BRP on {port}: {e}").into())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Http {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            host: format!("127.0.0.1:{port}"),
        })
    }

    /// Posts `body` and returns the response body (sized by Content-Length, or chunked).
    fn post(&mut self, body: &[u8]) -> Result<Vec<u8>, Failure> {
        let mut request = format!(
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.writer.write_all(&request)?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        if !line.starts_with("HTTP/1.1 200") {
            return Err(format!("BRP answered {line:?}").into());
        }
        let mut length = None;
        let mut chunked = false;
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse::<usize>()?);
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value.trim().eq_ignore_ascii_case("chunked");
                }
            }
        }
        let mut answer = Vec::new();
        match (length, chunked) {
            (Some(length), false) => {
                answer.resize(length, 0);
                self.reader.read_exact(&mut answer)?;
            }
            (None, true) => loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim_end(), 16)?;
                let at = answer.len();
                answer.resize(at + size, 0);
                self.reader.read_exact(&mut answer[at..])?;
                line.clear();
                self.reader.read_line(&mut line)?;
                if size == 0 {
                    break;
                }
            },
            _ => return Err("BRP's answer has neither a Content-Length nor chunks".into()),
        }
        Ok(answer)
    }
}

/// The 100 translations of an answer's entities, sorted by x.
fn translations<'a>(entities: impl Iterator<Item = &'a Value>) -> Result<Vec<Value>, Failure> {
    let mut found: Vec<Value> = entities
        .map(|e| e["components"][TRANSFORM]["translation"].clone())
        .collect();
    if found.len() != ENTITIES || found.iter().any(Value::is_null) {
        return Err(format!("expected {ENTITIES} translations, got {found:?}").into());
    }
    // bevy_math writes a Vec3 as [x, y, z] (as {x, y, z} without its serde support).
    let x = |v: &Value| {
        v[0].as_f64()
            .or_else(|| v["x"].as_f64())
            .unwrap_or(f64::NAN)
    };
    found.sort_by(|a, b| x(a).total_cmp(&x(b)));
    Ok(found)
}

fn brp_query(http: &mut Http, body: &[u8]) -> Result<Vec<Value>, Failure> {
    brp_read(&http.post(body)?)
}

/// What a client does with BRP's answer: reads it into a value and takes the translations out.
fn brp_read(answer: &[u8]) -> Result<Vec<Value>, Failure> {
    let answer: Value = serde_json::from_slice(answer)?;
    let entities = answer["result"]
        .as_array()
        .ok_or_else(|| format!("BRP world.query: {answer}"))?;
    translations(entities.iter())
}

async fn gabp_query(bridge: &Bridge) -> Result<Vec<Value>, Failure> {
    let answer = bridge
        .call_tool("ecs/query", json!({ "components": [TRANSFORM] }))
        .await?;
    let entities = answer["entities"]
        .as_array()
        .ok_or_else(|| format!("GABP ecs/query: {answer}"))?;
    translations(entities.iter())
}

async fn connect(port: u16) -> Result<Bridge, Failure> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Bridge::connect(&Endpoint::tcp_v4(port), Token::new(TOKEN)?).await {
            Ok(bridge) => return Ok(bridge),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("GABP on {port}: {e}").into())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// p50 and p90 in microseconds.
fn percentiles(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples[i].as_secs_f64() * 1e6
    };
    (at(0.5), at(0.9))
}

/// A thread that echoes each line it reads: the loopback floor.
fn echo_server() -> Result<u16, Failure> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            let _ = stream.set_nodelay(true);
            let Ok(mut writer) = stream.try_clone() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            let mut line = Vec::new();
            while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                if writer.write_all(&line).is_err() {
                    return;
                }
                line.clear();
            }
        }
    });
    Ok(port)
}

struct Row {
    what: &'static str,
    p50: f64,
    p90: f64,
}

fn print_table(rows: &[Row], anchor: f64) {
    println!(
        "{:<70} {:>9} {:>9} {:>12}",
        "call", "p50 us", "p90 us", "p50 / BRP"
    );
    for row in rows {
        println!(
            "{:<70} {:>9.1} {:>9.1} {:>11.2}x",
            row.what,
            row.p50,
            row.p90,
            row.p50 / anchor
        );
    }
}

async fn bench(calls: usize) -> Result<(), Failure> {
    let dir = std::env::temp_dir().join(format!("gabp-brp-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let brp_port = free_port()?;
    let gabp_port = free_port()?;
    let busy = run_app(gabp_port, dir.join("busy"), Duration::ZERO, move |app| {
        app.add_plugins((
            RemotePlugin::default(),
            RemoteHttpPlugin::default().with_port(brp_port),
        ))
        .add_gabp_tool("bench/nothing", nothing);
    });
    let bridge = connect(gabp_port).await?;
    let mut http = Http::connect(brp_port)?;
    let body = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "world.query",
        "params": { "data": { "components": [TRANSFORM] } },
    }))?;

    let from_brp = brp_query(&mut http, &body)?;
    let from_gabp = gabp_query(&bridge).await?;
    if from_brp != from_gabp {
        return Err(format!("BRP and GABP disagree:\n{from_brp:?}\n{from_gabp:?}").into());
    }
    let brp_answer = http.post(&body)?;
    let brp_bytes = brp_answer.len();
    let gabp_bytes = serde_json::to_vec(
        &bridge
            .call_tool("ecs/query", json!({ "components": [TRANSFORM] }))
            .await?,
    )?
    .len();
    let floor_port = echo_server()?;
    let mut echo = TcpStream::connect(("127.0.0.1", floor_port))?;
    echo.set_nodelay(true)?;
    let mut echo_reader = BufReader::new(echo.try_clone()?);
    let mut echo_line = body.clone();
    echo_line.push(b'\n');
    let mut echoed = Vec::new();

    let mut reflect_world = floor_world();
    let (mut brp, mut gabp, mut noop, mut floor) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut reflected, mut read) = (Vec::new(), Vec::new());
    let mut done = 0;
    let mut warm = true;
    while done < calls {
        let n = if warm {
            WARMUP
        } else {
            ROUND.min(calls - done)
        };
        for _ in 0..n {
            let t = Instant::now();
            brp_query(&mut http, &body)?;
            let took = t.elapsed();
            if !warm {
                brp.push(took);
            }
        }
        for _ in 0..n {
            let t = Instant::now();
            gabp_query(&bridge).await?;
            let took = t.elapsed();
            if !warm {
                gabp.push(took);
            }
        }
        for _ in 0..n {
            let t = Instant::now();
            bridge.call_tool("bench/nothing", json!({})).await?;
            let took = t.elapsed();
            if !warm {
                noop.push(took);
            }
        }
        for _ in 0..n {
            let t = Instant::now();
            echo.write_all(&echo_line)?;
            echoed.clear();
            echo_reader.read_until(b'\n', &mut echoed)?;
            let took = t.elapsed();
            if !warm {
                floor.push(took);
            }
        }
        for _ in 0..n {
            let t = Instant::now();
            std::hint::black_box(reflect_floor(&mut reflect_world)?);
            let took = t.elapsed();
            if !warm {
                reflected.push(took);
            }
        }
        for _ in 0..n {
            let t = Instant::now();
            std::hint::black_box(brp_read(&brp_answer)?);
            let took = t.elapsed();
            if !warm {
                read.push(took);
            }
        }
        if !warm {
            done += n;
        }
        warm = false;
    }
    bridge.close().await;
    drop(busy);

    // The idle app: frames at 60 a second, woken by calls.
    let idle_port = free_port()?;
    let idle = run_app(
        idle_port,
        dir.join("idle"),
        Duration::from_secs_f64(1.0 / 60.0),
        |app| {
            app.add_gabp_tool("bench/count", count);
        },
    );
    let bridge = connect(idle_port).await?;
    let mut idle_calls = Vec::new();
    for i in 0..(WARMUP + calls) {
        let t = Instant::now();
        let counted = bridge.call_tool("bench/count", json!({})).await?;
        let took = t.elapsed();
        if counted["transforms"] != ENTITIES {
            return Err(format!("bench/count: {counted}").into());
        }
        if i >= WARMUP {
            idle_calls.push(took);
        }
    }
    bridge.close().await;
    drop(idle);
    let _ = std::fs::remove_dir_all(&dir);

    let (brp50, brp90) = percentiles(&mut brp);
    let (gabp50, gabp90) = percentiles(&mut gabp);
    let (noop50, noop90) = percentiles(&mut noop);
    let (floor50, floor90) = percentiles(&mut floor);
    let (reflect50, reflect90) = percentiles(&mut reflected);
    let (read50, read90) = percentiles(&mut read);
    let (idle50, idle90) = percentiles(&mut idle_calls);
    println!(
        "{calls} timed calls of each kind, {ENTITIES} entities, one run; answers of {brp_bytes} bytes (BRP) and \
         {gabp_bytes} bytes (GABP, as the bridge's JSON)"
    );
    print_table(
        &[
            Row {
                what: "BRP world.query, HTTP/1.1 keep-alive (anchor)",
                p50: brp50,
                p90: brp90,
            },
            Row {
                what: "GABP ecs/query, gabp-session Bridge",
                p50: gabp50,
                p90: gabp90,
            },
            Row {
                what: "GABP main-thread tool doing nothing, same app",
                p50: noop50,
                p90: noop90,
            },
            Row {
                what: "loopback TCP echo of the BRP request (floor)",
                p50: floor50,
                p90: floor90,
            },
            Row {
                what: "bevy_reflect writing the 100 Transforms as JSON, no protocol (floor)",
                p50: reflect50,
                p90: reflect90,
            },
            Row {
                what: "the client reading the answer into a Value, no protocol (floor)",
                p50: read50,
                p90: read90,
            },
            Row {
                what: "GABP main-thread tool, idle app (GabpRunnerPlugin 60 fps)",
                p50: idle50,
                p90: idle90,
            },
        ],
        brp50,
    );
    let ratio = gabp50 / brp50;
    println!(
        "the query's own work (bevy_reflect, no protocol) is {:.2} of BRP's p50; the protocol's part of \
         ecs/query (its p50 less that floor) {:.0} us, of world.query {:.0} us",
        reflect50 / brp50,
        gabp50 - reflect50,
        brp50 - reflect50,
    );
    // What no protocol skips: the query's own work, the client's read of the answer, and a call that reaches
    // the app's thread and comes back.
    let floor = reflect50 + read50 + noop50;
    println!(
        "floor of the query through any protocol (reflection + the client's read + a call doing nothing): \
         {floor:.0} us, {:.2} of BRP's p50; ecs/query is that floor + {:.0} us",
        floor / brp50,
        gabp50 - floor,
    );
    println!(
        "GABP ecs/query p50 / BRP world.query p50 = {ratio:.2} (target <= 0.5: {}); idle main-thread tool p50 {idle50:.0} us (target < 1000: {})",
        if ratio <= 0.5 { "met" } else { "missed" },
        if idle50 < 1000.0 { "met" } else { "missed" },
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut calls = 2000;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--calls", Some(n)) if n > 0 => calls = n,
            _ => {
                eprintln!("usage: gabp-bevy-brp-bench [--calls N]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tokio: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(calls)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("FAIL: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
