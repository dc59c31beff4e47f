//! Writing header blocks (SPEC/1.0/transport.md section 1.1).

use super::{CANONICAL_PREFIX, CANONICAL_SUFFIX};

/// Longest header block [`FrameCodec`] writes (a 20-digit length).
pub(crate) const MAX_HEAD_LEN: usize = CANONICAL_PREFIX.len() + 20 + CANONICAL_SUFFIX.len();

/// Writes the header block for a body of `body_len` bytes into the start of `dst`; returns its length.
#[inline]
pub(crate) fn write_head(body_len: usize, dst: &mut [u8; MAX_HEAD_LEN]) -> usize {
    let mut n = body_len as u64;
    let digits = n.checked_ilog10().map_or(1, |log| log as usize + 1);
    let (prefix, rest) = dst.split_at_mut(CANONICAL_PREFIX.len());
    prefix.copy_from_slice(CANONICAL_PREFIX);
    let (number, rest) = rest.split_at_mut(digits);
    for digit in number.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    rest[..CANONICAL_SUFFIX.len()].copy_from_slice(CANONICAL_SUFFIX);
    CANONICAL_PREFIX.len() + digits + CANONICAL_SUFFIX.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_head_matches_the_documented_format() {
        for len in [0usize, 9, 10, 99, 200, 65_536, 1_048_576, usize::MAX] {
            let mut head = [0u8; MAX_HEAD_LEN];
            let n = write_head(len, &mut head);
            let expected =
                format!("Content-Length: {len}\r\nContent-Type: application/json\r\n\r\n");
            assert_eq!(&head[..n], expected.as_bytes());
        }
    }
}
