//! [`RecordingProxy`]: a transparent proxy between any bridge and any mod that records every message
//! (SPEC/1.0 recording.md §5).
//!
//! The bridge authenticates to the proxy with the proxy's own token; the proxy rewrites that one
//! `session/hello` to carry the mod's real token, and from then on forwards bytes as they come, unchanged.
//! Recording happens beside the forwarding path: each chunk read is offered to the writer's bounded queue
//! without waiting; a writer thread frames and writes in batches. When the disk is slower than the wire,
//! chunks are left out of the recording (a `dropped` record counts their bytes), never held back on the wire.

mod framer;
mod hello;
mod tee;
mod writer;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gabp_transport::{ByteStream, Endpoint, Listener, Token};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::tee::{pump, PumpEnd};
use self::writer::{Entry, WriterSetup};
use crate::format::{Direction, Side, Software};
use crate::write::Redactor;

/// How long the other direction may go on after one side has ended its half of a connection.
const LINGER: Duration = Duration::from_secs(10);

/// How a [`RecordingProxy`] reaches the mod and records.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// Where the mod listens.
    pub mod_endpoint: Endpoint,
    /// The token the mod expects.
    pub mod_token: Token,
    /// The token bridges present to the proxy.
    pub proxy_token: Token,
    /// JSON pointers redacted in every message, besides the tokens.
    pub redact: Vec<String>,
    /// Chunks queued for the writer, all connections together (default 4096).
    pub writer_queue: usize,
    /// The largest body recorded whole (default 16 MiB); larger ones are forwarded and recorded as
    /// undecodable.
    pub max_frame: usize,
    /// How often the file is flushed at least (default 1 s).
    pub flush_every: Duration,
    /// Who writes the recording (its header's `recorder`).
    pub recorder: Software,
}

impl ProxyConfig {
    /// The defaults, for the mod at `mod_endpoint` with `mod_token`, bridges presenting `proxy_token`.
    #[must_use]
    pub fn new(mod_endpoint: Endpoint, mod_token: Token, proxy_token: Token) -> Self {
        ProxyConfig {
            mod_endpoint,
            mod_token,
            proxy_token,
            redact: Vec::new(),
            writer_queue: 4096,
            max_frame: 16 * 1024 * 1024,
            flush_every: Duration::from_secs(1),
            recorder: Software::new("gabp-record", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// Counters of a running proxy.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) connections: AtomicU64,
    pub(crate) recorded_frames: AtomicU64,
    pub(crate) dropped_bytes: AtomicU64,
}

/// What a proxy recorded, from [`ProxyHandle::stats`] or [`ProxyHandle::shutdown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyStats {
    /// Bridge connections accepted.
    pub connections: u64,
    /// Frames written to the recording as messages.
    pub recorded_frames: u64,
    /// Bytes forwarded but left out of the recording.
    pub dropped_bytes: u64,
}

/// A transparent proxy between any bridge and any mod that records every message (SPEC/1.0 recording.md §5).
///
/// The bridge authenticates to the proxy with the proxy's own token; the proxy rewrites that one
/// `session/hello` to carry the mod's real token, then forwards bytes unchanged. Recording never holds back
/// the wire: when the disk is slower, chunks are left out of the recording and a `dropped` record counts them.
#[derive(Debug)]
pub struct RecordingProxy;

impl RecordingProxy {
    /// Serves bridges on `listener`, forwarding each connection to the mod and recording to `sink` (a file,
    /// usually). Must be called within a Tokio runtime.
    pub fn start(
        listener: Listener,
        config: ProxyConfig,
        sink: Box<dyn Write + Send>,
    ) -> ProxyHandle {
        let start = Instant::now();
        let stats = Arc::new(Stats::default());
        let (entries, queued) = mpsc::channel(config.writer_queue.max(1));
        let redactor = Redactor::new(
            vec![
                config.mod_token.expose_secret().to_owned(),
                config.proxy_token.expose_secret().to_owned(),
            ],
            config.redact.clone(),
        );
        let setup = WriterSetup {
            sink,
            redactor,
            recorder: config.recorder.clone(),
            start,
            flush_every: config.flush_every,
            max_frame: config.max_frame,
            stats: stats.clone(),
        };
        let writer = std::thread::Builder::new()
            .name("gabp-record-writer".into())
            .spawn(move || writer::run(queued, setup));
        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        let endpoint = listener.endpoint().clone();
        let ticks = entries.clone();
        let flush_every = config.flush_every;
        tracker.spawn(tick(ticks, flush_every, cancel.clone()));
        let accept = Accept {
            config: Arc::new(config),
            entries,
            stats: stats.clone(),
            cancel: cancel.clone(),
            tracker: tracker.clone(),
        };
        tracker.spawn(accept.run(listener));
        ProxyHandle {
            endpoint,
            cancel,
            tracker,
            writer,
            stats,
        }
    }
}

async fn tick(entries: mpsc::Sender<Entry>, every: Duration, cancel: CancellationToken) {
    let mut interval = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = interval.tick() => {
                let _ = entries.try_send(Entry::Tick);
            }
        }
    }
}

/// A running [`RecordingProxy`].
#[derive(Debug)]
pub struct ProxyHandle {
    endpoint: Endpoint,
    cancel: CancellationToken,
    tracker: TaskTracker,
    writer: std::io::Result<std::thread::JoinHandle<std::io::Result<()>>>,
    stats: Arc<Stats>,
}

impl ProxyHandle {
    /// Where bridges connect.
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> ProxyStats {
        stats_of(&self.stats)
    }

    /// Stops accepting, ends every connection, writes what is queued and flushes the recording.
    ///
    /// # Errors
    ///
    /// The first error writing the recording.
    pub async fn shutdown(self) -> std::io::Result<ProxyStats> {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        let writer = self.writer?;
        tokio::task::spawn_blocking(move || writer.join())
            .await
            .map_err(std::io::Error::other)?
            .map_err(|_| std::io::Error::other("the recording writer panicked"))??;
        Ok(stats_of(&self.stats))
    }
}

fn stats_of(stats: &Stats) -> ProxyStats {
    ProxyStats {
        connections: stats.connections.load(Ordering::Relaxed),
        recorded_frames: stats.recorded_frames.load(Ordering::Relaxed),
        dropped_bytes: stats.dropped_bytes.load(Ordering::Relaxed),
    }
}

struct Accept {
    config: Arc<ProxyConfig>,
    entries: mpsc::Sender<Entry>,
    stats: Arc<Stats>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl Accept {
    async fn run(self, listener: Listener) {
        loop {
            let accepted = tokio::select! {
                () = self.cancel.cancelled() => return,
                accepted = listener.accept_stream() => accepted,
            };
            let (bridge, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            };
            let connection = self.stats.connections.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(connection, %peer, "bridge connected");
            let link = Link {
                config: self.config.clone(),
                entries: self.entries.clone(),
                cancel: self.cancel.clone(),
                connection,
            };
            self.tracker.spawn(link.run(bridge));
        }
    }
}

/// One bridge connection and its connection to the mod.
struct Link {
    config: Arc<ProxyConfig>,
    entries: mpsc::Sender<Entry>,
    cancel: CancellationToken,
    connection: u64,
}

impl Link {
    async fn run(self, bridge: ByteStream) {
        let connection = self.connection;
        let _ = self
            .entries
            .send(Entry::Open {
                at: Instant::now(),
                connection,
            })
            .await;
        let (by, reason) = match hello::open(&self.config, bridge, &self.entries, connection).await
        {
            Ok((bridge, mod_side)) => self.relay(bridge, mod_side).await,
            Err(refused) => (refused.by, refused.reason),
        };
        let _ = self
            .entries
            .send(Entry::Close {
                at: Instant::now(),
                connection,
                by,
                reason,
            })
            .await;
    }

    async fn relay(&self, bridge: ByteStream, mod_side: ByteStream) -> (Side, Option<String>) {
        let (bridge_read, bridge_write) = tokio::io::split(bridge);
        let (mod_read, mod_write) = tokio::io::split(mod_side);
        let (c, tee) = (self.connection, self.entries.clone());
        let upstream = pump(
            bridge_read,
            mod_write,
            tee,
            (c, Direction::BridgeToMod),
            self.cancel.clone(),
        );
        let (tee, cancel) = (self.entries.clone(), self.cancel.clone());
        let downstream = pump(
            mod_read,
            bridge_write,
            tee,
            (c, Direction::ModToBridge),
            cancel,
        );
        tokio::pin!(upstream, downstream);
        let (first, by, upstream_ended) = tokio::select! {
            end = &mut upstream => (end, Side::Bridge, true),
            end = &mut downstream => (end, Side::Mod, false),
        };
        let cancelled = matches!(first, PumpEnd::Cancelled);
        let outcome = match first {
            PumpEnd::Eof => (by, None),
            PumpEnd::Error(e) => (by, Some(e.to_string())),
            PumpEnd::Cancelled => (Side::Recorder, Some("the recorder stopped".to_owned())),
        };
        if !cancelled {
            // The other side may still finish its half (a mod answers what is in flight, SPEC/1.0
            // transport.md §6), within a bound.
            if upstream_ended {
                let _ = tokio::time::timeout(LINGER, &mut downstream).await;
            } else {
                let _ = tokio::time::timeout(LINGER, &mut upstream).await;
            }
        }
        outcome
    }
}
