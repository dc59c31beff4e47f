//! Bridge call latency with the attention gate on the call path (no item open) against the same call without
//! the gate, over an in-memory duplex pair to a `ModServer` with an echo tool. Target: within 5%.
//!
//! Every bridge talks to its own mod that serves attention, so the only difference is on the bridge side.
//!
//! Each comparison is measured *interleaved*: one call without the gate, one with, alternating which goes
//! first, so that a busy machine slows both alike; each benchmark reports its own half, and at the end the
//! bench prints the paired ratio over every pair it ran (the figure for the 5% target). Three comparisons:
//!
//! - `layer`: a bridge with `AttentionGate::layer()` on its call path against a bare bridge;
//! - `noop_layer` (reference): a bridge with a layer that does nothing, against a bare bridge: what any layer
//!   costs on the bridge's call path (boxing), whatever it does;
//! - `plain_api`: `AttentionGate::call_tool` on a bare bridge, against the bare bridge's own `call_tool`.

use std::cell::Cell;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use gabp_attention::{AttentionGate, AttentionManager};
use gabp_session::bridge::{Bridge, BridgeService};
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_transport::{Connection, Token};
use serde_json::{json, Map, Value};

async fn mod_connection(token: &Token) -> Connection {
    let attention = AttentionManager::new();
    let server = attention
        .install(ModServer::builder().token(token.clone()))
        .tool(
            Tool::new("demo/echo", |args: Map<String, Value>| async move {
                Ok::<_, CallError>(Value::Object(args))
            })
            .input_schema(json!({"type": "object"}))
            .output_schema(json!({"type": "object"}))
            .tags(["demo"]),
        )
        .build()
        .expect("the bench mod builds");
    let (mod_side, bridge_side) = tokio::io::duplex(256 * 1024);
    tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    Connection::new(bridge_side)
}

/// One way of calling `demo/echo`.
enum Caller {
    Bridge(Bridge),
    Gate(AttentionGate),
}

impl Caller {
    async fn echo(&self, args: &Value) {
        match self {
            Caller::Bridge(bridge) => {
                bridge
                    .call_tool("demo/echo", args.clone())
                    .await
                    .expect("echo");
            }
            Caller::Gate(gate) => {
                gate.call_tool("demo/echo", args.clone())
                    .await
                    .expect("echo");
            }
        }
    }
}

/// Runs `iters` pairs of calls, alternating which goes first; returns the time of `base`'s and of `other`'s.
async fn pairs(base: &Caller, other: &Caller, args: &Value, iters: u64) -> (Duration, Duration) {
    let (mut base_time, mut other_time) = (Duration::ZERO, Duration::ZERO);
    for i in 0..iters {
        for is_other in [i % 2 == 1, i % 2 == 0] {
            let caller = if is_other { other } else { base };
            let start = Instant::now();
            caller.echo(args).await;
            let took = start.elapsed();
            if is_other {
                other_time += took;
            } else {
                base_time += took;
            }
        }
    }
    (base_time, other_time)
}

fn gate(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let token = Token::generate().expect("a token");
    let [bare, layered, noop, plain_api] = runtime.block_on(async {
        let bare = Bridge::over(mod_connection(&token).await, token.clone())
            .await
            .expect("the bare bridge connects");

        let builder = Bridge::builder(token.clone());
        let gate = AttentionGate::new(&builder.service());
        let layered = builder
            .layer(gate.layer())
            .over(mod_connection(&token).await)
            .await
            .expect("the gated bridge connects");
        gate.sync().await;
        assert_eq!(gate.is_supported(), Some(true));
        assert!(gate.current().is_none());

        let noop = Bridge::builder(token.clone())
            .layer(tower::layer::layer_fn(|s: BridgeService| {
                tower::util::MapRequest::new(s, |r| r)
            }))
            .over(mod_connection(&token).await)
            .await
            .expect("the noop-layer bridge connects");

        let plain = Bridge::over(mod_connection(&token).await, token.clone())
            .await
            .expect("the plain-API bridge connects");
        let plain_gate = AttentionGate::new(&plain.service());
        plain_gate.sync().await;
        assert_eq!(plain_gate.is_supported(), Some(true));
        // The gate holds only a handle; the bridge must live as long as the bench.
        std::mem::forget(plain);

        [
            Caller::Bridge(bare),
            Caller::Bridge(layered),
            Caller::Bridge(noop),
            Caller::Gate(plain_gate),
        ]
    });
    let args = json!({"value": 42});

    let mut group = c.benchmark_group("bridge_call_latency");
    for (name, other) in [
        ("layer", &layered),
        ("noop_layer", &noop),
        ("plain_api", &plain_api),
    ] {
        // Every interleaved pair of this comparison: (time without, time with, pairs).
        let totals = Cell::new((Duration::ZERO, Duration::ZERO, 0u64));
        let record = |(without, with): (Duration, Duration), iters: u64| {
            let (a, b, n) = totals.get();
            totals.set((a + without, b + with, n + iters));
            (without, with)
        };
        group.bench_function(format!("{name}/echo_bare_bridge"), |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let run = pairs(&bare, other, &args, iters);
                async move { record(run.await, iters).0 }
            });
        });
        group.bench_function(format!("{name}/echo_with_it"), |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let run = pairs(&bare, other, &args, iters);
                async move { record(run.await, iters).1 }
            });
        });
        let (without, with, n) = totals.get();
        if n > 0 {
            let per_call = |total: Duration| total.as_secs_f64() * 1e6 / n as f64;
            let ratio = with.as_secs_f64() / without.as_secs_f64();
            println!(
                "{name}: paired over {n} interleaved pairs: bare {:.3} µs, with {name} {:.3} µs, ratio {ratio:.4} \
                 ({:+.2}%)",
                per_call(without),
                per_call(with),
                (ratio - 1.0) * 100.0
            );
        }
    }
    group.finish();
}

criterion_group!(benches, gate);
criterion_main!(benches);
