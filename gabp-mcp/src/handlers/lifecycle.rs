//! The hub tools that manage games: list, show, status, start, stop, kill, connect.

use std::time::Duration;

use gabp_hub::{Game, Hub, HubError, StartOutcome};
use serde_json::{json, Value};

use crate::reply::{Args, Reply};

fn next(tool: &str, arguments: Value, reason: &str) -> Value {
    json!({ "tool": tool, "arguments": arguments, "reason": reason })
}

pub(crate) fn list(hub: &Hub) -> Reply {
    let games: Vec<Value> = hub
        .games()
        .map(|g| {
            let c = g.config();
            let mut entry =
                json!({ "gameId": c.id, "name": c.name, "status": g.status().as_str() });
            if let Some(d) = &c.description {
                entry["description"] = json!(d);
            }
            entry
        })
        .collect();
    if games.is_empty() {
        let file = hub.config().dir.join(gabp_hub::config::CONFIG_FILE);
        return Reply::ok(
            format!(
                "No games configured. Add them to {} (the GABS format: \"games\": {{\"<id>\": {{\"target\": ...}}}}).",
                file.display()
            ),
            json!({ "count": 0, "games": [] }),
        );
    }
    let text = hub.games().map(Game::id).collect::<Vec<_>>().join("\n");
    Reply::ok(
        text,
        json!({
            "count": games.len(),
            "games": games,
            "nextActions": [next("games_status", json!({}), "See which games run and are connected.")],
        }),
    )
}

pub(crate) fn show(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = hub.game(args.required_str("gameId")?)?;
    let c = game.config();
    let snapshot = game.snapshot();
    let mut text = format!(
        "Game Configuration: {}\n\n  ID: {} ({})\n  Use gameId: '{}'\n  Launch: {}\n  Target: {}\n",
        c.id,
        c.id,
        c.name,
        c.id,
        c.launch_mode.as_str(),
        c.target
    );
    if !c.args.is_empty() {
        text.push_str(&format!("  Args: {}\n", c.args.join(" ")));
    }
    if let Some(dir) = &c.working_dir {
        text.push_str(&format!("  Working Directory: {}\n", dir.display()));
    }
    if let Some(d) = &c.description {
        text.push_str(&format!("  Description: {d}\n"));
    }
    text.push_str(&format!("  Status: {}\n", snapshot.status_description));
    if let Some(why) = &c.unsupported {
        text.push_str(&format!("\nCannot be started by gabp mcp: {why}\n"));
    }
    let mut warnings = Vec::new();
    if let Some(why) = &c.unsupported {
        warnings.push(why.clone());
    }
    Ok(Reply::ok(
        text,
        json!({
            "game": {
                "gameId": c.id, "name": c.name, "launchMode": c.launch_mode.as_str(),
                "target": c.target, "args": c.args,
                "workingDir": c.working_dir.as_ref().map(|d| d.display().to_string()),
                "stopProcessName": c.stop_process_name, "gabpMode": c.gabp_mode,
                "description": c.description,
                "hasStopProcessName": c.stop_process_name.is_some(),
            },
            "status": snapshot.status.as_str(),
            "statusDescription": snapshot.status_description,
            "validationWarnings": warnings,
        }),
    ))
}

pub(crate) fn status(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    if let Some(reference) = args.str("gameId")? {
        let game = hub.game(reference)?;
        let s = game.snapshot();
        let mut text = format!("**{}** ({}): {}\n", s.game_id, s.name, s.status_description);
        if let Some(exit) = &s.last_exit {
            text.push_str(&format!("Last exit: {exit}\n"));
        }
        if let Some(error) = &s.last_error {
            text.push_str(&format!("Last connection error: {error}\n"));
        }
        return Ok(Reply::ok(text, json!(s)));
    }
    let snapshots: Vec<_> = hub.games().map(Game::snapshot).collect();
    let mut text = String::from("Game Status Summary:\n\n");
    for s in &snapshots {
        text.push_str(&format!("• **{}**: {}\n", s.game_id, s.status_description));
    }
    Ok(Reply::ok(
        text,
        json!({ "count": snapshots.len(), "games": snapshots }),
    ))
}

pub(crate) async fn start(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = hub.game(args.required_str("gameId")?)?;
    let id = game.id().to_owned();
    for unsupported in ["profile", "launchInputs"] {
        if args.object(unsupported).ok().flatten().is_some()
            || args.str(unsupported).ok().flatten().is_some()
        {
            return Err(Reply::error(
                "launch_mode_incompatible",
                format!("Argument '{unsupported}': launch profiles and launch inputs are not supported by gabp mcp"),
                json!({ "gameId": id, "path": format!("/{unsupported}") }),
            ));
        }
    }
    args.boolean("resetEndpoint")?;
    let outcome = match args.integer("timeout")? {
        Some(t @ 1..=3600) => {
            game.start_within(Duration::from_secs(t.unsigned_abs()))
                .await
        }
        Some(_) => {
            return Err(Reply::error(
                "timeout_out_of_range",
                "Argument 'timeout' must be an integer between 1 and 3600 seconds",
                json!({ "path": "/timeout" }),
            ))
        }
        None => game.start().await,
    };
    let name = &game.config().name;
    match outcome {
        Ok(StartOutcome::Connected { tools }) => Ok(Reply::ok(
            format!("Game '{id}' ({name}) started successfully and connected via GABP. It offers {tools} tools."),
            json!({
                "code": "started_connected", "gameId": id, "processStarted": true,
                "gabpConnected": true, "gameStillRunning": true, "toolCount": tools,
                "pid": game.snapshot().pid,
                "nextActions": [next("games_tool_names", json!({"gameId": id, "brief": true}), "See what the game offers.")],
            }),
        )),
        Ok(StartOutcome::Attached { tools, pid }) => Ok(Reply::ok(
            format!("Game '{id}' ({name}) was already running, started by an earlier session of the hub (pid {}); it was not started again. The hub took it over and is connected via GABP. It offers {tools} tools.", pid.map_or_else(|| "?".to_owned(), |p| p.to_string())),
            json!({
                "code": "attached_running", "gameId": id, "processStarted": false,
                "gabpConnected": true, "gameStillRunning": true, "toolCount": tools, "pid": pid,
                "nextActions": [next("games_tool_names", json!({"gameId": id, "brief": true}), "See what the game offers.")],
            }),
        )),
        Ok(StartOutcome::Pending { waited, reason }) => Ok(Reply::ok(
            format!(
                "Game '{id}' ({name}) started, but GABP was not ready after {} ms: {reason}. The hub keeps trying in the background. The game may still be loading, or its GABP bridge may be missing. Use games_status, then games_connect once the bridge is ready.",
                waited.as_millis()
            ),
            json!({
                "code": "started_bridge_pending", "gameId": id, "processStarted": true,
                "gabpConnected": false, "backgroundConnect": true, "gabpError": reason,
                "nextActions": [next("games_status", json!({"gameId": id}), "Check whether it connected.")],
            }),
        )),
        Err(HubError::AlreadyRunning { status, .. }) => Ok(Reply::ok(
            format!("Game '{id}' ({name}) is already {status}. Use games_status or games_connect instead of starting it again."),
            json!({ "code": "already_running", "gameId": id, "status": status }),
        )),
        Err(e) => Err(e.into()),
    }
}

pub(crate) async fn stop(hub: &Hub, args: &Args<'_>, force: bool) -> Result<Reply, Reply> {
    let game = hub.game(args.required_str("gameId")?)?;
    let id = game.id();
    let name = &game.config().name;
    let how = game.stop(force).await?;
    let verb = if force { "killed" } else { "stopped" };
    Ok(Reply::ok(
        format!("Game '{id}' ({name}) was {verb} and its termination verified ({how})."),
        json!({
            "code": "terminated", "gameId": id,
            "action": if force { "kill" } else { "stop" }, "exit": how,
        }),
    ))
}

pub(crate) async fn connect(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = hub.game(args.required_str("gameId")?)?;
    args.boolean("forceTakeover")?;
    let timeout = match args.integer("timeout")? {
        Some(t @ 1..=3600) => Duration::from_secs(t.unsigned_abs()),
        Some(_) => {
            return Err(Reply::error(
                "timeout_out_of_range",
                "Argument 'timeout' must be an integer between 1 and 3600 seconds",
                json!({ "path": "/timeout" }),
            ))
        }
        None => Duration::from_secs(15),
    };
    let tools = game.connect(timeout).await?;
    let s = game.snapshot();
    let port = s.port.map(|p| p.to_string()).unwrap_or_else(|| "?".into());
    Ok(Reply::ok(
        format!(
            "Successfully connected to '{}' GABP server on port {port}. Discovered {tools} tools.",
            s.game_id
        ),
        json!({
            "gameId": s.game_id, "connected": true, "port": s.port, "toolCount": tools,
            "nextActions": [next("games_tool_names", json!({"gameId": s.game_id, "brief": true}), "See what the game offers.")],
        }),
    ))
}
