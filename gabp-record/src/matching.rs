//! How a live message is compared with a recorded one (SPEC/1.0 recording.md §6): [`differences`] between
//! two messages, with what to [`Ignore`]; the [`Script`] of a recording's connections; and the [`Matcher`]
//! that finds the recorded request answering a live one.

use std::fmt;

use gabp_types::shorten;
use serde_json::Value;

use crate::format::{Direction, Record};
use crate::read::Recording;

/// Most differences reported for one pair of messages.
pub const MAX_DIFFERENCES: usize = 50;

/// One place where two messages differ.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Difference {
    /// The JSON pointer of the value.
    pub pointer: String,
    /// The recorded value; `None` when it was absent.
    pub recorded: Option<Value>,
    /// The live value; `None` when it is absent.
    pub live: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<Value>| {
            v.as_ref().map_or_else(
                || "nothing".to_owned(),
                |v| shorten(&v.to_string(), 80).into_owned(),
            )
        };
        let pointer = if self.pointer.is_empty() {
            "(the whole value)"
        } else {
            &self.pointer
        };
        write!(
            f,
            "{pointer}: recorded {}, got {}",
            show(&self.recorded),
            show(&self.live)
        )
    }
}

/// What [`differences`] leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ignore {
    /// JSON pointers whose values (and everything under them) are not compared.
    pub pointers: Vec<String>,
    /// Member names not compared wherever they appear.
    pub keys: Vec<String>,
    /// Whether two strings that are both RFC 3339 date-times count as equal.
    pub timestamps: bool,
}

impl Ignore {
    /// Only the JSON `pointers`.
    #[must_use]
    pub fn pointers(pointers: Vec<String>) -> Self {
        Ignore {
            pointers,
            ..Ignore::default()
        }
    }

    /// What a replayed bridge ignores (SPEC/1.0 recording.md §6.2): the envelope's `id` and an event's `seq`,
    /// members named `timestamp`, any pair of date-times, and the user's `pointers`.
    #[must_use]
    pub fn ids_and_times(mut pointers: Vec<String>) -> Self {
        pointers.extend(["/id".to_owned(), "/seq".to_owned()]);
        Ignore {
            pointers,
            keys: vec!["timestamp".to_owned()],
            timestamps: true,
        }
    }

    fn skips(&self, pointer: &str) -> bool {
        self.pointers.iter().any(|p| {
            pointer == p
                || (pointer.starts_with(p.as_str())
                    && pointer.as_bytes().get(p.len()) == Some(&b'/'))
        })
    }
}

/// Where `live` differs from `recorded`, in document order, at most [`MAX_DIFFERENCES`].
#[must_use]
pub fn differences(recorded: &Value, live: &Value, ignore: &Ignore) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(
        &mut String::new(),
        Some(recorded),
        Some(live),
        ignore,
        &mut out,
    );
    out
}

fn walk(
    pointer: &mut String,
    recorded: Option<&Value>,
    live: Option<&Value>,
    ignore: &Ignore,
    out: &mut Vec<Difference>,
) {
    if out.len() >= MAX_DIFFERENCES || ignore.skips(pointer) {
        return;
    }
    match (recorded, live) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a
                .keys()
                .chain(b.keys().filter(|k| !a.contains_key(*k)))
                .collect();
            keys.sort();
            for key in keys {
                if ignore.keys.iter().any(|k| k == key) {
                    continue;
                }
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                walk(pointer, a.get(key), b.get(key), ignore, out);
                pointer.truncate(len);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(pointer, a.get(i), b.get(i), ignore, out);
                pointer.truncate(len);
            }
        }
        (Some(Value::String(a)), Some(Value::String(b)))
            if ignore.timestamps && is_date_time(a) && is_date_time(b) => {}
        (a, b) if a == b => {}
        (a, b) => out.push(Difference {
            pointer: pointer.clone(),
            recorded: a.cloned(),
            live: b.cloned(),
        }),
    }
}

/// Whether `s` starts like an RFC 3339 date-time: `YYYY-MM-DDTHH:MM`.
fn is_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b'T' | b't'))
        && digits(11..13)
        && b.get(13) == Some(&b':')
}

/// A recorded request and what the mod sent after it, until the next request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Exchange {
    /// The request's line in the recording.
    pub line: usize,
    /// When it was sent, in microseconds since the recording started.
    pub at_us: u64,
    /// The request as recorded.
    pub request: Value,
    /// The response to it and the events that followed it, each with its offset from the request.
    pub replies: Vec<Reply>,
}

impl Exchange {
    /// The request's method.
    #[must_use]
    pub fn method(&self) -> &str {
        self.request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// A message the mod sent after a request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reply {
    /// Its line in the recording.
    pub line: usize,
    /// Microseconds after the request.
    pub offset_us: u64,
    /// The message.
    pub message: Value,
    /// Whether it is the response to the request (else an event, or an answer to another request).
    pub is_response: bool,
}

/// The exchanges of one recorded connection.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ConnectionScript {
    /// The connection's number.
    pub connection: u64,
    /// The `session/hello` and its welcome.
    pub hello: Option<Exchange>,
    /// Every other request, in recorded order.
    pub exchanges: Vec<Exchange>,
}

/// Every recorded connection, as exchanges.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Script {
    /// In the order they opened.
    pub connections: Vec<ConnectionScript>,
}

impl Script {
    /// The script of `recording`. Events before a connection's first request go with its hello.
    #[must_use]
    pub fn from_recording(recording: &Recording) -> Script {
        let mut connections: Vec<ConnectionScript> = Vec::new();
        let index = |connections: &mut Vec<ConnectionScript>, c: u64| {
            if let Some(i) = connections.iter().position(|s| s.connection == c) {
                return i;
            }
            connections.push(ConnectionScript {
                connection: c,
                ..ConnectionScript::default()
            });
            connections.len() - 1
        };
        for (line, record) in &recording.records {
            let Record::Message {
                elapsed_us,
                connection,
                direction,
                message,
            } = record
            else {
                continue;
            };
            let i = index(&mut connections, *connection);
            let script = &mut connections[i];
            let message = Value::Object(message.clone());
            let kind = message.get("type").and_then(Value::as_str);
            match (direction, kind) {
                (Direction::BridgeToMod, Some("request")) => {
                    let exchange = Exchange {
                        line: *line,
                        at_us: *elapsed_us,
                        request: message,
                        replies: Vec::new(),
                    };
                    if exchange.method() == "session/hello" && script.hello.is_none() {
                        script.hello = Some(exchange);
                    } else {
                        script.exchanges.push(exchange);
                    }
                }
                (Direction::ModToBridge, Some("response" | "event")) => {
                    let id = message.get("id");
                    let answered = script
                        .hello
                        .iter_mut()
                        .chain(script.exchanges.iter_mut())
                        .find(|e| kind == Some("response") && e.request.get("id") == id);
                    let (target, is_response) = match answered {
                        Some(exchange) => (Some(exchange), true),
                        None if kind == Some("event") => {
                            (script.exchanges.last_mut().or(script.hello.as_mut()), false)
                        }
                        // An answer to no recorded request (to a frame that was not a request): not replayed.
                        None => (None, false),
                    };
                    if let Some(exchange) = target {
                        exchange.replies.push(Reply {
                            line: *line,
                            offset_us: elapsed_us.saturating_sub(exchange.at_us),
                            message,
                            is_response,
                        });
                    }
                }
                _ => {}
            }
        }
        Script { connections }
    }
}

/// How a [`Matcher`] picks the recorded request for a live one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Any recorded request with the same method and params, the first not yet used (the last one again
    /// when all are used).
    #[default]
    Exact,
    /// The next recorded request, which must have the same method and params.
    Ordered,
}

/// A live request no recorded one matches.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Unmatched {
    /// The live request's method.
    pub method: String,
    /// The closest recorded request (its line and method) and the first field where it differs.
    pub closest: Option<Box<(usize, String, Difference)>>,
    /// Whether some recorded request has the method.
    pub method_recorded: bool,
}

impl fmt::Display for Unmatched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no recorded request matches this {} request",
            self.method
        )?;
        match &self.closest {
            Some(closest) => write!(
                f,
                "; the closest is the {} request on line {} of the recording, which differs at {}",
                closest.1, closest.0, closest.2
            ),
            None => write!(f, "; none was recorded"),
        }
    }
}

/// Finds recorded exchanges for the live requests of one connection.
#[derive(Debug)]
pub struct Matcher<'a> {
    script: &'a ConnectionScript,
    used: Vec<bool>,
    next: usize,
    mode: Mode,
    ignore: Ignore,
}

impl<'a> Matcher<'a> {
    /// A matcher over `script`, ignoring the envelope's `id` and the `ignore` pointers.
    #[must_use]
    pub fn new(script: &'a ConnectionScript, mode: Mode, ignore: &[String]) -> Self {
        let mut pointers = ignore.to_vec();
        pointers.push("/id".to_owned());
        Matcher {
            script,
            used: vec![false; script.exchanges.len()],
            next: 0,
            mode,
            ignore: Ignore::pointers(pointers),
        }
    }

    /// The recorded exchange that answers `request`.
    ///
    /// # Errors
    ///
    /// [`Unmatched`] naming the closest recorded request.
    pub fn answer(&mut self, request: &Value) -> Result<&'a Exchange, Unmatched> {
        let exchanges = &self.script.exchanges;
        let same = |e: &Exchange| differences(&e.request, request, &self.ignore).is_empty();
        let found = match self.mode {
            Mode::Ordered => exchanges
                .get(self.next)
                .filter(|e| same(e))
                .map(|_| self.next),
            Mode::Exact => {
                let mut matching = (0..exchanges.len()).filter(|&i| same(&exchanges[i]));
                let first = matching.clone().find(|&i| !self.used[i]);
                first.or_else(|| matching.next_back())
            }
        };
        if let Some(i) = found {
            self.used[i] = true;
            self.next = i + 1;
            return Ok(&exchanges[i]);
        }
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let candidates: Vec<&Exchange> = match self.mode {
            Mode::Ordered => exchanges.get(self.next).into_iter().collect(),
            Mode::Exact => exchanges.iter().filter(|e| e.method() == method).collect(),
        };
        let closest = candidates
            .into_iter()
            .map(|e| (e, differences(&e.request, request, &self.ignore)))
            .min_by_key(|(_, d)| d.len())
            .and_then(|(e, d)| {
                Some(Box::new((
                    e.line,
                    e.method().to_owned(),
                    d.into_iter().next()?,
                )))
            });
        Err(Unmatched {
            method_recorded: exchanges.iter().any(|e| e.method() == method),
            method,
            closest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exchange(line: usize, request: Value) -> Exchange {
        Exchange {
            line,
            at_us: 0,
            request,
            replies: Vec::new(),
        }
    }

    fn call(id: &str, x: i64) -> Value {
        json!({"v": "gabp/1", "id": id, "type": "request", "method": "tools/call",
            "params": {"name": "player/teleport", "arguments": {"x": x, "y": 0}}})
    }

    #[test]
    fn differences_name_the_pointer_and_skip_ignored_parts() {
        let a =
            json!({"id": "a", "result": {"x": 1, "at": "2026-01-01T00:00:00Z", "timestamp": 1}});
        let b =
            json!({"id": "b", "result": {"x": 2, "at": "2026-02-02T10:00:00Z", "timestamp": 2}});
        let strict = differences(&a, &b, &Ignore::default());
        assert_eq!(strict.len(), 4);
        let loose = differences(&a, &b, &Ignore::ids_and_times(vec![]));
        assert_eq!(loose.len(), 1);
        assert_eq!(loose[0].to_string(), "/result/x: recorded 1, got 2");
        assert!(differences(&a, &b, &Ignore::ids_and_times(vec!["/result".into()])).is_empty());
    }

    #[test]
    fn exact_mode_uses_each_recorded_request_once_then_the_last() {
        let script = ConnectionScript {
            connection: 0,
            hello: None,
            exchanges: vec![
                exchange(3, call("1", 1)),
                exchange(5, call("2", 2)),
                exchange(7, call("3", 1)),
            ],
        };
        let mut m = Matcher::new(&script, Mode::Exact, &[]);
        assert_eq!(m.answer(&call("x", 1)).unwrap().line, 3);
        assert_eq!(m.answer(&call("x", 1)).unwrap().line, 7);
        assert_eq!(m.answer(&call("x", 1)).unwrap().line, 7);
        assert_eq!(m.answer(&call("x", 2)).unwrap().line, 5);
        let miss = m.answer(&call("x", 9)).unwrap_err();
        let (line, _, diff) = *miss.closest.clone().unwrap();
        assert_eq!((line, diff.pointer.as_str()), (3, "/params/arguments/x"));
        assert!(miss.to_string().contains("line 3"), "{miss}");
        let mut ignoring = Matcher::new(&script, Mode::Exact, &["/params/arguments/x".into()]);
        assert_eq!(ignoring.answer(&call("x", 9)).unwrap().line, 3);
    }

    #[test]
    fn ordered_mode_expects_the_next_one() {
        let script = ConnectionScript {
            connection: 0,
            hello: None,
            exchanges: vec![exchange(3, call("1", 1)), exchange(5, call("2", 2))],
        };
        let mut m = Matcher::new(&script, Mode::Ordered, &[]);
        let miss = m.answer(&call("x", 2)).unwrap_err();
        assert_eq!(miss.closest.unwrap().0, 3);
        assert_eq!(m.answer(&call("x", 1)).unwrap().line, 3);
        assert_eq!(m.answer(&call("x", 2)).unwrap().line, 5);
        assert!(
            m.answer(&call("x", 2)).is_err(),
            "nothing recorded after line 5"
        );
    }

    #[test]
    fn an_unrecorded_method() {
        let script = ConnectionScript::default();
        let miss = Matcher::new(&script, Mode::Exact, &[])
            .answer(&call("x", 1))
            .unwrap_err();
        assert!(!miss.method_recorded);
        assert!(miss.to_string().contains("none was recorded"), "{miss}");
    }
}
