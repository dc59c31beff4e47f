use serde_json::json;

use super::*;
use crate::GameStatus;

fn write(dir: &Path, config: &serde_json::Value) {
    std::fs::write(dir.join(CONFIG_FILE), config.to_string()).unwrap();
}

fn games(ids: &[&str]) -> serde_json::Value {
    let mut games = serde_json::Map::new();
    for id in ids {
        games.insert((*id).to_owned(), json!({"target": format!("/bin/{id}")}));
    }
    json!({ "games": games })
}

fn ids(hub: &Hub) -> Vec<String> {
    hub.games().map(|g| g.id().to_owned()).collect()
}

fn set_status(game: &Game, status: GameStatus) {
    game.shared.state.lock().status = status;
}

#[test]
fn a_broken_file_at_start_is_config_invalid_until_fixed() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &json!({"games": {"voxel": {"target": "/bin/v", "launchMode": "Steam"}}}),
    );
    let live = LiveHub::load(dir.path());
    let hub = live.current();
    assert!(ids(&hub).is_empty());
    let error = hub.check_config().unwrap_err();
    assert_eq!(error.code(), "config_invalid");
    let text = error.to_string();
    let file = dir.path().join(CONFIG_FILE);
    assert!(
        text.starts_with(&format!("config_invalid: {}: ", file.display())),
        "{text}"
    );
    assert!(
        text.contains("field /games/voxel/launchMode: expected one of DirectPath"),
        "{text}"
    );

    // Unchanged file: nothing to do.
    assert!(!live.reload());
    write(dir.path(), &games(&["voxel"]));
    assert!(live.reload());
    let hub = live.current();
    hub.check_config().unwrap();
    assert!(hub.config_problem().is_none());
    assert_eq!(ids(&hub), ["voxel"]);
}

#[test]
fn a_broken_edit_keeps_the_last_valid_configuration_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &games(&["voxel"]));
    let live = LiveHub::load(dir.path());
    let voxel = live.current().game("voxel").unwrap().clone();

    std::fs::write(dir.path().join(CONFIG_FILE), "{\"games\": {").unwrap();
    assert!(live.reload());
    let hub = live.current();
    hub.check_config().unwrap();
    assert_eq!(ids(&hub), ["voxel"]);
    assert!(hub.game("voxel").unwrap().is_same(&voxel));
    let problem = hub.config_problem().unwrap().to_string();
    assert!(
        problem.starts_with("config_invalid: ") && problem.contains("valid JSON (line 1"),
        "{problem}"
    );

    write(
        dir.path(),
        &json!({"games": {"voxel": {"target": "/bin/voxel"}}, "timeouts": {"toolCallSeconds": 0}}),
    );
    assert!(live.reload());
    let problem = live.current().config_problem().unwrap().clone();
    assert_eq!(
        problem.pointer.as_deref(),
        Some("/timeouts/toolCallSeconds")
    );
}

#[test]
fn unchanged_games_are_kept_added_ones_appear_and_removed_stopped_ones_go() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &games(&["a", "b"]));
    let live = LiveHub::load(dir.path());
    let mut changes = live.current().changes();
    let a = live.current().game("a").unwrap().clone();

    write(dir.path(), &games(&["a", "c"]));
    assert!(live.reload());
    let hub = live.current();
    assert_eq!(ids(&hub), ["a", "c"]);
    assert!(hub.game("a").unwrap().is_same(&a), "a is untouched");
    assert_eq!(changes.try_recv().unwrap(), HubEvent::GamesChanged);

    // A changed entry of a stopped game is a new game.
    write(
        dir.path(),
        &json!({"games": {"a": {"target": "/bin/other"}, "c": {"target": "/bin/c"}}}),
    );
    assert!(live.reload());
    let now = live.current().game("a").unwrap().clone();
    assert!(!now.is_same(&a));
    assert_eq!(now.config().target, "/bin/other");
}

#[test]
fn a_running_game_keeps_its_entry_until_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &games(&["a", "b"]));
    let live = LiveHub::load(dir.path());
    let a = live.current().game("a").unwrap().clone();
    let b = live.current().game("b").unwrap().clone();
    set_status(&a, GameStatus::Connected);
    set_status(&b, GameStatus::Starting);

    // a changed, b removed: both run on as they were started.
    write(dir.path(), &json!({"games": {"a": {"target": "/bin/new"}}}));
    assert!(live.reload());
    let hub = live.current();
    assert_eq!(ids(&hub), ["a", "b"]);
    assert!(hub.game("a").unwrap().is_same(&a));
    assert_eq!(hub.game("a").unwrap().config().target, "/bin/a");
    assert_eq!(hub.config().games["a"].target, "/bin/new");

    // Nothing stopped yet: nothing to do.
    assert!(!live.reload());
    set_status(&a, GameStatus::Stopped);
    set_status(&b, GameStatus::Exited);
    assert!(live.reload());
    let hub = live.current();
    assert_eq!(ids(&hub), ["a"]);
    assert_eq!(hub.game("a").unwrap().config().target, "/bin/new");
    assert!(!live.reload(), "settled");
}

#[test]
fn a_dropped_game_started_meanwhile_is_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &games(&["a"]));
    let live = LiveHub::load(dir.path());
    // A call looked "a" up before it was removed, and starts it after.
    let a = live.current().game("a").unwrap().clone();
    write(dir.path(), &games(&[]));
    assert!(live.reload());
    assert!(ids(&live.current()).is_empty());
    set_status(&a, GameStatus::Starting);
    assert!(live.reload());
    let hub = live.current();
    assert!(hub.game("a").unwrap().is_same(&a));
}

#[test]
fn a_given_hub_is_not_reloaded_and_is_valid() {
    let hub = Hub::new(HubConfig::from_json_slice(br#"{"games":{}}"#).unwrap());
    let live = LiveHub::from(hub);
    assert!(!live.reload());
    live.current().check_config().unwrap();
}

#[test]
fn a_changed_tool_listing_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), &games(&["a"]));
    let live = LiveHub::load(dir.path());
    let mut changes = live.current().changes();
    let mut config = games(&["a"]);
    config["stripOutputSchema"] = json!(true);
    write(dir.path(), &config);
    assert!(live.reload());
    assert_eq!(changes.try_recv().unwrap(), HubEvent::ToolListChanged);
    assert!(changes.try_recv().is_err(), "the games did not change");
}
