//! `gabp bench`: latency and throughput of calls to a mod; with `--self`, against the demo game in-process and
//! a raw framed echo over the same transport (the floor no GABP implementation can beat).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use gabp_session::bridge::Bridge;
use gabp_session::Error as SessionError;
use gabp_types::{Message, MethodName, Request};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::target::{describe_call_error, TargetArgs};
use crate::terminal::Progress;
use floor::Floor;
use gabp_demo::InProcessGame;
use gabp_testkit::conformance::nagle_hint;
use report::{human, Ratios};

mod floor;
mod pick;
mod report;

/// Long help of `gabp bench`.
pub const EXAMPLES: &str = "\
Makes CALLS calls (after a short warm-up), CONCURRENCY at a time on one connection, and prints the median
(p50) and 99th-percentile (p99) latency and the calls per second. Without --tool it calls demo/echo when the
mod has it, else session/ping when the mod lists it, else a tool tagged read-only that needs no arguments; with
none of these it stops at once and lists the tools that need no arguments for --tool. With --self it starts the demo game in-process on loopback TCP, and also
measures a raw framed echo over the same transport with frames of the same size: the floor, with the ratio
of GABP to it. The two take turns in ROUNDS short rounds, and each ratio is the median of the rounds' ratios,
so that a machine that slows down or speeds up for a while moves both sides alike. --json prints one object
{\"gabp\": {...}, \"floor\": {...}} (floor only with --self) whose parts have p50_us, p99_us and calls_per_s;
with --self, gabp.vs_floor has the ratios and the number of rounds. --from-threads makes the calls from threads
outside the runtime, each blocked until its answer, as the C and C# bindings do: the difference from the
default is what handing each call to the runtime and its answer back costs (the floor stays on the runtime).

Examples:
  gabp bench --self
  gabp bench --self --calls 20000 --concurrency 16 --json
  gabp bench --self --from-threads
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
    /// The tool to call (default: demo/echo if the mod has it, else session/ping if it lists it, else a read-only
    /// tool that needs no arguments).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The tool's arguments, a JSON object (default: {"value": "gabp"} for demo/echo, else {}).
    #[arg(long = "args", value_name = "JSON")]
    pub arguments: Option<String>,
    /// With --self: how many rounds GABP and the floor take turns in (the calls are split between them; at most
    /// one round per call).
    #[arg(long, value_name = "N", default_value_t = 10, requires = "in_process", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub rounds: u64,
    /// Make the calls from threads outside the runtime, each blocking until its answer (one thread per call
    /// in flight, so CONCURRENCY at most 512), as the C and C# bindings do, instead of from tasks on the runtime.
    /// With --self the floor's calls stay on the runtime.
    #[arg(long)]
    pub from_threads: bool,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The most threads `--from-threads` blocks at once: tokio's default for its blocking threads.
const MAX_CALLING_THREADS: u64 = 512;

/// Where the calls are made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Callers {
    /// Tasks on the bridge's runtime.
    Tasks,
    /// Threads outside it, each blocked on its call: each call and each answer crosses to another thread.
    Threads,
}

impl Callers {
    fn of(args: &BenchArgs) -> Callers {
        if args.from_threads {
            Callers::Threads
        } else {
            Callers::Tasks
        }
    }

    fn label(self) -> &'static str {
        match self {
            Callers::Tasks => "tasks",
            Callers::Threads => "threads",
        }
    }
}

/// The latencies of one measured run, and how long it took.
#[derive(Debug, Clone, Default)]
struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
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
    /// Of the runs together: their latencies as one set, their calls over the time they took in all.
    fn pooled(runs: &[Run]) -> Stats {
        let latencies = runs.iter().flat_map(|r| r.latencies.iter().copied());
        Stats::from_latencies(latencies.collect(), runs.iter().map(|r| r.elapsed).sum())
    }

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
    if args.from_threads && args.concurrency > MAX_CALLING_THREADS {
        return Err(format!(
            "--from-threads makes a thread per call in flight: --concurrency is at most {MAX_CALLING_THREADS}"
        ));
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
            let serves_ping = bridge.welcome().capabilities.has_method("session/ping");
            pick::default_invocation(&tools, serves_ping)?
        }
    };

    let mut progress = Progress::new(args.calls * if game.is_some() { 2 } else { 1 }, "calls");
    let warm_up = (args.calls / 10).clamp(1, 500);
    let measured = match game {
        Some(game) => {
            let rounds = args.rounds.min(args.calls);
            let measured = in_turns(
                &bridge,
                &invocation,
                Turns {
                    warm_up,
                    calls: args.calls,
                    rounds,
                    concurrency,
                    callers: Callers::of(args),
                },
                &mut progress,
            )
            .await;
            session.finish().await;
            game.handle.shutdown().await;
            measured?
        }
        None => {
            warm_up_calls(&bridge, &invocation, warm_up).await?;
            let run = measure_calls(
                &bridge,
                &invocation,
                args.calls,
                (concurrency, Callers::of(args)),
                &mut progress,
                0,
            )
            .await?;
            session.finish().await;
            (Stats::pooled(&[run]), None)
        }
    };
    progress.clear();
    let (gabp, floor) = (&measured.0, measured.1.as_ref());

    let text = if args.json {
        let mut gabp_json = gabp.json(json!({
            "concurrency": args.concurrency,
            "callers": Callers::of(args).label(),
            "call": invocation.label(),
            "endpoint": where_,
        }));
        if let (Some((_, ratios)), Some(object)) = (floor, gabp_json.as_object_mut()) {
            object.insert("vs_floor".into(), ratios.json());
        }
        let mut out = json!({ "gabp": gabp_json });
        if let (Some(hint), Some(object)) = (nagle_hint(gabp.p50), out.as_object_mut()) {
            object.insert("hint".into(), json!(hint));
        }
        if let (Some((floor, _)), Some(object)) = (floor, out.as_object_mut()) {
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
        human(args, &invocation, &where_, gabp, floor)
    };
    stdout
        .write_all(text.as_bytes())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

/// How `gabp bench --self` splits its calls.
#[derive(Debug, Clone, Copy)]
struct Turns {
    warm_up: u64,
    calls: u64,
    rounds: u64,
    concurrency: usize,
    callers: Callers,
}

impl Turns {
    /// The calls of round `round` on each side: `calls` split as evenly as it goes.
    fn calls_in(&self, round: u64) -> u64 {
        let rounds = self.rounds.max(1);
        self.calls / rounds + u64::from(round < self.calls % rounds)
    }
}

/// GABP and the floor in turns: each round measures both, the first of the two alternating, and the ratios are
/// the medians of the rounds' ratios. The figures of each side are those of its rounds together.
async fn in_turns(
    bridge: &Bridge,
    invocation: &Invocation,
    turns: Turns,
    progress: &mut Progress,
) -> Result<(Stats, Option<(Stats, Ratios)>), String> {
    let mut floor = Floor::start(invocation.request_body()?).await?;
    warm_up_calls(bridge, invocation, turns.warm_up).await?;
    floor.warm_up(turns.warm_up).await?;
    let (mut gabp_runs, mut floor_runs) = (Vec::new(), Vec::new());
    let mut offset = 0;
    for round in 0..turns.rounds {
        let calls = turns.calls_in(round);
        for gabp_turn in [round % 2 == 0, round % 2 == 1] {
            let run = if gabp_turn {
                measure_calls(
                    bridge,
                    invocation,
                    calls,
                    (turns.concurrency, turns.callers),
                    progress,
                    offset,
                )
                .await?
            } else {
                floor
                    .measure(calls, turns.concurrency, progress, offset)
                    .await?
            };
            offset += calls;
            if gabp_turn {
                gabp_runs.push(run);
            } else {
                floor_runs.push(run);
            }
        }
    }
    let ratios = Ratios::paired(&gabp_runs, &floor_runs);
    Ok((
        Stats::pooled(&gabp_runs),
        Some((Stats::pooled(&floor_runs), ratios)),
    ))
}

/// `calls` unmeasured calls, one at a time.
async fn warm_up_calls(bridge: &Bridge, invocation: &Invocation, calls: u64) -> Result<(), String> {
    for i in 0..calls {
        invocation
            .call(bridge)
            .await
            .map_err(|e| call_failed(invocation, i, &e))?;
    }
    Ok(())
}

fn call_failed(invocation: &Invocation, i: u64, e: &SessionError) -> String {
    format!(
        "{} failed (call {i}): {}",
        invocation.label(),
        describe_call_error(e)
    )
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

/// `calls` measured calls, `concurrency` at a time, made by `callers`.
async fn measure_calls(
    bridge: &Bridge,
    invocation: &Invocation,
    calls: u64,
    (concurrency, callers): (usize, Callers),
    progress: &mut Progress,
    offset: u64,
) -> Result<Run, String> {
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let capacity = usize::try_from(calls).unwrap_or(0);
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(capacity)));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.min(capacity))
        .map(|_| {
            let (bridge, invocation) = (bridge.clone(), invocation.clone());
            let (next, done, latencies) = (next.clone(), done.clone(), latencies.clone());
            let work = async move {
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
            };
            match callers {
                Callers::Tasks => tokio::spawn(work),
                Callers::Threads => {
                    let runtime = tokio::runtime::Handle::current();
                    tokio::task::spawn_blocking(move || runtime.block_on(work))
                }
            }
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
            Ok(Err((i, e))) => return Err(call_failed(invocation, i, &e)),
            Err(e) => return Err(format!("a benchmark task failed: {e}")),
        }
    }
    let latencies = std::mem::take(&mut *latencies.lock());
    Ok(Run { latencies, elapsed })
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
    fn rounds_split_the_calls_evenly() {
        let turns = |calls, rounds| Turns {
            warm_up: 1,
            calls,
            rounds,
            concurrency: 1,
            callers: Callers::Tasks,
        };
        let split = |t: Turns| (0..t.rounds).map(|r| t.calls_in(r)).collect::<Vec<_>>();
        assert_eq!(split(turns(2000, 10)), vec![200; 10]);
        assert_eq!(split(turns(23, 4)), vec![6, 6, 6, 5]);
        assert_eq!(split(turns(3, 3)), vec![1, 1, 1]);
        let pooled = Stats::pooled(&[
            Run {
                latencies: vec![Duration::from_micros(3), Duration::from_micros(1)],
                elapsed: Duration::from_micros(4),
            },
            Run {
                latencies: vec![Duration::from_micros(2)],
                elapsed: Duration::from_micros(2),
            },
        ]);
        assert_eq!((pooled.calls, pooled.p50), (3, Duration::from_micros(2)));
        assert!((pooled.calls_per_s - 500_000.0).abs() < 1e-3);
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
