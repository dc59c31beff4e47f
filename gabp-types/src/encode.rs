//! Serializing through one reused buffer per thread, so that what is kept of a serialization (a message body,
//! params) costs one allocation of exactly its size instead of a growing buffer's several.

use std::cell::RefCell;

use serde::Serialize;

/// A buffer that grew past this is given back after use, so no thread keeps a large one.
const KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serializes `value` as compact JSON into this thread's buffer and hands the bytes to `take`, which keeps
/// what it needs (a copy of exactly their size).
///
/// ```
/// let body = gabp_types::encode::with_json(&[1, 2], |json| json.to_vec()).unwrap();
/// assert_eq!(body, b"[1,2]");
/// ```
///
/// # Errors
///
/// When `value` does not serialize (a map with keys that are not strings, a `Serialize` that fails).
pub fn with_json<T, R>(value: &T, take: impl FnOnce(&[u8]) -> R) -> Result<R, serde_json::Error>
where
    T: Serialize + ?Sized,
{
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let written = serde_json::to_writer(&mut *buf, value).map(|()| take(&buf));
            if buf.capacity() > KEEP {
                *buf = Vec::new();
            }
            written
        }
        // Only a `Serialize` impl that itself serializes through here lands in this arm.
        Err(_) => serde_json::to_vec(value).map(|json| take(&json)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value whose serialization serializes another value through the same buffer.
    struct Nested;

    impl Serialize for Nested {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let inner =
                with_json(&"inner", |json| json.len()).map_err(serde::ser::Error::custom)?;
            s.serialize_u64(inner as u64)
        }
    }

    #[test]
    fn nested_serialization_does_not_share_the_buffer() {
        let json = with_json(&[Nested], <[u8]>::to_vec).unwrap();
        assert_eq!(json, b"[7]");
    }

    #[test]
    fn a_large_buffer_is_not_kept() {
        let big = "x".repeat(KEEP * 2);
        assert_eq!(with_json(&big, <[u8]>::len).unwrap(), KEEP * 2 + 2);
        SCRATCH.with(|s| assert!(s.borrow().capacity() <= KEEP));
    }
}
