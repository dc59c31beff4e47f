//! The hub tools that pause, step and play a game: its time-control and input extensions (SPEC/1.0
//! extensions.md §time-control, §input), for games that advertise them.

use gabp_hub::{Game, Hub};
use serde_json::{json, Map, Value};

use crate::reply::{Args, Reply};

fn connected<'h>(hub: &'h Hub, args: &Args<'_>) -> Result<&'h Game, Reply> {
    Ok(hub.game_or_connected(args.str("gameId")?)?)
}

fn invalid(path: &str, text: impl Into<String>) -> Reply {
    Reply::error("invalid_argument", text, json!({ "path": path }))
}

/// `games_time {action, ticks}`: `time/status`, `time/pause`, `time/resume` or `time/step {ticks}`; answers the
/// time state.
pub(crate) async fn time(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let action = args.required_str("action")?;
    let ticks = args.integer("ticks")?;
    let params = match (action, ticks) {
        ("step", Some(ticks)) => json!({ "ticks": ticks }),
        ("step", None) => {
            return Err(invalid(
                "/ticks",
                "Action 'step' needs 'ticks', a number of ticks from 1",
            ))
        }
        ("status" | "pause" | "resume", None) => json!({}),
        ("status" | "pause" | "resume", Some(_)) => {
            return Err(invalid(
                "/ticks",
                "Argument 'ticks' goes with action 'step' only",
            ))
        }
        (other, _) => {
            return Err(invalid(
                "/action",
                format!("Argument 'action' must be status, pause, resume or step, not '{other}'"),
            ))
        }
    };
    let method = format!("time/{action}");
    let state = game.request(&method, params).await?.value;
    let paused = state.get("paused").and_then(Value::as_bool);
    let tick = state.get("tick").and_then(Value::as_u64);
    let text = match (paused, tick) {
        (Some(paused), Some(tick)) => format!(
            "Game '{}': time {} at tick {tick}.",
            game.id(),
            if paused { "paused" } else { "running" }
        ),
        _ => format!("Game '{}': {method} answered {state}.", game.id()),
    };
    let mut structured = json!({ "gameId": game.id() });
    if let (Value::Object(into), Value::Object(more)) = (&mut structured, state) {
        into.extend(more);
    }
    Ok(Reply::ok(text, structured))
}

/// `games_input`: a key (`input/key`), text (`input/text`) or a mouse button (`input/mouse`), exactly one.
pub(crate) async fn input(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = connected(hub, args)?;
    let key = args.str("key")?;
    let text = args.str("text")?;
    let button = args.str("button")?;
    let action = args.str("action")?;
    let position = args.object("position")?;
    let mut params = Map::new();
    let method = match (key, text, button) {
        (Some(key), None, None) => {
            params.insert("key".into(), json!(key));
            params.insert("action".into(), json!(action.unwrap_or("tap")));
            "input/key"
        }
        (None, Some(text), None) => {
            if action.is_some() {
                return Err(invalid("/action", "Argument 'action' goes with 'key' or 'button', not 'text'"));
            }
            params.insert("text".into(), json!(text));
            "input/text"
        }
        (None, None, Some(button)) => {
            params.insert("button".into(), json!(button));
            params.insert("action".into(), json!(action.unwrap_or("click")));
            "input/mouse"
        }
        _ => {
            return Err(invalid(
                "",
                "Give exactly one of 'key' (a key name such as ArrowLeft), 'text' or 'button' (left, right, middle)",
            ))
        }
    };
    match position {
        Some(position) if method == "input/mouse" => {
            params.insert("position".into(), position.clone());
        }
        Some(_) => {
            return Err(invalid(
                "/position",
                "Argument 'position' goes with 'button' only",
            ))
        }
        None => {}
    }
    let params = Value::Object(params);
    game.request(method, params.clone()).await?;
    Ok(Reply::ok(
        format!("Game '{}' took {method} {params}.", game.id()),
        json!({ "gameId": game.id(), "method": method, "params": params }),
    ))
}
