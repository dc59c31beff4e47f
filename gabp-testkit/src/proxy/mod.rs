//! [`FaultProxy`]: a frame-level proxy between a bridge and a mod that records every frame and injects faults.

mod frames;
mod link;
mod messages;

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::{ByteStream, Endpoint, Listener};
use gabp_types::MessageId;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use self::frames::{read_side, write_side};
use self::link::Link;
use self::messages::hello_first;
use crate::fault::Faults;
use crate::record::{Direction, Recorder};
use crate::TestkitError;

/// Default largest body the proxy forwards whole: 64 MiB, well above any mod's limit, so an oversized frame
/// reaches the mod as it was sent.
pub const DEFAULT_PROXY_MAX_FRAME: usize = 64 * 1024 * 1024;

/// What the proxy writes to the mod in place of a header block it could not parse: every malformed header
/// becomes this one (a negative `Content-Length`), so the mod reacts to a malformed header as it should.
pub const MALFORMED_HEADER: &[u8] = b"Content-Length: -1\r\n\r\n";

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

/// Runs one connection through the proxy: both directions' readers and writers, and the frames injected,
/// until neither side can be written to or a fault drops the connection.
async fn run_link(shared: Arc<Shared>, connection: u64, bridge_io: ByteStream, mod_io: ByteStream) {
    let (bridge_r, bridge_w) = tokio::io::split(bridge_io);
    let (mod_r, mod_w) = tokio::io::split(mod_io);
    let (link, to_mod_rx, to_bridge_rx) =
        Link::new(connection, shared.faults.clone(), shared.recorder.clone());
    hello_first(&link).await;

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

/// A `session/ping` request padded with spaces to exactly `size` bytes (or the bare request when it is longer).
pub(crate) fn padded_ping(id: MessageId, size: usize) -> Vec<u8> {
    padded_request(id, "session/ping", size)
}

/// A request for `method` with empty params, padded with spaces to `size` bytes.
pub(crate) fn padded_request(id: MessageId, method: &str, size: usize) -> Vec<u8> {
    let mut body = format!(
        r#"{{"v":"gabp/1","id":"{id}","type":"request","method":"{method}","params":{{}}}}"#
    )
    .into_bytes();
    if body.len() < size {
        body.resize(size, b' ');
    }
    body
}

#[cfg(test)]
mod tests {
    use gabp_types::Message;
    use serde_json::Value;

    use super::frames::corrupt;
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
    fn corrupt_bodies_keep_their_size_and_do_not_parse() {
        assert_eq!(corrupt(b"{\"a\":1}").len(), 7);
        assert!(serde_json::from_slice::<Value>(&corrupt(b"{\"a\":1}")).is_err());
    }
}
