//! `state/get` and `state/set` of the game: the components `world` and `player` (SPEC/1.0/gabp.md §4.9).

use gabp_session::server::{CallError, EventPublisher};
use gabp_types::methods::{StateSetError, StateSetParams, StateSetResult};
use gabp_types::ErrorCode;
use serde_json::{json, Map, Value};

use super::{DemoError, DemoGame, Position, World, PLAYER_ID, WORLD_SIZE};

/// An unknown `playerId` of `state/get` or `state/set`: `-32602` naming the parameter.
fn unknown_player(e: &DemoError) -> CallError {
    let message = e.to_string();
    CallError::new(message.clone())
        .with_code(ErrorCode::INVALID_PARAMS)
        .with_data(json!({
            "errors": [{ "path": "/params/playerId", "message": message }]
        }))
}

fn state_error(field: impl Into<String>, message: impl Into<String>, code: &str) -> StateSetError {
    StateSetError {
        field: field.into(),
        message: message.into(),
        code: Some(code.to_owned()),
        extra: Map::new(),
    }
}

impl DemoGame {
    /// The state by component, for `state/get` (the server filters `components` and adds the timestamp).
    pub(super) fn state(&self, player_id: Option<&str>) -> Result<Map<String, Value>, CallError> {
        let world = self.world.lock();
        let position = world.position(player_id).map_err(|e| unknown_player(&e))?;
        let mut state = Map::new();
        state.insert(
            "world".into(),
            json!({
                "size": { "x": WORLD_SIZE, "y": WORLD_SIZE, "z": WORLD_SIZE },
                "tick": world.ticks(),
                "blockChanges": world.block_changes(),
            }),
        );
        state.insert(
            "player".into(),
            json!({ "id": PLAYER_ID, "position": position }),
        );
        Ok(state)
    }

    /// `state/set`: only `player.position` can be set. Every other field is reported in `errors`. With
    /// `validate: true`, nothing is applied when anything fails.
    pub(super) fn set_state(
        &self,
        params: &StateSetParams,
        events: &EventPublisher,
    ) -> Result<StateSetResult, CallError> {
        let player_id =
            World::player_id(params.player_id.as_deref()).map_err(|e| unknown_player(&e))?;
        let mut position = None;
        let mut errors = Vec::new();
        for (component, value) in &params.updates {
            match (component.as_str(), value) {
                ("player", Value::Object(fields)) => {
                    for (field, value) in fields {
                        let path = format!("player.{field}");
                        if field != "position" {
                            errors.push(state_error(
                                path,
                                "read-only; only player.position can be set",
                                "read_only",
                            ));
                            continue;
                        }
                        match serde_json::from_value::<Position>(value.clone()) {
                            Err(e) => errors.push(state_error(
                                path,
                                format!("must be an object {{x, y, z}} of numbers: {e}"),
                                "invalid_value",
                            )),
                            Ok(p) => match World::check_position(p) {
                                Ok(p) => position = Some(p),
                                Err(e) => {
                                    errors.push(state_error(path, e.to_string(), "out_of_range"))
                                }
                            },
                        }
                    }
                }
                ("player", _) => errors.push(state_error(
                    "player",
                    "must be an object such as {\"position\": {\"x\": 1, \"y\": 5, \"z\": 1}}",
                    "invalid_value",
                )),
                ("world", Value::Object(fields)) if !fields.is_empty() => {
                    for field in fields.keys() {
                        errors.push(state_error(
                            format!("world.{field}"),
                            "read-only; the world changes through tools such as world/place_block",
                            "read_only",
                        ));
                    }
                }
                ("world", _) => errors.push(state_error(
                    "world",
                    "read-only; the world changes through tools such as world/place_block",
                    "read_only",
                )),
                (other, _) => errors.push(state_error(
                    other,
                    "unknown component; the state has world and player",
                    "unknown_component",
                )),
            }
        }
        let mut applied = Map::new();
        // With validate, all or nothing.
        let apply = params.validate != Some(true) || errors.is_empty();
        if let Some(position) = position.filter(|_| apply) {
            let moved = self
                .move_player(Some(player_id), position, events)
                .map_err(|e| unknown_player(&e))?;
            applied.insert("player".into(), json!({ "position": moved.position }));
        }
        Ok(StateSetResult {
            applied,
            errors: (!errors.is_empty()).then_some(errors),
            extra: Map::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::server;
    use super::super::PLAYER_MOVE;
    use super::*;

    #[test]
    fn state_get_and_set() {
        let game = DemoGame::new();
        let events = server(&game).event_publisher();
        let state = game.state(None).unwrap();
        assert_eq!(
            state["player"]["position"],
            json!({"x": 8.5, "y": 5.0, "z": 8.5})
        );
        assert_eq!(state["world"]["blockChanges"], 0);
        assert_eq!(
            game.state(Some("alex")).unwrap_err().code(),
            ErrorCode::INVALID_PARAMS
        );

        let params = |updates: Value, validate: Option<bool>| StateSetParams {
            updates: updates.as_object().unwrap().clone(),
            player_id: None,
            validate,
        };
        let result = game
            .set_state(
                &params(
                    json!({"player": {"position": {"x": 1, "y": 5, "z": 2}}, "world": {"tick": 0}}),
                    None,
                ),
                &events,
            )
            .unwrap();
        assert_eq!(
            Value::Object(result.applied),
            json!({"player": {"position": {"x": 1.0, "y": 5.0, "z": 2.0}}})
        );
        let errors = result.errors.unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "world.tick");
        assert_eq!(errors[0].code.as_deref(), Some("read_only"));
        assert_eq!(
            events.next_seq(PLAYER_MOVE),
            Some(1),
            "a move publishes player/move"
        );

        // validate: all or nothing.
        let result = game
            .set_state(
                &params(
                    json!({"player": {"position": {"x": 3, "y": 5, "z": 3}, "health": 5}}),
                    Some(true),
                ),
                &events,
            )
            .unwrap();
        assert!(result.applied.is_empty());
        assert_eq!(result.errors.unwrap()[0].field, "player.health");
        assert_eq!(game.state(None).unwrap()["player"]["position"]["x"], 1.0);

        // Bad values are errors, never panics.
        let result = game
            .set_state(
                &params(
                    json!({"player": {"position": {"x": 99, "y": 5, "z": 3}}, "weather": 1, "world": 2}),
                    None,
                ),
                &events,
            )
            .unwrap();
        let codes: Vec<_> = result
            .errors
            .unwrap()
            .into_iter()
            .map(|e| (e.field, e.code.unwrap_or_default()))
            .collect();
        assert!(
            codes.contains(&("player.position".into(), "out_of_range".into())),
            "{codes:?}"
        );
        assert!(
            codes.contains(&("weather".into(), "unknown_component".into())),
            "{codes:?}"
        );
        assert!(
            codes.contains(&("world".into(), "read_only".into())),
            "{codes:?}"
        );
        let result = game
            .set_state(
                &params(json!({"player": {"position": "up"}}), None),
                &events,
            )
            .unwrap();
        assert_eq!(
            result.errors.unwrap()[0].code.as_deref(),
            Some("invalid_value")
        );

        let mut unknown = params(json!({}), None);
        unknown.player_id = Some("alex".into());
        assert_eq!(
            game.set_state(&unknown, &events).unwrap_err().code(),
            ErrorCode::INVALID_PARAMS
        );
    }
}
