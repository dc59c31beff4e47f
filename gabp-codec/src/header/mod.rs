//! The header block in front of every body (SPEC/1.0/transport.md section 1).

mod read;
mod write;

pub(crate) use read::{canonical_head, parse_head_lines, HeadProgress, HeadScan};
pub(crate) use write::{put_header_block, with_header_block, MAX_HEAD_LEN};

/// The `Content-Type` every frame this crate writes carries.
pub const CONTENT_TYPE: &str = "application/json";

/// The header block this crate writes is `CANONICAL_PREFIX`, the body length, `CANONICAL_SUFFIX`.
const CANONICAL_PREFIX: &[u8] = b"Content-Length: ";
const CANONICAL_SUFFIX: &[u8] = b"\r\nContent-Type: application/json\r\n\r\n";
