//! The bridge side of a recording, replayed against a live mod (SPEC/1.0 recording.md §6.2): [`replay`]
//! sends what the bridge sent, in order and never ahead of an answer it had already received, and compares
//! every answer and event with the recorded ones.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use futures::StreamExt;
use gabp_codec::{encode_frame, Frame, FrameCodec};
use gabp_transport::{Endpoint, Token};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use crate::error::RecordingError;
use crate::format::{Direction, Record};
use crate::matching::{differences, Difference, Ignore};
use crate::read::Recording;

/// Live events kept beyond the recorded number, at most.
const EXTRA_EVENTS: usize = 1000;

/// How [`replay`] waits and compares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeOptions {
    /// JSON pointers (into answers and events) not compared, besides ids, `seq` and timestamps.
    pub ignore: Vec<String>,
    /// How long to wait for an answer.
    pub patience: Duration,
    /// How long to wait for more events once every answer is in.
    pub settle: Duration,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            ignore: Vec::new(),
            patience: Duration::from_secs(10),
            settle: Duration::from_millis(500),
        }
    }
}

/// One difference from the recording.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Finding {
    /// The recorded connection.
    pub connection: u64,
    /// The line of the recorded message, when there is one.
    pub line: Option<usize>,
    /// What differs.
    pub what: String,
    /// Where, field by field.
    pub differences: Vec<Difference>,
}

/// What [`replay`] found.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Report {
    /// Every difference.
    pub findings: Vec<Finding>,
    /// Answers compared.
    pub answers: usize,
    /// Recorded events compared.
    pub events: usize,
}

impl Report {
    /// Whether the mod answered as recorded.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.findings {
            match finding.line {
                Some(line) => writeln!(
                    f,
                    "connection {}, line {line}: {}",
                    finding.connection, finding.what
                )?,
                None => writeln!(f, "connection {}: {}", finding.connection, finding.what)?,
            }
            for d in &finding.differences {
                writeln!(f, "  {d}")?;
            }
        }
        write!(
            f,
            "compared {} answers and {} events: {} difference{}",
            self.answers,
            self.events,
            self.findings.len(),
            if self.findings.len() == 1 { "" } else { "s" }
        )
    }
}

/// Replays the bridge side of every recorded connection, one after the other, against the mod at `endpoint`,
/// presenting `token` in place of the redacted one.
///
/// # Errors
///
/// [`RecordingError::Transport`] when the mod cannot be reached.
pub async fn replay(
    recording: &Recording,
    endpoint: &Endpoint,
    token: &Token,
    options: &BridgeOptions,
) -> Result<Report, RecordingError> {
    let mut by_connection: BTreeMap<u64, Vec<(usize, Direction, Value)>> = BTreeMap::new();
    for (line, record) in &recording.records {
        if let Record::Message {
            connection,
            direction,
            message,
            ..
        } = record
        {
            by_connection.entry(*connection).or_default().push((
                *line,
                *direction,
                Value::Object(message.clone()),
            ));
        }
    }
    let ignore = Ignore::ids_and_times(options.ignore.clone());
    let mut report = Report::default();
    for (connection, messages) in by_connection {
        let live = run_connection(&messages, endpoint, token, options).await?;
        compare(connection, &messages, &live, &ignore, options, &mut report);
    }
    Ok(report)
}

/// What the mod sent on one connection.
struct Live {
    answers: HashMap<String, Value>,
    events: Vec<Value>,
}

async fn run_connection(
    messages: &[(usize, Direction, Value)],
    endpoint: &Endpoint,
    token: &Token,
    options: &BridgeOptions,
) -> Result<Live, RecordingError> {
    let stream = gabp_transport::connect_stream(endpoint).await?;
    let (read, mut write) = tokio::io::split(stream);
    let mut frames = FramedRead::new(read, FrameCodec::new());
    let request_ids: Vec<&Value> = messages
        .iter()
        .filter(|(_, d, m)| *d == Direction::BridgeToMod && m["type"] == "request")
        .map(|(_, _, m)| &m["id"])
        .collect();
    let recorded_events = messages
        .iter()
        .filter(|(_, _, m)| m["type"] == "event")
        .count();
    let mut live = Live {
        answers: HashMap::new(),
        events: Vec::new(),
    };
    let mut needed: Vec<String> = Vec::new();
    let mut open = true;
    for (_, direction, message) in messages {
        if *direction == Direction::ModToBridge {
            // Sent only after the bridge had this answer, as in the recording.
            if message["type"] == "response" && request_ids.contains(&&message["id"]) {
                if let Some(id) = message["id"].as_str() {
                    needed.push(id.to_owned());
                }
            }
            continue;
        }
        let deadline = Instant::now() + options.patience;
        while open && needed.iter().any(|id| !live.answers.contains_key(id)) {
            open = read_one(&mut frames, &mut live, deadline, recorded_events).await;
        }
        let mut message = message.clone();
        if message["method"] == "session/hello" {
            if let Some(slot) = message.pointer_mut("/params/token") {
                *slot = Value::String(token.expose_secret().to_owned());
            }
        }
        let frame = encode_frame(&serde_json::to_vec(&message).unwrap_or_default());
        if write.write_all(&frame).await.is_err() {
            break;
        }
    }
    let all: Vec<String> = request_ids
        .iter()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect();
    let deadline = Instant::now() + options.patience;
    while open && all.iter().any(|id| !live.answers.contains_key(id)) {
        open = read_one(&mut frames, &mut live, deadline, recorded_events).await;
    }
    while open && live.events.len() < recorded_events {
        open = read_one(
            &mut frames,
            &mut live,
            Instant::now() + options.settle,
            recorded_events,
        )
        .await;
    }
    let _ = write.shutdown().await;
    Ok(live)
}

/// Reads one message into `live`; false once nothing more will come before `deadline`.
async fn read_one<R: tokio::io::AsyncRead + Unpin>(
    frames: &mut FramedRead<R, FrameCodec>,
    live: &mut Live,
    deadline: Instant,
    recorded_events: usize,
) -> bool {
    let body = match tokio::time::timeout_at(deadline, frames.next()).await {
        Ok(Some(Ok(Frame::Body(body)))) => body,
        // Too large to compare; the answer it may have been shows as missing.
        Ok(Some(Ok(Frame::Oversized { .. }))) => return true,
        _ => return false,
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return true;
    };
    match message["type"].as_str() {
        Some("response") => {
            if let Some(id) = message["id"].as_str() {
                live.answers.insert(id.to_owned(), message);
            }
        }
        Some("event") if live.events.len() < recorded_events + EXTRA_EVENTS => {
            live.events.push(message)
        }
        _ => {}
    }
    true
}

fn compare(
    connection: u64,
    messages: &[(usize, Direction, Value)],
    live: &Live,
    ignore: &Ignore,
    options: &BridgeOptions,
    report: &mut Report,
) {
    let methods: HashMap<&Value, &str> = messages
        .iter()
        .filter(|(_, d, _)| *d == Direction::BridgeToMod)
        .map(|(_, _, m)| (&m["id"], m["method"].as_str().unwrap_or("?")))
        .collect();
    let mut recorded_events: Vec<(usize, &Value)> = Vec::new();
    for (line, direction, message) in messages {
        if *direction != Direction::ModToBridge {
            continue;
        }
        if message["type"] == "event" {
            recorded_events.push((*line, message));
            continue;
        }
        let Some(method) = methods.get(&message["id"]) else {
            continue;
        };
        report.answers += 1;
        let finding = |what: String, differences| Finding {
            connection,
            line: Some(*line),
            what,
            differences,
        };
        match message["id"].as_str().and_then(|id| live.answers.get(id)) {
            None => report.findings.push(finding(
                format!("no answer to {method} within {:?}", options.patience),
                Vec::new(),
            )),
            Some(answer) => {
                let d = differences(message, answer, ignore);
                if !d.is_empty() {
                    report
                        .findings
                        .push(finding(format!("the answer to {method} differs"), d));
                }
            }
        }
    }
    // Events pair up in order within each channel; channels interleave differently from run to run.
    let channel = |m: &Value| m["channel"].as_str().unwrap_or("").to_owned();
    let mut live_by_channel: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for event in &live.events {
        live_by_channel
            .entry(channel(event))
            .or_default()
            .push(event);
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (line, event) in recorded_events {
        report.events += 1;
        let name = channel(event);
        let n = seen.entry(name.clone()).or_default();
        let finding = |what: String, differences| Finding {
            connection,
            line: Some(line),
            what,
            differences,
        };
        match live_by_channel.get(&name).and_then(|events| events.get(*n)) {
            None => report.findings.push(finding(
                format!("event {n} on {name} did not come"),
                Vec::new(),
            )),
            Some(live_event) => {
                let d = differences(event, live_event, ignore);
                if !d.is_empty() {
                    report
                        .findings
                        .push(finding(format!("event {n} on {name} differs"), d));
                }
            }
        }
        *n += 1;
    }
    for (name, events) in live_by_channel {
        let expected = seen.get(&name).copied().unwrap_or(0);
        if events.len() > expected {
            report.findings.push(Finding {
                connection,
                line: None,
                what: format!(
                    "{} event(s) on {name} that were not recorded",
                    events.len() - expected
                ),
                differences: Vec::new(),
            });
        }
    }
}
