//! The `peers/` corpus (Lib.GAB's and GABS's messages) read liberally, as SPEC/1.0 gabp.md §3.5 promises:
//! every file through the decoder and the types a bridge or a mod uses, then Lib.GAB's answers through a
//! `Bridge` talking to a scripted mod and GABS's requests through a `ModServer`.

mod bridge_support;
mod server_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_transport::Token;
use gabp_types::decode::{check_result_in, decode, decode_response_to, DecodeMode};
use gabp_types::methods::{
    HelloParams, SubscribeResult, ToolsCallParams, ToolsListResult, WelcomeResult,
};
use gabp_types::{ExtraMembers, Message};
use serde_json::{json, Map, Value};

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../peers")
}

/// Every file of the corpus, with the method it answers when it is a response.
fn corpus() -> Vec<(PathBuf, Option<String>)> {
    let index: BTreeMap<String, String> = serde_json::from_slice(
        &std::fs::read(peers().join("index.json")).expect("peers/index.json"),
    )
    .expect("index");
    let mut files = Vec::new();
    for peer in ["libgab-1.0.3", "gabs"] {
        let mut names: Vec<String> = std::fs::read_dir(peers().join(peer))
            .expect("peer directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let key = format!("{peer}/{name}");
            files.push((peers().join(&key), index.get(&key).cloned()));
        }
    }
    assert!(files.len() >= 9, "{files:?}");
    files
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `result` of a response fixture.
fn result_of(name: &str) -> Value {
    let value: Value = serde_json::from_slice(&read(&peers().join(name))).expect("JSON");
    value["result"].clone()
}

#[test]
fn every_peer_message_reads_through_the_types_a_bridge_or_a_mod_uses() {
    for (path, method) in corpus() {
        let bytes = read(&path);
        let shown = path.display();
        let message = match &method {
            Some(method) => decode_response_to(&bytes, method, DecodeMode::Lenient),
            None => decode(&bytes, DecodeMode::Lenient),
        }
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
        match message {
            Message::Response(response) => {
                let result = response.result().expect("a success").clone();
                let method = method.expect("responses are indexed");
                check_result_in(&method, &result, DecodeMode::Lenient)
                    .unwrap_or_else(|e| panic!("{shown}: {e}"));
                match method.as_str() {
                    "session/hello" => {
                        let mut welcome: WelcomeResult =
                            serde_json::from_value(result).expect("welcome");
                        welcome.clear_extra();
                        assert!(welcome.capabilities.has_method("tools/list"), "{shown}");
                    }
                    "tools/list" => {
                        let list: ToolsListResult = serde_json::from_value(result).expect("tools");
                        assert!(!list.tools.is_empty(), "{shown}");
                        // Lib.GAB's own members are kept for the caller.
                        for tool in &list.tools {
                            assert!(tool.extra["parameters"].is_array(), "{shown}");
                            assert_eq!(tool.extra["requiresAuth"], true, "{shown}");
                        }
                    }
                    "events/subscribe" => {
                        let granted: SubscribeResult =
                            serde_json::from_value(result).expect("subscribe");
                        assert_eq!(granted.subscribed, ["player.moved"]);
                    }
                    _ => {}
                }
            }
            Message::Event(event) => {
                assert_eq!(event.channel.as_str(), "player.moved", "{shown}");
                assert!(event.seq >= 1, "{shown}");
            }
            Message::Request(request) => {
                if request.method == "session/hello" {
                    let hello: HelloParams = request.params_as().expect("hello params");
                    assert_eq!(hello.token.expose_secret().len(), 32);
                }
                if request.method == "tools/call" {
                    // `parameters` is read as `arguments`.
                    let call: ToolsCallParams = request.params_as().expect("call params");
                    assert_eq!(call.arguments.expect("arguments")["drafted"], true);
                }
            }
        }
    }
}

#[test]
fn liberal_reads_keep_what_strict_reading_refuses() {
    let list = result_of("libgab-1.0.3/002_tools-list.res.json");
    let e = check_result_in("tools/list", &list, DecodeMode::Strict).expect_err("strict");
    assert_eq!(e.pointer(), "/result/tools/0/parameters");
    // What was read, with its extra members dropped, writes as strict gabp/1.
    let mut read: ToolsListResult = serde_json::from_value(list).expect("liberal");
    assert_eq!(read.first_extra().as_deref(), Some("/tools/0/parameters"));
    read.clear_extra();
    let written = serde_json::to_value(&read).expect("json");
    check_result_in("tools/list", &written, DecodeMode::Strict).expect("strict after clearing");
}

#[tokio::test]
async fn a_bridge_reads_libgab_through_a_scripted_mod() {
    use bridge_support::{pair, soon, token};
    let (conn, mut mock) = pair();
    let script = async move {
        mock.handshake_with(result_of("libgab-1.0.3/001_session-welcome.res.json"))
            .await;
        let list = mock.expect("tools/list").await;
        mock.reply(list.id, result_of("libgab-1.0.3/002_tools-list.res.json"))
            .await;
        let subscribe = mock.expect("events/subscribe").await;
        mock.reply(
            subscribe.id,
            result_of("libgab-1.0.3/004_events-subscribe.res.json"),
        )
        .await;
        for event in ["005_player-moved.event.json", "006_player-moved.event.json"] {
            let body = read(&peers().join("libgab-1.0.3").join(event));
            mock.send_raw(String::from_utf8(body).expect("UTF-8")).await;
        }
        let call = mock.expect("tools/call").await;
        mock.reply(call.id, result_of("libgab-1.0.3/003_tools-call.res.json"))
            .await;
        mock
    };
    let bridge = async {
        let bridge = Bridge::over(conn, token()).await.expect("handshake");
        assert_eq!(bridge.welcome().agent_id.as_str(), "colony-sim");
        let tools = bridge.list_tools().await.expect("Lib.GAB's tools/list");
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[1].name.as_str(), "pawn/draft");
        assert_eq!(tools[1].extra["parameters"][1]["type"], "Boolean");
        assert_eq!(tools[0].extra["requiresAuth"], true);
        let mut moves = bridge.subscribe(["player.moved"]).await.expect("subscribe");
        for seq in [1, 2] {
            match soon(moves.next()).await {
                Some(Ok(SubscriptionItem::Event(event))) => assert_eq!(event.seq, seq),
                other => panic!("expected the event of seq {seq}, got {other:?}"),
            }
        }
        let pawns = bridge
            .call_tool("colony/list_pawns", json!({}))
            .await
            .expect("tools/call");
        assert_eq!(pawns["pawns"][0]["name"], "Engie");
        bridge
    };
    let (bridge, _mock) = soon(async { tokio::join!(bridge, script) }).await;
    drop(bridge);
}

#[tokio::test]
async fn a_mod_reads_what_gabs_sends() {
    let hello: Value =
        serde_json::from_slice(&read(&peers().join("gabs/001_session-hello.req.json")))
            .expect("JSON");
    let token = hello["params"]["token"].as_str().expect("token");
    let server = ModServer::builder()
        .app("Colony Sim", "1.5.4104")
        .token(Token::new(token).expect("token"))
        .tool(
            Tool::new("pawn/draft", |args: Map<String, Value>| async move {
                Ok::<_, CallError>(Value::Object(args))
            })
            .input_schema(json!({"type": "object"}))
            .output_schema(json!({"type": "object"})),
        )
        .build()
        .expect("build");
    let mut client = server_support::connect(&server);
    for name in [
        "gabs/001_session-hello.req.json",
        "gabs/003_tools-call-parameters.req.json",
    ] {
        client.send_frame(&read(&peers().join(name))).await;
        let answer = client.recv_response().await;
        let result = answer
            .result()
            .unwrap_or_else(|| panic!("{name}: {answer:?}"));
        if name.contains("tools-call") {
            assert_eq!(
                result,
                &json!({"pawnId": "Thing_Human1042", "drafted": true})
            );
        } else {
            assert!(result.get("capabilities").is_some());
        }
    }
}
