//! The writer: a thread of its own that frames the queued chunks and writes the lines, off the forwarding path.
//! It drains its queue in batches, and flushes at least every second and when the queue closes (SPEC/1.0
//! recording.md §5).

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc::{self, error::TryRecvError};

use super::framer::{Framer, Piece};
use super::Stats;
use crate::format::{Direction, Header, ModIdentity, Record, Redaction, Side, Software};
use crate::write::{RecordWriter, Redactor};

/// Lines held back until the welcome names the mod for the header, at most.
const HELD_BACK: usize = 64;

/// How long the writer sleeps when its queue is empty while traffic flows (it batches, instead of being woken
/// for every chunk).
const POLL: Duration = Duration::from_millis(1);

/// Empty polls after which the writer waits to be woken instead.
const IDLE_POLLS: u32 = 100;

/// What the writer is given.
#[derive(Debug)]
pub(crate) enum Entry {
    Open {
        at: Instant,
        connection: u64,
    },
    Chunk {
        at: Instant,
        connection: u64,
        direction: Direction,
        bytes: Bytes,
        lost_before: u64,
    },
    Close {
        at: Instant,
        connection: u64,
        by: Side,
        reason: Option<String>,
    },
    /// Once a second, so that the writer flushes while the wire is quiet.
    Tick,
}

/// What the writer thread needs.
pub(crate) struct WriterSetup {
    pub(crate) sink: Box<dyn Write + Send>,
    pub(crate) redactor: Redactor,
    pub(crate) recorder: Software,
    pub(crate) start: Instant,
    pub(crate) flush_every: Duration,
    pub(crate) max_frame: usize,
    pub(crate) stats: Arc<Stats>,
}

/// Writes every entry of `entries` until the queue closes; the first write error ends writing (the rest is
/// drained and dropped, so that nothing waits on a broken disk) and is returned.
pub(crate) fn run(mut entries: mpsc::Receiver<Entry>, setup: WriterSetup) -> io::Result<()> {
    yield_to_forwarding();
    let redaction = Redaction::with_pointers(setup.redactor.pointers().to_vec());
    let flush_every = setup.flush_every;
    let mut state = State {
        out: RecordWriter::new(BufWriter::with_capacity(64 * 1024, setup.sink)),
        redactor: setup.redactor,
        start: setup.start,
        stats: setup.stats,
        max_frame: setup.max_frame,
        framers: HashMap::new(),
        pieces: Vec::new(),
        held: Some(Vec::new()),
        held_since: None,
        hellos: HashMap::new(),
        header: (setup.recorder, redaction),
        dirty: false,
        last_flush: Instant::now(),
    };
    let mut failed = None;
    let mut idle = 0;
    loop {
        let entry = match entries.try_recv() {
            Ok(entry) => entry,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) if idle < IDLE_POLLS => {
                idle += 1;
                std::thread::sleep(POLL);
                if failed.is_none() {
                    if let Err(e) = state.due(flush_every, false) {
                        failed = Some(e);
                    }
                }
                continue;
            }
            Err(TryRecvError::Empty) => match entries.blocking_recv() {
                Some(entry) => entry,
                None => break,
            },
        };
        idle = 0;
        if failed.is_some() {
            continue;
        }
        if let Err(e) = state.step(entry, flush_every) {
            tracing::error!(error = %e, "cannot write the recording; forwarding goes on unrecorded");
            failed = Some(e);
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let open: Vec<(u64, Direction)> = state.framers.keys().copied().collect();
    for key in open {
        state.finish(key)?;
    }
    if state.held.is_some() {
        state.write_header(None)?;
    }
    state.out.flush()
}

/// Lowers this thread's priority (nice 10): when the machine is short of CPU, forwarding runs first and the
/// recording falls behind, and then loses chunks, rather than the wire slowing down.
fn yield_to_forwarding() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10) {
        tracing::debug!(error = %e, "cannot lower the recording writer's priority");
    }
}

/// A line to write: a message's body, or another record.
enum Line {
    Message(u64, u64, Direction, Bytes),
    Other(Record),
}

struct State {
    out: RecordWriter<BufWriter<Box<dyn Write + Send>>>,
    redactor: Redactor,
    start: Instant,
    stats: Arc<Stats>,
    max_frame: usize,
    framers: HashMap<(u64, Direction), Framer>,
    pieces: Vec<Piece>,
    /// Lines waiting for the header, until it is written.
    held: Option<Vec<Line>>,
    /// When the first of them came.
    held_since: Option<Instant>,
    /// The id of each connection's `session/hello`, to know its welcome.
    hellos: HashMap<u64, Value>,
    header: (Software, Redaction),
    dirty: bool,
    last_flush: Instant,
}

impl State {
    fn step(&mut self, entry: Entry, flush_every: Duration) -> io::Result<()> {
        let tick = matches!(entry, Entry::Tick);
        match entry {
            Entry::Tick => {}
            Entry::Open { at, connection } => {
                let elapsed_us = self.elapsed(at);
                self.line(Line::Other(Record::Open {
                    elapsed_us,
                    connection,
                }))?;
            }
            Entry::Chunk {
                at,
                connection,
                direction,
                bytes,
                lost_before,
            } => {
                let elapsed_us = self.elapsed(at);
                let max_frame = self.max_frame;
                let mut pieces = std::mem::take(&mut self.pieces);
                self.framers
                    .entry((connection, direction))
                    .or_insert_with(|| Framer::new(max_frame))
                    .feed(&bytes, lost_before, &mut pieces);
                self.pieces_out(elapsed_us, connection, direction, &mut pieces)?;
                self.pieces = pieces;
            }
            Entry::Close {
                at,
                connection,
                by,
                reason,
            } => {
                self.finish((connection, Direction::BridgeToMod))?;
                self.finish((connection, Direction::ModToBridge))?;
                let elapsed_us = self.elapsed(at);
                self.line(Line::Other(Record::Close {
                    elapsed_us,
                    connection,
                    by,
                    reason,
                }))?;
            }
        }
        self.due(flush_every, tick)
    }

    /// The header once records have waited a second for the welcome; a flush on a tick, or a second after
    /// the last one.
    fn due(&mut self, flush_every: Duration, tick: bool) -> io::Result<()> {
        let waited = self.held_since.is_some_and(|t| t.elapsed() >= flush_every);
        if self.held.is_some() && waited {
            self.write_header(None)?;
        }
        if self.dirty && (tick || self.last_flush.elapsed() >= flush_every) {
            self.out.flush()?;
            self.dirty = false;
            self.last_flush = Instant::now();
        }
        Ok(())
    }

    /// Ends a direction's framer: what it still held.
    fn finish(&mut self, key: (u64, Direction)) -> io::Result<()> {
        let Some(framer) = self.framers.remove(&key) else {
            return Ok(());
        };
        let mut pieces = Vec::new();
        framer.finish(&mut pieces);
        let elapsed_us = self.elapsed(Instant::now());
        self.pieces_out(elapsed_us, key.0, key.1, &mut pieces)
    }

    fn pieces_out(
        &mut self,
        elapsed_us: u64,
        connection: u64,
        direction: Direction,
        pieces: &mut Vec<Piece>,
    ) -> io::Result<()> {
        for piece in pieces.drain(..) {
            let line = match piece {
                Piece::Frame(body) => Line::Message(elapsed_us, connection, direction, body),
                Piece::Undecodable(reason, length) => Line::Other(Record::Undecodable {
                    elapsed_us,
                    connection,
                    direction,
                    reason,
                    length,
                }),
                Piece::Dropped(bytes) => {
                    self.stats.dropped_bytes.fetch_add(bytes, Ordering::Relaxed);
                    Line::Other(Record::Dropped {
                        elapsed_us,
                        connection,
                        direction,
                        bytes,
                    })
                }
            };
            self.line(line)?;
        }
        Ok(())
    }

    fn line(&mut self, line: Line) -> io::Result<()> {
        if self.held.is_none() {
            return self.write(line);
        }
        let identity = self.identity(&line);
        self.held_since.get_or_insert_with(Instant::now);
        let held = self.held.get_or_insert_with(Vec::new);
        held.push(line);
        if identity.is_some() || held.len() >= HELD_BACK {
            self.write_header(identity)?;
        }
        Ok(())
    }

    /// The mod's identity when `line` is the welcome of a connection whose hello was seen.
    fn identity(&mut self, line: &Line) -> Option<ModIdentity> {
        let Line::Message(_, connection, direction, body) = line else {
            return None;
        };
        let message: Value = serde_json::from_slice(body).ok()?;
        match direction {
            Direction::BridgeToMod => {
                if message.get("method").and_then(Value::as_str) == Some("session/hello") {
                    self.hellos.insert(*connection, message.get("id")?.clone());
                }
                None
            }
            Direction::ModToBridge => {
                if self.hellos.get(connection)? != message.get("id")? {
                    return None;
                }
                ModIdentity::from_welcome(message.get("result")?)
            }
        }
    }

    fn write_header(&mut self, identity: Option<ModIdentity>) -> io::Result<()> {
        let (recorder, redaction) = self.header.clone();
        self.dirty = true;
        self.out
            .header(&Header::new(recorder, identity, redaction))?;
        for line in self.held.take().unwrap_or_default() {
            self.write(line)?;
        }
        Ok(())
    }

    fn elapsed(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.start).as_micros()).unwrap_or(u64::MAX)
    }

    fn write(&mut self, line: Line) -> io::Result<()> {
        self.dirty = true;
        match line {
            Line::Other(record) => self.out.record(&record),
            Line::Message(elapsed_us, connection, direction, body) => {
                match self.redactor.message_json(&body) {
                    Ok(json) => {
                        self.stats.recorded_frames.fetch_add(1, Ordering::Relaxed);
                        self.out
                            .message_json(elapsed_us, connection, direction, &json)
                    }
                    Err(refused) => self.out.record(&Record::Undecodable {
                        elapsed_us,
                        connection,
                        direction,
                        reason: refused.to_string(),
                        length: Some(body.len() as u64),
                    }),
                }
            }
        }
    }
}
