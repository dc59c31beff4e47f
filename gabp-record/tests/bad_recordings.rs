//! Recordings that cannot be read get errors naming the line, and no panic (SPEC/1.0 recording.md §4).

use std::io::{self, BufReader, Read};

use gabp_record::{Recording, RecordingError, DEFAULT_MAX_LINE};

const HEADER: &str = r#"{"kind":"header","format":"gabp-recording","version":1,"recorder":{"name":"t","version":"0"},"redaction":{"hello":[],"pointers":[],"tokens":true,"replacement":"[redacted]"}}"#;
const OPEN: &str = r#"{"kind":"open","elapsedUs":0,"connection":0}"#;

fn read(text: &str) -> RecordingError {
    Recording::from_reader(text.as_bytes()).expect_err("a bad recording")
}

#[test]
fn a_truncated_last_line() {
    let e = read(&format!("{HEADER}\n{OPEN}\n{{\"kind\":\"open\",\"elaps"));
    assert!(
        matches!(
            e,
            RecordingError::Truncated {
                line: 3,
                length: 21
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "line 3: truncated (the file ends without a newline after 21 bytes of this line)"
    );
    // Cut exactly before its newline, a whole record is still a cut one.
    let e = read(&format!("{HEADER}\n{OPEN}"));
    assert!(
        matches!(e, RecordingError::Truncated { line: 2, .. }),
        "{e:?}"
    );
}

#[test]
fn an_unknown_version() {
    let e = read(&format!(
        "{}\n{OPEN}\n",
        HEADER.replace("\"version\":1", "\"version\":2")
    ));
    assert!(
        matches!(
            e,
            RecordingError::UnknownVersion {
                what: "version",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "line 1: unknown recording version: 2 (this reader knows gabp-recording version 1)"
    );
}

#[test]
fn a_line_that_is_not_json() {
    let e = read(&format!("{HEADER}\n{OPEN}\nthis is not JSON\n{OPEN}\n"));
    assert!(
        matches!(e, RecordingError::NotJson { line: 3, .. }),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("line 3: not JSON: "), "{e}");
}

/// A stream of 100 MB with no newline after the header, made up as it is read (nothing holds 100 MB).
struct HundredMegabyteLine {
    header: io::Cursor<Vec<u8>>,
    left: u64,
    read: u64,
}

impl Read for HundredMegabyteLine {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.header.read(buf)?;
        if n > 0 {
            return Ok(n);
        }
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buf[..n].fill(b'a');
        self.left -= n as u64;
        self.read += n as u64;
        Ok(n)
    }
}

#[test]
fn a_hundred_megabyte_line() {
    let mut source = HundredMegabyteLine {
        header: io::Cursor::new(format!("{HEADER}\n").into_bytes()),
        left: 100 * 1024 * 1024,
        read: 0,
    };
    let e = Recording::from_reader(BufReader::new(&mut source)).expect_err("too long");
    assert!(
        matches!(
            e,
            RecordingError::LineTooLong {
                line: 2,
                limit: DEFAULT_MAX_LINE
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("line 2: longer than {DEFAULT_MAX_LINE} bytes")
    );
    // The reader stopped at the limit: it never read, let alone held, the rest of the line.
    assert!(
        source.read <= DEFAULT_MAX_LINE as u64 + 64 * 1024,
        "read {} bytes",
        source.read
    );
}

#[test]
fn a_header_that_is_not_the_first_line() {
    let e = read(&format!("{OPEN}\n{HEADER}\n"));
    assert!(
        matches!(e, RecordingError::UnknownVersion { what: "format", .. }),
        "{e:?}"
    );
}

#[test]
fn a_second_header() {
    let e = read(&format!("{HEADER}\n{HEADER}\n"));
    assert!(matches!(e, RecordingError::Shape { line: 2, .. }), "{e:?}");
}
