//! Writing header blocks (SPEC/1.0/transport.md section 1.1). Every header block this crate writes
//! comes from [`with_header_block`].

use bytes::BytesMut;

use super::{CANONICAL_PREFIX, CANONICAL_SUFFIX};

/// Longest header block written: a 20-digit length.
pub(crate) const MAX_HEAD_LEN: usize = CANONICAL_PREFIX.len() + 20 + CANONICAL_SUFFIX.len();

/// Calls `f` with the header block for a body of `body_len` bytes:
/// `Content-Length: N\r\nContent-Type: application/json\r\n\r\n`.
#[inline]
pub(crate) fn with_header_block<R>(body_len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
    let mut block = [0u8; MAX_HEAD_LEN];
    let mut n = body_len as u64;
    let digits = n.checked_ilog10().map_or(1, |log| log as usize + 1);
    let (prefix, rest) = block.split_at_mut(CANONICAL_PREFIX.len());
    prefix.copy_from_slice(CANONICAL_PREFIX);
    let (number, rest) = rest.split_at_mut(digits);
    for digit in number.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    rest[..CANONICAL_SUFFIX.len()].copy_from_slice(CANONICAL_SUFFIX);
    f(&block[..CANONICAL_PREFIX.len() + digits + CANONICAL_SUFFIX.len()])
}

/// Appends the header block for a body of `body_len` bytes to `dst`, reserving room for it and
/// `then` more bytes at once.
#[inline]
pub(crate) fn put_header_block(body_len: usize, then: usize, dst: &mut BytesMut) {
    with_header_block(body_len, |block| {
        dst.reserve(block.len() + then);
        dst.extend_from_slice(block);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header block as SPEC/1.0/transport.md section 1.1 spells it.
    fn expected(len: impl std::fmt::Display) -> String {
        format!(
            "Content-Length: {len}\r\nContent-Type: {}\r\n\r\n",
            crate::CONTENT_TYPE
        )
    }

    /// Every digit count a `usize` can have, around each power of ten.
    fn lengths() -> Vec<usize> {
        let mut lengths = vec![0, 200, 65_536, 1_048_576, usize::MAX];
        let mut power = Some(1usize);
        while let Some(p) = power {
            lengths.extend([p - 1, p, p + 1]);
            power = p.checked_mul(10);
        }
        let u32_max = u64::from(u32::MAX);
        lengths.extend(
            [u32_max, u32_max + 1]
                .map(usize::try_from)
                .into_iter()
                .flatten(),
        );
        lengths
    }

    #[test]
    fn header_block_bytes() {
        for (len, head) in [
            (
                0,
                "Content-Length: 0\r\nContent-Type: application/json\r\n\r\n",
            ),
            (
                9,
                "Content-Length: 9\r\nContent-Type: application/json\r\n\r\n",
            ),
            (
                10,
                "Content-Length: 10\r\nContent-Type: application/json\r\n\r\n",
            ),
            (
                99,
                "Content-Length: 99\r\nContent-Type: application/json\r\n\r\n",
            ),
            (
                100,
                "Content-Length: 100\r\nContent-Type: application/json\r\n\r\n",
            ),
            (
                65_536,
                "Content-Length: 65536\r\nContent-Type: application/json\r\n\r\n",
            ),
        ] {
            with_header_block(len, |block| assert_eq!(block, head.as_bytes(), "{len}"));
        }
    }

    #[test]
    fn header_block_bytes_for_every_digit_count() {
        for len in lengths() {
            with_header_block(len, |block| assert_eq!(block, expected(len).as_bytes()));
        }
        #[cfg(target_pointer_width = "64")]
        with_header_block(usize::MAX, |block| {
            assert_eq!(
                block,
                b"Content-Length: 18446744073709551615\r\nContent-Type: application/json\r\n\r\n"
            );
            assert_eq!(block.len(), MAX_HEAD_LEN);
        });
    }

    #[test]
    fn put_header_block_appends_and_reserves_room_behind() {
        for len in lengths() {
            let mut dst = BytesMut::from(&b"before"[..]);
            put_header_block(len, 100, &mut dst);
            let head = expected(len);
            assert_eq!(&dst[..6], b"before");
            assert_eq!(&dst[6..], head.as_bytes());
            assert!(dst.capacity() >= 6 + head.len() + 100, "{len}");
        }
    }
}
