//! `Bridge::tools` against a scripted mod: with the `tools-changed` extension it subscribes once and lists
//! again only after a `tools/changed` event; without it, it never subscribes (SPEC/1.0 extensions.md
//! §tools-changed).

// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

mod bridge_support;

use std::time::Duration;

use bridge_support::{pair, soon, token, welcome, MockMod, ALL_METHODS};
use gabp_session::bridge::Bridge;
use gabp_session::Error;
use gabp_types::methods::{TOOLS_CHANGED_CHANNEL, TOOLS_CHANGED_EXTENSION};
use serde_json::{json, Value};

fn tool(name: &str) -> Value {
    json!({"name": name, "title": name, "description": name, "inputSchema": {}, "outputSchema": {}})
}

fn with_extension() -> Value {
    let mut w = welcome(ALL_METHODS, &["player/move", TOOLS_CHANGED_CHANNEL]);
    w["capabilities"]["extensions"] =
        json!({ TOOLS_CHANGED_EXTENSION: {"channel": TOOLS_CHANGED_CHANNEL} });
    w
}

async fn connect(welcome: Value) -> (Bridge, MockMod) {
    let (conn, mut mock) = pair();
    let (bridge, _) = tokio::join!(
        Bridge::builder(token()).over(conn),
        mock.handshake_with(welcome)
    );
    (bridge.unwrap(), mock)
}

/// Answers the next `tools/list` with `tools`.
async fn answer_list(mock: &mut MockMod, tools: &[&str]) {
    let list = mock.expect("tools/list").await;
    let tools: Vec<Value> = tools.iter().map(|t| tool(t)).collect();
    mock.reply(list.id, json!({ "tools": tools })).await;
}

fn names(tools: &[gabp_types::ToolDescriptor]) -> Vec<String> {
    tools.iter().map(|t| t.name.as_str().to_owned()).collect()
}

#[tokio::test]
async fn with_the_extension_the_list_is_asked_for_again_only_after_an_event() {
    let (bridge, mut mock) = connect(with_extension()).await;
    let (tools, asked) = tokio::join!(bridge.tools(), async {
        let asked = mock.grant_subscribe(&[TOOLS_CHANGED_CHANNEL]).await;
        answer_list(&mut mock, &["a/one"]).await;
        asked
    });
    assert_eq!(asked, [TOOLS_CHANGED_CHANNEL]);
    assert_eq!(names(&tools.unwrap()), ["a/one"]);
    // Cached: nothing is sent.
    assert_eq!(names(&soon(bridge.tools()).await.unwrap()), ["a/one"]);
    assert!(mock.try_recv(Duration::from_millis(50)).await.is_none());

    // Any event on the channel makes the list stale, whatever its payload (peers are read as sent).
    mock.event(TOOLS_CHANGED_CHANNEL, 0, json!({"something": "else"}))
        .await;
    let (tools, ()) = tokio::join!(
        async {
            loop {
                let tools = bridge.tools().await.unwrap();
                if names(&tools) == ["a/one", "a/two"] {
                    return tools;
                }
                // Let the reader take the event in.
                tokio::task::yield_now().await;
            }
        },
        answer_list(&mut mock, &["a/one", "a/two"])
    );
    assert_eq!(tools.len(), 2);
    assert!(mock.try_recv(Duration::from_millis(50)).await.is_none());
    bridge.close().await;
}

#[tokio::test]
async fn without_the_extension_every_call_asks_and_nothing_is_subscribed() {
    let (bridge, mut mock) = connect(welcome(ALL_METHODS, &["player/move"])).await;
    for _ in 0..2 {
        let (tools, ()) = tokio::join!(bridge.tools(), answer_list(&mut mock, &["a/one"]));
        assert_eq!(names(&tools.unwrap()), ["a/one"]);
    }
    assert!(mock.try_recv(Duration::from_millis(50)).await.is_none());
    bridge.close().await;
}

#[tokio::test]
async fn a_refused_subscription_leaves_the_list_uncached() {
    let (bridge, mut mock) = connect(with_extension()).await;
    for _ in 0..2 {
        let (tools, ()) = tokio::join!(bridge.tools(), async {
            mock.grant_subscribe(&[]).await;
            answer_list(&mut mock, &["a/one"]).await;
        });
        assert_eq!(names(&tools.unwrap()), ["a/one"]);
    }
    bridge.close().await;
}

#[tokio::test]
async fn a_tool_not_found_makes_the_cached_list_stale() {
    let (bridge, mut mock) = connect(with_extension()).await;
    let (tools, _) = tokio::join!(bridge.tools(), async {
        mock.grant_subscribe(&[TOOLS_CHANGED_CHANNEL]).await;
        answer_list(&mut mock, &["a/one"]).await;
    });
    assert_eq!(names(&tools.unwrap()), ["a/one"]);
    // Untyped, then typed (the bridge's own typed path): each call reads the answer its own way.
    for typed in [false, true] {
        let call = async {
            if typed {
                bridge.call_tool_as::<_, Value>("a/one", &json!({})).await
            } else {
                bridge.call_tool("a/one", json!({})).await
            }
        };
        // The tool went away and its event was lost: the call is answered -32400.
        let (called, ()) = tokio::join!(call, async {
            let call = mock.expect("tools/call").await;
            mock.reply_error(
                call.id,
                -32400,
                "tool not found: a/one",
                Some(json!({"tool": "a/one"})),
            )
            .await;
        });
        assert!(
            matches!(called, Err(Error::ToolNotFound { .. })),
            "{called:?}"
        );
        // The next use lists again instead of trusting the cache.
        let (tools, ()) = tokio::join!(bridge.tools(), answer_list(&mut mock, &["a/one"]));
        assert_eq!(names(&tools.unwrap()), ["a/one"], "typed: {typed}");
    }
    bridge.close().await;
}
