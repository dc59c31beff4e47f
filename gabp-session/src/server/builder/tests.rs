//! The builder's rules: tokens, what the welcome advertises, registration errors.

use super::*;
use crate::server::CHANNEL_PATTERNS_EXTENSION;
use crate::Error;
use gabp_types::methods::TOOLS_CHANGED_CHANNEL;

fn token() -> Token {
    Token::new("t".repeat(40)).unwrap()
}

#[test]
fn token_rules() {
    assert!(matches!(
        ModServerBuilder::new().build(),
        Err(Error::MissingToken)
    ));
    assert!(matches!(
        ModServerBuilder::new()
            .token(Token::new("short").unwrap())
            .build(),
        Err(Error::TokenTooShort { len: 5 })
    ));
}

#[test]
fn welcome_advertises_what_is_registered() {
    let server = ModServerBuilder::new()
        .token(token())
        .app("Game", "1.2")
        .channel("player/move")
        .method("game/pause", |_: ServerRequest| async { Ok(Value::Null) })
        .extension("x-ext", Map::new())
        .build()
        .unwrap();
    let w = server.welcome();
    assert_eq!(w.agent_id.as_str(), "Game");
    let caps = &w.capabilities;
    assert!(caps.has_method("game/pause"));
    assert!(caps.has_method("events/subscribe"));
    assert!(!caps.has_method("state/get"));
    assert!(!caps.has_method("attention/current"));
    assert!(caps.has_event("player/move"));
    let ext = caps.extensions.as_ref().unwrap();
    assert!(ext.get(CHANNEL_PATTERNS_EXTENSION).is_some());
    assert!(ext.get("x-ext").is_some());
    let limits = caps.limits.as_ref().unwrap();
    assert_eq!(limits.max_message_size.unwrap().get(), 1 << 20);
    assert_eq!(limits.max_concurrent_requests.unwrap().get(), 64);
    assert_eq!(limits.request_timeout.unwrap().get(), 30);
}

#[test]
fn registration_errors() {
    let dup = ModServerBuilder::new()
        .token(token())
        .tool(Tool::new("a/b", |_: Value| async {
            Ok::<_, super::super::CallError>(Value::Null)
        }))
        .tool(Tool::new("a/b", |_: Value| async {
            Ok::<_, super::super::CallError>(Value::Null)
        }))
        .build();
    assert!(matches!(dup, Err(Error::Duplicate { kind: "tool", .. })));
    let reserved = ModServerBuilder::new()
        .token(token())
        .method("tools/call", |_: ServerRequest| async { Ok(Value::Null) })
        .build();
    assert!(matches!(reserved, Err(Error::ReservedMethod(_))));
    let channel = ModServerBuilder::new()
        .token(token())
        .channel("player.move")
        .build();
    assert!(matches!(
        channel,
        Err(Error::InvalidName {
            kind: "channel",
            ..
        })
    ));
    let limits = ServerLimits {
        max_message_size: 10,
        ..ServerLimits::default()
    };
    assert!(matches!(
        ModServerBuilder::new()
            .token(token())
            .limits(limits)
            .build(),
        Err(Error::InvalidLimit { .. })
    ));
    let ext = ModServerBuilder::new()
        .token(token())
        .extension("Bad Key", Map::new())
        .build();
    assert!(matches!(ext, Err(Error::InvalidWelcomeConfig(_))));
}

#[test]
fn dynamic_tools_are_advertised_with_their_channel() {
    use crate::server::TOOLS_CHANGED_EXTENSION;
    let fixed = ModServerBuilder::new().token(token()).build().unwrap();
    let caps = &fixed.welcome().capabilities;
    assert!(!caps.has_event(TOOLS_CHANGED_CHANNEL));
    assert!(caps
        .extensions
        .as_ref()
        .is_none_or(|e| e.get(TOOLS_CHANGED_EXTENSION).is_none()));

    let dynamic = ModServerBuilder::new()
        .token(token())
        .dynamic_tools(true)
        .build()
        .unwrap();
    let caps = &dynamic.welcome().capabilities;
    assert!(caps.has_event(TOOLS_CHANGED_CHANNEL));
    let ext = caps.extensions.as_ref().unwrap();
    assert_eq!(
        ext.get(TOOLS_CHANGED_EXTENSION).unwrap()["channel"],
        TOOLS_CHANGED_CHANNEL
    );
    // The channel is the server's own.
    let taken = ModServerBuilder::new()
        .token(token())
        .dynamic_tools(true)
        .channel(TOOLS_CHANGED_CHANNEL)
        .build();
    assert!(matches!(
        taken,
        Err(Error::Duplicate {
            kind: "channel",
            ..
        })
    ));
}

#[test]
fn a_state_nobody_registered_fails_the_build_naming_its_type() {
    use super::super::{CallError, Resource, State};
    #[derive(Clone)]
    struct Score;

    let tool = || {
        Tool::new("score/add", |State(_): State<Score>, _: Value| async {
            Ok::<_, CallError>(())
        })
    };
    let missing = ModServerBuilder::new().token(token()).tool(tool()).build();
    let Err(Error::MissingState { handler, state }) = missing else {
        panic!("built without the state");
    };
    assert_eq!(handler, "tool score/add");
    assert_eq!(state, std::any::type_name::<Score>());
    assert!(Error::MissingState { handler, state }
        .to_string()
        .contains("Score"));

    let read = |State(n): State<u32>| async move { Ok(n.to_string()) };
    let resource = ModServerBuilder::new()
        .token(token())
        .resource(Resource::text("gabp://game/n", "N", read))
        .build();
    assert!(matches!(
        resource,
        Err(Error::MissingState { state: "u32", .. })
    ));
    let method = ModServerBuilder::new()
        .token(token())
        .method("game/n", |State(n): State<u64>| async move { Ok(n) })
        .build();
    assert!(matches!(
        method,
        Err(Error::MissingState { state: "u64", .. })
    ));

    // Registered: built; and a tool added later is checked the same way.
    let server = ModServerBuilder::new()
        .token(token())
        .with_state(Score)
        .dynamic_tools(true)
        .tool(tool())
        .build()
        .unwrap();
    let later = Tool::new("score/n", |State(n): State<u8>, _: Value| async move {
        Ok::<_, CallError>(n)
    });
    assert!(matches!(
        server.tools().add(later),
        Err(Error::MissingState { state: "u8", .. })
    ));
}
