//! Bridge call latency with the attention gate on the call path (no item open) against the same call without
//! the gate, over an in-memory duplex pair to a `ModServer` with an echo tool. Target: within 5%.
//!
//! Both bridges talk to a mod that serves attention, so the only difference is the gate: its admission check
//! (drain the attention subscription, look at the item, no request) and its completion check.

use criterion::{criterion_group, criterion_main, Criterion};
use gabp_attention::{AttentionGate, AttentionManager};
use gabp_session::bridge::Bridge;
use gabp_session::server::{ModServer, Tool, ToolError};
use gabp_transport::{Connection, Token};
use serde_json::{json, Map, Value};

async fn mod_connection(token: &Token) -> Connection {
    let attention = AttentionManager::new();
    let server = attention
        .install(ModServer::builder().token(token.clone()))
        .tool(
            Tool::raw(
                "demo/echo",
                json!({"type": "object"}),
                json!({"type": "object"}),
                |args: Map<String, Value>| async move { Ok::<_, ToolError>(Value::Object(args)) },
            )
            .tags(["demo"]),
        )
        .build()
        .expect("the bench mod builds");
    let (mod_side, bridge_side) = tokio::io::duplex(256 * 1024);
    tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    Connection::new(bridge_side)
}

fn gate(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let token = Token::generate().expect("a token");
    let (plain, gated) = runtime.block_on(async {
        let plain = Bridge::over(mod_connection(&token).await, token.clone())
            .await
            .expect("the plain bridge connects");
        let builder = Bridge::builder(token.clone());
        let gate = AttentionGate::new(&builder.service());
        let gated = builder
            .layer(gate.layer())
            .over(mod_connection(&token).await)
            .await
            .expect("the gated bridge connects");
        gate.sync().await;
        assert_eq!(gate.is_supported(), Some(true));
        assert!(gate.current().is_none());
        (plain, gated)
    });
    let args = json!({"value": 42});

    let mut group = c.benchmark_group("bridge_call_latency");
    group.bench_function("echo_without_gate", |b| {
        b.to_async(&runtime).iter(|| async {
            plain
                .call_tool("demo/echo", args.clone())
                .await
                .expect("echo")
        });
    });
    group.bench_function("echo_with_gate_no_item", |b| {
        b.to_async(&runtime).iter(|| async {
            gated
                .call_tool("demo/echo", args.clone())
                .await
                .expect("echo")
        });
    });
    group.finish();
}

criterion_group!(benches, gate);
criterion_main!(benches);
