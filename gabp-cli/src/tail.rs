//! `gabp tail`: subscribe to channels and print their events as JSON lines until interrupted.

use std::collections::HashMap;
use std::io::Write;

use clap::Args;
use futures::StreamExt;
use gabp_session::bridge::{Bridge, ConnectionState, ReconnectPolicy, SubscriptionItem};
use gabp_session::Error as SessionError;

use crate::target::{describe_call_error, TargetArgs};

/// Long help of `gabp tail`.
pub const EXAMPLES: &str = "\
Each event is one line of JSON on stdout (the whole event message: channel, seq, payload, ...), in seq order
per channel. Status lines go to stderr: `connected to ENDPOINT`, `subscribed to CHANNEL, ...`, and where
events were lost (a gap in seq, or this reader fell behind) `warning: CHANNEL: N events lost after seq S`.
When the connection is lost (the game restarts), it reconnects to the same endpoint and subscribes again,
trying for as long as it runs; with --no-reconnect it stops instead (exit 1). Runs until Ctrl-C (exit 0).

Examples:
  gabp tail --connect tcp://127.0.0.1:4711 --token $TOKEN player/move world/block_change
  gabp tail player/move | jq -c .payload      # the endpoint and token from bridge.json";

/// Arguments of `gabp tail`.
#[derive(Debug, Clone, Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The channels to follow.
    #[arg(value_name = "CHANNEL", required = true)]
    pub channels: Vec<String>,
    /// Stop when the connection is lost instead of reconnecting.
    #[arg(long)]
    pub no_reconnect: bool,
}

/// How `gabp tail` reconnects: soon at first, then every 2 s at most, for as long as it runs.
fn reconnect_policy() -> ReconnectPolicy {
    ReconnectPolicy::new()
        .initial_delay(std::time::Duration::from_millis(100))
        .max_delay(std::time::Duration::from_secs(2))
        .max_attempts(None)
}

/// Runs `gabp tail` until Ctrl-C.
///
/// # Errors
///
/// One line: an unreachable mod, a refused subscription, or a lost connection.
pub async fn run(
    args: &TailArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), String> {
    let target = args.target.resolve_from_env()?;
    let mut builder = Bridge::builder(target.token.clone());
    if !args.no_reconnect {
        builder = builder.reconnect(reconnect_policy());
    }
    let session = target.open(builder).await?;
    let bridge = session.bridge.clone();
    let mut events = bridge
        .subscribe(args.channels.iter().cloned())
        .await
        .map_err(|e| format!("events/subscribe: {}", describe_call_error(&e)))?;
    let granted = events.channels();
    let refused: Vec<&str> = args
        .channels
        .iter()
        .filter(|c| !granted.contains(c))
        .map(String::as_str)
        .collect();
    if granted.is_empty() {
        session.finish().await;
        return Err(format!(
            "the mod publishes none of these channels: {}",
            refused.join(", ")
        ));
    }
    status(stderr, &format!("connected to {}", target.reach));
    status(stderr, &format!("subscribed to {}", granted.join(", ")));
    for channel in refused {
        let _ = writeln!(
            stderr,
            "warning: {channel}: the mod does not publish this channel; not following it"
        );
    }
    let mut last_seq: HashMap<String, u64> = HashMap::new();
    let mut states = bridge.connection_state();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let item = tokio::select! {
            _ = &mut interrupted => {
                session.finish().await;
                return Ok(());
            }
            Ok(()) = states.changed() => {
                let state = states.borrow_and_update().clone();
                if let ConnectionState::Reconnecting { attempt: 1, reason } = state {
                    status(stderr, &format!("connection lost ({reason}); reconnecting to {}", target.reach));
                }
                continue;
            }
            item = events.next() => item,
        };
        match item {
            Some(Ok(SubscriptionItem::Event(event))) => {
                last_seq.insert(event.channel.to_string(), event.seq);
                let line = serde_json::to_string(&event).map_err(|e| e.to_string())?;
                writeln!(stdout, "{line}")
                    .and_then(|()| stdout.flush())
                    .map_err(|e| format!("cannot write to stdout: {e}"))?;
            }
            Some(Ok(SubscriptionItem::Lagged { channel, missed })) => {
                let plural = if missed == 1 { "event" } else { "events" };
                let line = match last_seq.get(channel.as_str()) {
                    Some(seq) => {
                        format!("warning: {channel}: {missed} {plural} lost after seq {seq}")
                    }
                    None => format!("warning: {channel}: {missed} {plural} lost"),
                };
                let _ = writeln!(stderr, "{line}");
                let _ = stderr.flush();
            }
            Some(Ok(SubscriptionItem::Reconnected)) => {
                last_seq.clear();
                status(
                    stderr,
                    &format!(
                        "reconnected to {} and subscribed again to {}",
                        target.reach,
                        granted.join(", ")
                    ),
                );
                status(
                    stderr,
                    "warning: events published while disconnected are lost",
                );
            }
            Some(Ok(_)) => {}
            Some(Err(SessionError::Disconnected | SessionError::Closed)) | None => {
                return Err("the mod closed the connection".into());
            }
            Some(Err(e)) => return Err(describe_call_error(&e)),
        }
    }
}

/// One status line on stderr, at once.
fn status(stderr: &mut dyn Write, line: &str) {
    let _ = writeln!(stderr, "{line}").and_then(|()| stderr.flush());
}
