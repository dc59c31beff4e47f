//! Writing header blocks (SPEC/1.0/transport.md section 1.1). Every header block this crate writes
//! comes from [`with_header_block`].

use bytes::BytesMut;

use super::{CANONICAL_PREFIX, CANONICAL_SUFFIX};

/// `u64::MAX`, the longest length, has 20 decimal digits.
const MAX_DIGITS: usize = 20;

/// Longest header block written: a 20-digit length.
pub(crate) const MAX_HEAD_LEN: usize = CANONICAL_PREFIX.len() + MAX_DIGITS + CANONICAL_SUFFIX.len();

/// `00`, `01`, ... `99`: the length is written two digits per division.
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// Calls `f` with the header block for a body of `body_len` bytes:
/// `Content-Length: N\r\nContent-Type: application/json\r\n\r\n`.
///
/// Each digit count gets its own copy of the block code and of `f`, so the block length is a
/// constant there and copying the block takes a few moves, not a `memcpy` call.
#[inline(always)]
pub(crate) fn with_header_block<R>(body_len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
    let n = body_len as u64;
    // Fewest digits first: bodies are mostly small, and each test is one predictable compare.
    macro_rules! by_digit_count {
        ($($digits:literal)*) => {
            match n {
                $(_ if n < const { 10u64.pow($digits) } => block::<$digits, R>(n, f),)*
                _ => block::<MAX_DIGITS, R>(n, f),
            }
        };
    }
    by_digit_count!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19)
}

/// The header block for `n`, which has `DIGITS` decimal digits, in a stack buffer.
#[inline(always)]
fn block<const DIGITS: usize, R>(n: u64, f: impl FnOnce(&[u8]) -> R) -> R {
    let mut block = [0u8; MAX_HEAD_LEN];
    let (prefix, rest) = block.split_at_mut(CANONICAL_PREFIX.len());
    prefix.copy_from_slice(CANONICAL_PREFIX);
    let (digits, rest) = rest.split_at_mut(DIGITS);
    put_decimal(n, digits);
    rest[..CANONICAL_SUFFIX.len()].copy_from_slice(CANONICAL_SUFFIX);
    f(&block[..CANONICAL_PREFIX.len() + DIGITS + CANONICAL_SUFFIX.len()])
}

/// Writes `n` in decimal into `out`, which is exactly as long as `n` has digits.
#[inline(always)]
fn put_decimal(mut n: u64, out: &mut [u8]) {
    let mut end = out.len();
    while end >= 2 {
        let pair = 2 * (n % 100) as usize;
        out[end - 2..end].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        n /= 100;
        end -= 2;
    }
    if end == 1 {
        // One digit left: `n` < 10.
        out[0] = b'0' + n as u8;
    }
}

/// Appends the header block for a body of `body_len` bytes to `dst`, reserving room for it and
/// `then` more bytes at once. Always inlined: a call here cost `FrameCodec::encode` about 5%.
#[inline(always)]
pub(crate) fn put_header_block(body_len: usize, then: usize, dst: &mut BytesMut) {
    with_header_block(body_len, |block| {
        dst.reserve(block.len() + then);
        dst.extend_from_slice(block);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        for (len, digits) in [
            (0, "0"),
            (9, "9"),
            (10, "10"),
            (99, "99"),
            (100, "100"),
            (65_536, "65536"),
        ] {
            let head = [
                "Content-Length: ",
                digits,
                "\r\nContent-Type: application/json\r\n\r\n",
            ]
            .concat();
            with_header_block(len, |block| assert_eq!(block, head.as_bytes()));
        }
    }

    #[test]
    fn header_block_bytes_for_every_digit_count() {
        let counts: std::collections::BTreeSet<_> =
            lengths().iter().map(|len| len.to_string().len()).collect();
        assert_eq!(counts.len(), usize::MAX.to_string().len());
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

    proptest! {
        #[test]
        fn header_block_matches_the_format(len in any::<usize>()) {
            let expected = expected(len);
            with_header_block(len, |block| {
                prop_assert_eq!(block, expected.as_bytes());
                Ok(())
            })?;
        }
    }
}
