//! [`RecordingError`]: the one error of this crate, for reading a recording, recording a frame and replaying.

use std::io;
use std::path::PathBuf;

use gabp_transport::TransportError;

use crate::format::{FORMAT, VERSION};

/// Why a recording cannot be read or replayed, or a frame recorded. Line numbers count from 1.
///
/// Reading ([`Recording::read`](crate::Recording::read), [`RecordingReader`](crate::RecordingReader)) fails
/// with the variants up to [`RecordingError::TooManyRecords`], each naming the file or the line; a frame
/// that is not a message ([`Redactor::message_json`](crate::Redactor::message_json)) with the two `Body`
/// variants, whose text a proxy keeps as the reason of an `undecodable` record; replaying
/// (a [`ReplayMod`](crate::ReplayMod), or `replay_bridge::replay` against a live mod) with the others.
///
/// ```
/// use gabp_record::{Recording, RecordingError};
///
/// let error = Recording::from_reader(&b"{\"format\":\"other\"}\n"[..]).unwrap_err();
/// assert!(matches!(error, RecordingError::UnknownVersion { what: "format", .. }));
/// assert!(error.to_string().starts_with("line 1: unknown recording format"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A read failed.
    #[error("line {line}: read error: {source}")]
    Io {
        /// The line being read.
        line: usize,
        /// Why.
        source: io::Error,
    },
    /// Nothing at all: a recording has at least its header line.
    #[error("line 1: the recording is empty (no header line)")]
    Empty,
    /// A line longer than the limit; the reader stopped at the limit without reading the rest.
    #[error("line {line}: longer than {limit} bytes")]
    LineTooLong {
        /// The line.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// The last line does not end in a newline: the recording was cut off while it was written.
    #[error("line {line}: truncated (the file ends without a newline after {length} bytes of this line)")]
    Truncated {
        /// The line.
        line: usize,
        /// How many bytes of it there are.
        length: usize,
    },
    /// A line that is not JSON, or not UTF-8.
    #[error("line {line}: not JSON: {source}")]
    NotJson {
        /// The line.
        line: usize,
        /// The parser's complaint.
        source: serde_json::Error,
    },
    /// JSON that is not a header (line 1) or a record (later lines).
    #[error("line {line}: not a {expected}: {source}")]
    Shape {
        /// The line.
        line: usize,
        /// `header` or `record`.
        expected: &'static str,
        /// The first member that does not fit.
        source: serde_json::Error,
    },
    /// A header of a format or version this reader does not know.
    #[error(
        "line 1: unknown recording {what}: {found} (this reader knows {FORMAT} version {VERSION})"
    )]
    UnknownVersion {
        /// `format` or `version`.
        what: &'static str,
        /// What the header says.
        found: String,
    },
    /// More records than [`MAX_RECORDS`](crate::MAX_RECORDS).
    #[error("line {line}: more than {limit} records")]
    TooManyRecords {
        /// The first line over the limit.
        line: usize,
        /// The limit.
        limit: usize,
    },
    /// A frame body to record that is not JSON, or not UTF-8.
    #[error("not JSON: {0}")]
    BodyNotJson(#[source] serde_json::Error),
    /// A frame body to record that is JSON but not an object.
    #[error("not a JSON object")]
    BodyNotObject,
    /// The recording has no connection with a `session/hello` to replay.
    #[error("the recording has no session/hello to replay")]
    NoSession,
    /// No token could be generated for a replay
    /// ([`TransportError::TokenGeneration`](gabp_transport::TransportError::TokenGeneration)).
    #[error(transparent)]
    Token(TransportError),
    /// Listening or connecting failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_file_and_the_line() {
        let open = RecordingError::Open {
            path: PathBuf::from("/tmp/session.gabp.jsonl"),
            source: io::ErrorKind::NotFound.into(),
        };
        assert!(
            open.to_string().starts_with("/tmp/session.gabp.jsonl: "),
            "{open}"
        );
        let long = RecordingError::LineTooLong { line: 7, limit: 64 };
        assert_eq!(long.to_string(), "line 7: longer than 64 bytes");
    }
}
