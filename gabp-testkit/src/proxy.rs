//! [`FaultProxy`]: a frame-level proxy between a bridge and a mod that records every frame and injects faults.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use gabp_codec::{Frame, FrameCodec, FrameError};
use gabp_transport::{ByteStream, Endpoint, Listener, Token};
use gabp_types::methods::Platform;
use gabp_types::{ErrorCode, ErrorObject, Message, MessageId, Response};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::fault::{Faults, Kind};
use crate::record::{Direction, Recorder};
use crate::TestkitError;

/// Default largest body the proxy forwards whole: 64 MiB, well above any mod's limit, so an oversized frame
/// reaches the mod as it was sent.
pub const DEFAULT_PROXY_MAX_FRAME: usize = 64 * 1024 * 1024;

/// What the proxy writes to the mod in place of a header block it could not parse: every malformed header
/// becomes this one (a negative `Content-Length`), so the mod reacts to a malformed header as it should.
pub const MALFORMED_HEADER: &[u8] = b"Content-Length: -1\r\n\r\n";

/// How long the proxy waits for the mod's welcome when it authenticates on the bridge's behalf
/// ([`Fault::answer_before_hello`](crate::Fault::answer_before_hello)).
const PREAUTH_TIMEOUT: Duration = Duration::from_secs(10);

/// Frames queued per direction before the proxy stops reading (back-pressure passes through).
const QUEUE: usize = 16;

/// A frame-level proxy between a bridge and a mod: it forwards whole frames in both directions, records each
/// one in its [`Recorder`], and applies the faults armed on its [`Faults`].
///
/// With no fault armed it is transparent: bodies are forwarded byte for byte (re-framed with a canonical
/// header), a body over the mod's limit is forwarded whole (up to [`DEFAULT_PROXY_MAX_FRAME`]), a malformed
/// header becomes [`MALFORMED_HEADER`], and either side closing closes the other after the frames in flight.
///
/// Put it between any two byte streams ([`FaultProxy::interpose`]), in front of an in-memory mod
/// ([`FaultProxy::link`]) or on a loopback TCP port in front of a real mod ([`FaultProxy::listen`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gabp_session::bridge::{Bridge, SubscriptionItem};
/// use gabp_testkit::{Fault, FaultProxy, MockMod};
/// use gabp_transport::Connection;
/// use futures::StreamExt;
/// use serde_json::json;
///
/// let mock = MockMod::demo()?;
/// let proxy = FaultProxy::new();
/// let (mod_side, _served) = mock.serve_in_memory();
/// let bridge = Bridge::over(Connection::new(proxy.link(mod_side)), mock.token().clone()).await?;
///
/// let mut moves = bridge.subscribe(["player/move"]).await?;
/// proxy.faults().inject(Fault::skip_event_seq());
/// mock.publish("player/move", json!({"x": 1}))?;
/// mock.publish("player/move", json!({"x": 2}))?;
/// // The first event arrives as seq 1 instead of 0: the bridge takes it as its starting point...
/// let Some(Ok(SubscriptionItem::Event(first))) = moves.next().await else { panic!() };
/// assert_eq!(first.seq, 1);
/// // ...and the recorder shows what the mod really sent.
/// assert_eq!(proxy.recorder().events("player/move")[0].seq, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct FaultProxy {
    shared: Arc<Shared>,
}

struct Shared {
    faults: Faults,
    recorder: Recorder,
    max_frame: usize,
    connections: AtomicU64,
}

impl Default for FaultProxy {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultProxy")
            .field("faults", &self.shared.faults)
            .field("recorder", &self.shared.recorder)
            .field("max_frame", &self.shared.max_frame)
            .finish_non_exhaustive()
    }
}

impl FaultProxy {
    /// A proxy with no fault armed, an empty recorder and the default frame limit.
    #[must_use]
    pub fn new() -> Self {
        Self::with_parts(Faults::new(), Recorder::new(), DEFAULT_PROXY_MAX_FRAME)
    }

    /// A proxy that uses the given fault set and recorder (for example shared with another proxy).
    #[must_use]
    pub fn with_parts(faults: Faults, recorder: Recorder, max_frame: usize) -> Self {
        FaultProxy {
            shared: Arc::new(Shared {
                faults,
                recorder,
                max_frame,
                connections: AtomicU64::new(0),
            }),
        }
    }

    /// The faults armed on this proxy (shared by every connection through it).
    #[must_use]
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The recording of every frame through this proxy.
    #[must_use]
    pub fn recorder(&self) -> &Recorder {
        &self.shared.recorder
    }

    /// How many connections went through this proxy so far.
    #[must_use]
    pub fn connection_count(&self) -> u64 {
        self.shared.connections.load(Ordering::Acquire)
    }

    /// Forwards between `bridge_side` (the stream a bridge writes to and reads from) and `mod_side` until
    /// both directions are closed, or a fault drops the connection. The future may be spawned.
    pub fn interpose<B, M>(
        &self,
        bridge_side: B,
        mod_side: M,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        B: AsyncRead + AsyncWrite + Send + 'static,
        M: AsyncRead + AsyncWrite + Send + 'static,
    {
        let shared = self.shared.clone();
        let connection = shared.connections.fetch_add(1, Ordering::AcqRel);
        let span = tracing::debug_span!("gabp.testkit.proxy", connection);
        run_link(
            shared,
            connection,
            ByteStream::new(bridge_side),
            ByteStream::new(mod_side),
        )
        .instrument(span)
    }

    /// Spawns a link in front of `mod_side` and returns the stream a bridge uses: one end of an in-memory
    /// duplex pair whose other end goes through the proxy to `mod_side`. Must be called within a Tokio runtime.
    pub fn link<M>(&self, mod_side: M) -> ByteStream
    where
        M: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (bridge_end, proxy_end) = tokio::io::duplex(64 * 1024);
        tokio::spawn(self.interpose(proxy_end, mod_side));
        ByteStream::new(bridge_end)
    }

    /// Listens on an ephemeral loopback TCP port; each bridge that connects is linked, through this proxy, to
    /// a fresh connection to `upstream` (the real mod). Dropping the handle stops accepting and closes every
    /// connection.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Transport`] when the port cannot be bound.
    pub async fn listen(&self, upstream: Endpoint) -> Result<ProxyHandle, TestkitError> {
        let listener = Listener::bind(&Endpoint::tcp_v4(0)).await?;
        let endpoint = listener.endpoint().clone();
        let stop = CancellationToken::new();
        let proxy = self.clone();
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut links = tokio::task::JoinSet::new();
            loop {
                let accepted = tokio::select! {
                    () = stopped.cancelled() => break,
                    Some(_) = links.join_next(), if !links.is_empty() => continue,
                    accepted = listener.accept_stream() => accepted,
                };
                let Ok((bridge_side, _peer)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                match gabp_transport::connect_stream(&upstream).await {
                    Ok(mod_side) => {
                        let link = proxy.interpose(bridge_side, mod_side);
                        let stopped = stopped.clone();
                        links.spawn(async move {
                            tokio::select! {
                                () = link => {}
                                () = stopped.cancelled() => {}
                            }
                        });
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "the proxy cannot reach the mod; closing the bridge");
                        drop(bridge_side);
                    }
                }
            }
        });
        Ok(ProxyHandle {
            endpoint,
            stop,
            task: Some(task),
        })
    }
}

/// A [`FaultProxy`] listening on a loopback TCP port, from [`FaultProxy::listen`]. Dropping it stops the proxy.
#[derive(Debug)]
pub struct ProxyHandle {
    endpoint: Endpoint,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl ProxyHandle {
    /// Where bridges connect.
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops accepting, closes every connection and waits until they are closed.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What a writer task writes.
enum Out {
    /// Bytes to write as they are (a whole frame, or part of a filler body).
    Bytes(Bytes),
    /// Close the stream (after what was queued before).
    Close,
}

/// A frame with the canonical header.
pub(crate) fn frame(body: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(body.len() + 64);
    out.extend_from_slice(
        format!(
            "Content-Length: {}\r\nContent-Type: application/json\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(body);
    out.freeze()
}

/// A `session/ping` request padded with spaces to exactly `size` bytes (or the bare request when it is longer).
pub(crate) fn padded_ping(id: MessageId, size: usize) -> Vec<u8> {
    let mut body = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"request","method":"session/ping","params":{{}}}}"#
    )
    .into_bytes();
    if body.len() < size {
        body.resize(size, b' ');
    }
    body
}

/// A per-connection view of the proxy.
struct Link {
    connection: u64,
    faults: Faults,
    recorder: Recorder,
    to_mod: mpsc::Sender<Out>,
    to_bridge: mpsc::Sender<Out>,
    cancel: CancellationToken,
    state: Mutex<LinkState>,
    welcome: watch::Sender<Option<Value>>,
}

#[derive(Default)]
struct LinkState {
    preauth: Option<PreAuth>,
    seq_offsets: HashMap<String, u64>,
}

/// The proxy authenticated on the bridge's behalf (answer-before-hello fault).
struct PreAuth {
    token: Token,
    own_id: MessageId,
    bridge_hello_done: bool,
}

impl Link {
    fn sender(&self, direction: Direction) -> &mpsc::Sender<Out> {
        match direction {
            Direction::BridgeToMod => &self.to_mod,
            Direction::ModToBridge => &self.to_bridge,
        }
    }

    /// Queues a frame towards the peer `direction` points to; false when that side is gone.
    async fn forward(&self, direction: Direction, bytes: Bytes) -> bool {
        self.sender(direction).send(Out::Bytes(bytes)).await.is_ok()
    }

    async fn close(&self, direction: Direction) {
        let _ = self.sender(direction).send(Out::Close).await;
    }

    /// Drops the connection: both sides are closed once the frames already queued are written.
    async fn drop_connection(&self) {
        self.close(Direction::BridgeToMod).await;
        self.close(Direction::ModToBridge).await;
    }

    /// Records and forwards one injected frame.
    async fn inject(&self, kind: Kind) {
        let (direction, body) = match kind {
            Kind::UnsolicitedResponse => {
                let response =
                    Response::success(MessageId::new_v4(), json!({ "unsolicited": true }));
                (Direction::ModToBridge, Message::from(response).to_vec())
            }
            Kind::OversizedFrame(Direction::BridgeToMod, size) => (
                Direction::BridgeToMod,
                padded_ping(MessageId::new_v4(), size),
            ),
            Kind::OversizedFrame(direction, size) => {
                let mut body = b"{}".to_vec();
                body.resize(size.max(2), b' ');
                (direction, body)
            }
            _ => return,
        };
        let body = Bytes::from(body);
        self.recorder.record(
            direction,
            self.connection,
            body.clone(),
            body.len() as u64,
            true,
        );
        self.forward(direction, frame(&body)).await;
    }
}

async fn run_link(shared: Arc<Shared>, connection: u64, bridge_io: ByteStream, mod_io: ByteStream) {
    let (bridge_r, bridge_w) = tokio::io::split(bridge_io);
    let (mod_r, mod_w) = tokio::io::split(mod_io);
    let (to_mod, to_mod_rx) = mpsc::channel(QUEUE);
    let (to_bridge, to_bridge_rx) = mpsc::channel(QUEUE);
    let (welcome, _) = watch::channel(None);
    let link = Arc::new(Link {
        connection,
        faults: shared.faults.clone(),
        recorder: shared.recorder.clone(),
        to_mod,
        to_bridge,
        cancel: CancellationToken::new(),
        state: Mutex::new(LinkState::default()),
        welcome,
    });

    // Answer-before-hello: authenticate with the mod at once, on the bridge's behalf.
    if let Some(token) = link.faults.take(|k| match k {
        Kind::AnswerBeforeHello(token) => Some(token.clone()),
        _ => None,
    }) {
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

    // Once neither side can be written to, there is nothing left to forward: the readers stop too.
    let max = shared.max_frame;
    let writers = async {
        tokio::join!(
            write_side(link.clone(), mod_w, to_mod_rx, Direction::BridgeToMod),
            write_side(link.clone(), bridge_w, to_bridge_rx, Direction::ModToBridge),
        );
        link.cancel.cancel();
    };
    let readers = async {
        tokio::join!(
            read_side(link.clone(), bridge_r, Direction::BridgeToMod, max),
            read_side(link.clone(), mod_r, Direction::ModToBridge, max),
        )
    };
    tokio::select! {
        _ = async { tokio::join!(writers, readers) } => {}
        () = control(link.clone()) => {}
    }
    link.cancel.cancel();
}

/// Sends the injected frames as they are armed, until the link ends.
async fn control(link: Arc<Link>) {
    let mut changes = link.faults.subscribe();
    loop {
        for kind in link.faults.take_injections() {
            link.inject(kind).await;
        }
        tokio::select! {
            () = link.cancel.cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}

async fn write_side(
    link: Arc<Link>,
    mut io: WriteHalf<ByteStream>,
    mut queue: mpsc::Receiver<Out>,
    direction: Direction,
) {
    loop {
        let item = tokio::select! {
            () = link.cancel.cancelled() => break,
            item = queue.recv() => item,
        };
        let Some(Out::Bytes(bytes)) = item else { break };
        let delay = link.faults.take(|k| match k {
            Kind::Delay(d, delay) if *d == direction => Some(*delay),
            _ => None,
        });
        if let Some(delay) = delay {
            tokio::select! {
                () = link.cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        let written = tokio::select! {
            () = link.cancel.cancelled() => break,
            written = async { io.write_all(&bytes).await?; io.flush().await } => written,
        };
        if written.is_err() {
            break;
        }
    }
    // Nothing more goes this way: the peer sees the end of the stream.
    queue.close();
    let _ = io.shutdown().await;
}

async fn read_side(
    link: Arc<Link>,
    io: ReadHalf<ByteStream>,
    direction: Direction,
    max_frame: usize,
) {
    let mut frames = FramedRead::new(io, FrameCodec::new().with_max_body_size(max_frame));
    let mut changes = link.faults.subscribe();
    loop {
        if link.faults.reading_stopped(direction) {
            tokio::select! {
                () = link.cancel.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
            continue;
        }
        let next = tokio::select! {
            // Biased: a fault armed before a frame arrived applies to that frame.
            biased;
            () = link.cancel.cancelled() => return,
            // Re-check the faults when they change (a stop_reading must take effect at once).
            _ = changes.changed() => continue,
            next = frames.next() => next,
        };
        match next {
            Some(Ok(Frame::Body(body))) => {
                if !on_body(&link, direction, body).await {
                    return;
                }
            }
            Some(Ok(Frame::Oversized { declared, .. })) => {
                link.recorder
                    .record(direction, link.connection, Bytes::new(), declared, false);
                if !forward_filler(&link, direction, declared).await {
                    return;
                }
            }
            Some(Err(
                FrameError::TruncatedHeader { .. }
                | FrameError::TruncatedBody { .. }
                | FrameError::Io(_),
            ))
            | None => {
                link.close(direction).await;
                return;
            }
            Some(Err(error)) => {
                tracing::debug!(%error, %direction, "malformed header through the proxy");
                let stall = direction == Direction::BridgeToMod
                    && link
                        .faults
                        .take(|k| matches!(k, Kind::StallOnMalformedHeader).then_some(()))
                        .is_some();
                if !stall {
                    link.forward(direction, Bytes::from_static(MALFORMED_HEADER))
                        .await;
                }
                // The next frame cannot be found: discard the rest until the sender closes.
                let mut io = frames.into_inner();
                let mut sink = vec![0u8; 8192];
                loop {
                    let read = tokio::select! {
                        () = link.cancel.cancelled() => return,
                        read = io.read(&mut sink) => read,
                    };
                    if !matches!(read, Ok(n) if n > 0) {
                        break;
                    }
                }
                if stall {
                    link.cancel.cancel();
                } else {
                    link.close(direction).await;
                }
                return;
            }
        }
    }
}

/// Forwards a frame the proxy itself could not buffer: the header, then `declared` bytes of spaces.
async fn forward_filler(link: &Link, direction: Direction, declared: u64) -> bool {
    let header = format!("Content-Length: {declared}\r\n\r\n");
    if !link
        .forward(direction, Bytes::from(header.into_bytes()))
        .await
    {
        return false;
    }
    let chunk = Bytes::from(vec![b' '; 64 * 1024]);
    let mut left = declared;
    while left > 0 {
        let n = usize::try_from(left.min(chunk.len() as u64)).unwrap_or(chunk.len());
        if !link.forward(direction, chunk.slice(..n)).await {
            return false;
        }
        left -= n as u64;
    }
    true
}

/// Handles one body from the peer `direction` starts at; false when the link must stop reading.
async fn on_body(link: &Arc<Link>, direction: Direction, body: Bytes) -> bool {
    link.recorder.record(
        direction,
        link.connection,
        body.clone(),
        body.len() as u64,
        false,
    );
    if link.faults.drop_now() {
        link.drop_connection().await;
        return false;
    }
    let body = match direction {
        Direction::BridgeToMod => match bridge_frame(link, body).await {
            Some(body) => body,
            None => return !link.cancel.is_cancelled(),
        },
        Direction::ModToBridge => match mod_frame(link, body) {
            Some(body) => body,
            None => return true,
        },
    };
    let body = if link
        .faults
        .take(|k| matches!(k, Kind::Corrupt(d) if *d == direction).then_some(()))
        .is_some()
    {
        corrupt(&body)
    } else {
        body
    };
    if !link.forward(direction, frame(&body)).await {
        return false;
    }
    if link.faults.count_message() {
        link.drop_connection().await;
        return false;
    }
    true
}

/// Bytes of the same length that are not JSON.
fn corrupt(body: &[u8]) -> Bytes {
    let mut out = vec![b'!'; body.len().max(1)];
    out[0] = b'{';
    Bytes::from(out)
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
async fn bridge_frame(link: &Arc<Link>, body: Bytes) -> Option<Bytes> {
    let mut body = body;
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
fn mod_frame(link: &Link, body: Bytes) -> Option<Bytes> {
    let own_id = link.state.lock().preauth.as_ref().map(|p| p.own_id);
    let wants_parse = own_id.is_some()
        || link
            .faults
            .peek(|k| {
                matches!(
                    k,
                    Kind::WrongResponseId | Kind::SkipEventSeq | Kind::UnknownEnvelopeField
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_ping_has_exactly_the_size_asked_for_and_stays_a_ping() {
        let id = MessageId::new_v4();
        for size in [1024, 4096, 1024 * 1024 + 1] {
            let body = padded_ping(id, size);
            assert_eq!(body.len(), size);
            let Ok(Message::Request(ping)) = gabp_types::decode::decode_strict(&body) else {
                panic!("not a strict request");
            };
            assert_eq!((ping.id, ping.method.as_str()), (id, "session/ping"));
        }
        // Smaller than the bare request: the bare request.
        assert!(padded_ping(id, 10).len() > 10);
    }

    #[test]
    fn frames_carry_the_canonical_header() {
        assert_eq!(
            &frame(b"{}")[..],
            b"Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}"
        );
        assert_eq!(corrupt(b"{\"a\":1}").len(), 7);
        assert!(serde_json::from_slice::<Value>(&corrupt(b"{\"a\":1}")).is_err());
    }
}
