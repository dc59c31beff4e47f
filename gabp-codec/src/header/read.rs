//! Reading header blocks (SPEC/1.0/transport.md section 1.2): a fast path for the block this crate
//! writes, and a general line-by-line parser.

use crate::error::{CodecError, InvalidLength, MalformedHeader};

use super::{CANONICAL_PREFIX, CANONICAL_SUFFIX};

const CONTENT_LENGTH_NAME: &[u8] = b"content-length";
const BARE_SUFFIX: &[u8] = b"\r\n\r\n";
/// `u64::MAX` has 20 decimal digits; 19 digits can never overflow a `u64`.
const MAX_SAFE_DIGITS: usize = 19;

/// How far a partially received header block has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeadScan {
    /// The first `parsed` bytes of the buffer are complete header lines, already parsed.
    pub(crate) parsed: usize,
    /// The bytes from `parsed` to `searched` hold no line feed.
    pub(crate) searched: usize,
    /// The `Content-Length` seen so far.
    pub(crate) length: Option<u64>,
}

/// Where the line-by-line header parser stopped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeadProgress {
    /// The header block is `head_len` bytes long and announces a body of `len` bytes.
    Complete { head_len: usize, len: u64 },
    /// The header block is incomplete; this is how far it has been read.
    Partial(HeadScan),
}

/// The general header parser. Parses complete lines from `scan.parsed` on and looks for the next
/// line feed from `scan.searched` on, so a header block arriving in pieces is scanned once; never
/// looks beyond `max_header` bytes.
pub(crate) fn parse_head_lines(
    src: &[u8],
    max_header: usize,
    scan: HeadScan,
) -> Result<HeadProgress, CodecError> {
    let HeadScan {
        parsed: mut scanned,
        searched,
        mut length,
    } = scan;
    let window = &src[..src.len().min(max_header)];
    // The clamps only matter if a caller swaps buffers between calls: never panic on that either.
    scanned = scanned.min(window.len());
    let mut search_from = searched.clamp(scanned, window.len());
    loop {
        let Some(line_end) = find_line_feed(&window[search_from..]).map(|at| search_from + at)
        else {
            if src.len() >= max_header {
                return Err(CodecError::HeaderTooLarge { limit: max_header });
            }
            return Ok(HeadProgress::Partial(HeadScan {
                parsed: scanned,
                searched: window.len(),
                length,
            }));
        };
        let line = match window[scanned..line_end].split_last() {
            Some((b'\r', line)) => line,
            _ => {
                return Err(CodecError::MalformedHeader {
                    reason: MalformedHeader::BareLineFeed,
                })
            }
        };
        scanned = line_end + 1;
        search_from = scanned;
        if line.is_empty() {
            return match length {
                Some(len) => Ok(HeadProgress::Complete {
                    head_len: scanned,
                    len,
                }),
                None => Err(CodecError::MissingContentLength),
            };
        }
        if let Some(value) = content_length_value(line)? {
            let len = parse_length(value)?;
            match length {
                Some(first) if first != len => {
                    return Err(CodecError::ConflictingContentLength { first, second: len })
                }
                _ => length = Some(len),
            }
        }
    }
}

/// Recognises the header block this crate writes (`Content-Length: N\r\n` optionally followed by
/// `Content-Type: application/json\r\n`, then `\r\n`) without the line-by-line parser. Returns `None`
/// for anything else, including an incomplete block; the general parser then decides.
#[inline]
pub(crate) fn canonical_head(src: &[u8]) -> Option<(usize, u64)> {
    let rest = src.strip_prefix(CANONICAL_PREFIX)?;
    let digits = rest
        .iter()
        .take(MAX_SAFE_DIGITS + 1)
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || digits > MAX_SAFE_DIGITS {
        return None;
    }
    let (number, tail) = rest.split_at(digits);
    let len = number
        .iter()
        .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
    let suffix = if tail.starts_with(CANONICAL_SUFFIX) {
        CANONICAL_SUFFIX.len()
    } else if tail.starts_with(BARE_SUFFIX) {
        BARE_SUFFIX.len()
    } else {
        return None;
    };
    Some((CANONICAL_PREFIX.len() + digits + suffix, len))
}

/// The value of a header line if it is a `Content-Length` header, `None` for any other header.
fn content_length_value(line: &[u8]) -> Result<Option<&[u8]>, CodecError> {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err(CodecError::MalformedHeader {
            reason: MalformedHeader::MissingColon,
        });
    };
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| b.is_ascii_graphic()) {
        return Err(CodecError::MalformedHeader {
            reason: MalformedHeader::InvalidName,
        });
    }
    Ok(name
        .eq_ignore_ascii_case(CONTENT_LENGTH_NAME)
        .then_some(value))
}

/// Parses a `Content-Length` value: optional spaces or tabs around an unsigned decimal number.
fn parse_length(value: &[u8]) -> Result<u64, CodecError> {
    let invalid = |reason| CodecError::InvalidContentLength { reason };
    let value = value.trim_ascii_start();
    let value = value
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(&value[..0], |last| &value[..=last]);
    match value.first() {
        None => return Err(invalid(InvalidLength::Empty)),
        Some(b'+' | b'-') => return Err(invalid(InvalidLength::Signed)),
        Some(_) => {}
    }
    let mut len = 0u64;
    for &b in value {
        if !b.is_ascii_digit() {
            return Err(invalid(InvalidLength::NonNumeric));
        }
        len = len
            .checked_mul(10)
            .and_then(|len| len.checked_add(u64::from(b - b'0')))
            .ok_or(invalid(InvalidLength::Overflow))?;
    }
    Ok(len)
}

/// Position of the first `\n`, eight bytes at a time.
#[inline]
fn find_line_feed(haystack: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const LINE_FEEDS: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ LINE_FEEDS;
        // Non-zero exactly when some byte of `x` is zero; the lowest flagged byte is the first one.
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|at| offset + at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_MAX_HEADER_SIZE;
    use proptest::prelude::*;

    fn general_head(src: &[u8]) -> Result<HeadProgress, CodecError> {
        parse_head_lines(
            src,
            DEFAULT_MAX_HEADER_SIZE,
            HeadScan {
                parsed: 0,
                searched: 0,
                length: None,
            },
        )
    }

    #[test]
    fn find_line_feed_matches_naive_search() {
        let mut data = vec![b'a'; 40];
        assert_eq!(find_line_feed(&data), None);
        for at in 0..data.len() {
            data[at] = b'\n';
            assert_eq!(find_line_feed(&data), Some(at));
            data[at] = 0x8a;
        }
    }

    proptest! {
        #[test]
        fn canonical_head_agrees_with_general_parser(
            prefix in prop::sample::select(vec!["Content-Length: ", "content-length:", "Content-Length:  "]),
            len in any::<u64>(),
            pad in prop::sample::select(vec!["", "0", "00"]),
            suffix in prop::sample::select(vec![
                "\r\n\r\n",
                "\r\nContent-Type: application/json\r\n\r\n",
                "\r\nContent-Type: application/json\r\n",
                "\r\n",
                "\r\nX: y\r\n\r\n",
                "x\r\n\r\n",
            ]),
            cut in any::<prop::sample::Index>(),
        ) {
            let text = format!("{prefix}{pad}{len}{suffix}body");
            let bytes = text.as_bytes();
            let bytes = &bytes[..cut.index(bytes.len() + 1)];
            if let Some(fast) = canonical_head(bytes) {
                let general = general_head(bytes).expect("general parser accepts canonical head");
                prop_assert_eq!(HeadProgress::Complete { head_len: fast.0, len: fast.1 }, general);
            }
        }
    }
}
