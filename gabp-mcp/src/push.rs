//! What the hub sends a client without being asked, per MCP session: log messages (`logging/setLevel`,
//! `notifications/message`) from the hub and the games' consoles (docs/mcp.md §Console and logging), and
//! its event resources (`event_resources`).
#![allow(deprecated)] // MCP logging is what 2025-06-18 clients use.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use gabp_hub::console::{ConsoleLine, Stream};
use gabp_hub::events::Cursor;
use gabp_hub::{GameStatus, Hub, HubEvent, LiveHub};
use parking_lot::Mutex;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

/// Most console lines sent to clients per second (all games together); the rest are counted and said.
pub(crate) const MAX_LINES_PER_SECOND: u32 = 50;

/// One MCP session: its client, and what it asked for.
#[derive(Default)]
pub(crate) struct Session {
    pub(crate) peer: OnceLock<Peer<RoleServer>>,
    /// The rank of the level set with `logging/setLevel`; 0 until one is set (nothing is sent until then).
    level: AtomicU8,
    /// The event resources it read or subscribed to, by URI.
    pub(crate) events: Mutex<BTreeMap<String, EventSub>>,
}

/// One client's view of one event resource (`event_resources`).
#[derive(Debug, Clone, Default)]
pub(crate) struct EventSub {
    pub(crate) game: String,
    pub(crate) channel: String,
    /// Where its next read starts (`None`: the oldest event kept).
    pub(crate) cursor: Option<Cursor>,
    /// Whether it asked for updates (`resources/subscribe`).
    pub(crate) subscribed: bool,
    /// The log's end when it was last told of an update.
    pub(crate) told: Option<Cursor>,
}

/// The sessions of one server.
pub(crate) type Sessions = Arc<Mutex<Vec<Arc<Session>>>>;

/// RFC 5424 order, 1 (debug) to 8 (emergency).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

impl Session {
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.level.store(rank(level), Ordering::Relaxed);
    }

    fn wants(&self, level: LoggingLevel) -> bool {
        let set = self.level.load(Ordering::Relaxed);
        set != 0 && rank(level) >= set
    }
}

/// The sessions that want messages at `level`, with their clients.
fn listeners(sessions: &Sessions, level: LoggingLevel) -> Vec<Peer<RoleServer>> {
    let mut sessions = sessions.lock();
    sessions.retain(|s| s.peer.get().is_none_or(|p| !p.is_transport_closed()));
    sessions
        .iter()
        .filter(|s| s.wants(level))
        .filter_map(|s| s.peer.get().cloned())
        .collect()
}

async fn send(sessions: &Sessions, message: LoggingMessageNotificationParam) {
    for peer in listeners(sessions, message.level) {
        let _ = peer.notify_logging_message(message.clone()).await;
    }
}

/// A console line: stdout at `info`, stderr at `warning`; the logger is the game id.
fn console_message(line: &ConsoleLine) -> LoggingMessageNotificationParam {
    let level = match line.stream {
        Stream::Stderr => LoggingLevel::Warning,
        _ => LoggingLevel::Info,
    };
    LoggingMessageNotificationParam::new(
        level,
        json!({ "gameId": &*line.game, "stream": line.stream, "text": line.text }),
    )
    .with_logger(&*line.game)
}

/// The hub's message for a game's new status: exits on their own at `error`, lost connections at
/// `warning`, the rest at `info`; the logger is `gabp-hub`.
fn status_message(hub: &Hub, game: &str, status: GameStatus) -> LoggingMessageNotificationParam {
    let level = match status {
        GameStatus::Exited => LoggingLevel::Error,
        GameStatus::RunningDisconnected | GameStatus::Disconnected => LoggingLevel::Warning,
        _ => LoggingLevel::Info,
    };
    let snapshot = hub.game(game).ok().map(gabp_hub::Game::snapshot);
    let mut message = format!("Game '{game}': {}.", status.describe());
    let detail = match status {
        GameStatus::Exited => snapshot.as_ref().and_then(|s| s.last_exit.clone()),
        GameStatus::RunningDisconnected | GameStatus::Disconnected => {
            snapshot.as_ref().and_then(|s| s.last_error.clone())
        }
        _ => None,
    };
    if let Some(detail) = &detail {
        message.push_str(&format!(" ({detail})"));
    }
    LoggingMessageNotificationParam::new(
        level,
        json!({ "gameId": game, "status": status, "message": message }),
    )
    .with_logger("gabp-hub")
}

/// Passes the hub's status changes and the games' console lines on to the sessions that set a level, at
/// most [`MAX_LINES_PER_SECOND`] console lines a second; lines over that (or missed by a slow client) are
/// counted and the count is sent as a warning when the second is over.
pub(crate) async fn forward_logs(live: LiveHub, sessions: Sessions) {
    let mut lines = live.current().console_lines();
    let mut changes = live.current().changes();
    let mut last: BTreeMap<String, GameStatus> = BTreeMap::new();
    let mut window = Instant::now();
    let mut sent = 0u32;
    let mut dropped = 0u64;
    loop {
        let message = tokio::select! {
            line = lines.recv() => match line {
                Ok(line) => {
                    if listeners(&sessions, console_message(&line).level).is_empty() {
                        continue;
                    }
                    if window.elapsed() >= Duration::from_secs(1) {
                        window = Instant::now();
                        sent = 0;
                    }
                    if sent >= MAX_LINES_PER_SECOND {
                        dropped += 1;
                        continue;
                    }
                    sent += 1;
                    console_message(&line)
                }
                Err(RecvError::Lagged(n)) => {
                    dropped += n;
                    continue;
                }
                Err(RecvError::Closed) => return,
            },
            change = changes.recv() => match change {
                Ok(HubEvent::StatusChanged { game, status }) => {
                    if last.insert(game.clone(), status) == Some(status) {
                        continue;
                    }
                    status_message(&live.current(), &game, status)
                }
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(window + Duration::from_secs(1)), if dropped > 0 => {
                let text = format!(
                    "{dropped} console line(s) were not sent (more than {MAX_LINES_PER_SECOND} a second); \
                     read them with games_logs"
                );
                dropped = 0;
                window = Instant::now();
                sent = 0;
                LoggingMessageNotificationParam::new(
                    LoggingLevel::Warning,
                    json!({ "message": text, "dropped": true }),
                )
                .with_logger("gabp-hub")
            }
        };
        send(&sessions, message).await;
    }
}
