//! Event channels as MCP resources: each channel subscribed with `games_subscribe` is
//! `gabp-game://<gameId>/events/<channel>`. A client subscribed to one (`resources/subscribe`) gets
//! `notifications/resources/updated` as soon as events of it arrive; reading it returns the events since that
//! client's last read (docs/mcp.md §Events as resources).

use std::time::Duration;

use gabp_hub::{Game, GameStatus, HubEvent, LiveHub};
use rmcp::model::{Resource, ResourceContents, ResourceUpdatedNotificationParam};
use rmcp::ErrorData as McpError;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use crate::push::{EventSub, Session, Sessions};
use crate::resources::SCHEME;

/// How long the pusher waits after an arrival, so that a burst of events is one notification.
const COALESCE: Duration = Duration::from_millis(10);

/// The channel of `inner` (a game URI below `gabp-game://<gameId>/`), when it names an event resource.
pub(crate) fn channel_of(inner: &str) -> Option<&str> {
    inner.strip_prefix("events/").filter(|c| !c.is_empty())
}

fn uri(game: &str, channel: &str) -> String {
    format!("{SCHEME}{game}/events/{channel}")
}

/// The event resources of a connected game.
pub(crate) fn list(game: &Game) -> Vec<Resource> {
    game.subscribed_channels()
        .into_iter()
        .map(|channel| {
            let mut resource = Resource::new(
                uri(game.id(), &channel),
                format!("{} events on {channel}", game.id()),
            );
            resource.description = Some(
                "The events since this client's last read; subscribe to hear when there are new ones"
                    .to_owned(),
            );
            resource.mime_type = Some("application/json".to_owned());
            resource
        })
        .collect()
}

fn not_subscribed(uri: &str, game: &Game, channel: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "resource {uri} not found: game '{}' has no subscription to '{channel}'; use games_subscribe first",
            game.id()
        ),
        Some(json!({ "uri": uri })),
    )
}

fn check(uri: &str, game: &Game, channel: &str) -> Result<(), McpError> {
    if game.subscribed_channels().iter().any(|c| c == channel) {
        Ok(())
    } else {
        Err(not_subscribed(uri, game, channel))
    }
}

/// `resources/subscribe`: updates from now on; a first read returns the events from now on.
pub(crate) fn subscribe(
    session: &Session,
    uri: &str,
    game: &Game,
    channel: &str,
) -> Result<(), McpError> {
    check(uri, game, channel)?;
    let end = game.events_end();
    let mut subs = session.events.lock();
    let sub = subs.entry(uri.to_owned()).or_insert_with(|| EventSub {
        game: game.id().to_owned(),
        channel: channel.to_owned(),
        cursor: Some(end),
        ..EventSub::default()
    });
    sub.subscribed = true;
    sub.told = Some(end);
    Ok(())
}

/// `resources/unsubscribe`: no more updates (the read position is kept).
pub(crate) fn unsubscribe(session: &Session, uri: &str) {
    if let Some(sub) = session.events.lock().get_mut(uri) {
        sub.subscribed = false;
    }
}

/// `resources/read`: the events since this client's last read (or since it subscribed), with the gaps.
pub(crate) fn read(
    session: &Session,
    uri: &str,
    game: &Game,
    channel: &str,
) -> Result<ResourceContents, McpError> {
    check(uri, game, channel)?;
    let batch = {
        let mut subs = session.events.lock();
        let sub = subs.entry(uri.to_owned()).or_insert_with(|| EventSub {
            game: game.id().to_owned(),
            channel: channel.to_owned(),
            ..EventSub::default()
        });
        let batch = game.channel_events(channel, sub.cursor);
        sub.cursor = Some(batch.cursor);
        batch
    };
    let text = json!({
        "gameId": game.id(), "channel": channel, "events": batch.events, "gaps": batch.gaps,
    })
    .to_string();
    Ok(ResourceContents::TextResourceContents {
        uri: uri.to_owned(),
        mime_type: Some("application/json".to_owned()),
        text,
        meta: None,
    })
}

/// Tells the subscribed clients of `game`'s event resources when events of their channel arrive: woken by
/// each arrival (not a poll), a burst within [`COALESCE`] is one notification per resource.
pub(crate) async fn push(game: Game, sessions: Sessions) {
    loop {
        let arrived = game.events_arrived();
        tokio::pin!(arrived);
        arrived.as_mut().enable();
        if game.status() == GameStatus::Connected {
            tell(&game, &sessions).await;
        }
        arrived.await;
        tokio::time::sleep(COALESCE).await;
    }
}

async fn tell(game: &Game, sessions: &Sessions) {
    let sessions: Vec<_> = sessions.lock().clone();
    for session in sessions {
        let Some(peer) = session.peer.get() else {
            continue;
        };
        let end = game.events_end();
        let due: Vec<String> = session
            .events
            .lock()
            .iter_mut()
            .filter(|(_, sub)| sub.subscribed && sub.game == game.id())
            .filter_map(|(uri, sub)| {
                let new = game.channel_events(&sub.channel, sub.told.or(sub.cursor));
                if new.events.is_empty() && new.gaps.is_empty() {
                    return None;
                }
                sub.told = Some(end);
                Some(uri.clone())
            })
            .collect();
        for uri in due {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
    }
}

/// Keeps a pusher for each game of the configuration in effect (config.json is read again when it changes).
pub(crate) fn start(live: LiveHub, sessions: Sessions) {
    tokio::spawn(async move {
        let mut changes = live.current().changes();
        let mut pushers: Vec<(Game, tokio::task::JoinHandle<()>)> = Vec::new();
        loop {
            let hub = live.current();
            pushers.retain(|(game, task)| {
                let kept = hub.games().any(|g| g.is_same(game));
                if !kept {
                    task.abort();
                }
                kept
            });
            for game in hub.games() {
                if !pushers.iter().any(|(g, _)| g.is_same(game)) {
                    let task = tokio::spawn(push(game.clone(), sessions.clone()));
                    pushers.push((game.clone(), task));
                }
            }
            loop {
                match changes.recv().await {
                    Ok(HubEvent::GamesChanged) | Err(RecvError::Lagged(_)) => break,
                    Ok(_) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        }
    });
}
