//! The `input` extension (SPEC/1.0 extensions.md §input), on the wire with a raw client (whose decoder is
//! strict): advertised, each input handed to the game's state on its thread, bad input refused by name.

mod server_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{CallError, Input, ModServer};
use gabp_types::methods::{ButtonAction, KeyAction};
use serde_json::json;
use server_support::{ask, assert_late, code, connect_hello, result};

/// The game's state: what it saw, in order.
#[derive(Default)]
struct Game {
    seen: Vec<String>,
}

fn server() -> ModServer {
    server_support::builder()
        .input(|game: &mut Game, input: Input| {
            let line = match input {
                Input::Key(k) => format!("key {} {:?}", k.key, k.action),
                Input::Text(t) => format!("text {}", t.text.as_str()),
                Input::Mouse(m) => format!("mouse {:?} {:?} {:?}", m.button, m.action, m.position),
                _ => "other".to_owned(),
            };
            if line.contains("F12") {
                return Err(CallError::new("the debug console is locked"));
            }
            game.seen.push(line);
            Ok(())
        })
        .build()
        .expect("build")
}

/// The game loop, pumping the game's state until stopped; returns it.
fn game_loop(server: &ModServer, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Game> {
    let main_thread = server.main_thread();
    std::thread::spawn(move || {
        let mut game = Game::default();
        while !stop.load(Ordering::Acquire) {
            main_thread.wait(Duration::from_millis(5));
            main_thread.pump_with(&mut game, Duration::from_millis(2));
        }
        game
    })
}

#[tokio::test]
async fn inputs_reach_the_game_in_order_and_bad_ones_are_named() {
    let server = server();
    let welcome = server.welcome().clone();
    let extensions = welcome
        .capabilities
        .extensions
        .as_ref()
        .expect("extensions");
    assert_eq!(
        extensions.get("input").map(|e| json!(e)),
        Some(json!({"keyNames": "KeyboardEvent.code", "maxTextChars": 1024}))
    );
    for method in ["input/key", "input/text", "input/mouse"] {
        assert!(
            welcome
                .capabilities
                .methods
                .iter()
                .flat_map(|v| v.iter())
                .any(|m| m.as_str() == method),
            "{method} advertised"
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    let game = game_loop(&server, stop.clone());
    let mut client = connect_hello(&server).await;
    for (method, params) in [
        ("input/key", json!({"key": "ArrowLeft", "action": "press"})),
        (
            "input/key",
            json!({"key": "ArrowLeft", "action": "release"}),
        ),
        ("input/text", json!({"text": "héllo"})),
        (
            "input/mouse",
            json!({"button": "left", "action": "click", "position": {"x": 3, "y": 4.5}}),
        ),
    ] {
        let answer = ask(&mut client, method, Some(params)).await;
        assert_eq!(result(&answer), json!({}), "{method}: {answer:?}");
    }

    // Bad input: -32602 naming what is wrong; the game never sees it.
    for (method, params, named) in [
        (
            "input/key",
            json!({"key": "LeftArrow", "action": "press"}),
            "LeftArrow",
        ),
        (
            "input/key",
            json!({"key": "Space", "action": "hold"}),
            "hold",
        ),
        ("input/key", json!({"key": "Space"}), "action"),
        ("input/text", json!({"text": ""}), "characters"),
        (
            "input/mouse",
            json!({"button": "back", "action": "click"}),
            "back",
        ),
    ] {
        let answer = ask(&mut client, method, Some(params)).await;
        assert_eq!(code(&answer), Some(-32602), "{method}: {answer:?}");
        let text = format!("{answer:?}");
        assert!(text.contains(named), "{method}: {text}");
    }
    let missing = ask(&mut client, "input/key", None).await;
    assert_eq!(code(&missing), Some(-32602));
    // The game's own refusal is the caller's error, with its message.
    let refused = ask(
        &mut client,
        "input/key",
        Some(json!({"key": "F12", "action": "tap"})),
    )
    .await;
    assert!(
        format!("{refused:?}").contains("the debug console is locked"),
        "{refused:?}"
    );

    stop.store(true, Ordering::Release);
    let game = game.join().expect("the game loop");
    assert_eq!(
        game.seen,
        vec![
            format!("key ArrowLeft {:?}", KeyAction::Press),
            format!("key ArrowLeft {:?}", KeyAction::Release),
            "text héllo".to_owned(),
            format!(
                "mouse Left {:?} Some(CursorPosition {{ x: 3.0, y: 4.5 }})",
                ButtonAction::Click
            ),
        ]
    );
}

#[tokio::test]
async fn a_mod_without_the_extension_answers_method_not_found() {
    let server = server_support::builder().build().expect("build");
    assert!(!server
        .welcome()
        .capabilities
        .methods
        .iter()
        .flat_map(|v| v.iter())
        .any(|m| m.as_str().starts_with("input/")));
    let mut client = connect_hello(&server).await;
    let answer = ask(
        &mut client,
        "input/key",
        Some(json!({"key": "Space", "action": "tap"})),
    )
    .await;
    assert_eq!(code(&answer), Some(-32601));
}

/// A game stalled past the request time limit: the input is answered like any late request that is not a
/// tool call (SPEC/1.0 gabp.md §7: -32603 with `data.timeoutMs`, retryable), and never reaches the game.
#[tokio::test]
async fn an_input_the_game_does_not_take_in_time_is_a_late_request() {
    let server = server_support::builder()
        .limits(server_support::limits().with_request_timeout(Duration::from_secs(1)))
        .input(|_: &mut Game, _: Input| -> Result<(), CallError> {
            panic!("the input ran after its time limit")
        })
        .build()
        .expect("build");
    let mut client = connect_hello(&server).await;
    let answer = ask(
        &mut client,
        "input/key",
        Some(json!({"key": "Space", "action": "tap"})),
    )
    .await;
    assert_late(&answer, 1000);
    let report = server
        .main_thread()
        .pump_with(&mut Game::default(), Duration::from_millis(50));
    assert_eq!(report.ran, 0);
}
