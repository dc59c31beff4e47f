//! A game's event log: the events of the channels the hub subscribed to, kept in arrival order and read by
//! cursor, bounded by count and bytes.
//!
//! A cursor names the last entry a reader has seen; reading from it returns only later entries, so the same
//! event is never returned twice from the same cursor. Entries that fell out of the log before a reader came
//! back, and events the mod or the bridge dropped (SPEC/1.0 gabp.md §6, `seq` gaps), are reported as gaps.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use gabp_types::Event;
use serde::Serialize;
use serde_json::Value;

use crate::HubError;

/// Limits of an [`EventLog`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventLimits {
    /// Most events kept (default 1,000).
    pub max_events: usize,
    /// Most bytes of event payloads kept, as JSON (default 4 MiB).
    pub max_bytes: usize,
    /// Most events one read returns (default 200).
    pub max_read: usize,
}

impl Default for EventLimits {
    fn default() -> Self {
        EventLimits {
            max_events: 1_000,
            max_bytes: 4 << 20,
            max_read: 200,
        }
    }
}

/// Where a reader is in an [`EventLog`]: `GENERATION-POSITION`, opaque to readers.
///
/// The generation changes each time the hub attaches to the game again, so a cursor from an earlier
/// connection is recognised (and reported as a gap) rather than misread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cursor {
    generation: u64,
    position: u64,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.generation, self.position)
    }
}

/// A cursor that is not one this hub hands out is [`HubError::BadCursor`].
impl FromStr for Cursor {
    type Err = HubError;

    fn from_str(s: &str) -> Result<Cursor, HubError> {
        let (generation, position) = s.split_once('-').ok_or(HubError::BadCursor)?;
        Ok(Cursor {
            generation: generation.parse().map_err(|_| HubError::BadCursor)?,
            position: position.parse().map_err(|_| HubError::BadCursor)?,
        })
    }
}

impl Serialize for Cursor {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One entry of a read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedEvent {
    /// The channel.
    pub channel: String,
    /// The event's `seq` on its channel.
    pub seq: u64,
    /// The event's payload.
    pub payload: Value,
    /// The event's timestamp, if the mod gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// Events that a reader will never see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Gap {
    /// The channel, when the gap is one channel's (`seq` gap or a full queue); absent when events of any
    /// channel fell out of the log before this read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// How many events were lost.
    pub missed: u64,
    /// Why: `mod` (the mod or the bridge dropped them), `log` (they fell out of the hub's log),
    /// `reconnected` (the connection was re-established), `restarted` (the cursor is from an earlier
    /// connection to the game).
    pub reason: &'static str,
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventBatch {
    /// Events in arrival order (per channel, `seq` order).
    pub events: Vec<LoggedEvent>,
    /// Events this reader will never see, in the order they happened relative to each other.
    pub gaps: Vec<Gap>,
    /// Where to read from next.
    pub cursor: Cursor,
}

#[derive(Debug)]
enum Entry {
    Event(LoggedEvent, usize),
    Gap(Gap),
}

/// The log. Not synchronised: the hub keeps it behind its game's lock.
#[derive(Debug)]
pub struct EventLog {
    limits: EventLimits,
    generation: u64,
    /// Position of the first entry in `entries`.
    first: u64,
    entries: VecDeque<Entry>,
    bytes: usize,
}

impl EventLog {
    /// An empty log of generation 0.
    #[must_use]
    pub fn new(limits: EventLimits) -> EventLog {
        EventLog {
            limits,
            generation: 0,
            first: 0,
            entries: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Starts a new generation (a new connection to the game): readers of the old one get a gap.
    pub fn restart(&mut self) {
        self.generation += 1;
        self.first = 0;
        self.entries.clear();
        self.bytes = 0;
    }

    /// The cursor past the newest entry.
    #[must_use]
    pub fn end(&self) -> Cursor {
        Cursor {
            generation: self.generation,
            position: self.first + self.entries.len() as u64,
        }
    }

    /// Appends an event, dropping the oldest entries past the limits.
    pub fn push(&mut self, event: Event) {
        let size = event.payload.to_string().len() + event.channel.as_str().len();
        let logged = LoggedEvent {
            channel: event.channel.as_str().to_owned(),
            seq: event.seq,
            payload: event.payload,
            timestamp: event.timestamp.map(|t| t.to_string()),
        };
        self.bytes += size;
        self.entries.push_back(Entry::Event(logged, size));
        self.trim();
    }

    /// Records lost events.
    pub fn push_gap(&mut self, gap: Gap) {
        self.entries.push_back(Entry::Gap(gap));
        self.trim();
    }

    fn trim(&mut self) {
        while self.entries.len() > self.limits.max_events.max(1)
            || (self.bytes > self.limits.max_bytes && self.entries.len() > 1)
        {
            if let Some(Entry::Event(_, size)) = self.entries.pop_front() {
                self.bytes -= size;
            }
            self.first += 1;
        }
    }

    /// The entries after `cursor` (from the oldest kept when `None`), at most `max_read` events.
    #[must_use]
    pub fn read(&self, cursor: Option<Cursor>) -> EventBatch {
        self.read_where(cursor, None)
    }

    /// As [`EventLog::read`], only the events of `channel` and the gaps that may hide some of them; the
    /// cursor moves past the other channels' events too.
    #[must_use]
    pub fn read_channel(&self, cursor: Option<Cursor>, channel: &str) -> EventBatch {
        self.read_where(cursor, Some(channel))
    }

    fn read_where(&self, cursor: Option<Cursor>, channel: Option<&str>) -> EventBatch {
        let wanted = |of: Option<&str>| channel.is_none() || of.is_none() || of == channel;
        let mut gaps = Vec::new();
        let from = match cursor {
            None => self.first,
            Some(c) if c.generation != self.generation => {
                gaps.push(Gap {
                    channel: None,
                    missed: 0,
                    reason: "restarted",
                });
                self.first
            }
            Some(c) if c.position < self.first => {
                gaps.push(Gap {
                    channel: None,
                    missed: self.first - c.position,
                    reason: "log",
                });
                self.first
            }
            // A position past the end was never handed out: read from the end.
            Some(c) => c.position.min(self.end().position),
        };
        let mut events = Vec::new();
        let mut position = from;
        let skip = usize::try_from(from - self.first).unwrap_or(usize::MAX);
        for entry in self.entries.iter().skip(skip) {
            match entry {
                Entry::Event(event, _) if wanted(Some(&event.channel)) => {
                    if events.len() == self.limits.max_read {
                        break;
                    }
                    events.push(event.clone());
                }
                Entry::Event(..) => {}
                Entry::Gap(gap) if wanted(gap.channel.as_deref()) => gaps.push(gap.clone()),
                Entry::Gap(_) => {}
            }
            position += 1;
        }
        EventBatch {
            events,
            gaps,
            cursor: Cursor {
                generation: self.generation,
                position,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::ChannelName;
    use serde_json::json;

    fn event(channel: &str, seq: u64, payload: Value) -> Event {
        Event::new(ChannelName::new(channel).unwrap(), seq, payload)
    }

    fn limits(max_events: usize, max_bytes: usize, max_read: usize) -> EventLimits {
        EventLimits {
            max_events,
            max_bytes,
            max_read,
        }
    }

    #[test]
    fn reading_from_a_cursor_never_returns_an_event_twice() {
        let mut log = EventLog::new(EventLimits::default());
        log.push(event("a/b", 0, json!(0)));
        log.push(event("a/b", 1, json!(1)));
        let first = log.read(None);
        assert_eq!(first.events.len(), 2);
        let again = log.read(Some(first.cursor));
        assert!(again.events.is_empty() && again.gaps.is_empty());
        log.push(event("a/b", 2, json!(2)));
        let next = log.read(Some(first.cursor));
        assert_eq!(next.events.len(), 1);
        assert_eq!(next.events[0].seq, 2);
        // The same cursor read twice gives the same answer.
        assert_eq!(log.read(Some(first.cursor)), next);
    }

    #[test]
    fn events_that_fell_out_are_a_gap() {
        let mut log = EventLog::new(limits(3, 1 << 20, 100));
        let start = log.end();
        for seq in 0..5 {
            log.push(event("a/b", seq, json!(seq)));
        }
        let batch = log.read(Some(start));
        assert_eq!(
            batch.gaps,
            vec![Gap {
                channel: None,
                missed: 2,
                reason: "log"
            }]
        );
        let seqs: Vec<u64> = batch.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3, 4]);
    }

    #[test]
    fn the_log_is_bounded_by_bytes() {
        let mut log = EventLog::new(limits(1000, 1000, 100));
        for seq in 0..100 {
            log.push(event("a/b", seq, json!("x".repeat(100))));
        }
        assert!(log.bytes <= 1000, "{} bytes kept", log.bytes);
        assert!(log.entries.len() < 10);
        // One event larger than the whole budget is still kept (the newest).
        log.push(event("a/b", 100, json!("y".repeat(5000))));
        assert_eq!(log.entries.len(), 1);
    }

    #[test]
    fn reads_are_bounded_and_resume_where_they_stopped() {
        let mut log = EventLog::new(limits(100, 1 << 20, 3));
        for seq in 0..7 {
            log.push(event("a/b", seq, json!(seq)));
        }
        let mut cursor = None;
        let mut seen = Vec::new();
        for _ in 0..4 {
            let batch = log.read(cursor);
            seen.extend(batch.events.iter().map(|e| e.seq));
            cursor = Some(batch.cursor);
        }
        assert_eq!(seen, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn mod_gaps_are_reported_in_order_once() {
        let mut log = EventLog::new(EventLimits::default());
        log.push(event("a/b", 0, json!(0)));
        log.push_gap(Gap {
            channel: Some("a/b".into()),
            missed: 4,
            reason: "mod",
        });
        log.push(event("a/b", 5, json!(5)));
        let batch = log.read(None);
        assert_eq!(batch.events.len(), 2);
        assert_eq!(batch.gaps.len(), 1);
        assert!(log.read(Some(batch.cursor)).gaps.is_empty());
    }

    #[test]
    fn cursors_of_an_earlier_connection_are_recognised() {
        let mut log = EventLog::new(EventLimits::default());
        log.push(event("a/b", 0, json!(0)));
        let old = log.read(None).cursor;
        log.restart();
        log.push(event("a/b", 0, json!("new")));
        let batch = log.read(Some(old));
        assert_eq!(batch.gaps[0].reason, "restarted");
        assert_eq!(batch.events[0].payload, json!("new"));
    }

    #[test]
    fn a_channel_read_skips_the_other_channels_and_their_gaps() {
        let mut log = EventLog::new(limits(100, 1 << 20, 2));
        log.push(event("a/b", 0, json!(0)));
        log.push(event("c/d", 0, json!("other")));
        log.push_gap(Gap {
            channel: Some("c/d".into()),
            missed: 1,
            reason: "mod",
        });
        log.push(event("a/b", 1, json!(1)));
        log.push(event("a/b", 2, json!(2)));
        let first = log.read_channel(None, "a/b");
        let seqs: Vec<u64> = first.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1]);
        assert!(first.gaps.is_empty());
        let rest = log.read_channel(Some(first.cursor), "a/b");
        assert_eq!(rest.events.len(), 1);
        assert_eq!(rest.events[0].seq, 2);
        assert_eq!(rest.cursor, log.end());
        assert!(log.read_channel(Some(rest.cursor), "a/b").events.is_empty());
    }

    #[test]
    fn cursors_parse_and_print() {
        let cursor: Cursor = "3-17".parse().unwrap();
        assert_eq!(cursor.to_string(), "3-17");
        for bad in [
            "",
            "3",
            "a-1",
            "1-",
            "-1",
            "1-2-3",
            "99999999999999999999-1",
        ] {
            assert!(
                matches!(bad.parse::<Cursor>(), Err(HubError::BadCursor)),
                "{bad:?}"
            );
        }
    }
}
