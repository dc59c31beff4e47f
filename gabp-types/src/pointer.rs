//! JSON pointers (RFC 6901), as errors name the value they are about.

/// Escapes a JSON pointer reference token (RFC 6901).
pub(crate) fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
