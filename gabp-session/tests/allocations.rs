//! Heap allocations per typed `tools/call` round trip, bridge and mod together, counted by a counting global
//! allocator over an in-memory pair on one thread. The figure is printed; the bound keeps it from creeping back.
#![allow(clippy::unwrap_used)]

use std::alloc::System;

use gabp_session::bridge::Bridge;
use gabp_session::server::{ModServer, Tool, ToolError};
use gabp_transport::{Connection, Token};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

/// The most allocations (and reallocations) one typed round trip may take, client and server together.
const BOUND: usize = 7;
const CALLS: usize = 2_000;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Echo {
    value: String,
}

#[tokio::test(flavor = "current_thread")]
async fn a_typed_round_trip_stays_within_its_allocation_budget() {
    let token = Token::new("0123456789abcdef0123456789abcdef").unwrap();
    let server = ModServer::builder()
        .token(token.clone())
        .tool(Tool::new("demo/echo", |e: Echo| async move {
            Ok::<_, ToolError>(e)
        }))
        .build()
        .unwrap();
    let (mod_side, bridge_side) = tokio::io::duplex(256 * 1024);
    tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let bridge = Bridge::over(Connection::new(bridge_side), token)
        .await
        .unwrap();
    let args = Echo {
        value: "x".repeat(100),
    };
    for _ in 0..100 {
        let _: Echo = bridge.call_tool_as("demo/echo", &args).await.unwrap();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..CALLS {
        let echoed: Echo = bridge.call_tool_as("demo/echo", &args).await.unwrap();
        assert_eq!(echoed.value.len(), 100);
    }
    let change = region.change();
    let per_call = (change.allocations + change.reallocations) / CALLS;
    eprintln!("  {per_call} allocations per typed tools/call round trip (bridge and mod together)");
    assert!(
        per_call <= BOUND,
        "{per_call} allocations per round trip, over the bound of {BOUND}"
    );
}
