//! The hub's own added time: a `games_call_tool` round trip from rmcp's client through the MCP front and the
//! hub to the demo game, against the same call made directly over GABP, interleaved in one run.
//!
//! `cargo bench -p gabp-mcp --bench hub_overhead [-- CALLS]` prints p50 and p99 of both and their difference.

use std::time::{Duration, Instant};

use gabp_hub::{Hub, HubConfig};
use gabp_mcp::{GabpMcp, McpOptions};
use gabp_session::bridge::Bridge;
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use serde_json::json;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let game = gabp_demo::InProcessGame::start().await?;
        let endpoint = game.handle.endpoint().clone();
        let port = match &endpoint {
            gabp_transport::Endpoint::Tcp(addr) => addr.port(),
            other => return Err(format!("unexpected endpoint {other}").into()),
        };
        // The hub attaches to the running game by its bridge.json, as games_connect does.
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("voxel"))?;
        std::fs::write(
            dir.path().join("voxel/bridge.json"),
            json!({"port": port, "token": game.token.expose_secret(), "gameId": "voxel"})
                .to_string(),
        )?;
        std::fs::write(
            dir.path().join("config.json"),
            json!({"games": {"voxel": {"target": "in-process"}}}).to_string(),
        )?;
        let hub = Hub::new(HubConfig::load(dir.path())?);
        hub.game("voxel")?.connect(Duration::from_secs(10)).await?;

        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let front = GabpMcp::new(hub.clone(), McpOptions::default());
        tokio::spawn(async move {
            if let Ok(running) = front.serve(server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client = ().serve(client_io).await?;
        let direct = Bridge::connect(&endpoint, game.token.clone()).await?;

        let value = "x".repeat(100);
        let arguments =
            json!({"gameId": "voxel", "tool": "demo/echo", "arguments": {"value": value}});
        let Some(arguments) = arguments.as_object().cloned() else {
            return Err("arguments".into());
        };
        let (mut via_mcp, mut via_gabp) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for i in 0..calls + calls / 10 {
            let started = Instant::now();
            direct
                .call_tool("demo/echo", json!({"value": value}))
                .await?;
            let gabp = started.elapsed();
            let started = Instant::now();
            let result = client
                .call_tool(
                    CallToolRequestParams::new("games_call_tool").with_arguments(arguments.clone()),
                )
                .await?;
            let mcp = started.elapsed();
            if result.is_error == Some(true) {
                return Err(format!("games_call_tool failed: {result:?}").into());
            }
            // The first tenth warms up.
            if i >= calls / 10 {
                via_gabp.push(gabp);
                via_mcp.push(mcp);
            }
        }
        via_gabp.sort_unstable();
        via_mcp.sort_unstable();
        let (g50, m50) = (percentile(&via_gabp, 0.5), percentile(&via_mcp, 0.5));
        println!(
            "{calls} calls of demo/echo (100-byte value), interleaved, loopback TCP to the game"
        );
        println!(
            "  direct GABP (Bridge::call_tool):       p50 {:8.1} us  p99 {:8.1} us",
            micros(g50),
            micros(percentile(&via_gabp, 0.99))
        );
        println!(
            "  MCP games_call_tool through the hub:  p50 {:8.1} us  p99 {:8.1} us",
            micros(m50),
            micros(percentile(&via_mcp, 0.99))
        );
        println!(
            "  the hub's added time (p50 MCP - p50 GABP): {:.1} us",
            micros(m50.saturating_sub(g50))
        );
        client.cancel().await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
