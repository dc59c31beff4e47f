//! What the pages follow live: every event of every channel the mod advertises, the gaps in them, and the
//! connection state, as one server-sent event stream per page. A page opened later first gets the recent
//! log.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use gabp_session::bridge::{Bridge, ConnectionState, SubscriptionItem};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::target::describe_call_error;

/// How many log entries a page opened later gets.
const BACKLOG: usize = 500;

/// The live feed shared by the pages.
#[derive(Clone)]
pub struct Feed {
    shared: Arc<Mutex<Shared>>,
    sender: broadcast::Sender<String>,
}

struct Shared {
    backlog: VecDeque<String>,
    state: String,
}

impl Feed {
    /// Starts following `bridge`: its connection state, and the channels it advertises.
    pub async fn start(bridge: &Bridge) -> Feed {
        let (sender, _) = broadcast::channel(1024);
        let feed = Feed {
            shared: Arc::new(Mutex::new(Shared {
                backlog: VecDeque::new(),
                state: state_message(&bridge.state()),
            })),
            sender,
        };
        let mut states = bridge.connection_state();
        let states_feed = feed.clone();
        tokio::spawn(async move {
            while states.changed().await.is_ok() {
                let message = state_message(&states.borrow_and_update().clone());
                states_feed.set_state(message);
            }
        });
        let channels: Vec<String> = bridge
            .welcome()
            .capabilities
            .events
            .as_ref()
            .map(|events| events.iter().cloned().collect())
            .unwrap_or_default();
        if channels.is_empty() {
            return feed;
        }
        match bridge.subscribe(channels).await {
            Ok(mut events) => {
                let events_feed = feed.clone();
                feed.push(json!({"type": "subscribed", "channels": events.channels()}));
                tokio::spawn(async move {
                    while let Some(item) = events.next().await {
                        let message = match item {
                            Ok(SubscriptionItem::Event(event)) => json!({
                                "type": "event",
                                "event": serde_json::to_value(&event).unwrap_or(Value::Null),
                            }),
                            Ok(SubscriptionItem::Lagged { channel, missed }) => {
                                json!({"type": "gap", "channel": channel.as_str(), "missed": missed})
                            }
                            Ok(SubscriptionItem::Reconnected) => json!({"type": "reconnected"}),
                            Ok(_) => continue,
                            Err(e) => {
                                json!({"type": "error", "message": describe_call_error(&e)})
                            }
                        };
                        events_feed.push(message);
                    }
                });
            }
            Err(e) => feed.push(json!({
                "type": "error",
                "message": format!("events/subscribe: {}", describe_call_error(&e)),
            })),
        }
        feed
    }

    /// Adds an entry to the log and sends it to the pages.
    fn push(&self, message: Value) {
        let text = message.to_string();
        let mut shared = self.shared.lock();
        if shared.backlog.len() == BACKLOG {
            shared.backlog.pop_front();
        }
        shared.backlog.push_back(text.clone());
        let _ = self.sender.send(text);
    }

    fn set_state(&self, message: String) {
        let mut shared = self.shared.lock();
        shared.state.clone_from(&message);
        let _ = self.sender.send(message);
    }

    /// The stream of one page: the state, the recent log, then what comes.
    pub fn stream(&self) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
        let (first, receiver) = {
            let shared = self.shared.lock();
            let mut first = vec![shared.state.clone()];
            first.extend(shared.backlog.iter().cloned());
            (first, self.sender.subscribe())
        };
        let live = futures::stream::unfold(receiver, |mut receiver| async move {
            let text = match receiver.recv().await {
                Ok(text) => text,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    json!({"type": "gap", "channel": null, "missed": missed}).to_string()
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((text, receiver))
        });
        let stream = futures::stream::iter(first)
            .chain(live)
            .map(|text| Ok(SseEvent::default().data(text)));
        Sse::new(stream).keep_alive(KeepAlive::default())
    }
}

/// The connection state as the page shows it.
fn state_message(state: &ConnectionState) -> String {
    let (name, detail) = match state {
        ConnectionState::Connecting => ("connecting", String::new()),
        ConnectionState::Connected { generation } => {
            ("connected", format!("connection #{generation}"))
        }
        ConnectionState::Reconnecting { attempt, reason } => (
            "reconnecting",
            format!("{reason}; reconnect attempt {attempt}"),
        ),
        ConnectionState::Disconnected { reason } => ("disconnected", reason.to_string()),
        ConnectionState::Closed => ("closed", String::new()),
        _ => ("unknown", format!("{state:?}")),
    };
    json!({
        "type": "state",
        "state": name,
        "generation": state.generation(),
        "detail": detail,
    })
    .to_string()
}
