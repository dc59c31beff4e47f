//! A minimal GABP mod: one tool and one event channel on loopback TCP, announced in `bridge.json`.
//!
//! Terminal 1: `cargo run -p gabp-session --example minimal_mod` (Ctrl-C stops it and removes `bridge.json`).
//! Terminal 2: `cargo run -p gabp-session --example bridge_subscribe_call`, or `gabp call game/greet '{"name":"Ada"}'`.

use gabp_session::schemars::{self, JsonSchema};
use gabp_session::server::{CallError, EventPublisher, ModServer, Tool};
use gabp_transport::{Listener, ModSettings};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Greet {
    name: String,
}

#[derive(Serialize, JsonSchema)]
struct Greeting {
    text: String,
}

async fn greet(events: EventPublisher, args: Greet) -> Result<Greeting, CallError> {
    let greeting = Greeting {
        text: format!("Hello, {}!", args.name),
    };
    events.publish("game/greeted", &greeting)?;
    Ok(greeting)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The GABS environment when a launcher started the game, else a free loopback port and a fresh token.
    let settings = ModSettings::for_game("minimal-mod")?;
    let server = ModServer::builder()
        .app("Minimal mod", "1.0.0")
        .settings(&settings)
        .channel("game/greeted")
        .tool(Tool::new("game/greet", greet).title("Greet someone"))
        .build()?;
    let handle = server.serve(Listener::bind(&settings.endpoint).await?);
    let _announced = settings.publish_bridge_json(handle.endpoint())?; // removed on drop
    println!("listening on {}", handle.endpoint());
    tokio::signal::ctrl_c().await?;
    handle.shutdown().await;
    Ok(())
}
