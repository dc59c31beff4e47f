//! `gabp record`: a transparent recording proxy between any bridge and any mod (SPEC/1.0 recording.md §5).
//! Bridges find it through the `bridge.json` it writes, with a token of its own; it presents the mod's real
//! token to the mod. SIGINT and SIGTERM end it after flushing the recording.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use gabp_record::{ProxyConfig, RecordingProxy, Software};
use gabp_transport::{BridgeConfig, Endpoint, Listener, Token};

use crate::target::{Reach, TargetArgs};

/// Long help of `gabp record`.
pub const EXAMPLES: &str = "\
The mod's endpoint and token: --to and --token (or GABP_TOKEN), else the mod's bridge.json (--mod-config,
else the platform path). Bridges connect to the recorder: it writes a bridge.json with its own endpoint and a
fresh token (--bridge-config, else the platform path; a mod's bridge.json there is put back on exit). The
recording is JSON Lines (SPEC/1.0 recording.md), flushed every second and on SIGINT or SIGTERM, which end it.
Tokens and session/hello auth are always redacted; --redact adds JSON pointers.

Examples:
  # Record every session of a bridge with the mod that listens on port 4000
  GABP_TOKEN=... gabp record --to tcp://127.0.0.1:4000 --out session.jsonl

  # The mod's bridge.json gives endpoint and token; the bridge's goes elsewhere
  gabp record --mod-config ~/.config/gabp/bridge.json --bridge-config /tmp/rec/bridge.json --out s.jsonl

  # Also hide the arguments' password member
  gabp record --to tcp://127.0.0.1:4000 --out s.jsonl --redact /params/arguments/password";

/// Arguments of `gabp record`.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Where bridges connect to the recorder: tcp://127.0.0.1:PORT (default: a free port) or
    /// unix:///path.sock.
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: Option<String>,
    /// The mod's endpoint (default: the endpoint in the mod's bridge.json).
    #[arg(long, value_name = "ENDPOINT")]
    pub to: Option<String>,
    /// The recording to write (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The mod's token (default: GABP_TOKEN, then the mod's bridge.json). Prefer GABP_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The bridge.json the mod wrote (default: the platform path).
    #[arg(long, value_name = "FILE")]
    pub mod_config: Option<PathBuf>,
    /// Where to write the bridge.json bridges use to reach the recorder (default: the platform path).
    #[arg(long, value_name = "FILE", conflicts_with = "no_bridge_config")]
    pub bridge_config: Option<PathBuf>,
    /// Write no bridge.json; the recorder's token is printed to stderr instead.
    #[arg(long)]
    pub no_bridge_config: bool,
    /// A JSON pointer to redact in every message, as `[redacted]` (repeatable), e.g. /params/arguments/password.
    #[arg(long = "redact", value_name = "POINTER")]
    pub redact: Vec<String>,
}

/// Runs `gabp record`; returns the exit code (0 after a signal ended it cleanly, 1 on an error).
pub fn run(args: &RecordArgs) -> u8 {
    crate::init_tracing("info");
    match crate::block_on(record(args)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// The JSON pointers of `--redact` and `--ignore`, checked.
pub fn pointers(flag: &str, pointers: &[String]) -> Result<Vec<String>, String> {
    for pointer in pointers {
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(format!("{flag} {pointer}: a JSON pointer starts with '/'"));
        }
    }
    Ok(pointers.to_vec())
}

/// The `bridge.json` a command writes for bridges: `--bridge-config FILE`, else the platform path, or none.
pub fn bridge_config_path(path: Option<&Path>, none: bool) -> Result<Option<PathBuf>, String> {
    if none {
        return Ok(None);
    }
    match path {
        Some(path) => Ok(Some(path.to_path_buf())),
        None => BridgeConfig::default_path()
            .map(Some)
            .map_err(|e| format!("no place for bridge.json (pass --bridge-config FILE): {e}")),
    }
}

async fn record(args: &RecordArgs) -> Result<(), String> {
    let redact = pointers("--redact", &args.redact)?;
    let target = TargetArgs {
        connect: args.to.clone(),
        spawn: None,
        token: args.token.clone(),
        config: args.mod_config.clone(),
        strict: false,
    }
    .resolve_from_env()?;
    let Reach::Endpoint(mod_endpoint) = target.reach else {
        return Err("--to: the recorder reaches a mod on a socket only".into());
    };
    let listen = match &args.listen {
        Some(text) => text
            .parse::<Endpoint>()
            .map_err(|e| format!("--listen: {e}"))?,
        None => Endpoint::tcp_v4(0),
    };
    if listen == Endpoint::Stdio {
        return Err("--listen: the recorder listens on a socket, not stdio".into());
    }
    let bridge_json = bridge_config_path(args.bridge_config.as_deref(), args.no_bridge_config)?;
    // Before anything can be connected to: a signal from now on ends the recording cleanly.
    let mut signals = crate::signals::Signals::new()?;
    let file = create_private(&args.out)?;
    let listener = Listener::bind(&listen)
        .await
        .map_err(|e| format!("--listen: {e}"))?;
    let proxy_token = Token::generate().map_err(|e| e.to_string())?;
    let mut config = ProxyConfig::new(mod_endpoint.clone(), target.token, proxy_token.clone());
    config.redact = redact;
    config.recorder = Software::new("gabp record", env!("CARGO_PKG_VERSION"));
    let handle = RecordingProxy::start(listener, config, Box::new(file));
    let endpoint = handle.endpoint().clone();
    // A mod's bridge.json at the same path is put back when the recording ends.
    let previous = match &bridge_json {
        Some(path) => {
            let previous = BridgeConfig::read(path).ok();
            BridgeConfig::new(proxy_token.clone(), endpoint.clone())
                .write_atomic(path)
                .map_err(|e| e.to_string())?;
            previous
        }
        None => {
            eprintln!(
                "recorder token: {} (bridges present it in session/hello)",
                proxy_token.expose_secret()
            );
            None
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "listening on {endpoint}").and_then(|()| stdout.flush()) {
        tracing::warn!(error = %e, "cannot write the listening line to stdout");
    }
    drop(stdout);
    tracing::info!(%endpoint, mod_endpoint = %mod_endpoint, out = %args.out.display(), "recording");
    let signal = signals.recv().await;
    tracing::info!(signal, "ending the recording");
    let stats = handle.shutdown().await;
    if let (Some(path), Some(previous)) = (&bridge_json, previous) {
        if let Err(e) = previous.write_atomic(path) {
            tracing::warn!(error = %e, "cannot put the mod's bridge.json back");
        }
    }
    let stats = stats.map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    eprintln!(
        "recorded {} messages on {} connections to {} ({} bytes forwarded but not recorded)",
        stats.recorded_frames,
        stats.connections,
        args.out.display(),
        stats.dropped_bytes
    );
    Ok(())
}

/// Creates `path` (replacing it), readable by its owner only: a recording holds the game's data.
fn create_private(path: &Path) -> Result<std::fs::File, String> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}
