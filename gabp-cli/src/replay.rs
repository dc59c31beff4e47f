//! `gabp replay FILE --as-mod | --as-bridge`: a recording served as a mod, or replayed as the bridge against a
//! live mod with a report of every difference (SPEC/1.0 recording.md §6).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use gabp_record::matching::Mode;
use gabp_record::replay_bridge::{self, BridgeOptions};
use gabp_record::{Recording, ReplayMod, ReplayOptions};
use gabp_transport::{BridgeConfig, Endpoint, Listener, Token, GABP_TOKEN};

use crate::record::{bridge_config_path, pointers};
use crate::target::{Reach, TargetArgs};

/// Long help of `gabp replay`.
pub const EXAMPLES: &str = "\
--as-mod serves the recording as a mod: the recorded welcome, then for each request the answer to the
matching recorded one (same method and params, but for --ignore pointers; --ordered expects them in recorded
order) and the events that followed it, at their recorded offsets (at once with --no-timing). An unmatched
request is answered with an error naming the closest recorded request and the first field that differs. It
writes bridge.json like gabp mod (--bridge-config, else the platform path), with --token, GABP_TOKEN or a
fresh token.

--as-bridge sends what the bridge sent to a live mod (--connect, --token or GABP_TOKEN, else bridge.json)
and prints every difference from the recorded answers and events, ignoring ids, seq, timestamps and the
--ignore pointers. Exit status: 0 when nothing differs, 1 when something does, 2 on an error.

Examples:
  # A mock of the game for CI, on a free port, without waiting between events
  gabp replay session.jsonl --as-mod --no-timing --listen tcp://127.0.0.1:0

  # A regression test of a mod: does it still answer as it did?
  GABP_TOKEN=... gabp replay session.jsonl --as-bridge --connect tcp://127.0.0.1:4000 --ignore /result/tick";

/// Arguments of `gabp replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The recording (JSON Lines, from gabp record).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Serve the recording as a mod.
    #[arg(
        long,
        required_unless_present = "as_bridge",
        conflicts_with = "as_bridge"
    )]
    pub as_mod: bool,
    /// Replay the bridge side against a live mod and report the differences.
    #[arg(long)]
    pub as_bridge: bool,
    /// --as-mod: where to listen: tcp://127.0.0.1:PORT (default: a free port) or unix:///path.sock.
    #[arg(long, value_name = "ENDPOINT", conflicts_with = "as_bridge")]
    pub listen: Option<String>,
    /// --as-mod: where to write bridge.json (default: the platform path).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["as_bridge", "no_bridge_config"])]
    pub bridge_config: Option<PathBuf>,
    /// --as-mod: write no bridge.json (a fresh token is printed to stderr).
    #[arg(long, conflicts_with = "as_bridge")]
    pub no_bridge_config: bool,
    /// --as-mod: answer requests in recorded order only.
    #[arg(long, conflicts_with = "as_bridge")]
    pub ordered: bool,
    /// --as-mod: send answers and events at once, not at their recorded offsets.
    #[arg(long, conflicts_with = "as_bridge")]
    pub no_timing: bool,
    /// A JSON pointer left out of matching (--as-mod, into requests) or of the comparison (--as-bridge, into
    /// answers and events); repeatable.
    #[arg(long = "ignore", value_name = "POINTER")]
    pub ignore: Vec<String>,
    /// --as-bridge: the mod's endpoint (default: the endpoint in bridge.json).
    #[arg(long, value_name = "ENDPOINT", conflicts_with = "as_mod")]
    pub connect: Option<String>,
    /// The token: the one bridges must present (--as-mod), or the mod's (--as-bridge). Default: GABP_TOKEN,
    /// then (--as-bridge) bridge.json, or (--as-mod) a fresh one.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// --as-bridge: the bridge.json to take the endpoint and token from (default: the platform path).
    #[arg(long, value_name = "FILE", conflicts_with = "as_mod")]
    pub config: Option<PathBuf>,
}

/// Runs `gabp replay`: 0 when it ended cleanly (--as-mod) or nothing differed (--as-bridge), 1 when something
/// differed, 2 on an error.
pub fn run(args: &ReplayArgs) -> u8 {
    crate::init_tracing("info");
    let outcome = crate::block_on(async {
        let recording =
            Recording::read(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
        let ignore = pointers("--ignore", &args.ignore)?;
        if args.as_bridge {
            as_bridge(args, &recording, ignore).await
        } else {
            as_mod(args, &recording, ignore).await.map(|()| true)
        }
    });
    match outcome {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

async fn as_mod(
    args: &ReplayArgs,
    recording: &Recording,
    ignore: Vec<String>,
) -> Result<(), String> {
    let token = match (&args.token, std::env::var_os(GABP_TOKEN)) {
        (Some(token), _) => Some(Token::new(token.as_str()).map_err(|e| format!("--token: {e}"))?),
        (None, Some(value)) => {
            let value = value
                .into_string()
                .map_err(|_| format!("{GABP_TOKEN} is not valid UTF-8"))?;
            Some(Token::new(value).map_err(|e| format!("{GABP_TOKEN}: {e}"))?)
        }
        (None, None) => None,
    };
    let mut options = ReplayOptions::default();
    options.ignore = ignore;
    options.timing = !args.no_timing;
    if args.ordered {
        options.mode = Mode::Ordered;
    }
    let mut replay = ReplayMod::new(recording)
        .map_err(|e| format!("{}: {e}", args.file.display()))?
        .with_options(options);
    let generated = token.is_none();
    if let Some(token) = token {
        replay = replay.with_token(token);
    }
    let listen = match &args.listen {
        Some(text) => text
            .parse::<Endpoint>()
            .map_err(|e| format!("--listen: {e}"))?,
        None => Endpoint::tcp_v4(0),
    };
    let bridge_json = bridge_config_path(args.bridge_config.as_deref(), args.no_bridge_config)?;
    let mut signals = crate::signals::Signals::new()?;
    let listener = Listener::bind(&listen)
        .await
        .map_err(|e| format!("--listen: {e}"))?;
    let handle = replay.serve(listener);
    match &bridge_json {
        Some(path) => BridgeConfig::new(replay.token().clone(), handle.endpoint().clone())
            .write_atomic(path)
            .map_err(|e| e.to_string())?,
        None if generated => eprintln!(
            "generated token: {} (bridges present it in session/hello)",
            replay.token().expose_secret()
        ),
        None => {}
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(e) =
        writeln!(stdout, "listening on {}", handle.endpoint()).and_then(|()| stdout.flush())
    {
        tracing::warn!(error = %e, "cannot write the listening line to stdout");
    }
    drop(stdout);
    let signal = signals.recv().await;
    tracing::info!(signal, "stopping the replay");
    handle.shutdown().await;
    Ok(())
}

async fn as_bridge(
    args: &ReplayArgs,
    recording: &Recording,
    ignore: Vec<String>,
) -> Result<bool, String> {
    let target = TargetArgs {
        connect: args.connect.clone(),
        spawn: None,
        token: args.token.clone(),
        config: args.config.clone(),
        strict: false,
    }
    .resolve_from_env()?;
    let Reach::Endpoint(endpoint) = target.reach else {
        return Err("--connect: a replayed bridge reaches a mod on a socket only".into());
    };
    let mut options = BridgeOptions::default();
    options.ignore = ignore;
    let report = replay_bridge::replay(recording, &endpoint, &target.token, &options)
        .await
        .map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{report}");
    Ok(report.is_clean())
}
