//! A game's console: what the process the hub started prints on stdout and stderr. The hub reads both
//! through pipes, copies the bytes to `launch.log` as before, and keeps the last lines (bounded by count and
//! bytes) for readers, and passes each line on to the hub's listeners ([`crate::Hub::console_lines`]).

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::ModProcess;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{broadcast, watch};

/// Most lines kept per game.
pub const MAX_LINES: usize = 2_000;
/// Most bytes of line text kept per game.
pub const MAX_BYTES: usize = 1 << 20;
/// Longest line kept whole; a longer one is split at this many bytes.
pub const MAX_LINE: usize = 4_096;
/// How long a reader of the output of a process that has exited waits for the pipes to be read to the end.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// Which of the game's outputs a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    /// `stdout` or `stderr`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One line the game printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ConsoleLine {
    /// The game.
    #[serde(skip)]
    pub game: Arc<str>,
    /// Its number among the lines of this game since the hub started (gaps: lines that fell out).
    pub seq: u64,
    /// Where it came from.
    pub stream: Stream,
    /// The text, without the line end (invalid UTF-8 replaced).
    pub text: String,
}

/// The last lines of a game's console.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConsoleTail {
    /// The lines, oldest first.
    pub lines: Vec<ConsoleLine>,
    /// How many lines kept matched the filter (at least `lines.len()`).
    pub matched: usize,
    /// How many lines of this game fell out of the hub's buffer (they are still in `launch.log`).
    pub dropped: u64,
}

/// A game's console state, behind its own lock (not the game's).
pub(crate) struct ConsoleState {
    ring: Mutex<Ring>,
    /// How many of the current process's outputs are still being read.
    open: watch::Sender<u8>,
    lines: broadcast::Sender<ConsoleLine>,
}

#[derive(Default)]
struct Ring {
    lines: VecDeque<ConsoleLine>,
    bytes: usize,
    next_seq: u64,
    dropped: u64,
}

impl ConsoleState {
    pub(crate) fn new(lines: broadcast::Sender<ConsoleLine>) -> ConsoleState {
        ConsoleState {
            ring: Mutex::new(Ring::default()),
            open: watch::Sender::new(0),
            lines,
        }
    }

    fn push(&self, game: &Arc<str>, stream: Stream, bytes: &[u8]) {
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if text.ends_with('\r') {
            text.pop();
        }
        let line = {
            let mut ring = self.ring.lock();
            let line = ConsoleLine {
                game: game.clone(),
                seq: ring.next_seq,
                stream,
                text,
            };
            ring.next_seq += 1;
            ring.bytes += line.text.len();
            ring.lines.push_back(line.clone());
            while ring.lines.len() > MAX_LINES || ring.bytes > MAX_BYTES {
                if let Some(old) = ring.lines.pop_front() {
                    ring.bytes -= old.text.len();
                    ring.dropped += 1;
                }
            }
            line
        };
        let _ = self.lines.send(line);
    }

    pub(crate) fn tail(&self, max: usize, filter: &dyn Fn(&str) -> bool) -> ConsoleTail {
        let ring = self.ring.lock();
        let mut lines = Vec::new();
        let mut matched = 0;
        for line in ring.lines.iter().rev() {
            if filter(&line.text) {
                matched += 1;
                if lines.len() < max {
                    lines.push(line.clone());
                }
            }
        }
        lines.reverse();
        ConsoleTail {
            lines,
            matched,
            dropped: ring.dropped,
        }
    }
}

/// Sets the command's stdout and stderr to pipes the hub reads.
pub(crate) fn pipe_output(command: &mut Command) {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
}

impl ConsoleState {
    /// Reads the process's stdout and stderr (when piped) into the console of game `id` and appends them to
    /// `log`.
    pub(crate) fn capture(self: &Arc<Self>, id: &str, process: &mut ModProcess, log: &Path) {
        let id: Arc<str> = Arc::from(id);
        if let Some(out) = process.take_stdout() {
            self.capture_one(&id, Stream::Stdout, out, log);
        }
        if let Some(err) = process.take_stderr() {
            self.capture_one(&id, Stream::Stderr, err, log);
        }
    }

    fn capture_one(
        self: &Arc<Self>,
        id: &Arc<str>,
        stream: Stream,
        mut reader: impl AsyncRead + Unpin + Send + 'static,
        log: &Path,
    ) {
        // O_APPEND: the two outputs' writes do not overwrite each other.
        let mut file = OpenOptions::new().append(true).open(log).ok();
        let console = self.clone();
        let id = id.clone();
        self.open.send_modify(|n| *n += 1);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut partial: Vec<u8> = Vec::new();
            loop {
                let n = match reader.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                if let Some(file) = file.as_mut() {
                    let _ = file.write_all(chunk);
                }
                let mut rest = chunk;
                while let Some(end) = rest.iter().position(|b| *b == b'\n') {
                    partial.extend_from_slice(&rest[..end]);
                    console.push(&id, stream, &partial);
                    partial.clear();
                    rest = &rest[end + 1..];
                }
                partial.extend_from_slice(rest);
                while partial.len() >= MAX_LINE {
                    let long: Vec<u8> = partial.drain(..MAX_LINE).collect();
                    console.push(&id, stream, &long);
                }
            }
            if !partial.is_empty() {
                console.push(&id, stream, &partial);
            }
            console.open.send_modify(|n| *n = n.saturating_sub(1));
        });
    }

    /// Waits (briefly) until what the game's process printed has been read to the end.
    pub(crate) async fn drained(&self) {
        let mut open = self.open.subscribe();
        let _ = tokio::time::timeout(DRAIN_WAIT, open.wait_for(|n| *n == 0)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_lines_within_its_bounds() {
        let (tx, mut rx) = broadcast::channel(4);
        let console = ConsoleState::new(tx);
        let id: Arc<str> = Arc::from("g");
        for i in 0..(MAX_LINES + 5) {
            console.push(&id, Stream::Stdout, format!("line {i}\r").as_bytes());
        }
        let tail = console.tail(3, &|_| true);
        let texts: Vec<&str> = tail.lines.iter().map(|l| l.text.as_str()).collect();
        let last = MAX_LINES + 4;
        assert_eq!(
            texts,
            [
                format!("line {}", last - 2),
                format!("line {}", last - 1),
                format!("line {last}")
            ]
        );
        assert_eq!(tail.matched, MAX_LINES);
        assert_eq!(tail.dropped, 5);
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        let big = vec![b'x'; MAX_LINE];
        for _ in 0..((MAX_BYTES / MAX_LINE) + 10) {
            console.push(&id, Stream::Stderr, &big);
        }
        assert!(console.ring.lock().bytes <= MAX_BYTES);
        let odd = console.tail(10, &|t| t.ends_with('7'));
        assert_eq!(odd.lines.len(), 0);
    }
}
