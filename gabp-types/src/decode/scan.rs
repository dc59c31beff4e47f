//! A scan of JSON text (RFC 8259) that builds nothing, for the checks of the plain path: the members of
//! `tools/call` params and whether a result reads as a JSON value. It vouches only for what it accepts: text it
//! accepts, serde_json accepts too and reads the same way; anything it is not sure of (a `\u` escape, an
//! exponent, nesting deeper than [`DEPTH`], a serde_json token) it leaves to serde_json, which then gives its
//! answer or its error.

/// Nesting the plain path reads (the scan, and `value_reads` after it); deeper text is left to serde_json and
/// the general path.
pub(super) const DEPTH: usize = 64;

/// What a value must be beyond its syntax.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Reading {
    /// The syntax only, as serde_json checks a value it skips or keeps as raw text.
    Syntax,
    /// As `serde_json::Value` reads it: numbers that fit an `f64`, and no string that may be one of serde_json's
    /// tokens (an object whose first member is so named, `Value` reads otherwise).
    Value,
}

/// Whether `text` is one JSON value, whitespace around it aside, read as `reading` says. `None`: not sure.
pub(super) fn whole_value(text: &str, reading: Reading) -> Option<()> {
    let bytes = text.as_bytes();
    let start = skip_space(bytes, 0);
    let end = value_end(bytes, start, reading, DEPTH)?;
    (skip_space(bytes, end) == bytes.len()).then_some(())
}

/// The members of the object that is the whole of `text` (whitespace around it aside): each name, when it has
/// no escapes, and the text of its value, in order. `None`: not sure, or not an object.
pub(super) fn object_members<'a>(
    text: &'a str,
    mut each: impl FnMut(&'a str, &'a str),
) -> Option<()> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return (skip_space(bytes, at + 1) == bytes.len()).then_some(());
    }
    loop {
        let name_end = string_end(bytes, at, Reading::Syntax)?;
        let name = text.get(at + 1..name_end - 1)?;
        if name.contains('\\') {
            return None;
        }
        at = skip_space(bytes, name_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, at + 1);
        let end = value_end(bytes, start, Reading::Syntax, DEPTH - 1)?;
        each(name, text.get(start..end)?);
        at = skip_space(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => return (skip_space(bytes, at + 1) == bytes.len()).then_some(()),
            _ => return None,
        }
    }
}

/// JSON whitespace (RFC 8259 §2).
pub(crate) fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Where the value that starts at `at` ends.
fn value_end(bytes: &[u8], at: usize, reading: Reading, depth: usize) -> Option<usize> {
    match *bytes.get(at)? {
        b'"' => string_end(bytes, at, reading),
        b'{' => object_end(bytes, at, reading, depth.checked_sub(1)?),
        b'[' => array_end(bytes, at, reading, depth.checked_sub(1)?),
        b't' => literal_end(bytes, at, b"true"),
        b'f' => literal_end(bytes, at, b"false"),
        b'n' => literal_end(bytes, at, b"null"),
        b'-' | b'0'..=b'9' => number_end(bytes, at, reading),
        _ => None,
    }
}

fn literal_end(bytes: &[u8], at: usize, literal: &[u8]) -> Option<usize> {
    let end = at + literal.len();
    (bytes.get(at..end)? == literal).then_some(end)
}

fn object_end(bytes: &[u8], at: usize, reading: Reading, depth: usize) -> Option<usize> {
    let mut at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(at + 1);
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        at = skip_space(bytes, string_end(bytes, at, reading)?);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(
            bytes,
            value_end(bytes, skip_space(bytes, at + 1), reading, depth)?,
        );
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b'}') => return Some(at + 1),
            _ => return None,
        }
    }
}

fn array_end(bytes: &[u8], at: usize, reading: Reading, depth: usize) -> Option<usize> {
    let mut at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b']') {
        return Some(at + 1);
    }
    loop {
        at = skip_space(bytes, value_end(bytes, at, reading, depth)?);
        match bytes.get(at) {
            Some(b',') => at = skip_space(bytes, at + 1),
            Some(b']') => return Some(at + 1),
            _ => return None,
        }
    }
}

/// A string: no raw control character, and escapes other than `\u`. A word or two at a time to the first byte
/// that may be a quote, a backslash or a control character.
fn string_end(bytes: &[u8], at: usize, reading: Reading) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let mut i = start;
    loop {
        i = next_stop(bytes, i);
        match *bytes.get(i)? {
            b'"' => {
                let token = crate::wellformed::TOKEN_PREFIX.as_bytes();
                if reading == Reading::Value
                    && bytes.get(start..i).is_some_and(|s| s.starts_with(token))
                {
                    return None;
                }
                return Some(i + 1);
            }
            b'\\' => match bytes.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                _ => return None,
            },
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// The first byte from `at` on that is `"`, `\` or below 0x20 (`bytes.len()` when there is none): in a JSON
/// string, the bytes that end it or need an escape.
pub(crate) fn next_stop(bytes: &[u8], mut at: usize) -> usize {
    // Two words at a time while sixteen bytes are left, then one.
    while let Some(chunk) = bytes.get(at..at + 16) {
        let (mut low, mut high) = ([0u8; 8], [0u8; 8]);
        low.copy_from_slice(&chunk[..8]);
        high.copy_from_slice(&chunk[8..]);
        let (low, high) = (
            stops(u64::from_le_bytes(low)),
            stops(u64::from_le_bytes(high)),
        );
        if low | high != 0 {
            let found = if low != 0 { low } else { high };
            return at + usize::from(low == 0) * 8 + found.trailing_zeros() as usize / 8;
        }
        at += 16;
    }
    while let Some(chunk) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = stops(u64::from_le_bytes(word));
        if found != 0 {
            return at + found.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    let is_stop = |b: &u8| matches!(b, b'"' | b'\\' | 0..=0x1f);
    bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(is_stop))
        .map_or(bytes.len().max(at), |n| at + n)
}

/// The high bit of each byte of `word` (little-endian) that is `"`, `\` or below 0x20. Borrows may mark bytes
/// above the first one that is, never one below it: the lowest bit is exact.
fn stops(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_in = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    zero_in(word ^ (ONES * u64::from(b'"')))
        | zero_in(word ^ (ONES * u64::from(b'\\')))
        | below_space
}

/// A number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`. Read as a value, one with an exponent or
/// more than 300 integer digits is left to serde_json, which refuses one beyond the range of `f64`.
fn number_end(bytes: &[u8], at: usize, reading: Reading) -> Option<usize> {
    let digits = |from: usize| {
        let n = bytes
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        (n > 0).then_some(from + n)
    };
    let mut i = at + usize::from(bytes.get(at) == Some(&b'-'));
    let int_start = i;
    i = if bytes.get(i) == Some(&b'0') {
        i + 1
    } else {
        digits(i)?
    };
    if reading == Reading::Value && i - int_start > 300 {
        return None;
    }
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        if reading == Reading::Value {
            return None;
        }
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        i = digits(i)?;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::{next_stop, object_members, whole_value, Reading, DEPTH};
    use proptest::prelude::*;
    use serde_json::value::RawValue;
    use serde_json::Value;

    /// An object's members as serde_json reads them: in order, repeated ones included, values as text.
    struct InOrder;

    impl InOrder {
        fn read(text: &str) -> Vec<(String, String)> {
            let mut de = serde_json::Deserializer::from_str(text);
            let members =
                serde::Deserializer::deserialize_map(&mut de, InOrder).expect("an object");
            de.end().expect("nothing after it");
            members
        }
    }

    impl<'de> serde::de::Visitor<'de> for InOrder {
        type Value = Vec<(String, String)>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut members = Vec::new();
            while let Some(name) = map.next_key::<String>()? {
                members.push((name, map.next_value::<&RawValue>()?.get().to_owned()));
            }
            Ok(members)
        }
    }

    /// What serde_json says of `text` for `reading`.
    fn serde_reads(text: &str, reading: Reading) -> bool {
        match reading {
            Reading::Syntax => serde_json::from_str::<&RawValue>(text).is_ok(),
            Reading::Value => serde_json::from_str::<Value>(text).is_ok(),
        }
    }

    #[test]
    fn what_is_scanned_reads_as_serde_json_reads_it() {
        let accepted = [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "12.50",
            r#""plain""#,
            r#""esc\"\\\/\b\f\n\r\t""#,
            "\"caf\u{e9} \u{1F600}\"",
            "[]",
            "[1, [2, {}], \"x\"]",
            r#"{"a":1,"a":2,"b":{"c":[true,null]}}"#,
            " {\t\"a\" :\n1\r} ",
        ];
        for text in accepted {
            for reading in [Reading::Syntax, Reading::Value] {
                assert_eq!(whole_value(text, reading), Some(()), "{text}");
                assert!(serde_reads(text, reading), "{text}");
            }
        }
        assert_eq!(whole_value("1e5", Reading::Syntax), Some(()));
        let refused_by_both = [
            "",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\"}",
            "{1:2}",
            "[1 2]",
            "1 2",
            "\"\u{1}\"",
            "\"\\x\"",
            "\"open",
            "{",
            "]",
        ];
        for text in refused_by_both {
            for reading in [Reading::Syntax, Reading::Value] {
                assert_eq!(whole_value(text, reading), None, "{text}");
                assert!(!serde_reads(text, reading), "{text}");
            }
        }
        // Left to serde_json: it reads these, or not, its own way.
        let token = r#"{"$serde_json::private::RawValue":"[1]"}"#;
        let number = r#"{"$serde_json::private::Number":"x"}"#;
        for (text, reading) in [
            (r#""\u00e9""#, Reading::Syntax),
            ("1e400", Reading::Value),
            ("1e5", Reading::Value),
            (token, Reading::Value),
            (number, Reading::Value),
        ] {
            assert_eq!(whole_value(text, reading), None, "{text}");
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(whole_value(&deep(DEPTH), Reading::Value), Some(()));
        assert_eq!(whole_value(&deep(DEPTH + 1), Reading::Value), None);
        let huge = "9".repeat(301);
        assert_eq!(whole_value(&huge, Reading::Value), None);
        assert_eq!(whole_value(&huge, Reading::Syntax), Some(()));
    }

    #[test]
    fn members_are_found_as_serde_json_finds_them() {
        let mut found = Vec::new();
        let text = r#" {"name" : "a/b", "arguments":{"x":[1, "}"]},"n":null} "#;
        object_members(text, |name, value| {
            found.push((name.to_owned(), value.to_owned()))
        })
        .unwrap();
        assert_eq!(
            found,
            [
                ("name".to_owned(), r#""a/b""#.to_owned()),
                ("arguments".to_owned(), r#"{"x":[1, "}"]}"#.to_owned()),
                ("n".to_owned(), "null".to_owned()),
            ]
        );
        assert_eq!(object_members("{}", |_, _| panic!("no members")), Some(()));
        for unsure in [
            r#"{"na\u006de":1}"#,
            r#"{"a\"b":1}"#,
            "[]",
            r#"{"a":1} x"#,
            r#"{"a":01}"#,
        ] {
            assert_eq!(object_members(unsure, |_, _| {}), None, "{unsure}");
        }
    }

    #[test]
    fn the_first_stop_is_found_in_any_place() {
        for stop in [b'"', b'\\', 0x00, 0x1f] {
            // Two rounds of sixteen bytes, a word and a tail, from every start up to the stop.
            for len in 0..44 {
                for place in 0..len {
                    let mut bytes: Vec<u8> = (0..len)
                        .map(|i| [b'a', 0xc3, 0xa9, b'~', b' '][i % 5])
                        .collect();
                    bytes[place] = stop;
                    // A second stop after the first must not hide it.
                    if place + 1 < len {
                        bytes[place + 1] = b'"';
                    }
                    for start in 0..=place {
                        assert_eq!(
                            next_stop(&bytes, start),
                            place,
                            "{stop} at {place} of {len}, from {start}"
                        );
                    }
                }
                let plain: Vec<u8> = (0..len).map(|i| [b'z', 0xff, 0x80, b'!'][i % 4]).collect();
                assert_eq!(next_stop(&plain, 0), len);
                assert_eq!(next_stop(&plain, len + 3), len + 3);
            }
        }
    }

    /// JSON text, sometimes with one byte removed, replaced or added: mostly barely invalid.
    fn json_like() -> impl Strategy<Value = String> {
        let mutation = prop_oneof![
            Just(None),
            (
                any::<prop::sample::Index>(),
                0u8..3,
                prop::sample::select(b"{}[],:\"\\ 0-.eE+tn\x01".to_vec())
            )
                .prop_map(Some),
        ];
        (json_value(), any::<bool>(), mutation).prop_map(|(value, pretty, mutation)| {
            let text = if pretty {
                serde_json::to_string_pretty(&value)
            } else {
                serde_json::to_string(&value)
            };
            let mut bytes = text.expect("serialize").into_bytes();
            if let Some((at, op, byte)) = mutation {
                let at = at.index(bytes.len() + 1);
                match op {
                    0 if at < bytes.len() => drop(bytes.remove(at)),
                    1 if at < bytes.len() => bytes[at] = byte,
                    _ => bytes.insert(at, byte),
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[ -~\u{e9}\u{1}\u{1F600}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\\\\\u{1}]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Whether `value`, written, holds a `\u` escape (a control character) or a number with an exponent.
    fn has_escape_or_exponent(value: &Value) -> (bool, bool) {
        let control = |s: &str| {
            s.chars()
                .any(|c| c < ' ' && !"\u{8}\u{c}\n\r\t".contains(c))
        };
        match value {
            Value::String(s) => (control(s), false),
            Value::Number(n) => (false, n.to_string().contains(['e', 'E'])),
            Value::Array(items) => items
                .iter()
                .map(has_escape_or_exponent)
                .fold((false, false), |a, b| (a.0 | b.0, a.1 | b.1)),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    let (e, x) = has_escape_or_exponent(v);
                    (e | control(k), x)
                })
                .fold((false, false), |a, b| (a.0 | b.0, a.1 | b.1)),
            _ => (false, false),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// What the scan accepts, serde_json accepts, and the members it finds are the object's.
        #[test]
        fn the_scan_accepts_nothing_serde_json_refuses(text in json_like()) {
            for reading in [Reading::Syntax, Reading::Value] {
                if whole_value(&text, reading).is_some() {
                    prop_assert!(serde_reads(&text, reading), "{:?} {}", reading, text);
                }
            }
            let mut members = Vec::new();
            if object_members(&text, |n, v| members.push((n.to_owned(), v.to_owned()))).is_some() {
                let read = InOrder::read(&text);
                prop_assert_eq!(members, read, "{}", text);
            }
        }

        /// Written JSON is accepted whole, unless it holds what the scan leaves to serde_json.
        #[test]
        fn written_json_is_accepted(value in json_value()) {
            let (escape, exponent) = has_escape_or_exponent(&value);
            for text in [serde_json::to_string(&value).unwrap(), serde_json::to_string_pretty(&value).unwrap()] {
                prop_assert_eq!(whole_value(&text, Reading::Syntax).is_some(), !escape, "{}", text);
                prop_assert_eq!(whole_value(&text, Reading::Value).is_some(), !escape && !exponent, "{}", text);
            }
        }
    }
}
