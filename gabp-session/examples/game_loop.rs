//! A synchronous, fixed-step game loop (no async runtime on the game thread) that serves main-thread tools
//! over TCP. The world is `!Send` (it holds an `Rc`), so it never leaves the game thread: the tools get it as
//! `&mut World` inside `MainThread::pump_with`. Between steps the loop sleeps in `MainThread::wait`, which
//! returns as soon as a call arrives, so a call on an idle game is answered at once rather than at the next
//! step.
//!
//! `cargo run -p gabp-session --example game_loop` serves, calls itself through a bridge and exits;
//! `GABP_TOKEN=<32+ characters> cargo run -p gabp-session --example game_loop -- --serve` keeps serving (its
//! endpoint is printed) until Ctrl-C.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use gabp_session::bridge::Bridge;
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_transport::{Endpoint, Listener, Token};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// One step of the simulation: 60 a second.
const STEP: Duration = Duration::from_micros(16_667);

/// The game's state. The `Rc` makes it `!Send`, as an engine's world usually is.
struct World {
    name: Rc<str>,
    blocks: BTreeMap<(i32, i32, i32), String>,
    steps: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Place {
    x: i32,
    y: i32,
    z: i32,
    block: String,
}

#[derive(Serialize, JsonSchema)]
struct Placed {
    world: String,
    blocks: usize,
    step: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let serve_only = std::env::args().any(|a| a == "--serve");
    let token = match std::env::var("GABP_TOKEN") {
        Ok(token) => Token::new(token)?,
        Err(_) if serve_only => return Err("set GABP_TOKEN to the token bridges will send".into()),
        Err(_) => Token::generate()?,
    };
    let server = ModServer::builder()
        .app("Game loop example", "1.0.0")
        .token(token.clone())
        .tool(Tool::on_main_thread(
            "world/place_block",
            |world: &mut World, p: Place| {
                world.blocks.insert((p.x, p.y, p.z), p.block);
                Ok::<_, CallError>(Placed {
                    world: world.name.to_string(),
                    blocks: world.blocks.len(),
                    step: world.steps,
                })
            },
        ))
        .build()?;
    let main_thread = server.main_thread();

    // The network side runs on its own thread with its own runtime; the game thread below never sees it.
    let (ready, endpoint) = std::sync::mpsc::channel();
    let stopper = main_thread.clone();
    let network = std::thread::spawn(move || -> Result<(), String> {
        let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
        let result = runtime.block_on(async move {
            let listener = Listener::bind(&Endpoint::tcp_v4(0)).await?;
            let handle = server.serve(listener);
            let _ = ready.send(handle.endpoint().clone());
            if serve_only {
                tokio::signal::ctrl_c().await?;
            } else {
                let bridge = Bridge::connect(handle.endpoint(), token).await?;
                for i in 0..3 {
                    let started = Instant::now();
                    let placed = bridge
                        .call_tool(
                            "world/place_block",
                            json!({"x": i, "y": 0, "z": 0, "block": "stone"}),
                        )
                        .await?;
                    println!("placed: {placed} in {:?}", started.elapsed());
                }
                bridge.close().await;
            }
            handle.shutdown().await;
            Ok::<_, Box<dyn std::error::Error>>(())
        });
        stopper.wake();
        result.map_err(|e| e.to_string())
    });

    let endpoint = endpoint.recv()?;
    if serve_only {
        println!("serving on {endpoint} with the token in GABP_TOKEN; Ctrl-C stops");
    }
    // The game thread: fixed steps; between them, wait for calls and run them with the world.
    let mut world = World {
        name: Rc::from("example"),
        blocks: BTreeMap::new(),
        steps: 0,
    };
    let mut next_step = Instant::now() + STEP;
    while !network.is_finished() {
        let now = Instant::now();
        if now >= next_step {
            world.steps += 1;
            next_step += STEP;
            continue;
        }
        main_thread.wait(next_step - now);
        main_thread.pump_with(&mut world, Duration::from_millis(4));
    }
    network
        .join()
        .map_err(|_| "the network thread panicked")??;
    println!("{} blocks after {} steps", world.blocks.len(), world.steps);
    Ok(())
}
