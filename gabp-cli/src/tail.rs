//! `gabp tail`: subscribe to channels and print their events as JSON lines until interrupted.

use std::collections::HashMap;
use std::io::Write;

use clap::Args;
use futures::StreamExt;
use gabp_session::bridge::{Bridge, BridgeError, SubscriptionItem};

use crate::target::{describe_call_error, TargetArgs};

/// Long help of `gabp tail`.
pub const EXAMPLES: &str = "\
Each event is one line of JSON on stdout (the whole event message: channel, seq, payload, ...), in seq order
per channel. Where events were lost (a gap in seq, or this reader fell behind), a warning line goes to stderr:
`warning: CHANNEL: N events lost after seq S`. Runs until Ctrl-C (exit 0) or until the mod closes the
connection (exit 1).

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
    let session = target.open(Bridge::builder(target.token.clone())).await?;
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
    for channel in refused {
        let _ = writeln!(
            stderr,
            "warning: {channel}: the mod does not publish this channel; not following it"
        );
    }
    let mut last_seq: HashMap<String, u64> = HashMap::new();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let item = tokio::select! {
            _ = &mut interrupted => {
                session.finish().await;
                return Ok(());
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
                let _ = writeln!(
                    stderr,
                    "warning: reconnected; events published meanwhile are lost"
                );
            }
            Some(Ok(_)) => {}
            Some(Err(BridgeError::Disconnected | BridgeError::Closed)) | None => {
                return Err("the mod closed the connection".into());
            }
            Some(Err(e)) => return Err(describe_call_error(&e)),
        }
    }
}
