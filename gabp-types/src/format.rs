//! Checks for the string formats the protocol uses: UUIDs, registry names, URIs and RFC 3339 timestamps.
//!
//! Each check is a hand-written scanner (no regex engine) so that validation stays cheap on the hot path; UUIDs
//! are read by `uuid`. The patterns are also exported so the generated schemas state the same rule.

/// The registry pattern for method, tool and canonical channel names.
pub const NAME_PATTERN: &str = "^[a-z][a-z0-9_-]*(/[a-z][a-z0-9_-]*)+$";

/// The pattern of a hyphenated UUID in either case.
pub const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// The pattern of a `schemaVersion` in the welcome.
pub const SCHEMA_VERSION_PATTERN: &str = r"^1\.\d+(?:\.\d+)?$";

/// The pattern of a capability extension's key.
pub const EXTENSION_KEY_PATTERN: &str = "^[a-z][a-z0-9_-]*$";

/// Whether `s` is a hyphenated UUID (8-4-4-4-12 hex digits, any case).
pub fn is_hyphenated_uuid(s: &str) -> bool {
    is_hyphenated_uuid_bytes(s.as_bytes())
}

/// [`is_hyphenated_uuid`] on bytes: the 36-byte form is the only one of that length `uuid` reads.
pub(crate) fn is_hyphenated_uuid_bytes(b: &[u8]) -> bool {
    b.len() == 36 && uuid::Uuid::try_parse_ascii(b).is_ok()
}

fn is_segment(seg: &[u8]) -> bool {
    match seg.split_first() {
        Some((first, rest)) => {
            first.is_ascii_lowercase() && rest.iter().all(|&c| is_segment_byte(c))
        }
        None => false,
    }
}

/// A byte allowed after the first of a segment: `[a-z0-9_-]`.
fn is_segment_byte(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-'
}

/// Whether `s` matches [`NAME_PATTERN`]: two or more `/`-separated segments of `[a-z][a-z0-9_-]*`.
pub fn is_registry_name(s: &str) -> bool {
    // One pass over the bytes: checked on every call a mod reads or a bridge writes.
    let mut slashes = 0usize;
    let mut segment_start = true;
    for &c in s.as_bytes() {
        if segment_start {
            if !c.is_ascii_lowercase() {
                return false;
            }
            segment_start = false;
        } else if c == b'/' {
            slashes += 1;
            segment_start = true;
        } else if !is_segment_byte(c) {
            return false;
        }
    }
    !segment_start && slashes > 0
}

/// Whether `s` matches [`EXTENSION_KEY_PATTERN`].
pub fn is_extension_key(s: &str) -> bool {
    is_segment(s.as_bytes())
}

/// Whether `s` matches [`SCHEMA_VERSION_PATTERN`] (`1.N` or `1.N.M`).
pub fn is_schema_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("1.") else {
        return false;
    };
    let mut parts = rest.split('.');
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), None, None) => digits(a),
        (Some(a), Some(b), None) => digits(a) && digits(b),
        _ => false,
    }
}

fn is_unreserved_or_sub_delim(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&c)
}

/// Whether `s` is an absolute URI as RFC 3986 defines it (`scheme ":" hier-part [ "?" query ] [ "#" fragment ]`).
///
/// The scheme is required; every other character must be one the grammar allows in its position, and each `%`
/// must start a two-digit escape. Square brackets are accepted only around an IP literal host.
pub fn is_absolute_uri(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(colon) = b.iter().position(|&c| c == b':') else {
        return false;
    };
    let (scheme, rest) = (&b[..colon], &b[colon + 1..]);
    match scheme.split_first() {
        Some((first, tail))
            if first.is_ascii_alphabetic()
                && tail
                    .iter()
                    .all(|&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'-' || c == b'.') => {
        }
        _ => return false,
    }
    // Split off the fragment, then the query.
    let (before_fragment, fragment) = match rest.iter().position(|&c| c == b'#') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (hier, query) = match before_fragment.iter().position(|&c| c == b'?') {
        Some(i) => (&before_fragment[..i], Some(&before_fragment[i + 1..])),
        None => (before_fragment, None),
    };
    let pchars_ok = |part: &[u8], extra: &[u8]| -> bool {
        let mut i = 0;
        while i < part.len() {
            let c = part[i];
            if c == b'%' {
                if !(part.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && part.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
                {
                    return false;
                }
                i += 3;
                continue;
            }
            if !(is_unreserved_or_sub_delim(c) || c == b':' || c == b'@' || extra.contains(&c)) {
                return false;
            }
            i += 1;
        }
        true
    };
    if let Some(q) = query {
        if !pchars_ok(q, b"/?") {
            return false;
        }
    }
    if let Some(f) = fragment {
        if !pchars_ok(f, b"/?") {
            return false;
        }
    }
    if let Some(after) = hier.strip_prefix(b"//") {
        let end = after.iter().position(|&c| c == b'/').unwrap_or(after.len());
        let (authority, path) = (&after[..end], &after[end..]);
        let host_port = match authority.iter().rposition(|&c| c == b'@') {
            Some(i) => {
                if !pchars_ok(&authority[..i], b"") {
                    return false;
                }
                &authority[i + 1..]
            }
            None => authority,
        };
        let port = if host_port.first() == Some(&b'[') {
            let Some(close) = host_port.iter().position(|&c| c == b']') else {
                return false;
            };
            let literal = &host_port[1..close];
            if literal.is_empty()
                || !literal.iter().all(|&c| {
                    c.is_ascii_hexdigit() || c == b':' || c == b'.' || is_unreserved_or_sub_delim(c)
                })
            {
                return false;
            }
            match &host_port[close + 1..] {
                [] => None,
                [b':', port @ ..] => Some(port),
                _ => return false,
            }
        } else {
            let (host, port) = match host_port.iter().position(|&c| c == b':') {
                Some(i) => (&host_port[..i], Some(&host_port[i + 1..])),
                None => (host_port, None),
            };
            if !pchars_ok(host, b"") || host.contains(&b':') || host.contains(&b'@') {
                return false;
            }
            port
        };
        if let Some(port) = port {
            if !port.iter().all(u8::is_ascii_digit) {
                return false;
            }
        }
        pchars_ok(path, b"/")
    } else {
        pchars_ok(hier, b"/")
    }
}

fn two_digits(b: &[u8]) -> Option<u32> {
    match b {
        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => {
            Some(u32::from(a - b'0') * 10 + u32::from(c - b'0'))
        }
        _ => None,
    }
}

/// Whether `s` is an RFC 3339 `date-time` (`YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)`), with calendar checks.
///
/// Leap seconds (`:60`) are accepted only at 23:59 UTC-adjusted positions' minute 59, as RFC 3339 allows.
pub fn is_rfc3339_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits4 = |x: &[u8]| x.iter().all(u8::is_ascii_digit);
    if !digits4(&b[0..4]) || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return false;
    }
    let year: u32 = b[0..4]
        .iter()
        .fold(0, |acc, &d| acc * 10 + u32::from(d - b'0'));
    let (Some(month), Some(day)) = (two_digits(&b[5..7]), two_digits(&b[8..10])) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days_in_month {
        return false;
    }
    if b[13] != b':' || b[16] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) = (
        two_digits(&b[11..13]),
        two_digits(&b[14..16]),
        two_digits(&b[17..19]),
    ) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let mut i = 19;
    if b[i] == b'.' {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    let offset_minutes: i32 = match &b[i..] {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), oh @ .., b':', m1, m2] if oh.len() == 2 => {
            let (Some(h), Some(m)) = (two_digits(oh), two_digits(&[*m1, *m2])) else {
                return false;
            };
            if h > 23 || m > 59 {
                return false;
            }
            let total = (h * 60 + m) as i32;
            if *sign == b'-' {
                -total
            } else {
                total
            }
        }
        _ => return false,
    };
    if second == 60 {
        // A leap second happens at 23:59:60 UTC only.
        let local = (hour * 60 + minute) as i32;
        let utc = (local - offset_minutes).rem_euclid(24 * 60);
        if utc != 23 * 60 + 59 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names() {
        for ok in [
            "session/hello",
            "minecraft/world/get_blocks",
            "game-v2/world/set_chunk",
            "a/b",
        ] {
            assert!(is_registry_name(ok), "{ok}");
        }
        for bad in [
            "sessionHello",
            "tools",
            "tools/list/",
            "/tools/list",
            "Tools/List",
            "world//get",
            "inventory.get",
            "1a/b",
            "a/_b",
            "",
            "a/b c",
        ] {
            assert!(!is_registry_name(bad), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn registry_names_are_segments_joined_by_slashes(s in "[ab0_/A. é-]{0,12}") {
            let segments: Vec<&[u8]> = s.as_bytes().split(|&c| c == b'/').collect();
            let expected = segments.len() >= 2 && segments.iter().all(|seg| is_segment(seg));
            proptest::prop_assert_eq!(is_registry_name(&s), expected);
        }
    }

    #[test]
    fn schema_versions() {
        for ok in ["1.0", "1.1", "1.10.3"] {
            assert!(is_schema_version(ok), "{ok}");
        }
        for bad in ["1", "2.0", "1.", "1.0.", "1.a", "1.0.0.0", "v1.0"] {
            assert!(!is_schema_version(bad), "{bad}");
        }
    }

    #[test]
    fn uris() {
        for ok in [
            "gabp://game/world",
            "gabp://mod/info",
            "https://example.com:8080/a/b?x=1&y=%20#frag",
            "urn:isbn:0451450523",
            "mailto:someone@example.com",
            "file:///tmp/x",
            "gabp://game/players?limit=10&offset=20",
            "http://[::1]:80/",
        ] {
            assert!(is_absolute_uri(ok), "{ok}");
        }
        for bad in [
            "world",
            "not a uri",
            "/relative/path",
            "gabp://game/wo rld",
            "1gabp://x",
            ":nothing",
            "gabp://game/%zz",
            "gabp://game/%2",
            "http://host:port/",
            "gabp://game/a#b#c",
        ] {
            assert!(!is_absolute_uri(bad), "{bad}");
        }
    }

    #[test]
    fn date_times() {
        for ok in [
            "2025-01-02T10:30:45.123Z",
            "2026-03-01T12:00:00Z",
            "2024-02-29T00:00:00+01:00",
            "2026-12-31t23:59:59.5-05:30",
            "2016-12-31T23:59:60Z",
        ] {
            assert!(is_rfc3339_date_time(ok), "{ok}");
        }
        for bad in [
            "2025-01-02",
            "2025-01-02 10:30:45Z",
            "2025-13-02T10:30:45Z",
            "2023-02-29T10:30:45Z",
            "2025-01-02T24:00:00Z",
            "2025-01-02T10:30:45",
            "2025-01-02T10:30:45.Z",
            "yesterday",
            "2025-01-02T10:30:45+0100",
            "2025-01-02T12:00:60Z",
        ] {
            assert!(!is_rfc3339_date_time(bad), "{bad}");
        }
    }

    #[test]
    fn uuids() {
        assert!(is_hyphenated_uuid("550e8400-e29b-41d4-a716-446655440000"));
        assert!(is_hyphenated_uuid("550E8400-E29B-41D4-A716-446655440000"));
        assert!(!is_hyphenated_uuid("550e8400e29b41d4a716446655440000"));
    }

    /// The UUID pattern read position by position.
    fn reference(b: &[u8]) -> bool {
        b.len() == 36
            && b.iter().enumerate().all(|(i, &c)| match i {
                8 | 13 | 18 | 23 => c == b'-',
                _ => c.is_ascii_hexdigit(),
            })
    }

    /// Every one-byte change of a valid id, and every length around 36, against the pattern read position
    /// by position.
    #[test]
    fn uuids_match_the_pattern_byte_by_byte() {
        let valid = *b"550e8400-e29b-41d4-a716-446655440000";
        for at in 0..valid.len() {
            for byte in 0..=255u8 {
                let mut id = valid;
                id[at] = byte;
                assert_eq!(
                    is_hyphenated_uuid_bytes(&id),
                    reference(&id),
                    "{byte} at {at}"
                );
                if let Ok(text) = std::str::from_utf8(&id) {
                    assert_eq!(is_hyphenated_uuid(text), reference(&id), "{text:?}");
                }
            }
        }
        for len in 30..40 {
            let text: String = "550e8400-e29b-41d4-a716-4466554400001234"
                .chars()
                .take(len)
                .collect();
            assert_eq!(
                is_hyphenated_uuid(&text),
                reference(text.as_bytes()),
                "{text:?}"
            );
        }
        assert!(!is_hyphenated_uuid("550e8400-e29b-41d4-a716-44665544000é"));
    }

    proptest::proptest! {
        /// Any 36 bytes near a UUID's shape (a digit's place holds, one time in twelve, any byte or a hyphen; a
        /// hyphen's place, one time in twenty-four, any byte), against the pattern read position by position.
        #[test]
        fn any_36_bytes_are_judged_as_the_pattern_does(
            picks in proptest::collection::vec((0u8..24, proptest::num::u8::ANY), 36)
        ) {
            let alphabet = b"0123456789abcdefABCDEF";
            let id: Vec<u8> = picks
                .iter()
                .enumerate()
                .map(|(i, &(kind, byte))| match kind {
                    0 => byte,
                    1 if !matches!(i, 8 | 13 | 18 | 23) => b'-',
                    _ if matches!(i, 8 | 13 | 18 | 23) => b'-',
                    _ => alphabet[usize::from(byte) % alphabet.len()],
                })
                .collect();
            proptest::prop_assert_eq!(is_hyphenated_uuid_bytes(&id), reference(&id), "{:?}", id);
        }
    }
}
