//! A bridge: finds a running mod through `bridge.json`, lists its tools, subscribes to a channel, calls a tool
//! and prints the answer and the event the call caused.
//!
//! Start the mod first (`cargo run -p gabp-session --example minimal_mod`), then
//! `cargo run -p gabp-session --example bridge_subscribe_call [NAME]`.

use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "Ada".to_owned());
    // The endpoint and token from bridge.json at the platform path (`~/.config/gabp/bridge.json` on Linux).
    let bridge = Bridge::discover().await?;
    let welcome = bridge.welcome();
    println!("connected to {} {}", welcome.app.name, welcome.app.version);
    for tool in bridge.list_tools().await? {
        println!("tool {}: {}", tool.name, tool.title);
    }

    let mut greetings = bridge.subscribe(["game/greeted"]).await?;
    let answer = bridge
        .call_tool("game/greet", json!({ "name": name }))
        .await?;
    println!("game/greet answered {answer}");

    match tokio::time::timeout(Duration::from_secs(5), greetings.next()).await? {
        Some(Ok(SubscriptionItem::Event(event))) => {
            println!("event {} #{}: {}", event.channel, event.seq, event.payload);
        }
        Some(Ok(SubscriptionItem::Lagged { channel, missed })) => {
            println!("{channel}: {missed} events lost");
        }
        other => return Err(format!("no event: {other:?}").into()),
    }
    bridge.goodbye(Some("done")).await?;
    Ok(())
}
