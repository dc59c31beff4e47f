//! Round trips of `demo/echo` through a `Bridge` and a `ModServer`, beside the floor: a raw framed echo over
//! the same transport.
//!
//! - `latency/{duplex,tcp,ws}`: one call at a time; criterion's time per iteration is one round trip.
//!   `echo` is `bridge.call_tool("demo/echo", {"value": 42})` against a `ModServer` serving the demo game's
//!   `demo/echo {value} -> {value}` (arguments checked against its schema, the whole protocol stack);
//!   `floor` is a `Connection` sending a body of the same size as that request to a task that reads each frame
//!   and writes it back (`Content-Length` framing, no JSON). `floor_json` is that floor carrying the same JSON
//!   with the least work serde_json allows: the client writes the request with a fresh id and parses the
//!   response; the echo task parses the envelope borrowing from the frame, decodes the typed arguments and
//!   writes a typed response. No checks, no table of calls, no time limits, no routing, two tasks: what any
//!   design pays, so `echo / floor_json` is what the engine itself costs.
//! - `latency/json_only/round_trip`: only the JSON of one such round trip (encode and parse the request, then
//!   the response, untyped), no I/O: what any JSON implementation pays on top of the floor.
//!   `latency/json_only/round_trip_borrowed_raw` is the least JSON work possible: typed envelopes borrowing
//!   from the input, arguments and result passed through as raw text (a lower bound, not a usable design:
//!   nothing checks the arguments).
//! - `throughput/{duplex,tcp,ws}`: the same with 1, 16 and 64 calls in flight; criterion reports calls per
//!   second (`Throughput::Elements`). The bridge side keeps `n` calls going with `buffer_unordered(n)`; the
//!   floor client keeps `n` frames outstanding on its one connection (writing them in one burst, one flush).
//!   `floor` is the plain echo task (read a frame, send it back: one flush per frame);
//!   `floor_batched` is a stronger floor whose echo flushes only when no further frame is ready to read, as
//!   the mod's driver does.
//!
//! Both sides live in one process, on one Tokio runtime: multi-threaded with 2 workers by default (what
//! `#[tokio::main]` gives on a 2-core machine); `GABP_BENCH_RUNTIME=current_thread` runs everything on one
//! thread instead. The measuring loop runs in a task of that runtime, like the code it measures.
//!
//! Run: `cargo bench -p gabp-session --bench roundtrip` (1 s warm-up and 3 s measurement per case unless
//! criterion options after `--` say otherwise, for example `-- --measurement-time 5 latency`). The p50 round
//! trip is criterion's median; the ratios to report are `echo / floor` for latency and `echo / floor` in
//! calls per second for throughput, and `ws / tcp` (same run, same case) for the cost of WebSocket framing
//! (SPEC/1.0 transport.md §2.5) over plain `Content-Length` frames on loopback TCP.

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::{FutureExt, SinkExt, StreamExt};
use gabp_session::bridge::Bridge;
use gabp_session::server::{CallError, ModServer, ServeHandle, Tool};
use gabp_transport::{connect, Connection, Endpoint, Listener, Token};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::runtime::Runtime;

const IN_FLIGHT: [usize; 3] = [1, 16, 64];
const DUPLEX_BUFFER: usize = 256 * 1024;

#[derive(Clone, Copy)]
enum Transport {
    Duplex,
    Tcp,
    Ws,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Duplex => "duplex",
            Transport::Tcp => "tcp",
            Transport::Ws => "ws",
        }
    }

    /// A loopback endpoint of this transport on a free port (not for `Duplex`).
    fn endpoint(self) -> Endpoint {
        match self {
            Transport::Ws => "ws://127.0.0.1:0".parse().expect("endpoint"),
            _ => Endpoint::tcp_v4(0),
        }
    }
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    value: Value,
}

fn token() -> Token {
    Token::new("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
        .expect("valid token")
}

fn runtime() -> Runtime {
    let mut builder = match std::env::var("GABP_BENCH_RUNTIME").as_deref() {
        Ok("current_thread") => tokio::runtime::Builder::new_current_thread(),
        _ => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(2);
            b
        }
    };
    builder.enable_all().build().expect("runtime")
}

/// The demo game's `demo/echo`, alone.
fn server() -> ModServer {
    ModServer::builder()
        .app("Bench Game", "1.0.0")
        .token(token())
        .tool(Tool::new("demo/echo", |e: Echo| async move {
            Ok::<_, CallError>(e)
        }))
        .build()
        .expect("server")
}

fn arguments() -> Value {
    json!({ "value": 42 })
}

/// A body of the size of the bridge's `demo/echo` request, for the floor.
fn floor_body() -> Bytes {
    let request = gabp_types::Request::with_params(
        gabp_types::MethodName::new("tools/call").expect("method"),
        &json!({ "name": "demo/echo", "arguments": arguments() }),
    )
    .expect("request");
    let len = gabp_types::Message::from(request).to_vec().len();
    Bytes::from(vec![b'x'; len])
}

/// A bridge connected to a served `ModServer`; keeps the server alive.
struct EchoSetup {
    bridge: Bridge,
    _server: Option<ServeHandle>,
}

async fn echo_setup(transport: Transport) -> EchoSetup {
    match transport {
        Transport::Duplex => {
            let (ours, theirs) = tokio::io::duplex(DUPLEX_BUFFER);
            tokio::spawn(server().serve_connection(Connection::new(theirs)));
            let bridge = Bridge::over(Connection::new(ours), token())
                .await
                .expect("bridge");
            EchoSetup {
                bridge,
                _server: None,
            }
        }
        Transport::Tcp | Transport::Ws => {
            let listener = Listener::bind(&transport.endpoint()).await.expect("bind");
            let handle = server().serve(listener);
            let bridge = Bridge::connect(handle.endpoint(), token())
                .await
                .expect("bridge");
            EchoSetup {
                bridge,
                _server: Some(handle),
            }
        }
    }
}

/// The floor's mod: reads each frame and writes it back (`send`: write and flush). `batched`: flushes only when
/// no further frame is ready to read, as the mod's driver does.
async fn floor_echo(conn: Connection, batched: bool) {
    answer_each(conn, batched, Some).await;
}

/// Reads each frame and writes back what `answer` makes of it; stops at the end, at an error, or when `answer`
/// has none. `batched`: flushes only when no further frame is ready to read.
async fn answer_each(mut conn: Connection, batched: bool, answer: impl Fn(Bytes) -> Option<Bytes>) {
    loop {
        let next = match conn.next().now_or_never() {
            Some(next) => next,
            None => {
                if conn.flush().await.is_err() {
                    return;
                }
                conn.next().await
            }
        };
        let Some(Ok(frame)) = next else { return };
        let Some(body) = frame.into_body().and_then(&answer) else {
            return;
        };
        let written = if batched {
            conn.feed(body).await
        } else {
            conn.send(body).await
        };
        if written.is_err() {
            return;
        }
    }
}

/// The floor's client end, its echo task running.
async fn floor_setup(transport: Transport, batched: bool) -> Connection {
    let (client, server) = connected(transport).await;
    tokio::spawn(floor_echo(server, batched));
    client
}

/// Two connected ends of `transport`: the client's and the mod's.
async fn connected(transport: Transport) -> (Connection, Connection) {
    match transport {
        Transport::Duplex => {
            let (a, b) = tokio::io::duplex(DUPLEX_BUFFER);
            (Connection::new(a), Connection::new(b))
        }
        Transport::Tcp | Transport::Ws => {
            let listener = Listener::bind(&transport.endpoint()).await.expect("bind");
            let (client, server) = tokio::join!(connect(listener.endpoint()), listener.accept());
            (client.expect("connect"), server.expect("accept"))
        }
    }
}

/// `iters` round trips of the floor with up to `in_flight` frames outstanding.
async fn floor_run(client: &mut Connection, body: &Bytes, iters: u64, in_flight: usize) {
    let (mut sent, mut received, mut outstanding) = (0u64, 0u64, 0usize);
    while received < iters {
        if outstanding < in_flight && sent < iters {
            while outstanding < in_flight && sent < iters {
                client.feed(body.clone()).await.expect("send");
                sent += 1;
                outstanding += 1;
            }
            client.flush().await.expect("flush");
        }
        let reply = client.next().await.expect("reply").expect("frame");
        assert_eq!(reply.into_body().map(|b| b.len()), Some(body.len()));
        received += 1;
        outstanding -= 1;
    }
}

/// `floor_json`'s mod: decodes each request's typed arguments and answers with the typed response.
async fn floor_json_echo(conn: Connection) {
    answer_each(conn, false, |body| {
        let request: raw::Request<'_, &RawValue> = serde_json::from_slice(&body).ok()?;
        let arguments: Echo = serde_json::from_str(request.params.arguments.get()).ok()?;
        let response = raw::Response {
            v: request.v,
            id: request.id,
            kind: "response",
            result: &arguments,
        };
        serde_json::to_vec(&response).ok().map(Bytes::from)
    })
    .await;
}

/// `iters` sequential `demo/echo` round trips of `floor_json`, each with a fresh id.
async fn floor_json_run(client: &mut Connection, iters: u64) {
    let arguments = arguments();
    for _ in 0..iters {
        let id = gabp_types::MessageId::new_v4();
        let request = raw::Request {
            v: "gabp/1",
            id: id.as_str(),
            kind: "request",
            method: "tools/call",
            params: raw::Params {
                name: "demo/echo",
                arguments: &arguments,
            },
        };
        let body = serde_json::to_vec(&request).expect("encode");
        client.send(Bytes::from(body)).await.expect("send");
        let reply = client.next().await.expect("reply").expect("frame");
        let body = reply.into_body().expect("body");
        let response: raw::Response<'_, Value> = serde_json::from_slice(&body).expect("decode");
        assert_eq!(response.result["value"], 42);
    }
}

/// `iters` calls of `demo/echo` with up to `in_flight` of them at a time.
async fn echo_run(bridge: &Bridge, iters: u64, in_flight: usize) {
    if in_flight == 1 {
        for _ in 0..iters {
            let result = bridge
                .call_tool("demo/echo", arguments())
                .await
                .expect("call");
            assert_eq!(result["value"], 42);
        }
        return;
    }
    futures::stream::iter(0..iters)
        .map(|_| bridge.call_tool("demo/echo", arguments()))
        .buffer_unordered(in_flight)
        .for_each(|result| {
            assert_eq!(result.expect("call")["value"], 42);
            async {}
        })
        .await;
}

/// Times `iters` of `run` inside a task of the runtime, handing `state` in and back out.
fn timed<S, F, Fut>(rt: &Runtime, state: &mut Option<S>, iters: u64, run: F) -> Duration
where
    S: Send + 'static,
    F: FnOnce(S, u64) -> Fut,
    Fut: std::future::Future<Output = S> + Send + 'static,
{
    let s = state.take().expect("state");
    let task = run(s, iters);
    let (s, elapsed) = rt
        .block_on(rt.spawn(async move {
            let start = Instant::now();
            let s = task.await;
            (s, start.elapsed())
        }))
        .expect("bench task");
    *state = Some(s);
    elapsed
}

fn bench_floor(
    b: &mut criterion::Bencher<'_>,
    rt: &Runtime,
    transport: Transport,
    n: usize,
    batched: bool,
) {
    let body = floor_body();
    let mut client = Some(rt.block_on(floor_setup(transport, batched)));
    b.iter_custom(|iters| {
        let body = body.clone();
        timed(rt, &mut client, iters, move |mut c, iters| async move {
            floor_run(&mut c, &body, iters, n).await;
            c
        })
    });
}

fn bench_floor_json(b: &mut criterion::Bencher<'_>, rt: &Runtime, transport: Transport) {
    let mut client = Some(rt.block_on(async {
        let (client, server) = connected(transport).await;
        tokio::spawn(floor_json_echo(server));
        client
    }));
    b.iter_custom(|iters| {
        timed(rt, &mut client, iters, move |mut c, iters| async move {
            floor_json_run(&mut c, iters).await;
            c
        })
    });
}

fn bench_echo(b: &mut criterion::Bencher<'_>, rt: &Runtime, transport: Transport, n: usize) {
    let setup = rt.block_on(echo_setup(transport));
    let mut bridge = Some(setup.bridge.clone());
    b.iter_custom(|iters| {
        timed(rt, &mut bridge, iters, move |bridge, iters| async move {
            echo_run(&bridge, iters, n).await;
            bridge
        })
    });
    rt.block_on(setup.bridge.close());
    drop(setup);
}

fn latency(c: &mut Criterion) {
    let rt = runtime();
    for transport in [Transport::Duplex, Transport::Tcp, Transport::Ws] {
        let mut group = c.benchmark_group(format!("latency/{}", transport.name()));
        group.bench_function("floor", |b| bench_floor(b, &rt, transport, 1, false));
        group.bench_function("floor_json", |b| bench_floor_json(b, &rt, transport));
        group.bench_function("echo", |b| bench_echo(b, &rt, transport, 1));
        group.finish();
    }
}

/// The JSON work any implementation does for one `demo/echo` round trip, with no I/O, no tasks and no
/// checks: serialize the request, parse it as an untyped `Value`, serialize the response, parse it. A lower
/// bound for `latency/*/echo` beside the floors, which carry no JSON at all.
fn json_only(c: &mut Criterion) {
    let request = serde_json::to_value(gabp_types::Message::from(
        gabp_types::Request::with_params(
            gabp_types::MethodName::new("tools/call").expect("method"),
            &json!({ "name": "demo/echo", "arguments": arguments() }),
        )
        .expect("request"),
    ))
    .expect("request value");
    let mut group = c.benchmark_group("latency/json_only");
    group.bench_function("round_trip", |b| {
        b.iter(|| {
            let wire = serde_json::to_vec(&request).expect("encode");
            let parsed: Value = serde_json::from_slice(&wire).expect("decode");
            let response = json!({
                "v": "gabp/1",
                "id": parsed["id"],
                "type": "response",
                "result": parsed["params"]["arguments"],
            });
            let wire = serde_json::to_vec(&response).expect("encode");
            let parsed: Value = serde_json::from_slice(&wire).expect("decode");
            std::hint::black_box(parsed)
        });
    });
    // The least JSON work there is: typed envelopes borrowing from the input, and the arguments and the
    // result passed through as raw text, never parsed.
    let id = request["id"].as_str().expect("id").to_owned();
    group.bench_function("round_trip_borrowed_raw", |b| {
        let arguments = serde_json::value::to_raw_value(&arguments()).expect("raw arguments");
        b.iter(|| {
            let wire = serde_json::to_vec(&raw::Request {
                v: "gabp/1",
                id: &id,
                kind: "request",
                method: "tools/call",
                params: raw::Params {
                    name: "demo/echo",
                    arguments: &arguments,
                },
            })
            .expect("encode");
            let parsed: raw::Request<'_, &RawValue> =
                serde_json::from_slice(&wire).expect("decode");
            let wire = serde_json::to_vec(&raw::Response {
                v: parsed.v,
                id: parsed.id,
                kind: "response",
                result: parsed.params.arguments,
            })
            .expect("encode");
            let parsed: raw::Response<'_, &RawValue> =
                serde_json::from_slice(&wire).expect("decode");
            std::hint::black_box(parsed.result.get().len())
        });
    });
    group.finish();
}

/// Envelopes for `round_trip_borrowed_raw` and `floor_json`: borrowed strings, the params' arguments and the
/// result of whatever type the case wants.
mod raw {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    pub struct Request<'a, A> {
        pub v: &'a str,
        pub id: &'a str,
        #[serde(rename = "type")]
        pub kind: &'a str,
        pub method: &'a str,
        #[serde(borrow)]
        pub params: Params<'a, A>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct Params<'a, A> {
        pub name: &'a str,
        pub arguments: A,
    }

    #[derive(Serialize, Deserialize)]
    pub struct Response<'a, R> {
        pub v: &'a str,
        pub id: &'a str,
        #[serde(rename = "type")]
        pub kind: &'a str,
        pub result: R,
    }
}

fn throughput(c: &mut Criterion) {
    let rt = runtime();
    for transport in [Transport::Duplex, Transport::Tcp, Transport::Ws] {
        let mut group = c.benchmark_group(format!("throughput/{}", transport.name()));
        group.throughput(Throughput::Elements(1));
        for n in IN_FLIGHT {
            group.bench_with_input(BenchmarkId::new("floor", n), &n, |b, &n| {
                bench_floor(b, &rt, transport, n, false);
            });
            if n > 1 {
                group.bench_with_input(BenchmarkId::new("floor_batched", n), &n, |b, &n| {
                    bench_floor(b, &rt, transport, n, true);
                });
            }
            group.bench_with_input(BenchmarkId::new("echo", n), &n, |b, &n| {
                bench_echo(b, &rt, transport, n);
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    // Short by default (the command line overrides it): the machines this runs on are small and shared.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = latency, json_only, throughput
}
criterion_main!(benches);
