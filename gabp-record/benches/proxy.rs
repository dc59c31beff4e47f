//! What the recording proxy costs, measured in one run against a direct connection and a bare byte relay
//! (`tokio::io::copy_bidirectional`, recording nothing: the floor for any proxy on this machine).
//!
//! The mod is a `ModServer` with `bench/echo {value} -> {value}`; the bridge is gabp-session's `Bridge`, on
//! loopback TCP; everything runs on one Tokio runtime with 2 workers. For each of the three paths, in
//! alternating rounds (the median of the rounds is reported):
//!
//! - p50 latency: 2000 calls one at a time (after 200 to warm up);
//! - throughput: 20000 calls with 64 in flight, in calls per second.
//!
//! Reported: p50s and the latency each proxy adds over direct, throughputs and their ratios to direct, and the
//! recording proxy against the relay (targets: added p50 within 1.2x of the relay's, throughput at least 0.9x
//! the relay's). Run: `cargo bench -p gabp-record --bench proxy` (release).

use std::time::{Duration, Instant};

use futures::StreamExt;
use gabp_record::{ProxyConfig, RecordingProxy};
use gabp_session::bridge::Bridge;
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_transport::{Endpoint, Listener, Token};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const ROUNDS: usize = 7;
const LATENCY_CALLS: usize = 2000;
const WARM_UP: usize = 200;
const THROUGHPUT_CALLS: usize = 20_000;
const IN_FLIGHT: usize = 64;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Echo {
    value: Value,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    Direct,
    Relay,
    Recorder,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let token = Token::generate().expect("token");
    let server = ModServer::builder()
        .app("bench", "0")
        .token(token.clone())
        .tool(Tool::new("bench/echo", |e: Echo| async move {
            Ok::<_, CallError>(e)
        }))
        .build()
        .expect("server");
    let served = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind"));
    let mod_endpoint = served.endpoint().clone();
    let relay = relay(mod_endpoint.clone()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = std::fs::File::create(dir.path().join("bench.jsonl")).expect("recording file");
    let proxy_token = Token::generate().expect("token");
    let config = ProxyConfig::new(mod_endpoint.clone(), token.clone(), proxy_token.clone());
    let proxy = RecordingProxy::start(
        Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind"),
        config,
        Box::new(file),
    );
    let paths = [
        (Path::Direct, mod_endpoint.clone(), token.clone()),
        (Path::Relay, relay, token.clone()),
        (Path::Recorder, proxy.endpoint().clone(), proxy_token),
    ];
    let mut p50 = [Vec::new(), Vec::new(), Vec::new()];
    let mut rate = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        for (i, (path, endpoint, token)) in paths.iter().enumerate() {
            let bridge = Bridge::connect(endpoint, token.clone())
                .await
                .expect("connect");
            let latency = latency(&bridge).await;
            let throughput = throughput(&bridge).await;
            println!("round {round} {path:?}: p50 {latency:?}, {throughput:.0} calls/s");
            p50[i].push(latency);
            rate[i].push(throughput);
        }
    }
    let stats = proxy.shutdown().await.expect("recording written");
    let p50: Vec<Duration> = p50.iter_mut().map(|v| median(v)).collect();
    let rate: Vec<f64> = rate.iter_mut().map(|v| median(v)).collect();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let added_relay = us(p50[1]) - us(p50[0]);
    let added_proxy = us(p50[2]) - us(p50[0]);
    println!();
    println!("median of {ROUNDS} rounds          p50 (us)  added (us)  calls/s at {IN_FLIGHT} in flight  vs direct");
    for (i, name) in ["direct", "bare relay", "recording proxy"]
        .iter()
        .enumerate()
    {
        println!(
            "{name:<28} {:>8.1}  {:>10.1}  {:>26.0}  {:>9.2}x",
            us(p50[i]),
            us(p50[i]) - us(p50[0]),
            rate[i],
            rate[i] / rate[0]
        );
    }
    println!(
        "recording proxy vs bare relay: added p50 {:.2}x (target <= 1.2x), throughput {:.2}x (target >= 0.9x)",
        added_proxy / added_relay,
        rate[2] / rate[1]
    );
    println!(
        "recorded {} messages, {} bytes not recorded (queue full)",
        stats.recorded_frames, stats.dropped_bytes
    );
}

async fn latency(bridge: &Bridge) -> Duration {
    let mut times = Vec::with_capacity(LATENCY_CALLS);
    for i in 0..WARM_UP + LATENCY_CALLS {
        let started = Instant::now();
        bridge
            .call_tool("bench/echo", json!({"value": 42}))
            .await
            .expect("echo");
        if i >= WARM_UP {
            times.push(started.elapsed());
        }
    }
    median(&mut times)
}

async fn throughput(bridge: &Bridge) -> f64 {
    let started = Instant::now();
    futures::stream::iter(0..THROUGHPUT_CALLS)
        .map(|i| bridge.call_tool("bench/echo", json!({"value": i})))
        .buffer_unordered(IN_FLIGHT)
        .for_each(|answer| async move {
            answer.expect("echo");
        })
        .await;
    THROUGHPUT_CALLS as f64 / started.elapsed().as_secs_f64()
}

fn median<T: PartialOrd + Copy>(values: &mut [T]) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    values[values.len() / 2]
}

/// A bare byte relay in front of `target`, recording nothing.
async fn relay(target: Endpoint) -> Endpoint {
    let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
    let endpoint = listener.endpoint().clone();
    tokio::spawn(async move {
        while let Ok((mut front, _)) = listener.accept_stream().await {
            let mut back = gabp_transport::connect_stream(&target)
                .await
                .expect("connect");
            tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut front, &mut back).await;
            });
        }
    });
    endpoint
}
