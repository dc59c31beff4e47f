#![allow(clippy::unwrap_used)]
//! The `env` extension (SPEC/1.0 extensions.md §env), on the wire with a raw client (whose decoder is strict):
//! advertised, episodes reset and stepped on the game's thread with the step's ticks run while time is paused,
//! actions outside the space and steps out of turn refused, requests taken one at a time in order.

mod server_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{CallError, EnvSpec, ModServer};
use gabp_types::methods::{Dtype, EnvResetResult, EnvStepResult, Space};
use serde_json::{json, Map, Value};
use server_support::{ask, assert_late, code, connect_hello, data, request, result};

/// The game: a walker on a line, and the ticks it ran.
#[derive(Default)]
struct Game {
    x: i64,
    ticks: i64,
    /// What the game was given, in order.
    seen: Vec<String>,
}

const TICKS: u32 = 3;

fn spec() -> EnvSpec {
    // Observations [x, ticks]: x from -1 (a game that walks to -2 breaks its own space).
    let observation = Space::Box(gabp_types::methods::BoxSpace {
        low: json!([-1, 0]),
        high: json!(null),
        shape: vec![2],
        dtype: Dtype::Int64,
    });
    EnvSpec::new(
        observation,
        Space::Discrete(gabp_types::methods::DiscreteSpace { n: 3, start: -1 }),
    )
    .ticks_per_step(TICKS)
    .max_episode_steps(4)
}

fn server() -> ModServer {
    server_support::builder()
        .env(
            spec(),
            |game: &mut Game, params| {
                if params.seed == Some(99) {
                    return Err(CallError::new("level 99 is locked"));
                }
                game.x = i64::try_from(params.seed.unwrap_or(0) % 3).unwrap();
                game.seen.push(format!("reset {:?}", params.seed));
                Ok(EnvResetResult::new(json!([game.x, game.ticks]), Map::new()))
            },
            |game: &mut Game, action: Value| {
                game.seen.push(format!("act {action}"));
                game.x += action.as_i64().unwrap();
                Ok(())
            },
            |game: &mut Game| {
                let mut outcome = EnvStepResult::new(json!([game.x, game.ticks]), game.x as f64);
                outcome.terminated = game.x >= 3;
                Ok(outcome)
            },
        )
        .build()
        .unwrap()
}

/// The game loop: runs the ticks a step owes at once, and the queued work with the game's state.
fn game_loop(server: &ModServer, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Game> {
    let main_thread = server.main_thread();
    let clock = main_thread
        .clock()
        .expect("env with ticks turns time control on");
    std::thread::spawn(move || {
        let mut game = Game::default();
        while !stop.load(Ordering::Acquire) {
            main_thread.wait(Duration::from_millis(5));
            while clock.is_stepping() {
                clock.run_tick(|| game.ticks += 1);
            }
            main_thread.pump_with(&mut game, Duration::from_millis(2));
        }
        game
    })
}

fn methods(server: &ModServer) -> Vec<String> {
    server
        .welcome()
        .capabilities
        .methods
        .iter()
        .flat_map(|v| v.iter())
        .map(|m| m.as_str().to_owned())
        .collect()
}

#[tokio::test]
async fn episodes_step_the_paused_clock_and_refuse_what_is_out_of_turn_or_space() {
    let server = server();
    let ext = server.welcome().capabilities.extensions.as_ref().unwrap();
    assert_eq!(
        ext.get("env").map(|e| json!(e)),
        Some(json!({"ticksPerStep": TICKS, "maxEpisodeSteps": 4}))
    );
    let advertised = methods(&server);
    for method in ["env/spaces", "env/reset", "env/step", "time/step"] {
        assert!(advertised.iter().any(|m| m == method), "{method}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let game = game_loop(&server, stop.clone());
    let mut client = connect_hello(&server).await;

    let spaces = result(&ask(&mut client, "env/spaces", None).await);
    assert_eq!(
        spaces["action"],
        json!({"type": "Discrete", "n": 3, "start": -1})
    );
    assert_eq!(spaces["observation"]["dtype"], "int64");

    let early = ask(&mut client, "env/step", Some(json!({"action": 0}))).await;
    assert_eq!(code(&early), Some(-32401), "{early:?}");
    assert_eq!(
        data(&early),
        json!({"reason": "reset_needed", "retryable": false})
    );

    let reset = result(&ask(&mut client, "env/reset", Some(json!({"seed": 1}))).await);
    assert_eq!(reset, json!({"observation": [1, 0], "info": {}}));
    let time = result(&ask(&mut client, "time/status", None).await);
    assert_eq!(time["paused"], true, "a reset pauses time");

    for (bad, path) in [
        (json!(2), "/params/action"),
        (json!("left"), "/params/action"),
        (json!(null), "/params/action"),
    ] {
        let answer = ask(&mut client, "env/step", Some(json!({ "action": bad }))).await;
        assert_eq!(code(&answer), Some(-32602), "{bad}");
        assert_eq!(data(&answer)["errors"][0]["path"], path, "{bad}");
    }
    let missing = ask(&mut client, "env/step", Some(json!({}))).await;
    assert_eq!(code(&missing), Some(-32602));

    // Each step runs its three ticks after the action, while time stays paused.
    let step = result(&ask(&mut client, "env/step", Some(json!({"action": 1}))).await);
    assert_eq!(
        step,
        json!({"observation": [2, 3], "reward": 2.0, "terminated": false, "truncated": false, "info": {}})
    );
    let step = result(&ask(&mut client, "env/step", Some(json!({"action": 1}))).await);
    assert_eq!(
        (step["observation"].clone(), step["terminated"].clone()),
        (json!([3, 6]), json!(true))
    );
    let after = ask(&mut client, "env/step", Some(json!({"action": 0}))).await;
    assert_eq!(
        code(&after),
        Some(-32401),
        "a step after the end: {after:?}"
    );
    let time = result(&ask(&mut client, "time/status", None).await);
    assert_eq!(
        (time["paused"].clone(), time["tick"].clone()),
        (json!(true), json!(6))
    );

    // Four steps, the limit: the fourth is truncated.
    ask(&mut client, "env/reset", Some(json!({"seed": 0}))).await;
    for n in 1..=4 {
        let step = result(&ask(&mut client, "env/step", Some(json!({"action": 0}))).await);
        assert_eq!(step["truncated"], n == 4, "step {n}");
    }

    // Pipelined: a reset and three steps sent at once are taken one at a time, in order.
    let sent: Vec<_> = [
        ("env/reset", json!({"seed": 0})),
        ("env/step", json!({"action": 1})),
        ("env/step", json!({"action": -1})),
        ("env/step", json!({"action": 1})),
    ]
    .into_iter()
    .map(|(method, params)| request(method, Some(params)))
    .collect();
    for (_, message) in &sent {
        client.send_value(message).await;
    }
    let mut observations = Vec::new();
    for _ in &sent {
        let answer = tokio::time::timeout(Duration::from_secs(10), client.recv_response())
            .await
            .unwrap();
        observations.push((answer.id, result(&answer)["observation"].clone()));
    }
    let ticks = 18;
    for ((id, _), expected) in sent.iter().zip([
        json!([0, ticks]),
        json!([1, ticks + 3]),
        json!([0, ticks + 6]),
        json!([1, ticks + 9]),
    ]) {
        let seen = observations.iter().find(|(i, _)| i == id).unwrap();
        assert_eq!(seen.1, expected);
    }

    // The game's own failure, and an observation outside the game's own space.
    let locked = ask(&mut client, "env/reset", Some(json!({"seed": 99}))).await;
    assert_eq!(code(&locked), Some(-32402), "{locked:?}");
    let refused = ask(&mut client, "env/step", Some(json!({"action": 0}))).await;
    assert_eq!(
        code(&refused),
        Some(-32401),
        "a failed reset leaves no episode"
    );
    ask(&mut client, "env/reset", Some(json!({"seed": 0}))).await;
    ask(&mut client, "env/step", Some(json!({"action": -1}))).await;
    let broken = ask(&mut client, "env/step", Some(json!({"action": -1}))).await;
    assert_eq!(
        code(&broken),
        Some(-32603),
        "x -2 is outside the space: {broken:?}"
    );

    stop.store(true, Ordering::Release);
    let game = game.join().unwrap();
    assert!(
        !game
            .seen
            .iter()
            .any(|s| s.contains("act 2") || s.contains("left")),
        "the game never saw an action outside the space: {:?}",
        game.seen
    );
    assert_eq!(game.seen[..3], ["reset Some(1)", "act 1", "act 1"]);
}

#[tokio::test]
async fn without_ticks_no_time_control_and_without_env_method_not_found() {
    let server = server_support::builder()
        .env(
            EnvSpec::new(Space::discrete(2), Space::discrete(2)).ticks_per_step(0),
            |_: &mut (), _| Ok(EnvResetResult::new(json!(0), Map::new())),
            |_: &mut (), _| Ok(()),
            |_: &mut ()| Ok(EnvStepResult::new(json!(1), 0.0)),
        )
        .build()
        .unwrap();
    assert!(server.main_thread().clock().is_none());
    let advertised = methods(&server);
    assert!(advertised.iter().any(|m| m == "env/step"));
    assert!(!advertised.iter().any(|m| m == "time/step"));

    let bad = server_support::builder()
        .env(
            EnvSpec::new(Space::discrete(0), Space::discrete(2)),
            |_: &mut (), _| Ok(EnvResetResult::new(json!(0), Map::new())),
            |_: &mut (), _| Ok(()),
            |_: &mut ()| Ok(EnvStepResult::new(json!(1), 0.0)),
        )
        .build();
    assert!(bad.unwrap_err().to_string().contains("observation"));

    let plain = server_support::builder().build().unwrap();
    let mut client = connect_hello(&plain).await;
    for method in ["env/spaces", "env/reset"] {
        assert_eq!(code(&ask(&mut client, method, None).await), Some(-32601));
    }
}

/// A game stalled past the request time limit: a reset is answered like any late request that is not a tool
/// call (SPEC/1.0 gabp.md §7: -32603 with `data.timeoutMs`, retryable), and never reaches the game.
#[tokio::test]
async fn a_reset_the_game_does_not_take_in_time_is_a_late_request() {
    let server = server_support::builder()
        .limits(server_support::limits().with_request_timeout(Duration::from_secs(1)))
        .env(
            spec(),
            |_: &mut Game, _| -> Result<EnvResetResult, CallError> {
                panic!("the reset ran after its time limit")
            },
            |_: &mut Game, _| Ok(()),
            |_: &mut Game| Ok(EnvStepResult::new(json!([0, 0]), 0.0)),
        )
        .build()
        .unwrap();
    let mut client = connect_hello(&server).await;
    let answer = ask(&mut client, "env/reset", Some(json!({"seed": 1}))).await;
    assert_late(&answer, 1000);
    let report = server
        .main_thread()
        .pump_with(&mut Game::default(), Duration::from_millis(50));
    assert_eq!(report.ran, 0);
}

/// A game that takes the step's action but never runs its ticks: the step is answered as late (SPEC/1.0
/// gabp.md §7: -32603 with `data.timeoutMs`, retryable) when the request time limit passes.
#[tokio::test]
async fn a_step_whose_ticks_never_run_is_a_late_request() {
    let server = server_support::builder()
        .limits(server_support::limits().with_request_timeout(Duration::from_secs(1)))
        .env(
            spec(),
            |_: &mut Game, _| Ok(EnvResetResult::new(json!([0, 0]), Map::new())),
            |game: &mut Game, _| {
                game.seen.push("act".to_owned());
                Ok(())
            },
            |_: &mut Game| Ok(EnvStepResult::new(json!([0, 0]), 0.0)),
        )
        .build()
        .unwrap();
    // Pumps the queued work, never the clock.
    let stop = Arc::new(AtomicBool::new(false));
    let main_thread = server.main_thread();
    let halt = stop.clone();
    let game = std::thread::spawn(move || {
        let mut game = Game::default();
        while !halt.load(Ordering::Acquire) {
            main_thread.wait(Duration::from_millis(5));
            main_thread.pump_with(&mut game, Duration::from_millis(2));
        }
        game
    });
    let mut client = connect_hello(&server).await;
    assert!(ask(&mut client, "env/reset", None).await.result().is_some());
    let answer = ask(&mut client, "env/step", Some(json!({"action": 1}))).await;
    assert_late(&answer, 1000);
    stop.store(true, Ordering::Release);
    assert_eq!(game.join().unwrap().seen, ["act"]);
}
