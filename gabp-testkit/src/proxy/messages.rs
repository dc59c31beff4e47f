//! Messages on a link: the faults applied to what the bridge and the mod send, and the hello the proxy
//! answers itself when a fault says so.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gabp_transport::Token;
use gabp_types::methods::Platform;
use gabp_types::{ErrorCode, ErrorObject, Message, MessageId, Response};
use serde_json::{json, Map, Value};

use super::link::{Link, PreAuth};
use crate::fault::Kind;
use crate::record::Direction;
use gabp_codec::encode_frame as frame;

/// How long the proxy waits for the mod's welcome when it authenticates on the bridge's behalf
/// ([`Fault::answer_before_hello`](crate::Fault::answer_before_hello)).
const PREAUTH_TIMEOUT: Duration = Duration::from_secs(10);

/// Answer-before-hello, when it is armed: authenticates with the mod at once, on the bridge's behalf, with
/// a hello of the proxy's own; the mod's welcome is kept by [`mod_frame`] for [`answer_hello`].
pub(super) async fn hello_first(link: &Link) {
    let Some(token) = link.faults.take(|k| match k {
        Kind::AnswerBeforeHello(token) => Some(token.clone()),
        _ => None,
    }) else {
        return;
    };
    let own_id = MessageId::new_v4();
    let hello = json!({
        "v": "gabp/1", "id": own_id, "type": "request", "method": "session/hello",
        "params": {
            "token": token.expose_secret(), "bridgeVersion": env!("CARGO_PKG_VERSION"),
            "platform": Platform::current(), "launchId": MessageId::new_v4(),
            "clientInfo": { "name": "gabp-testkit proxy" }
        }
    });
    link.state.lock().preauth = Some(PreAuth {
        token,
        own_id,
        bridge_hello_done: false,
    });
    let body = serde_json::to_vec(&hello).unwrap_or_default();
    link.forward(Direction::BridgeToMod, frame(&body)).await;
}

/// Whether `body` is fewer characters (UTF-16 units, as .NET counts them) than bytes: non-ASCII UTF-8.
fn counted_short(body: &[u8]) -> bool {
    !body.is_ascii() && String::from_utf8_lossy(body).encode_utf16().count() < body.len()
}

fn parse_object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

fn encode(map: &Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(map).unwrap_or_default())
}

/// Applies the faults on a frame from the bridge; `None` when it must not be forwarded.
pub(super) async fn bridge_frame(link: &Arc<Link>, body: Bytes) -> Option<Bytes> {
    let mut body = body;
    if link.state.lock().stalled {
        return None;
    }
    if counted_short(&body)
        && link
            .faults
            .take(|k| matches!(k, Kind::StallOnNonAscii).then_some(()))
            .is_some()
    {
        // Counted in characters, the body never completes: nothing after it is read either.
        link.state.lock().stalled = true;
        return None;
    }
    let is_hello = |map: &Map<String, Value>| {
        map.get("type").and_then(Value::as_str) == Some("request")
            && map.get("method").and_then(Value::as_str) == Some("session/hello")
    };

    // Answer-before-hello: the bridge's first hello is answered here.
    let preauth = {
        let state = link.state.lock();
        state
            .preauth
            .as_ref()
            .filter(|p| !p.bridge_hello_done)
            .map(|p| p.token.clone())
    };
    if let Some(token) = preauth {
        if let Some(map) = parse_object(&body).filter(|m| is_hello(m)) {
            if let Some(p) = link.state.lock().preauth.as_mut() {
                p.bridge_hello_done = true;
            }
            answer_hello(link, &map, &token).await;
            return None;
        }
    }

    if let Some(mut map) = parse_object(&body).filter(|m| is_hello(m)) {
        let token = link.faults.take(|k| match k {
            Kind::AcceptAnyToken(token) => Some(token.clone()),
            _ => None,
        });
        if let (Some(token), Some(Value::Object(params))) = (token, map.get_mut("params")) {
            params.insert(
                "token".into(),
                Value::String(token.expose_secret().to_owned()),
            );
            body = encode(&map);
        }
    }

    if link
        .faults
        .peek(|k| matches!(k, Kind::UncheckedInput).then_some(()))
        .is_some()
    {
        if let Some(lax) = parse_object(&body).and_then(|map| unchecked_input(link, map)) {
            body = encode(&lax);
        }
    }

    if let Ok(value) = serde_json::from_slice::<Value>(&body) {
        if link
            .faults
            .take(|k| matches!(k, Kind::ExecuteOversized).then_some(()))
            .is_some()
        {
            body = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        }
    }
    Some(body)
}

/// The unchecked-input fault on a request from the bridge: an `input/*` request whose params its method
/// refuses, with params the mod takes instead.
fn unchecked_input(link: &Link, mut map: Map<String, Value>) -> Option<Map<String, Value>> {
    use gabp_types::methods::{InputKeyParams, InputMouseParams, InputTextParams};
    fn takes<T: serde::de::DeserializeOwned>(params: Option<&Value>) -> bool {
        params.is_some_and(|p| serde_json::from_value::<T>(p.clone()).is_ok())
    }
    let params = map.get("params");
    let (valid, harmless) = match map.get("method").and_then(Value::as_str)? {
        "input/key" => (
            takes::<InputKeyParams>(params),
            json!({"key": "ShiftLeft", "action": "release"}),
        ),
        "input/text" => (takes::<InputTextParams>(params), json!({"text": "x"})),
        "input/mouse" => (
            takes::<InputMouseParams>(params),
            json!({"button": "left", "action": "release"}),
        ),
        _ => return None,
    };
    if valid {
        return None;
    }
    link.faults
        .take(|k| matches!(k, Kind::UncheckedInput).then_some(()))?;
    map.insert("params".into(), harmless);
    Some(map)
}

/// The unchecked-actions fault on a response: a -32602 refusal of an `env/step` action becomes a step.
fn unchecked_actions(link: &Link, map: &mut Map<String, Value>) -> bool {
    // gabp-session's refusal of an action outside the space (other -32602s, such as input/key's action, are
    // left alone).
    let refused_action = map
        .get("error")
        .filter(|e| e["code"] == ErrorCode::INVALID_PARAMS.0)
        .and_then(|e| e["message"].as_str())
        .is_some_and(|message| message.contains("not in the action space"));
    if !refused_action
        || link
            .faults
            .take(|k| matches!(k, Kind::UncheckedActions).then_some(()))
            .is_none()
    {
        return false;
    }
    map.remove("error");
    map.insert(
        "result".into(),
        json!({"observation": null, "reward": 0, "terminated": false, "truncated": false, "info": {}}),
    );
    true
}

/// Answers the bridge's hello on the mod's behalf (answer-before-hello fault).
async fn answer_hello(link: &Arc<Link>, hello: &Map<String, Value>, token: &Token) {
    let Some(id) = hello
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| MessageId::parse(s).ok())
    else {
        return;
    };
    let offered = hello
        .get("params")
        .and_then(|p| p.get("token"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !token.verify(offered) {
        let refusal = Response::error(
            id,
            ErrorObject::new(ErrorCode::AUTHENTICATION_FAILED, "authentication failed"),
        );
        link.forward(
            Direction::ModToBridge,
            frame(&Message::from(refusal).to_vec()),
        )
        .await;
        link.close(Direction::ModToBridge).await;
        link.close(Direction::BridgeToMod).await;
        return;
    }
    let mut welcome = link.welcome.subscribe();
    let result = tokio::select! {
        () = link.cancel.cancelled() => return,
        () = tokio::time::sleep(PREAUTH_TIMEOUT) => return,
        result = welcome.wait_for(Option::is_some) => match result {
            Ok(result) => result.clone().unwrap_or(Value::Null),
            Err(_) => return,
        },
    };
    let answer = Response::success(id, result);
    link.forward(
        Direction::ModToBridge,
        frame(&Message::from(answer).to_vec()),
    )
    .await;
}

/// Applies the faults on a frame from the mod; `None` when it must not be forwarded.
pub(super) fn mod_frame(link: &Link, body: Bytes) -> Option<Bytes> {
    let own_id = link.state.lock().preauth.as_ref().map(|p| p.own_id);
    let wants_parse = own_id.is_some()
        || link
            .faults
            .peek(|k| {
                matches!(
                    k,
                    Kind::WrongResponseId
                        | Kind::SkipEventSeq
                        | Kind::UnknownEnvelopeField
                        | Kind::UnregisteredErrorCodes
                        | Kind::NullBesideOther
                        | Kind::UpstreamMinimum
                        | Kind::UncheckedActions
                )
                .then_some(())
            })
            .is_some();
    if !wants_parse {
        return Some(body);
    }
    let Some(mut map) = parse_object(&body) else {
        return Some(body);
    };
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let id = map
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| MessageId::parse(s).ok());
    let mut changed = false;

    if kind == "response" {
        if let (Some(own), Some(id)) = (own_id, id) {
            if own == id {
                // The welcome to the proxy's own hello: kept for the bridge, never forwarded.
                let result = map.remove("result").unwrap_or(Value::Null);
                link.welcome.send_replace(Some(result));
                return None;
            }
        }
        if id.is_some_and(|id| !id.is_nil())
            && link
                .faults
                .take(|k| matches!(k, Kind::WrongResponseId).then_some(()))
                .is_some()
        {
            map.insert("id".into(), json!(MessageId::new_v4()));
            changed = true;
        }
        changed |= upstream_minimum(link, &mut map);
        changed |= unchecked_actions(link, &mut map);
        changed |= libgab_response(link, &mut map);
    }

    if kind == "event" {
        let channel = map
            .get("channel")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let skip = link
            .faults
            .take(|k| matches!(k, Kind::SkipEventSeq).then_some(()))
            .is_some();
        let offset = {
            let mut state = link.state.lock();
            let offset = state.seq_offsets.entry(channel).or_insert(0);
            if skip {
                *offset += 1;
            }
            *offset
        };
        if offset > 0 {
            if let Some(seq) = map.get("seq").and_then(Value::as_u64) {
                map.insert("seq".into(), json!(seq + offset));
                changed = true;
            }
        }
    }

    if link
        .faults
        .take(|k| matches!(k, Kind::UnknownEnvelopeField).then_some(()))
        .is_some()
    {
        map.insert("extra".into(), Value::Bool(true));
        changed = true;
    }
    Some(if changed { encode(&map) } else { body })
}

/// Lib.GAB's way with a response, when a fault says so: its own error codes, and both members always.
fn libgab_response(link: &Link, map: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    let code = map
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64);
    let libgab = match code.map(ErrorCode) {
        Some(ErrorCode::AUTHENTICATION_FAILED) => Some(-31000),
        Some(ErrorCode::AUTHENTICATION_REQUIRED) => Some(-31001),
        Some(ErrorCode::TOOL_NOT_FOUND) => Some(-31002),
        _ => None,
    };
    if let Some(libgab) = libgab {
        let armed = link
            .faults
            .take(|k| matches!(k, Kind::UnregisteredErrorCodes).then_some(()))
            .is_some();
        if let (true, Some(Value::Object(error))) = (armed, map.get_mut("error")) {
            error.insert("code".into(), json!(libgab));
            changed = true;
        }
    }
    let missing = if map.contains_key("result") {
        "error"
    } else {
        "result"
    };
    if !map.contains_key(missing)
        && link
            .faults
            .take(|k| matches!(k, Kind::NullBesideOther).then_some(()))
            .is_some()
    {
        map.insert(missing.into(), Value::Null);
        changed = true;
    }
    changed
}

/// The upstream-minimum fault on a response: a welcome without ping, goodbye and limits; a wrong token's
/// refusal that leaves the connection open.
fn upstream_minimum(link: &Link, map: &mut Map<String, Value>) -> bool {
    let refusal = map
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_i64)
        == Some(ErrorCode::AUTHENTICATION_FAILED.0);
    let welcome = map
        .get_mut("result")
        .and_then(|r| r.get_mut("capabilities"))
        .and_then(Value::as_object_mut);
    if !refusal && welcome.is_none() {
        return false;
    }
    let armed = link
        .faults
        .take(|k| matches!(k, Kind::UpstreamMinimum).then_some(()))
        .is_some();
    if !armed {
        return false;
    }
    if refusal {
        link.state.lock().refused_open = true;
        return false;
    }
    let Some(capabilities) = welcome else {
        return false;
    };
    capabilities.remove("limits");
    if let Some(Value::Array(methods)) = capabilities.get_mut("methods") {
        methods.retain(|m| m != "session/ping" && m != "session/goodbye");
    }
    true
}
