//! The `peers/` corpus read liberally, as SPEC/1.0 gabp.md §3.5 promises: Lib.GAB 1.0.3's messages as recorded
//! from its live example mod with `gabp record`, every one through the decoder and the types a bridge uses, and
//! the recording replayed as the mod to a `Bridge`; GABS's requests through a `ModServer`.

mod server_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_session::Error;
use gabp_testkit::{MockMod, ReplayOptions};
use gabp_transport::{Connection, Token};
use gabp_types::decode::{check_result_in, decode, decode_response_to, DecodeMode};
use gabp_types::methods::{HelloParams, ToolsCallParams, ToolsListResult, WelcomeResult};
use gabp_types::{ErrorCode, ExtraMembers, Message};
use serde_json::{json, Map, Value};

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../peers")
}

/// The recording of one session of Lib.GAB 1.0.3's example mod (`Lib.GAB.Example`, run on Mono).
const LIBGAB: &str = "libgab-1.0.3/hello-world.jsonl";

/// The recording of a request with non-ASCII UTF-8 to the same mod: it is never answered.
const LIBGAB_NON_ASCII: &str = "libgab-1.0.3/non-ascii-stall.jsonl";

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A message of a recording: who sent it, and the envelope as it was on the wire.
struct Recorded {
    from_mod: bool,
    message: Map<String, Value>,
}

/// The messages of the recording `name`, in order.
fn recorded(name: &str) -> Vec<Recorded> {
    let text = String::from_utf8(read(&peers().join(name))).expect("UTF-8");
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let record: Value = serde_json::from_str(line).expect("a JSON line");
        if record["kind"] != "message" {
            continue;
        }
        let Value::Object(message) = record["message"].clone() else {
            panic!("{name}: a message that is not an object: {line}");
        };
        let from_mod = record["direction"] == "mod-to-bridge";
        out.push(Recorded { from_mod, message });
    }
    out
}

/// What the mod sent in the recording `name`: each message and, for a response, the method it answers.
fn from_mod(name: &str) -> Vec<(Map<String, Value>, Option<String>)> {
    let all = recorded(name);
    let method_of = |id: &Value| {
        all.iter()
            .find(|r| !r.from_mod && &r.message["id"] == id)
            .and_then(|r| r.message["method"].as_str().map(str::to_owned))
    };
    all.iter()
        .filter(|r| r.from_mod)
        .map(|r| {
            let method = (r.message["type"] == "response").then(|| method_of(&r.message["id"]));
            (r.message.clone(), method.flatten())
        })
        .collect()
}

/// The `result` of the recorded answer to the first `method` request.
fn result_of(method: &str) -> Value {
    from_mod(LIBGAB)
        .into_iter()
        .find(|(_, m)| m.as_deref() == Some(method))
        .map(|(message, _)| message["result"].clone())
        .unwrap_or_else(|| panic!("no answer to {method} in {LIBGAB}"))
}

#[test]
fn every_libgab_message_reads_through_the_types_a_bridge_uses() {
    let messages = from_mod(LIBGAB);
    assert!(messages.len() >= 11, "{}", messages.len());
    let (mut results, mut errors, mut events) = (0, 0, 0);
    for (message, method) in messages {
        let bytes = serde_json::to_vec(&message).expect("JSON");
        let shown = String::from_utf8_lossy(&bytes).into_owned();
        let read = match &method {
            Some(method) => decode_response_to(&bytes, method, DecodeMode::Lenient),
            None => decode(&bytes, DecodeMode::Lenient),
        }
        .unwrap_or_else(|e| panic!("{e}: {shown}"));
        match read {
            Message::Response(response) => {
                // 1.0.3 writes both members in every response, the one it does not use null (§3.5).
                assert!(
                    message.contains_key("result") && message.contains_key("error"),
                    "{shown}"
                );
                assert!(decode(&bytes, DecodeMode::Strict).is_err(), "{shown}");
                let method = method.expect("every response answers a recorded request");
                if let Some(error) = response.error_object() {
                    errors += 1;
                    assert_eq!(message["result"], Value::Null, "{shown}");
                    assert!([-31002, -32601].contains(&error.code.0), "{shown}");
                    continue;
                }
                results += 1;
                let result = response.result().expect("a success").clone();
                assert_eq!(message["error"], Value::Null, "{shown}");
                check_result_in(&method, &result, DecodeMode::Lenient)
                    .unwrap_or_else(|e| panic!("{e}: {shown}"));
                match method.as_str() {
                    "session/hello" => {
                        let mut welcome: WelcomeResult =
                            serde_json::from_value(result).expect("welcome");
                        welcome.clear_extra();
                        // The welcome lists the protocol methods it serves, not its tools.
                        assert!(welcome.capabilities.has_method("tools/call"), "{shown}");
                        assert!(!welcome.capabilities.has_method("hello/echo"), "{shown}");
                        assert!(!welcome.capabilities.has_method("session/ping"), "{shown}");
                        let listed = &result_of("session/hello")["capabilities"]["methods"];
                        assert_eq!(listed.as_array().map(Vec::len), Some(5), "{shown}");
                    }
                    "tools/list" => {
                        let list: ToolsListResult = serde_json::from_value(result).expect("tools");
                        assert_eq!(list.tools.len(), 2, "{shown}");
                        // Lib.GAB's own members are kept for the caller.
                        for tool in &list.tools {
                            assert!(tool.extra["parameters"].is_array(), "{shown}");
                            assert_eq!(tool.extra["requiresAuth"], true, "{shown}");
                        }
                    }
                    _ => {}
                }
            }
            Message::Event(event) => {
                events += 1;
                assert_eq!(event.channel.as_str(), "host/lifecycle", "{shown}");
                // Seq 1 went out before anyone subscribed: the first one seen is 2.
                assert_eq!(event.seq, 2, "{shown}");
                assert_eq!(event.payload["state"], "stopping", "{shown}");
            }
            Message::Request(_) => panic!("a mod sends no requests: {shown}"),
        }
    }
    assert_eq!((results, errors, events), (7, 3, 1));
}

#[test]
fn liberal_reads_keep_what_strict_reading_refuses() {
    let list = result_of("tools/list");
    let e = check_result_in("tools/list", &list, DecodeMode::Strict).expect_err("strict");
    assert_eq!(e.pointer(), "/result/tools/0/parameters");
    // What was read, with its extra members dropped, writes as strict gabp/1.
    let mut read: ToolsListResult = serde_json::from_value(list).expect("liberal");
    assert_eq!(read.first_extra().as_deref(), Some("/tools/0/parameters"));
    read.clear_extra();
    let written = serde_json::to_value(&read).expect("json");
    check_result_in("tools/list", &written, DecodeMode::Strict).expect("strict after clearing");
}

/// Lib.GAB counts `Content-Length` in characters: a body with non-ASCII UTF-8 is never complete, and the
/// recorded request is never answered.
#[test]
fn a_non_ascii_request_to_libgab_is_never_answered() {
    let all = recorded(LIBGAB_NON_ASCII);
    let asked = all
        .iter()
        .find(|r| !r.from_mod && r.message["method"] == "tools/call")
        .expect("the non-ASCII call");
    let text = serde_json::to_string(&asked.message).expect("JSON");
    assert!(!text.is_ascii(), "{text}");
    let answered = all
        .iter()
        .any(|r| r.from_mod && r.message["id"] == asked.message["id"]);
    assert!(!answered, "1.0.3 answered a non-ASCII body");
}

/// The recording replayed as the mod: a `Bridge` reads every answer of Lib.GAB 1.0.3 as what it means.
#[tokio::test]
async fn a_bridge_reads_libgab_replayed_from_its_recording() {
    let mut options = ReplayOptions::default();
    options.timing = false;
    let replay = MockMod::from_recording(peers().join(LIBGAB))
        .expect("the recording reads")
        .with_options(options);
    let connection = Connection::new(replay.serve_in_memory());
    let run = async {
        let bridge = Bridge::over(connection, replay.token().clone())
            .await
            .expect("handshake");
        assert_eq!(bridge.welcome().agent_id.as_str(), "gabp-server");
        let tools = bridge.list_tools().await.expect("Lib.GAB's tools/list");
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].name.as_str(), "hello/echo");
        assert_eq!(tools[0].extra["parameters"][0]["type"], "String");
        let echo = bridge
            .call_tool("hello/echo", json!({"message": "hi"}))
            .await
            .expect("an answer with \"error\": null beside it");
        assert_eq!(echo, json!({"message": "hi"}));
        // "result": null beside an error reads as the error (§3.5), Lib.GAB's code as the registry's.
        let missing = bridge.call_tool("hello/nothing", json!({})).await;
        match missing {
            Err(e @ Error::ToolNotFound { .. }) => assert_eq!(e.code(), Some(ErrorCode(-31002))),
            other => panic!("expected ToolNotFound, got {other:?}"),
        }
        let ping = bridge
            .ping()
            .await
            .expect_err("1.0.3 does not serve session/ping");
        assert_eq!(ping.code(), Some(ErrorCode::METHOD_NOT_FOUND));
        let mut lifecycle = bridge
            .subscribe(["host/lifecycle", "no/such"])
            .await
            .expect("subscribe");
        match tokio::time::timeout(Duration::from_secs(10), lifecycle.next()).await {
            Ok(Some(Ok(SubscriptionItem::Event(event)))) => {
                assert_eq!(event.payload["state"], "stopping");
            }
            other => panic!("expected the recorded event, got {other:?}"),
        }
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the replay answers in time");
}

/// The `gabs/` files, each with the method it answers when it is a response.
fn gabs_corpus() -> Vec<(PathBuf, Option<String>)> {
    let index: BTreeMap<String, String> =
        serde_json::from_slice(&read(&peers().join("index.json"))).expect("peers/index.json");
    let mut names: Vec<String> = std::fs::read_dir(peers().join("gabs"))
        .expect("peer directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let files: Vec<_> = names
        .into_iter()
        .map(|name| {
            let key = format!("gabs/{name}");
            (peers().join(&key), index.get(&key).cloned())
        })
        .collect();
    assert!(files.len() >= 3, "{files:?}");
    files
}

#[test]
fn every_gabs_message_reads_through_the_types_a_mod_uses() {
    for (path, method) in gabs_corpus() {
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
            Message::Event(_) => panic!("{shown}: GABS sends no events"),
        }
    }
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
