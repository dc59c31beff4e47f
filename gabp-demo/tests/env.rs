#![allow(clippy::unwrap_used)]
//! The demo game as a reinforcement-learning environment (SPEC/1.0 extensions.md §env): herding sheep into the
//! pen, through a real Bridge over loopback TCP.

use gabp_demo::{
    in_pen, InProcessGame, ENV_ACTIONS, ENV_MAX_STEPS, ENV_TICKS_PER_STEP, FLOCK_SIZE,
};
use gabp_session::bridge::Bridge;
use gabp_session::Error;
use gabp_types::methods::{
    EnvReset, EnvResetParams, EnvSpaces, EnvSpacesParams, EnvStep, EnvStepParams, EnvStepResult,
    Space, TimeParams, TimeStatus,
};
use gabp_types::ErrorCode;
use serde_json::{json, Value};

async fn connect() -> (InProcessGame, Bridge) {
    let game = InProcessGame::start().await.expect("the demo game starts");
    let bridge = Bridge::connect(game.handle.endpoint(), game.token.clone())
        .await
        .expect("connect");
    (game, bridge)
}

async fn reset(bridge: &Bridge, seed: Option<u64>) -> Value {
    let params = EnvResetParams {
        seed,
        options: None,
    };
    bridge
        .call::<EnvReset>(&params)
        .await
        .expect("reset")
        .observation
}

async fn step(bridge: &Bridge, action: Value) -> Result<EnvStepResult, Error> {
    bridge.call::<EnvStep>(&EnvStepParams { action }).await
}

/// `[px, pz, s1x, s1z, ...]` as integers.
fn cells(observation: &Value) -> Vec<i64> {
    observation
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

fn code(e: &Error) -> Option<ErrorCode> {
    e.code()
}

#[tokio::test]
async fn spaces_and_the_same_seed_starts_the_same_episode() {
    let (_game, bridge) = connect().await;
    let welcome = bridge.welcome();
    let ext = welcome
        .capabilities
        .extensions
        .as_ref()
        .and_then(|e| e.get("env"))
        .unwrap();
    assert_eq!(ext["ticksPerStep"], ENV_TICKS_PER_STEP);
    assert_eq!(ext["maxEpisodeSteps"], ENV_MAX_STEPS);
    let spaces = bridge.call::<EnvSpaces>(&EnvSpacesParams {}).await.unwrap();
    assert_eq!(spaces.action, Space::discrete(5));
    let Space::Box(observation) = &spaces.observation else {
        panic!("{:?}", spaces.observation)
    };
    assert_eq!(observation.shape, [8]);

    let first = reset(&bridge, Some(7)).await;
    assert!(spaces.observation.contains(&first).is_ok());
    let mut walk = Vec::new();
    for action in [2, 2, 3, 0, 1] {
        walk.push(step(&bridge, json!(action)).await.unwrap().observation);
    }
    assert_eq!(
        reset(&bridge, Some(7)).await,
        first,
        "same seed, same start"
    );
    for (action, seen) in [2, 2, 3, 0, 1].into_iter().zip(&walk) {
        let again = step(&bridge, json!(action)).await.unwrap();
        assert_eq!(
            &again.observation, seen,
            "same seed and actions, same episode"
        );
    }
    assert_ne!(reset(&bridge, Some(8)).await, first, "another seed");
    assert_ne!(
        reset(&bridge, None).await,
        reset(&bridge, None).await,
        "unseeded episodes differ"
    );
}

#[tokio::test]
async fn steps_out_of_the_space_or_out_of_turn_are_refused() {
    let (_game, bridge) = connect().await;
    let e = step(&bridge, json!(0)).await.unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::TOOL_UNAVAILABLE), "{e}");
    assert_eq!(
        e.error_object().unwrap().data.as_ref().unwrap()["reason"],
        "reset_needed"
    );

    let start = reset(&bridge, Some(1)).await;
    for bad in [json!(5), json!(-1), json!("north"), json!(1.5), json!([1])] {
        let e = step(&bridge, bad.clone()).await.unwrap_err();
        assert_eq!(code(&e), Some(ErrorCode::INVALID_PARAMS), "{bad}: {e}");
        let Error::InvalidParams { errors, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(errors[0].path, "/params/action", "{bad}");
    }
    // The bridge itself refuses params its types refuse.
    let e = bridge.request("env/step", json!({})).await.unwrap_err();
    assert!(e.to_string().contains("action"), "{e}");
    // The game saw none of them: the player has not moved, and no tick ran.
    let tick = bridge.call::<TimeStatus>(&TimeParams {}).await.unwrap();
    assert!(tick.paused, "reset paused time");
    let stay = step(&bridge, json!(0)).await.unwrap();
    assert_eq!(cells(&stay.observation)[..2], cells(&start)[..2]);
    let after = bridge.call::<TimeStatus>(&TimeParams {}).await.unwrap();
    assert_eq!(after.tick, tick.tick + u64::from(ENV_TICKS_PER_STEP));
}

#[tokio::test]
async fn a_random_run_stays_in_its_spaces_and_is_truncated_at_the_limit() {
    let (_game, bridge) = connect().await;
    let spaces = bridge.call::<EnvSpaces>(&EnvSpacesParams {}).await.unwrap();
    let mut state = 3_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 11
    };
    reset(&bridge, Some(3)).await;
    let (mut steps, mut total, mut episodes) = (0, 0.0, 0);
    for _ in 0..(ENV_MAX_STEPS + 50) {
        let action = spaces.action.sample(&mut next);
        let outcome = step(&bridge, action).await.unwrap();
        steps += 1;
        assert!(spaces.observation.contains(&outcome.observation).is_ok());
        assert!(outcome.reward >= 0.0);
        total += outcome.reward;
        assert_eq!(outcome.info["penned"].as_f64().unwrap(), total);
        if outcome.terminated || outcome.truncated {
            assert!(outcome.terminated || steps == ENV_MAX_STEPS, "{steps}");
            episodes += 1;
            let e = step(&bridge, json!(0)).await.unwrap_err();
            assert_eq!(code(&e), Some(ErrorCode::TOOL_UNAVAILABLE), "after the end");
            reset(&bridge, None).await;
            (steps, total) = (0, 0.0);
        }
    }
    assert!(
        episodes >= 1,
        "{} steps and no episode ended",
        ENV_MAX_STEPS + 50
    );
}

/// Walks to the side of the nearest free sheep away from the pen, so that it flees towards the pen.
fn herding_action(cells: &[i64]) -> u64 {
    let (px, pz) = (cells[0], cells[1]);
    let target = cells[2..]
        .chunks(2)
        .map(|s| (s[0], s[1]))
        .filter(|&(x, z)| !in_pen(x, z))
        .min_by_key(|&(x, z)| (x - px).abs() + (z - pz).abs());
    let Some((sx, sz)) = target else { return 0 };
    let (tx, tz) = ((sx - 1).max(0), (sz - 1).max(0));
    let ahead = px >= sx || pz >= sz;
    let close = (sx - px).abs().max((sz - pz).abs()) <= 3;
    // Coming from the pen's side would drive the sheep away: go round it, keeping out of its reach.
    let (dx, dz) = if ahead && close {
        if px >= sx && pz >= sz {
            if (px - sx) >= (pz - sz) {
                (0, -1)
            } else {
                (-1, 0)
            }
        } else if px >= sx {
            (-1, 0)
        } else {
            (0, -1)
        }
    } else if (tx - px).abs() >= (tz - pz).abs() {
        ((tx - px).signum(), 0)
    } else {
        (0, (tz - pz).signum())
    };
    ENV_ACTIONS.iter().position(|&a| a == (dx, dz)).unwrap_or(0) as u64
}

#[tokio::test]
async fn a_scripted_herder_pens_a_sheep() {
    let (_game, bridge) = connect().await;
    let mut observation = reset(&bridge, Some(11)).await;
    let mut reward = 0.0;
    for _ in 0..ENV_MAX_STEPS {
        let outcome = step(&bridge, json!(herding_action(&cells(&observation))))
            .await
            .unwrap();
        reward += outcome.reward;
        observation = outcome.observation;
        if outcome.terminated || outcome.truncated {
            break;
        }
    }
    let penned = cells(&observation)[2..]
        .chunks(2)
        .filter(|s| in_pen(s[0], s[1]))
        .count();
    assert!(penned >= 1, "no sheep penned: {observation}");
    assert_eq!(reward, penned as f64);
    assert!(penned <= FLOCK_SIZE);
}
