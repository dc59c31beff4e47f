//! The engine with a role of its own over an in-memory pair: calls sent and answered, forgotten, failed at the
//! end; requests answered; bad frames; the liberal reading of answers.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use gabp_types::{ErrorCode, Event, MessageId, MethodName, Outcome, Response};
use serde_json::Value;
use tokio::sync::oneshot;

use super::body::encode;
use super::*;

type Reply = oneshot::Receiver<Delivery>;

type Steps = Arc<std::sync::Mutex<Vec<&'static str>>>;

/// Spends the task's cooperative budget, as a busy turn of the loop does.
pub(super) fn spend_budget(cx: &mut Context<'_>) {
    loop {
        let spend = std::pin::pin!(tokio::task::consume_budget());
        if spend.poll(cx).is_pending() {
            return;
        }
    }
}

/// Whether the role has room, and the engine to wake when it has again.
#[derive(Default)]
struct RoomState {
    shut: std::sync::atomic::AtomicBool,
    waker: futures::task::AtomicWaker,
}

type Room = Arc<RoomState>;

fn step(steps: &Steps, step: &'static str) {
    if let Ok(mut steps) = steps.lock() {
        steps.push(step);
    }
}

/// A role that answers every request with its method name, records events, and ends on request (a signal, or
/// after answering `game/end`).
struct Echo {
    events: Arc<std::sync::Mutex<Vec<String>>>,
    /// What the engine asked of the role, in order: `read` (a frame), `call` (a request), `turn` (signals).
    steps: Steps,
    /// Room for requests: while shut, `poll_ready` is pending (a concurrency limit reached).
    room: Room,
    end: Option<oneshot::Receiver<()>>,
    ending: bool,
}

impl Role for Echo {
    type Reason = &'static str;
    type Answer = futures::future::BoxFuture<'static, Result<Response, std::convert::Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.room.waker.register(cx.waker());
        if self.room.shut.load(std::sync::atomic::Ordering::SeqCst) {
            return Poll::Pending;
        }
        Poll::Ready(())
    }

    fn call(&mut self, request: Request) -> Option<Self::Answer> {
        step(&self.steps, "call");
        self.ending |= request.method.as_str() == "game/end";
        let method = request.method.as_str();
        if method == "game/boom" {
            return Some(Box::pin(async { panic!("boom") }));
        }
        let waits = method == "game/later";
        let answer = Response::success(request.id, Value::String(request.method.into_string()));
        if waits {
            return Some(Box::pin(async move {
                tokio::task::yield_now().await;
                Ok(answer)
            }));
        }
        Some(Box::pin(std::future::ready(Ok(answer))))
    }

    fn on_event(&mut self, event: Event, _: usize) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.channel.as_str().to_owned());
        }
    }

    fn on_invalid(&mut self, _: Bytes, _: DecodeError) -> Option<Response> {
        None
    }

    fn answers_bad_frames(&self) -> bool {
        false
    }

    fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<Signal<&'static str>> {
        step(&self.steps, "turn");
        let asked = match &mut self.end {
            Some(end) => Pin::new(end).poll(cx).is_ready(),
            None => false,
        };
        if asked || self.ending {
            self.end = None;
            return Poll::Ready(Signal::End("asked"));
        }
        Poll::Pending
    }

    fn on_frame(&mut self) {
        step(&self.steps, "read");
    }
}

struct Harness {
    peer: Connection,
    outgoing: FrameSender<Outgoing>,
    /// Events this side publishes.
    publish: FrameSender,
    events: Arc<std::sync::Mutex<Vec<String>>>,
    steps: Steps,
    room: Room,
    end: Option<oneshot::Sender<()>>,
    engine: tokio::task::JoinHandle<Ended<&'static str>>,
}

fn start() -> Harness {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    start_on(ours, theirs)
}

/// The engine over `ours`, the test's side of the pair over `theirs`.
fn start_on<S>(ours: S, theirs: tokio::io::DuplexStream) -> Harness
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (outgoing, queue) = frame_queue(16, None);
    let (publish, published) = frame_queue(16, Some(64 * 1024));
    let (end, ended) = oneshot::channel();
    let events = Arc::default();
    let steps = Steps::default();
    let room = Room::default();
    let role = Echo {
        events: Arc::clone(&events),
        steps: Arc::clone(&steps),
        room: Arc::clone(&room),
        end: Some(ended),
        ending: false,
    };
    let queues = Queues {
        outgoing: Some(queue),
        events: Some(published),
        progress: None,
        in_flight: None,
    };
    let limits = Limits {
        max_message_size: 1 << 20,
        backlog: 16,
        backlog_bytes: 1 << 20,
        calls: 4,
        drain_timeout: Duration::from_secs(5),
    };
    let engine = tokio::spawn(Engine::new(Connection::new(ours), role, queues, limits).run());
    Harness {
        peer: Connection::new(theirs),
        outgoing,
        publish,
        events,
        steps,
        room,
        end: Some(end),
        engine,
    }
}

async fn send_call(h: &Harness, method: &str) -> (MessageId, Reply) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    send_call_until(h, method, None, deadline).await
}

async fn send_call_until(
    h: &Harness,
    method: &str,
    params: Option<Value>,
    deadline: tokio::time::Instant,
) -> (MessageId, Reply) {
    let params = params.map(|p| gabp_types::Params::from_serialize(&p).unwrap());
    let request = Request::with_raw_params(MethodName::new(method).unwrap(), params);
    let id = request.id;
    let (reply, rx) = oneshot::channel();
    let body = Bytes::from(Message::Request(request).to_vec());
    let call = Outgoing::Call {
        id,
        body,
        reply,
        deadline,
    };
    h.outgoing.send(call).await.unwrap();
    (id, rx)
}

async fn next_message(peer: &mut Connection) -> Message {
    let frame = peer.next().await.unwrap().unwrap();
    decode(&frame.into_body().unwrap(), DecodeMode::Strict).unwrap()
}

/// Sends a request without params from the peer's side; its id.
async fn send_request(peer: &mut Connection, method: &str) -> MessageId {
    let request = Request::new(MethodName::new(method).unwrap(), None);
    let id = request.id;
    peer.send(Bytes::from(Message::Request(request).to_vec()))
        .await
        .unwrap();
    id
}

async fn answer(peer: &mut Connection, id: MessageId, value: Value) {
    let body = Message::Response(Response::success(id, value)).to_vec();
    peer.send(Bytes::from(body)).await.unwrap();
}

#[tokio::test]
async fn a_call_is_written_and_its_answer_delivered() {
    let mut h = start();
    let (id, rx) = send_call(&h, "game/ping").await;
    let Message::Request(request) = next_message(&mut h.peer).await else {
        panic!("not a request")
    };
    assert_eq!(request.id, id);
    answer(&mut h.peer, id, Value::from(7)).await;
    assert!(matches!(rx.await, Ok(Delivery::Answered(Ok(r))) if r.clone().into_value() == 7));
}

/// A call with an empty body and a distant limit, and where its outcome arrives.
fn bare_call() -> (Outgoing, Reply) {
    let (reply, rx) = oneshot::channel();
    let call = Outgoing::Call {
        id: MessageId::new_v4(),
        body: Bytes::from_static(b"{}"),
        reply,
        deadline: tokio::time::Instant::now() + Duration::from_secs(30),
    };
    (call, rx)
}

#[tokio::test]
async fn a_call_still_queued_when_the_engine_ends_fails_at_once() {
    let mut h = start();
    // Queued before the engine's first turn, which ends on its signal before it takes any call.
    let (call, rx) = bare_call();
    assert!(h.outgoing.try_send(call).is_ok());
    h.end.take().unwrap().send(()).unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .expect("the caller learns at once");
    assert!(outcome.is_err(), "no answer: the connection is gone");
    assert!(matches!(h.engine.await, Ok(Ended::Signal("asked"))));
    assert!(matches!(
        h.outgoing.try_send(bare_call().0),
        Err(crate::engine::TrySendError::Closed(_))
    ));
}

#[tokio::test]
async fn a_forgotten_call_discards_its_late_answer() {
    let mut h = start();
    let (id, rx) = send_call(&h, "game/slow").await;
    let _ = next_message(&mut h.peer).await;
    drop(rx);
    h.outgoing
        .send(Outgoing::Forget { id, cancel: None })
        .await
        .unwrap();
    answer(&mut h.peer, id, Value::from(1)).await;
    // The next call still gets its own answer.
    let (next, rx) = send_call(&h, "game/ping").await;
    let _ = next_message(&mut h.peer).await;
    answer(&mut h.peer, next, Value::from(2)).await;
    assert!(matches!(rx.await, Ok(Delivery::Answered(Ok(r))) if r.clone().into_value() == 2));
}

#[tokio::test]
async fn the_peer_closing_fails_the_calls_still_waiting_at_once() {
    let mut h = start();
    let (_, rx) = send_call(&h, "game/slow").await;
    let _ = next_message(&mut h.peer).await;
    drop(h.peer);
    assert!(
        rx.await.is_err(),
        "the call fails when nothing can answer it"
    );
    assert!(matches!(h.engine.await.unwrap(), Ended::Eof));
}

#[tokio::test]
async fn handlers_that_wait_panic_or_answer_at_once_are_each_answered_once() {
    let mut h = start();
    let methods = [
        "game/later",
        "game/boom",
        "game/now",
        "game/later",
        "game/now",
    ];
    let mut ids = Vec::new();
    for method in methods {
        ids.push(send_request(&mut h.peer, method).await);
    }
    let mut answered = std::collections::HashMap::new();
    for k in 0..methods.len() {
        let read = tokio::time::timeout(Duration::from_secs(10), next_message(&mut h.peer)).await;
        let Ok(Message::Response(response)) = read else {
            panic!("answer {k} did not arrive")
        };
        assert!(answered.insert(response.id, response.outcome).is_none());
    }
    for (id, method) in ids.iter().zip(methods) {
        let outcome = &answered[id];
        if method == "game/boom" {
            assert!(
                matches!(outcome, Outcome::Error(e) if e.code == ErrorCode::INTERNAL_ERROR),
                "{outcome:?}"
            );
        } else {
            assert_eq!(
                outcome,
                &Outcome::Result(Value::from(method).into()),
                "{method}"
            );
        }
    }
}

#[tokio::test]
async fn requests_go_to_the_role_and_events_too() {
    let mut h = start();
    let id = send_request(&mut h.peer, "bridge/hello").await;
    let Message::Response(response) = next_message(&mut h.peer).await else {
        panic!("not a response")
    };
    assert_eq!(response.id, id);
    assert_eq!(
        response.outcome,
        Outcome::Result(Value::from("bridge/hello").into())
    );
    let event = Event::new(
        gabp_types::ChannelName::new("world/tick").unwrap(),
        0,
        Value::Null,
    );
    h.peer
        .send(Bytes::from(Message::Event(event).to_vec()))
        .await
        .unwrap();
    // The event is routed before the engine reads the next frame, so a round trip after it orders the check.
    let (id, rx) = send_call(&h, "game/ping").await;
    let _ = next_message(&mut h.peer).await;
    answer(&mut h.peer, id, Value::Null).await;
    rx.await.unwrap();
    assert_eq!(*h.events.lock().unwrap(), ["world/tick"]);
}

#[tokio::test]
async fn a_request_is_handled_in_the_turn_that_reads_it() {
    let mut h = start();
    for method in ["game/one", "game/two"] {
        send_request(&mut h.peer, method).await;
        let Message::Response(_) = next_message(&mut h.peer).await else {
            panic!("not a response")
        };
    }
    let steps = h.steps.lock().unwrap().clone();
    let handled: Vec<&str> = steps.iter().copied().filter(|s| *s != "turn").collect();
    assert_eq!(handled, ["read", "call", "read", "call"]);
    // No turn of the loop between reading a request and handing it to the role.
    for (i, _) in steps.iter().enumerate().filter(|(_, s)| **s == "read") {
        assert_eq!(steps.get(i + 1), Some(&"call"), "{steps:?}");
    }
}

#[tokio::test]
async fn a_request_waits_for_room_and_holds_back_the_frames_behind_it() {
    use std::sync::atomic::Ordering;
    let mut h = start();
    h.room.shut.store(true, Ordering::SeqCst);
    let mut ids = Vec::new();
    for method in ["game/first", "game/second"] {
        ids.push(send_request(&mut h.peer, method).await);
    }
    let waited = tokio::time::timeout(Duration::from_millis(100), next_message(&mut h.peer)).await;
    assert!(waited.is_err(), "answered without room");
    let steps = h.steps.lock().unwrap().clone();
    let reads = steps.iter().filter(|s| **s == "read").count();
    assert_eq!(
        reads, 1,
        "read on past a request waiting for room: {steps:?}"
    );
    assert!(!steps.contains(&"call"));
    h.room.shut.store(false, Ordering::SeqCst);
    h.room.waker.wake();
    for id in ids {
        let Message::Response(response) = next_message(&mut h.peer).await else {
            panic!("not a response")
        };
        assert_eq!(response.id, id, "answered in order");
    }
}

#[tokio::test]
async fn an_invalid_answer_fails_its_call_and_a_null_result_beside_an_error_is_the_error() {
    let mut h = start();
    let (id, rx) = send_call(&h, "game/a").await;
    let _ = next_message(&mut h.peer).await;
    let broken = format!(r#"{{"v":"gabp/1","id":"{id}","type":"response"}}"#);
    h.peer.send(Bytes::from(broken)).await.unwrap();
    assert!(matches!(
        rx.await,
        Ok(Delivery::Answered(Err(Failure::Invalid(_))))
    ));

    let (id, rx) = send_call(&h, "game/b").await;
    let _ = next_message(&mut h.peer).await;
    let libgab = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"response","result":null,"error":{{"code":-32000,"message":"x"}}}}"#
    );
    h.peer.send(Bytes::from(libgab)).await.unwrap();
    // Written as gabp-rs writes a success up to `result`: handed over unread, and the error once read whole.
    let Ok(Delivery::Answered(Ok(unread))) = rx.await else {
        panic!("not handed over")
    };
    assert!(unread.is_unread());
    assert!(matches!(unread.read(), Err(Failure::Error(e)) if e.code == ErrorCode(-32000)));
}

#[tokio::test]
async fn the_roles_signal_ends_the_engine() {
    let mut h = start();
    let (_, rx) = send_call(&h, "game/slow").await;
    if let Some(end) = h.end.take() {
        end.send(()).unwrap();
    }
    assert!(matches!(h.engine.await.unwrap(), Ended::Signal("asked")));
    assert!(rx.await.is_err());
}

#[test]
fn oversized_answers_become_errors() {
    let big = Response::success(MessageId::nil(), Value::String("x".repeat(5000)));
    let body = encode(big, 2048);
    let Ok(Message::Response(r)) = decode(&body, DecodeMode::Strict) else {
        panic!("not a response")
    };
    assert_eq!(r.error_object().unwrap().code, ErrorCode::INTERNAL_ERROR);
    assert!(body.len() <= 2048);
}

#[tokio::test(start_paused = true)]
async fn a_call_unanswered_past_its_time_limit_fails_and_its_late_answer_is_discarded() {
    let mut h = start();
    let limit = tokio::time::Instant::now() + Duration::from_secs(2);
    let (id, rx) = send_call_until(&h, "game/slow", None, limit).await;
    let Message::Request(request) = next_message(&mut h.peer).await else {
        panic!("expected the request");
    };
    assert_eq!(request.id, id);
    let delivery = tokio::time::timeout(Duration::from_secs(3600), rx).await;
    assert!(matches!(
        delivery,
        Ok(Ok(Delivery::TimedOut { written: true }))
    ));
    assert!(tokio::time::Instant::now() >= limit);
    answer(&mut h.peer, id, Value::from(1)).await;
    // The engine goes on: the next call is answered.
    let (next, rx) = send_call(&h, "game/next").await;
    let _ = next_message(&mut h.peer).await;
    answer(&mut h.peer, next, Value::from(2)).await;
    assert!(matches!(rx.await, Ok(Delivery::Answered(Ok(r))) if r.clone().into_value() == 2));
}

#[tokio::test(start_paused = true)]
async fn a_call_behind_a_sink_that_is_not_ready_still_times_out() {
    let h = start();
    // The peer reads nothing: a call larger than the pipe leaves the sink not ready.
    let far = tokio::time::Instant::now() + Duration::from_secs(60);
    let big = serde_json::json!({ "pad": "x".repeat(200 * 1024) });
    let (_, big_rx) = send_call_until(&h, "game/big", Some(big), far).await;
    let limit = tokio::time::Instant::now() + Duration::from_secs(1);
    let (_, rx) = send_call_until(&h, "game/stuck", None, limit).await;
    let delivery = tokio::time::timeout(Duration::from_secs(3600), rx).await;
    // Taken out unwritten: the mod never sees it, so nothing is to be cancelled.
    assert!(matches!(
        delivery,
        Ok(Ok(Delivery::TimedOut { written: false }))
    ));
    let waited = tokio::time::Instant::now();
    assert!(
        waited >= limit && waited < far,
        "timed out by its own limit"
    );
    drop(big_rx);
    drop(h);
}

#[tokio::test]
async fn calls_queued_past_the_bound_on_unwritten_frames_are_all_written() {
    let mut h = start();
    // The table holds at most 10 unwritten frames (twice the 4 calls of `start`, and two); 12 are queued.
    let mut ids = Vec::new();
    for _ in 0..12 {
        let (id, rx) = send_call(&h, "game/queued").await;
        ids.push((id, rx));
    }
    for (n, (id, _)) in ids.iter().enumerate() {
        let read = tokio::time::timeout(Duration::from_secs(10), next_message(&mut h.peer)).await;
        let Ok(Message::Request(request)) = read else {
            panic!("request {n} of 12 was not written");
        };
        assert_eq!(request.id, *id, "requests are written in order");
    }
}

mod wakes;
mod writes;
