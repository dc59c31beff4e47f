//! `gabp bench`: latency and throughput of calls to a mod; with `--self`, against the demo game in-process and
//! a raw framed echo over the same transport (the floor no GABP implementation can beat).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use futures::{SinkExt, StreamExt};
use gabp_session::bridge::Bridge;
use gabp_session::Error as SessionError;
use gabp_transport::{Endpoint, Listener};
use gabp_types::{Message, MethodName, Request};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::sync::Semaphore;

use crate::target::{describe_call_error, TargetArgs};
use crate::terminal::Progress;
use gabp_demo::InProcessGame;
use gabp_testkit::conformance::nagle_hint;
use report::{human, ratios};

mod report;

/// Long help of `gabp bench`.
pub const EXAMPLES: &str = "\
Makes CALLS calls (after a short warm-up), CONCURRENCY at a time on one connection, and prints the median
(p50) and 99th-percentile (p99) latency and the calls per second. Without --tool it calls demo/echo when the
mod has it, else session/ping. With --self it starts the demo game in-process on loopback TCP, and also
measures a raw framed echo over the same transport with frames of the same size: the floor, with the ratio
of GABP to it. --json prints one object {\"gabp\": {...}, \"floor\": {...}} (floor only with --self) whose parts
have p50_us, p99_us and calls_per_s.

Examples:
  gabp bench --self
  gabp bench --self --calls 20000 --concurrency 16 --json
  gabp bench --connect tcp://127.0.0.1:4711 --token $TOKEN --tool world/get_block --args '{\"x\":1,\"y\":1,\"z\":1}'";

/// Arguments of `gabp bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Start the demo game in-process and compare with a raw framed echo over the same transport.
    #[arg(long = "self", conflicts_with_all = ["connect", "spawn", "token", "config"])]
    pub in_process: bool,
    /// How many calls to measure.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub calls: u64,
    /// How many calls are in flight at once.
    #[arg(long, value_name = "C", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub concurrency: u64,
    /// The tool to call (default: demo/echo if the mod has it, else session/ping is measured).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The tool's arguments, a JSON object (default: {"value": "gabp"} for demo/echo, else {}).
    #[arg(long = "args", value_name = "JSON")]
    pub arguments: Option<String>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// What one measured run found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Calls measured.
    pub calls: u64,
    /// Median latency.
    pub p50: Duration,
    /// 99th-percentile latency.
    pub p99: Duration,
    /// Calls per second over the whole run.
    pub calls_per_s: f64,
}

impl Stats {
    /// From the latencies of a run that took `elapsed`.
    fn from_latencies(mut latencies: Vec<Duration>, elapsed: Duration) -> Stats {
        latencies.sort_unstable();
        let calls = latencies.len() as u64;
        Stats {
            calls,
            p50: percentile(&latencies, 50),
            p99: percentile(&latencies, 99),
            calls_per_s: calls as f64 / elapsed.as_secs_f64().max(1e-9),
        }
    }

    fn json(&self, extra: Value) -> Value {
        let mut object = json!({
            "p50_us": micros(self.p50),
            "p99_us": micros(self.p99),
            "calls_per_s": (self.calls_per_s * 10.0).round() / 10.0,
            "calls": self.calls,
        });
        if let (Some(object), Value::Object(extra)) = (object.as_object_mut(), extra) {
            object.extend(extra);
        }
        object
    }
}

/// The nearest-rank percentile of sorted `latencies`.
fn percentile(latencies: &[Duration], p: u64) -> Duration {
    if latencies.is_empty() {
        return Duration::ZERO;
    }
    let n = latencies.len() as u64;
    let rank = (p * n).div_ceil(100).clamp(1, n);
    latencies[(rank - 1) as usize]
}

/// Microseconds with one decimal.
fn micros(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e7).round() / 10.0
}

/// What each call does.
#[derive(Debug, Clone)]
enum Invocation {
    Tool { name: String, arguments: Value },
    Ping,
}

impl Invocation {
    async fn call(&self, bridge: &Bridge) -> Result<(), SessionError> {
        match self {
            Invocation::Tool { name, arguments } => {
                bridge.call_tool(name, arguments.clone()).await.map(drop)
            }
            Invocation::Ping => bridge.ping().await.map(drop),
        }
    }

    fn label(&self) -> String {
        match self {
            Invocation::Tool { name, .. } => name.clone(),
            Invocation::Ping => "session/ping".into(),
        }
    }

    /// The body of the request the bridge sends for it (the floor echoes frames of this size).
    fn request_body(&self) -> Result<Bytes, String> {
        let (method, params) = match self {
            Invocation::Tool { name, arguments } => (
                "tools/call",
                Some(json!({ "name": name, "arguments": arguments })),
            ),
            Invocation::Ping => ("session/ping", None),
        };
        let method = MethodName::new(method).map_err(|e| e.to_string())?;
        let params: Option<Map<String, Value>> = params.and_then(|p| p.as_object().cloned());
        let body = serde_json::to_vec(&Message::Request(Request::new(method, params)))
            .map_err(|e| e.to_string())?;
        Ok(Bytes::from(body))
    }
}

/// Runs `gabp bench`.
///
/// # Errors
///
/// One line: bad arguments, an unreachable mod, or a call that failed.
pub async fn run(args: &BenchArgs, stdout: &mut dyn Write) -> Result<(), String> {
    let arguments = args
        .arguments
        .as_deref()
        .map(|text| {
            let value: Value =
                serde_json::from_str(text).map_err(|e| format!("--args is not JSON: {e}"))?;
            if value.is_object() {
                Ok(value)
            } else {
                Err("--args must be a JSON object".to_owned())
            }
        })
        .transpose()?;
    if arguments.is_some() && args.tool.is_none() {
        return Err("--args needs --tool".into());
    }
    let concurrency = usize::try_from(args.concurrency).unwrap_or(usize::MAX);

    let game = if args.in_process {
        Some(InProcessGame::start().await.map_err(|e| e.to_string())?)
    } else {
        None
    };
    let (session, where_) = match &game {
        Some(game) => {
            let endpoint = game.handle.endpoint().clone();
            let bridge = Bridge::builder(game.token.clone())
                .max_in_flight(concurrency)
                .connect(&endpoint)
                .await
                .map_err(|e| {
                    format!(
                        "cannot connect to the in-process demo game: {}",
                        describe_call_error(&e)
                    )
                })?;
            (
                crate::target::Session {
                    bridge,
                    process: None,
                },
                format!("{endpoint} (the demo game, in-process)"),
            )
        }
        None => {
            let target = args.target.resolve_from_env()?;
            let builder = Bridge::builder(target.token.clone()).max_in_flight(concurrency);
            let session = target.open(builder).await?;
            (session, target.reach.to_string())
        }
    };
    let bridge = session.bridge.clone();

    let invocation = match &args.tool {
        Some(name) => Invocation::Tool {
            name: name.clone(),
            arguments: arguments.unwrap_or_else(|| json!({})),
        },
        None => {
            let tools = bridge
                .list_tools()
                .await
                .map_err(|e| format!("tools/list: {}", describe_call_error(&e)))?;
            if tools.iter().any(|t| t.name.as_str() == "demo/echo") {
                Invocation::Tool {
                    name: "demo/echo".into(),
                    arguments: json!({ "value": "gabp" }),
                }
            } else {
                Invocation::Ping
            }
        }
    };

    let mut progress = Progress::new(args.calls * if game.is_some() { 2 } else { 1 }, "calls");
    let warm_up = (args.calls / 10).clamp(1, 500);
    let gabp = measure_calls(
        &bridge,
        &invocation,
        warm_up,
        args.calls,
        concurrency,
        &mut progress,
        0,
    )
    .await?;
    session.finish().await;
    let floor = match game {
        Some(game) => {
            let body = invocation.request_body()?;
            let floor = measure_echo(
                body,
                warm_up,
                args.calls,
                concurrency,
                &mut progress,
                args.calls,
            )
            .await?;
            game.handle.shutdown().await;
            Some(floor)
        }
        None => None,
    };
    progress.clear();

    let text = if args.json {
        let mut gabp_json = gabp.json(json!({
            "concurrency": args.concurrency,
            "call": invocation.label(),
            "endpoint": where_,
        }));
        if let (Some(floor), Some(object)) = (&floor, gabp_json.as_object_mut()) {
            object.insert("vs_floor".into(), ratios(&gabp, floor));
        }
        let mut out = json!({ "gabp": gabp_json });
        if let (Some(hint), Some(object)) = (nagle_hint(gabp.p50), out.as_object_mut()) {
            object.insert("hint".into(), json!(hint));
        }
        if let (Some(floor), Some(object)) = (&floor, out.as_object_mut()) {
            object.insert(
                "floor".into(),
                floor.json(json!({
                    "concurrency": args.concurrency,
                    "call": "raw framed echo",
                    "frame_bytes": invocation.request_body()?.len(),
                })),
            );
        }
        format!("{out}\n")
    } else {
        human(args, &invocation, &where_, &gabp, floor.as_ref())
    };
    stdout
        .write_all(text.as_bytes())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

/// Shows the progress of a run on `progress` until `done` reaches `total` or `finished` resolves.
async fn with_progress<T>(
    progress: &mut Progress,
    phase: &str,
    offset: u64,
    done: &AtomicU64,
    finished: impl std::future::Future<Output = T>,
) -> T {
    tokio::pin!(finished);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            out = &mut finished => return out,
            _ = tick.tick() => progress.set(offset + done.load(Ordering::Relaxed), phase),
        }
    }
}

/// `warm_up` unmeasured calls, then `calls` measured ones, `concurrency` at a time.
async fn measure_calls(
    bridge: &Bridge,
    invocation: &Invocation,
    warm_up: u64,
    calls: u64,
    concurrency: usize,
    progress: &mut Progress,
    offset: u64,
) -> Result<Stats, String> {
    let fail = |i: u64, e: &SessionError| {
        format!(
            "{} failed (call {i}): {}",
            invocation.label(),
            describe_call_error(e)
        )
    };
    for i in 0..warm_up {
        invocation.call(bridge).await.map_err(|e| fail(i, &e))?;
    }
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(calls as usize)));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.min(calls as usize))
        .map(|_| {
            let (bridge, invocation) = (bridge.clone(), invocation.clone());
            let (next, done, latencies) = (next.clone(), done.clone(), latencies.clone());
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= calls {
                        break;
                    }
                    let start = Instant::now();
                    invocation.call(&bridge).await.map_err(|e| (i, e))?;
                    mine.push(start.elapsed());
                    done.fetch_add(1, Ordering::Relaxed);
                }
                latencies.lock().extend(mine);
                Ok::<(), (u64, SessionError)>(())
            })
        })
        .collect();
    let outcomes = with_progress(
        progress,
        "gabp",
        offset,
        &done,
        futures::future::join_all(workers),
    )
    .await;
    let elapsed = started.elapsed();
    for outcome in outcomes {
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err((i, e))) => return Err(fail(warm_up + i, &e)),
            Err(e) => return Err(format!("a benchmark task failed: {e}")),
        }
    }
    let latencies = std::mem::take(&mut *latencies.lock());
    Ok(Stats::from_latencies(latencies, elapsed))
}

/// The floor: a raw `Content-Length` framed echo over loopback TCP, frames of `body`'s size, `concurrency` in
/// flight on one connection.
async fn measure_echo(
    body: Bytes,
    warm_up: u64,
    calls: u64,
    concurrency: usize,
    progress: &mut Progress,
    offset: u64,
) -> Result<Stats, String> {
    let listener = Listener::bind(&Endpoint::tcp_v4(0))
        .await
        .map_err(|e| format!("cannot listen on loopback: {e}"))?;
    let endpoint = listener.endpoint().clone();
    let echo = tokio::spawn(async move {
        let Ok(connection) = listener.accept().await else {
            return;
        };
        let (mut reader, mut writer) = connection.into_split();
        while let Some(Ok(frame)) = reader.next().await {
            let Some(body) = frame.into_body() else {
                continue;
            };
            if writer.send(body).await.is_err() {
                break;
            }
        }
    });
    let connection = gabp_transport::connect(&endpoint)
        .await
        .map_err(|e| format!("cannot connect to the echo: {e}"))?;
    let (mut reader, mut writer) = connection.into_split();
    let echo_error = |e: &dyn std::fmt::Display| format!("the echo failed: {e}");

    for _ in 0..warm_up {
        echo_once(&mut writer, &mut reader, &body).await?;
    }

    let done = Arc::new(AtomicU64::new(0));
    // The floor's client runs on the runtime's workers, as the bridge's callers do (`measure_calls`), so that
    // neither side pays for waking the thread that awaits the results.
    if concurrency == 1 {
        // One at a time: the tightest loop there is, one task writing and reading.
        let run = tokio::spawn({
            let done = done.clone();
            async move {
                let mut latencies = Vec::with_capacity(calls as usize);
                let started = Instant::now();
                for _ in 0..calls {
                    let start = Instant::now();
                    echo_once(&mut writer, &mut reader, &body).await?;
                    latencies.push(start.elapsed());
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, String>((latencies, started.elapsed()))
            }
        });
        let ran = with_progress(progress, "floor", offset, &done, run).await;
        let (latencies, elapsed) = ran.map_err(|e| echo_error(&e))??;
        echo.abort();
        return Ok(Stats::from_latencies(latencies, elapsed));
    }
    let window = Arc::new(Semaphore::new(concurrency));
    let (sent_at_tx, mut sent_at_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let started = Instant::now();
    let sender = {
        let window = window.clone();
        tokio::spawn(async move {
            for _ in 0..calls {
                match window.acquire().await {
                    Ok(permit) => permit.forget(),
                    Err(_) => break,
                }
                if sent_at_tx.send(Instant::now()).is_err() {
                    break;
                }
                if let Err(e) = writer.send(body.clone()).await {
                    return Err(e.to_string());
                }
            }
            Ok(writer)
        })
    };
    let receiver = tokio::spawn({
        let done = done.clone();
        async move {
            let mut latencies = Vec::with_capacity(calls as usize);
            for _ in 0..calls {
                match reader.next().await {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e.to_string()),
                    None => return Err("the connection closed".to_owned()),
                }
                let Some(sent_at) = sent_at_rx.recv().await else {
                    return Err("the sender stopped".to_owned());
                };
                latencies.push(sent_at.elapsed());
                window.add_permits(1);
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(latencies)
        }
    });
    let latencies = with_progress(progress, "floor", offset, &done, receiver)
        .await
        .map_err(|e| echo_error(&e))?;
    let elapsed = started.elapsed();
    let writer = sender
        .await
        .map_err(|e| echo_error(&e))?
        .map_err(|e| echo_error(&e))?;
    let latencies = latencies.map_err(|e| echo_error(&e))?;
    drop(writer);
    echo.abort();
    Ok(Stats::from_latencies(latencies, elapsed))
}

/// One frame to the raw echo and its copy back.
async fn echo_once(
    writer: &mut gabp_transport::FrameWriter,
    reader: &mut gabp_transport::FrameReader,
    body: &Bytes,
) -> Result<(), String> {
    let echo_error = |e: &dyn std::fmt::Display| format!("the echo failed: {e}");
    writer
        .send(body.clone())
        .await
        .map_err(|e| echo_error(&e))?;
    match reader.next().await {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(echo_error(&e)),
        None => Err(echo_error(&"the connection closed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let ms = |n: u64| Duration::from_millis(n);
        let sorted: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(percentile(&sorted, 50), ms(50));
        assert_eq!(percentile(&sorted, 99), ms(99));
        assert_eq!(percentile(&[ms(7)], 99), ms(7));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
        let s = Stats::from_latencies(vec![ms(3), ms(1), ms(2)], Duration::from_secs(1));
        assert_eq!((s.p50, s.p99, s.calls), (ms(2), ms(3), 3));
        assert!((s.calls_per_s - 3.0).abs() < 1e-9);
        assert_eq!(micros(Duration::from_nanos(41_260)), 41.3);
    }

    #[test]
    fn request_bodies_are_real_requests() {
        let tool = Invocation::Tool {
            name: "demo/echo".into(),
            arguments: json!({"value": "gabp"}),
        };
        let body = tool.request_body().unwrap();
        let message: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(message["method"], "tools/call");
        assert_eq!(message["params"]["name"], "demo/echo");
        assert!(Invocation::Ping.request_body().unwrap().len() > 50);
    }
}
