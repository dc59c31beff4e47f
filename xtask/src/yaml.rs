//! A small, deterministic YAML writer for JSON values.
//!
//! It writes block-style YAML (2-space indent) that any YAML 1.2 parser reads back as the same JSON
//! value: strings are plain only when they cannot be mistaken for anything else, and double-quoted
//! with JSON escapes (a subset of YAML's) otherwise. Object keys keep the order of the map they come
//! from (sorted, with serde_json's default map), except at the top level, where the caller decides.

use serde_json::Value;

/// Renders a document whose top-level keys come in the given order.
pub fn document(top: &[(&str, Value)]) -> String {
    let mut out = String::new();
    for (key, value) in top {
        entry(&mut out, 0, key, value);
    }
    out
}

fn entry(out: &mut String, indent: usize, key: &str, value: &Value) {
    pad(out, indent);
    out.push_str(&scalar_key(key));
    out.push(':');
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            for (k, v) in map {
                entry(out, indent + 2, k, v);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            for item in items {
                seq_item(out, indent + 2, item);
            }
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn seq_item(out: &mut String, indent: usize, value: &Value) {
    pad(out, indent);
    out.push('-');
    match value {
        Value::Object(map) if !map.is_empty() => {
            // The first key sits on the dash line; the others align with it.
            let mut first = true;
            for (k, v) in map {
                if first {
                    out.push(' ');
                    let mut rest = String::new();
                    entry(&mut rest, indent + 2, k, v);
                    out.push_str(&rest[indent + 2..]);
                    first = false;
                } else {
                    entry(out, indent + 2, k, v);
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            for item in items {
                seq_item(out, indent + 2, item);
            }
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A scalar, an empty object or an empty array on one line.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar_string(s),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// Words YAML 1.1 or 1.2 parsers may read as something other than a string.
fn is_reserved_word(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "~"
    )
}

fn quoted(s: &str) -> String {
    // serde_json's escapes (\" \\ \n \t \uXXXX ...) are all valid in a YAML double-quoted scalar.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// A mapping key: plain when it is a simple identifier-like word or path, quoted otherwise.
fn scalar_key(key: &str) -> String {
    let mut chars = key.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-' | '.' | '/'))
        && !is_reserved_word(key);
    if plain {
        key.to_owned()
    } else {
        quoted(key)
    }
}

/// A string value: plain for prose-like text that starts with a letter and holds no YAML indicator,
/// quoted otherwise.
fn scalar_string(s: &str) -> String {
    let bytes = s.as_bytes();
    let plain = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.last().is_some_and(|b| !b.is_ascii_whitespace())
        && bytes.iter().all(|&b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b' ' | b',' | b'.' | b'_' | b'/' | b'(' | b')' | b'-')
        })
        && !s.contains("  ")
        && !is_reserved_word(s);
    if plain {
        s.to_owned()
    } else {
        quoted(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_nested_values() {
        let text = document(&[
            ("asyncapi", json!("2.6.0")),
            (
                "channels",
                json!({
                    "{channel}": {"description": "Any: game channel", "tags": [{"name": "game", "x": 1}]},
                    "attention/opened": {"empty": {}, "none": [], "flag": true, "word": "yes"}
                }),
            ),
        ]);
        assert_eq!(
            text,
            "asyncapi: \"2.6.0\"\n\
             channels:\n  \
               attention/opened:\n    \
                 empty: {}\n    \
                 flag: true\n    \
                 none: []\n    \
                 word: \"yes\"\n  \
               \"{channel}\":\n    \
                 description: \"Any: game channel\"\n    \
                 tags:\n      \
                   - name: game\n        \
                     x: 1\n"
        );
    }

    #[test]
    fn quotes_what_could_be_misread() {
        assert_eq!(scalar_string("Player moved"), "Player moved");
        assert_eq!(scalar_string("^attention/"), "\"^attention/\"");
        assert_eq!(scalar_string("1.1"), "\"1.1\"");
        assert_eq!(scalar_string("null"), "\"null\"");
        assert_eq!(scalar_string("a: b"), "\"a: b\"");
        assert_eq!(scalar_string("line\nbreak"), "\"line\\nbreak\"");
        assert_eq!(scalar_key("$ref"), "$ref");
        assert_eq!(scalar_key("^[a-z]$"), "\"^[a-z]$\"");
    }
}
