//! Game resources as MCP resources: `gabp-game://<gameId>/state` (what the hub knows of the game) and each
//! resource a connected game offers, as `gabp-game://<gameId>/<its uri>`, and `gabp-game://<gameId>/logs`
//! (the last lines the game printed). GABS's name for the state, `gab://<gameId>/state`, is read as well (not
//! listed, so that clients see each resource once).

use gabp_hub::{GameStatus, Hub, HubError};
use gabp_types::methods::ContentEncoding;
use rmcp::model::{
    ListResourcesResult, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};

/// The scheme of game resources.
pub(crate) const SCHEME: &str = "gabp-game://";

/// GABS's scheme, for the state resource only.
const GABS_SCHEME: &str = "gab://";

/// How many of a game's last console lines its `logs` resource holds (within games_logs' byte bound).
const LOGS_LINES: usize = 200;

fn state_uri(game: &str) -> String {
    format!("{SCHEME}{game}/state")
}

pub(crate) async fn list(hub: &Hub) -> Result<ListResourcesResult, McpError> {
    let mut resources = Vec::new();
    for game in hub.games() {
        let connected = game.status() == GameStatus::Connected;
        if connected || game.console_tail(1, &|_| true).matched > 0 {
            let mut logs = Resource::new(
                format!("{SCHEME}{}/logs", game.id()),
                format!("{} console", game.id()),
            );
            logs.description =
                Some("The last lines the game printed on stdout and stderr".to_owned());
            logs.mime_type = Some("text/plain".to_owned());
            resources.push(logs);
        }
        if !connected {
            continue;
        }
        let mut state = Resource::new(state_uri(game.id()), format!("{} game state", game.id()));
        state.mime_type = Some("application/json".to_owned());
        resources.push(state);
        resources.extend(crate::event_resources::list(game));
        // A game whose resources cannot be listed still shows its state.
        for info in game.resources().await.unwrap_or_default() {
            let mut resource = Resource::new(
                format!("{SCHEME}{}/{}", game.id(), info.uri.as_str()),
                info.name.clone(),
            );
            resource.description = info.description.clone();
            resource.mime_type = info.mime_type.clone();
            resources.push(resource);
        }
    }
    Ok(ListResourcesResult {
        resources,
        ..Default::default()
    })
}

fn not_found(uri: &str, why: impl std::fmt::Display) -> McpError {
    McpError::resource_not_found(
        format!("resource {uri} not found: {why}"),
        Some(json!({ "uri": uri })),
    )
}

/// The game and the game's own URI (`state` for the hub's view) that `uri` names.
pub(crate) fn check_uri<'u>(
    hub: &Hub,
    uri: &'u str,
) -> Result<(gabp_hub::Game, &'u str), McpError> {
    let expected = || {
        not_found(
            uri,
            format!("game resources are named {SCHEME}<gameId>/<uri>"),
        )
    };
    let (rest, gabs) = match uri.strip_prefix(SCHEME) {
        Some(rest) => (rest, false),
        None => (uri.strip_prefix(GABS_SCHEME).ok_or_else(expected)?, true),
    };
    let (id, inner) = rest
        .split_once('/')
        .filter(|(_, inner)| !inner.is_empty())
        .ok_or_else(|| not_found(uri, "no resource after the game id"))?;
    if gabs && inner != "state" {
        return Err(expected());
    }
    let game = hub.game(id).map_err(|e| not_found(uri, e))?;
    Ok((game.clone(), inner))
}

pub(crate) async fn read(hub: &Hub, uri: &str) -> Result<ReadResourceResponse, McpError> {
    let (game, inner) = check_uri(hub, uri)?;
    let contents = if inner == "state" {
        let snapshot = game.snapshot();
        let names: Vec<String> = game
            .cached_tools()
            .iter()
            .map(|t| t.name.as_str().to_owned())
            .collect();
        // GABS's members beside ours, so that a GABS client reads what it knows.
        let text = json!({
            "game": snapshot,
            "gameId": game.id(),
            "connected": game.status() == GameStatus::Connected,
            "toolCount": names.len(),
            "availableTools": names,
            "lastUpdate": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().to_string())
                .unwrap_or_default(),
        })
        .to_string();
        ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("application/json".to_owned()),
            text,
            meta: None,
        }
    } else if inner == "logs" {
        let (tail, _) = crate::handlers::logs::tail(&game, LOGS_LINES, &|_| true);
        let text: Vec<String> = tail
            .lines
            .iter()
            .map(|l| format!("[{}] {}", l.stream.as_str(), l.text))
            .collect();
        ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("text/plain".to_owned()),
            text: text.join("\n"),
            meta: None,
        }
    } else {
        let read = game.read_resource(inner).await.map_err(|e| match e {
            HubError::NotConnected { .. } => not_found(uri, e),
            other => McpError::internal_error(other.to_string(), Some(json!({ "uri": uri }))),
        })?;
        let mime_type = read.mime_type.clone();
        match (read.encoding, read.content) {
            (Some(ContentEncoding::Base64), Value::String(blob)) => {
                ResourceContents::BlobResourceContents {
                    uri: uri.to_owned(),
                    mime_type,
                    blob,
                    meta: None,
                }
            }
            (_, Value::String(text)) => ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type,
                text,
                meta: None,
            },
            (_, other) => ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type: mime_type.or_else(|| Some("application/json".to_owned())),
                text: other.to_string(),
                meta: None,
            },
        }
    };
    Ok(ReadResourceResult::new(vec![contents]).into())
}
