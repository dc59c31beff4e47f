//! The writer: a thread of its own that turns queued frames into lines, off the forwarding path. It flushes
//! at least every second and when the queue closes (SPEC/1.0 recording.md §5).

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::Stats;
use crate::format::{Direction, Header, ModIdentity, Record, Redaction, Side, Software};
use crate::write::{RecordWriter, Redactor};

/// Records held back until the welcome names the mod for the header, at most.
const HELD_BACK: usize = 64;

/// What the writer is given.
#[derive(Debug)]
pub(crate) enum Entry {
    Open {
        at: Instant,
        connection: u64,
    },
    Frame {
        at: Instant,
        connection: u64,
        direction: Direction,
        body: Bytes,
    },
    Undecodable {
        at: Instant,
        connection: u64,
        direction: Direction,
        reason: String,
        length: Option<u64>,
    },
    Dropped {
        at: Instant,
        connection: u64,
        direction: Direction,
        frames: u64,
        bytes: u64,
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
    pub(crate) stats: Arc<Stats>,
}

/// Writes every entry of `entries` until the queue closes; the first write error ends writing (the rest is
/// drained and dropped, so that nothing waits on a broken disk) and is returned.
pub(crate) fn run(mut entries: mpsc::Receiver<Entry>, setup: WriterSetup) -> io::Result<()> {
    let redaction = Redaction::with_pointers(setup.redactor.pointers().to_vec());
    let mut state = State {
        out: RecordWriter::new(BufWriter::with_capacity(64 * 1024, setup.sink)),
        redactor: setup.redactor,
        start: setup.start,
        stats: setup.stats,
        held: Some(Vec::new()),
        held_since: None,
        dirty: false,
        hellos: HashMap::new(),
        header: (setup.recorder, redaction),
    };
    let mut last_flush = Instant::now();
    let mut failed = None;
    while let Some(entry) = entries.blocking_recv() {
        if failed.is_some() {
            continue;
        }
        let step = || -> io::Result<()> {
            // A tick flushes whatever is written, so nothing waits more than a tick to reach the file.
            let tick = matches!(entry, Entry::Tick);
            state.take(entry)?;
            let waited = state
                .held_since
                .is_some_and(|t| t.elapsed() >= setup.flush_every);
            if state.held.is_some() && waited {
                state.write_header(None)?;
            }
            if state.dirty && (tick || last_flush.elapsed() >= setup.flush_every) {
                state.out.flush()?;
                state.dirty = false;
                last_flush = Instant::now();
            }
            Ok(())
        };
        if let Err(e) = step() {
            tracing::error!(error = %e, "cannot write the recording; forwarding goes on unrecorded");
            failed = Some(e);
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if state.held.is_some() {
        state.write_header(None)?;
    }
    state.out.flush()
}

struct State {
    out: RecordWriter<BufWriter<Box<dyn Write + Send>>>,
    redactor: Redactor,
    start: Instant,
    stats: Arc<Stats>,
    /// Entries waiting for the header, until it is written.
    held: Option<Vec<Entry>>,
    /// When the first of them came.
    held_since: Option<Instant>,
    /// Whether lines were written since the last flush.
    dirty: bool,
    /// The id of each connection's `session/hello`, to know its welcome.
    hellos: HashMap<u64, Value>,
    header: (Software, Redaction),
}

impl State {
    fn take(&mut self, entry: Entry) -> io::Result<()> {
        if matches!(entry, Entry::Tick) {
            return Ok(());
        }
        if self.held.is_none() {
            return self.write(entry);
        }
        let identity = self.identity(&entry);
        self.held_since.get_or_insert_with(Instant::now);
        let held = self.held.get_or_insert_with(Vec::new);
        held.push(entry);
        if identity.is_some() || held.len() >= HELD_BACK {
            self.write_header(identity)?;
        }
        Ok(())
    }

    /// The mod's identity when `entry` is the welcome of a connection whose hello was seen.
    fn identity(&mut self, entry: &Entry) -> Option<ModIdentity> {
        let Entry::Frame {
            connection,
            direction,
            body,
            ..
        } = entry
        else {
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
        for entry in self.held.take().unwrap_or_default() {
            self.write(entry)?;
        }
        Ok(())
    }

    fn elapsed(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.start).as_micros()).unwrap_or(u64::MAX)
    }

    fn write(&mut self, entry: Entry) -> io::Result<()> {
        self.dirty = true;
        let record = match entry {
            Entry::Tick => return Ok(()),
            Entry::Frame {
                at,
                connection,
                direction,
                body,
            } => {
                let elapsed_us = self.elapsed(at);
                match self.redactor.message_json(&body) {
                    Ok(json) => {
                        self.stats.recorded_frames.fetch_add(1, Ordering::Relaxed);
                        return self
                            .out
                            .message_json(elapsed_us, connection, direction, &json);
                    }
                    Err(reason) => Record::Undecodable {
                        elapsed_us,
                        connection,
                        direction,
                        reason,
                        length: Some(body.len() as u64),
                    },
                }
            }
            Entry::Open { at, connection } => Record::Open {
                elapsed_us: self.elapsed(at),
                connection,
            },
            Entry::Undecodable {
                at,
                connection,
                direction,
                reason,
                length,
            } => Record::Undecodable {
                elapsed_us: self.elapsed(at),
                connection,
                direction,
                reason,
                length,
            },
            Entry::Dropped {
                at,
                connection,
                direction,
                frames,
                bytes,
            } => Record::Dropped {
                elapsed_us: self.elapsed(at),
                connection,
                direction,
                frames,
                bytes,
            },
            Entry::Close {
                at,
                connection,
                by,
                reason,
            } => Record::Close {
                elapsed_us: self.elapsed(at),
                connection,
                by,
                reason,
            },
        };
        self.out.record(&record)
    }
}
