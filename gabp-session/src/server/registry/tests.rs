//! The live table: changes, their events, and who sees them.

use std::time::Duration;

use crate::engine::FrameQueue;
use gabp_transport::Token;
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{Event, Message};
use serde_json::{json, Value};

use super::*;
use crate::server::events::{SubscriberQueue, Subscriptions};
use crate::server::{CallError, ModServer, ModServerBuilder};

fn token() -> Token {
    Token::new("t".repeat(40)).unwrap()
}

fn tool(name: &str) -> Tool {
    Tool::new(name, |_: Value| async { Ok::<_, CallError>(()) })
}

fn dynamic() -> ModServerBuilder {
    ModServer::builder().token(token()).dynamic_tools(true)
}

/// A subscriber of `tools/changed` on `server`.
fn subscriber(server: &ModServer) -> (Subscriptions, FrameQueue) {
    let (queue, rx) = SubscriberQueue::new(16, 1 << 20);
    let sub = Subscriptions::new(queue);
    let hub = server.event_publisher().hub().clone();
    assert_eq!(
        hub.subscribe(&sub, &[TOOLS_CHANGED_CHANNEL.to_owned()], true)
            .unwrap(),
        [TOOLS_CHANGED_CHANNEL]
    );
    (sub, rx)
}

fn next_event(rx: &mut FrameQueue) -> Event {
    match decode(&rx.try_next().expect("an event"), DecodeMode::Strict).unwrap() {
        Message::Event(e) => e,
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn changes_need_a_built_dynamic_server() {
    let builder = dynamic();
    let early = builder.tool_registry();
    assert!(matches!(early.add(tool("a/b")), Err(Error::ServerNotBuilt)));
    let server = builder.build().unwrap();
    assert!(early.is_dynamic());
    early.add(tool("a/b")).unwrap();
    assert!(server.tools().contains("a/b"), "the same table");

    let fixed = ModServer::builder()
        .token(token())
        .tool(tool("a/b"))
        .build()
        .unwrap();
    assert!(!fixed.tools().is_dynamic());
    assert!(matches!(
        fixed.tools().remove("a/b"),
        Err(Error::DynamicToolsDisabled)
    ));
    assert!(matches!(
        fixed.tools().add(tool("a/c")),
        Err(Error::DynamicToolsDisabled)
    ));
    assert_eq!(fixed.tools().names(), ["a/b"]);
    assert!(!fixed
        .welcome()
        .capabilities
        .has_event(TOOLS_CHANGED_CHANNEL));
}

#[test]
fn each_change_is_in_effect_then_announced_in_order() {
    let server = dynamic().tool(tool("a/first")).build().unwrap();
    let (_sub, mut rx) = subscriber(&server);
    let tools = server.tools();
    let catalog = ModServer::builder().tool_catalog();
    assert!(!catalog.is_built(), "another server's catalog");

    tools.add(tool("a/second")).unwrap();
    assert_eq!(tools.names(), ["a/first", "a/second"]);
    let event = next_event(&mut rx);
    assert_eq!(event.channel.as_str(), TOOLS_CHANGED_CHANNEL);
    assert_eq!(event.seq, 0);
    assert_eq!(event.payload, json!({"added": ["a/second"], "removed": []}));

    assert!(tools.remove("a/first").unwrap());
    assert!(!tools.remove("a/first").unwrap(), "not served any more");
    let event = next_event(&mut rx);
    assert_eq!(event.seq, 1);
    assert_eq!(event.payload, json!({"added": [], "removed": ["a/first"]}));
    assert!(
        rx.try_next().is_none(),
        "a removal of nothing is not announced"
    );
    assert_eq!(tools.names(), ["a/second"]);
}

#[test]
fn batches_are_all_or_nothing_and_announced_once() {
    let server = dynamic().tool(tool("a/kept")).build().unwrap();
    let (_sub, mut rx) = subscriber(&server);
    let tools = server.tools();
    assert!(matches!(
        tools.add_all([tool("a/one"), tool("a/kept")]),
        Err(Error::Duplicate { kind: "tool", name }) if name == "a/kept"
    ));
    assert!(matches!(
        tools.add_all([tool("a/one"), tool("a/one")]),
        Err(Error::Duplicate { kind: "tool", name }) if name == "a/one"
    ));
    assert!(matches!(
        tools.add_all([tool("a/two"), tool("bad.name")]),
        Err(Error::InvalidName { kind: "tool", .. })
    ));
    assert_eq!(tools.names(), ["a/kept"], "nothing was added");
    assert!(rx.try_next().is_none(), "refusals are not announced");

    tools.add_all([tool("a/one"), tool("a/two")]).unwrap();
    assert_eq!(
        next_event(&mut rx).payload,
        json!({"added": ["a/one", "a/two"], "removed": []})
    );
    assert!(rx.try_next().is_none());
}

#[test]
fn catalog_lookups_and_timeouts_follow_the_table() {
    let builder = dynamic().tool(tool("a/old").timeout(Duration::from_secs(2)));
    let catalog = builder.tool_catalog();
    let server = builder.build().unwrap();
    let table = &server.tools().table;
    assert_eq!(table.longest_timeout(), Some(Duration::from_secs(2)));

    server
        .tools()
        .add(
            tool("a/new")
                .tags(["fresh"])
                .timeout(Duration::from_secs(90)),
        )
        .unwrap();
    assert!(catalog.get("a/new").is_some_and(|d| d.has_tag("fresh")));
    assert_eq!(catalog.len(), 2);
    assert_eq!(table.timeout("a/new"), Some(Duration::from_secs(90)));
    assert_eq!(table.longest_timeout(), Some(Duration::from_secs(90)));
    assert!(table.get("a/new").is_some());

    server.tools().remove("a/new").unwrap();
    assert!(catalog.get("a/new").is_none());
    assert!(table.get("a/new").is_none());
    assert_eq!(table.timeout("a/new"), None);
    assert_eq!(table.longest_timeout(), Some(Duration::from_secs(2)));
    assert!(table.has_own_limits());

    // The time-limit layer looks tools up only while one has a limit of its own.
    server.tools().remove("a/old").unwrap();
    assert_eq!(table.longest_timeout(), None);
    assert!(!table.has_own_limits());
    server
        .tools()
        .add(tool("a/old").timeout(Duration::from_secs(3)))
        .unwrap();
    assert!(table.has_own_limits());
}

#[test]
fn names_too_long_for_one_event_are_left_out() {
    let limits = crate::server::ServerLimits {
        max_message_size: 1024,
        ..Default::default()
    };
    let server = dynamic().limits(limits).build().unwrap();
    let (_sub, mut rx) = subscriber(&server);
    let long = format!("a/{}", "x".repeat(1200));
    server.tools().add(tool(&long)).unwrap();
    assert!(server.tools().contains(&long));
    assert_eq!(
        next_event(&mut rx).payload,
        json!({"added": [], "removed": []})
    );
}
