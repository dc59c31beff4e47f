//! Reading a recording: [`Recording::read`] and the streaming [`RecordingReader`], bounded per line, with
//! errors that name the line (SPEC/1.0 recording.md §4).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::error::RecordingError;
use crate::format::{Header, Record, FORMAT, VERSION};

/// Longest line a reader accepts by default, newline included: 8 MiB (a 1 MiB message fits many times over).
pub const DEFAULT_MAX_LINE: usize = 8 * 1024 * 1024;

/// Most records [`Recording::read`] keeps in memory.
pub const MAX_RECORDS: usize = 1_000_000;

/// A whole recording in memory: its header, and each record with its line number.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Recording {
    /// Line 1.
    pub header: Header,
    /// Every later line, with its line number.
    pub records: Vec<(usize, Record)>,
}

impl Recording {
    /// Reads the recording at `path`.
    ///
    /// # Errors
    ///
    /// [`RecordingError`], naming the line.
    pub fn read(path: impl AsRef<Path>) -> Result<Recording, RecordingError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| RecordingError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_reader(BufReader::new(file))
    }

    /// Reads a recording from `reader`.
    ///
    /// # Errors
    ///
    /// [`RecordingError`], naming the line.
    pub fn from_reader<R: BufRead>(reader: R) -> Result<Recording, RecordingError> {
        let mut lines = RecordingReader::new(reader)?;
        let header = lines.header().clone();
        let mut records = Vec::new();
        while let Some(record) = lines.next_record()? {
            if records.len() == MAX_RECORDS {
                return Err(RecordingError::TooManyRecords {
                    line: record.0,
                    limit: MAX_RECORDS,
                });
            }
            records.push(record);
        }
        Ok(Recording { header, records })
    }
}

/// Reads a recording line by line, never holding more than one line of at most `max_line` bytes.
#[derive(Debug)]
pub struct RecordingReader<R> {
    reader: R,
    header: Header,
    line: usize,
    max_line: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> RecordingReader<R> {
    /// Reads the header from `reader`, with lines of at most [`DEFAULT_MAX_LINE`] bytes.
    ///
    /// # Errors
    ///
    /// [`RecordingError`] for line 1.
    pub fn new(reader: R) -> Result<Self, RecordingError> {
        Self::with_max_line(reader, DEFAULT_MAX_LINE)
    }

    /// Reads the header from `reader`, with lines of at most `max_line` bytes.
    ///
    /// # Errors
    ///
    /// [`RecordingError`] for line 1.
    pub fn with_max_line(reader: R, max_line: usize) -> Result<Self, RecordingError> {
        let mut this = RecordingReader {
            reader,
            header: Header::new(
                crate::format::Software::new("", ""),
                None,
                crate::format::Redaction::default(),
            ),
            line: 0,
            max_line,
            buf: Vec::new(),
        };
        let Some(value) = this.next_json()? else {
            return Err(RecordingError::Empty);
        };
        // The format and version first, so that a later version's header is named as such.
        match value.get("format") {
            Some(serde_json::Value::String(format)) if format == FORMAT => {}
            found => {
                return Err(RecordingError::UnknownVersion {
                    what: "format",
                    found: found.map_or_else(|| "none".to_owned(), ToString::to_string),
                })
            }
        }
        match value.get("version") {
            Some(version) if version.as_u64() == Some(VERSION) => {}
            found => {
                return Err(RecordingError::UnknownVersion {
                    what: "version",
                    found: found.map_or_else(|| "none".to_owned(), ToString::to_string),
                })
            }
        }
        this.header = serde_json::from_value(value).map_err(|source| RecordingError::Shape {
            line: 1,
            expected: "header",
            source,
        })?;
        Ok(this)
    }

    /// The header (line 1).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next record and its line number; `None` at the end.
    ///
    /// # Errors
    ///
    /// [`RecordingError`], naming the line. After an error, reading is over.
    pub fn next_record(&mut self) -> Result<Option<(usize, Record)>, RecordingError> {
        let Some(value) = self.next_json()? else {
            return Ok(None);
        };
        let line = self.line;
        serde_json::from_value(value)
            .map(|record| Some((line, record)))
            .map_err(|source| RecordingError::Shape {
                line,
                expected: "record",
                source,
            })
    }

    /// The next line as JSON; `None` at the end.
    fn next_json(&mut self) -> Result<Option<serde_json::Value>, RecordingError> {
        self.line += 1;
        let line = self.line;
        self.buf.clear();
        let limit = self.max_line as u64 + 1;
        (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| RecordingError::Io { line, source })?;
        if self.buf.is_empty() {
            return Ok(None);
        }
        if self.buf.last() != Some(&b'\n') {
            if self.buf.len() > self.max_line {
                return Err(RecordingError::LineTooLong {
                    line,
                    limit: self.max_line,
                });
            }
            return Err(RecordingError::Truncated {
                line,
                length: self.buf.len(),
            });
        }
        serde_json::from_slice(&self.buf)
            .map(Some)
            .map_err(|source| RecordingError::NotJson { line, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"kind":"header","format":"gabp-recording","version":1,"recorder":{"name":"t","version":"0"},"mod":null,"redaction":{"hello":[],"pointers":[],"tokens":true,"replacement":"[redacted]"}}"#;

    fn read(text: &str) -> Result<Recording, RecordingError> {
        Recording::from_reader(text.as_bytes())
    }

    #[test]
    fn a_header_and_records() {
        let text = format!(
            "{HEADER}\n{}\n",
            r#"{"kind":"open","elapsedUs":0,"connection":0}"#
        );
        let recording = read(&text).unwrap();
        assert_eq!(recording.records.len(), 1);
        assert_eq!(recording.records[0].0, 2);
    }

    #[test]
    fn a_record_of_an_unknown_kind_names_its_line() {
        let text = format!("{HEADER}\n{}\n", r#"{"kind":"teleport","elapsedUs":0}"#);
        let e = read(&text).unwrap_err();
        assert!(matches!(e, RecordingError::Shape { line: 2, .. }), "{e:?}");
        assert!(e.to_string().starts_with("line 2: not a record"), "{e}");
    }

    #[test]
    fn a_header_of_another_format() {
        let e = read("{\"kind\":\"header\",\"format\":\"har\",\"version\":1}\n").unwrap_err();
        assert!(e.to_string().contains("unknown recording format"), "{e}");
    }

    #[test]
    fn an_empty_file() {
        assert!(matches!(read(""), Err(RecordingError::Empty)));
    }
}
