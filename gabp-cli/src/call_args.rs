//! What `gabp call` reads from its command line: the params (PARAMS_JSON, KEY=VALUE pairs, `--args`), the
//! `--timeout`, and "did you mean" suggestions for unknown names.

use std::time::Duration;

use gabp_types::format::{is_registry_name, NAME_PATTERN};
use serde_json::{Map, Value};

/// The params of a call from its positional arguments after METHOD and `--args`.
///
/// One argument without `=` (or starting with `{`) is PARAMS_JSON, a JSON object or `null`. Otherwise every
/// argument is `KEY=VALUE`: the value is read as JSON when it parses (`x=1`, `tags=["a"]`, `on=true`), else
/// taken as a string (`name=steve`). Pairs go on top of `--args`.
///
/// # Errors
///
/// One line naming the argument that is wrong.
pub fn params(positional: &[String], args_json: Option<&str>) -> Result<Value, String> {
    let mut object = match args_json {
        None => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Some(map),
            Ok(_) => return Err("--args must be a JSON object".into()),
            Err(e) => return Err(format!("--args is not JSON: {e}")),
        },
    };
    if let [single] = positional {
        if !single.contains('=') || single.trim_start().starts_with('{') {
            if object.is_some() {
                return Err("give the params once: PARAMS_JSON or --args, not both".into());
            }
            let value: Value = serde_json::from_str(single)
                .map_err(|e| format!("PARAMS_JSON is not JSON: {e}"))?;
            if !value.is_object() && !value.is_null() {
                return Err("PARAMS_JSON must be a JSON object".into());
            }
            return Ok(value);
        }
    }
    if positional.is_empty() {
        return Ok(object.map_or(Value::Null, Value::Object));
    }
    let map = object.get_or_insert_with(Map::new);
    let mut seen: Vec<&str> = Vec::new();
    for pair in positional {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!(
                "`{pair}` is not KEY=VALUE (give either one PARAMS_JSON object or KEY=VALUE pairs)"
            ));
        };
        if key.is_empty() {
            return Err(format!("`{pair}`: the key before `=` is empty"));
        }
        if seen.contains(&key) {
            return Err(format!("{key}= is given twice"));
        }
        seen.push(key);
        map.insert(key.to_owned(), value_of(value));
    }
    Ok(Value::Object(object.unwrap_or_default()))
}

/// `text` as JSON when it parses, else as a string.
fn value_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// A `--timeout`: `500ms`, `5s`, `2m`, or a number of seconds (`1.5`).
///
/// # Errors
///
/// A message for clap when it is none of these or not positive.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let seconds = number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n > 0.0)
        .map(|n| n * scale)
        .ok_or_else(|| format!("`{text}` is not a duration such as 500ms, 5s, 2m or 10"))?;
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("`{text}` is too long"))
}

/// Checks that `method` can be a GABP method or tool name at all.
///
/// # Errors
///
/// One line saying what a name looks like.
pub fn check_name(method: &str) -> Result<(), String> {
    if is_registry_name(method) {
        Ok(())
    } else {
        Err(format!(
            "`{method}` is not a method or tool name: names are lower-case segments joined by `/`, \
             such as tools/list or world/get_block (the pattern {NAME_PATTERN})"
        ))
    }
}

/// The known name closest to `unknown`, if one is close enough to be a typo of it.
pub fn did_you_mean<'a>(
    unknown: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (unknown.chars().count() / 3).clamp(1, 3);
    known
        .into_iter()
        .filter(|k| *k != unknown)
        .map(|k| (edit_distance(unknown, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn key_value_pairs_are_json_or_strings() {
        let p = params(
            &strings(&["x=1", "name=steve", r#"tags=["a"]"#, "on=true", "s=\"7\""]),
            None,
        )
        .unwrap();
        assert_eq!(
            p,
            json!({"x": 1, "name": "steve", "tags": ["a"], "on": true, "s": "7"})
        );
        // A value may itself contain `=`; an empty value is the empty string.
        let p = params(&strings(&["q=a=b", "e="]), None).unwrap();
        assert_eq!(p, json!({"q": "a=b", "e": ""}));
    }

    #[test]
    fn params_json_args_and_pairs_combine_as_documented() {
        assert_eq!(params(&[], None).unwrap(), Value::Null);
        assert_eq!(
            params(&strings(&[r#"{"a": 1}"#]), None).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(params(&strings(&["null"]), None).unwrap(), Value::Null);
        assert_eq!(
            params(&[], Some(r#"{"x": 1, "y": 2}"#)).unwrap(),
            json!({"x": 1, "y": 2})
        );
        assert_eq!(
            params(&strings(&["y=5"]), Some(r#"{"x": 1, "y": 2}"#)).unwrap(),
            json!({"x": 1, "y": 5})
        );
        let e = |positional: &[&str], args: Option<&str>| {
            params(&strings(positional), args).unwrap_err()
        };
        assert!(e(&["{not json"], None).starts_with("PARAMS_JSON is not JSON"));
        assert_eq!(e(&["[1]"], None), "PARAMS_JSON must be a JSON object");
        assert!(e(&["x=1", "y"], None).starts_with("`y` is not KEY=VALUE"));
        assert!(e(&["=1"], None).contains("key before `=` is empty"));
        assert_eq!(e(&["x=1", "x=2"], None), "x= is given twice");
        assert_eq!(e(&[], Some("[]")), "--args must be a JSON object");
        assert!(e(&[], Some("{")).starts_with("--args is not JSON"));
        assert!(e(&["{}"], Some("{}")).contains("not both"));
    }

    #[test]
    fn timeouts_have_units_or_are_seconds() {
        assert_eq!(parse_timeout("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_timeout("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_timeout("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_timeout("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_timeout("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["", "0", "-1s", "soon", "5h", "NaN"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_must_match_the_pattern() {
        assert!(check_name("tools/list").is_ok());
        assert!(check_name("world/get_block").is_ok());
        for bad in [
            "ping",
            "Tools/List",
            "world/",
            "/x",
            "world get",
            "a//b",
            "1a/b",
        ] {
            let e = check_name(bad).unwrap_err();
            assert!(e.contains(NAME_PATTERN), "{e}");
        }
    }

    #[test]
    fn suggestions_are_close_names_only() {
        let known = [
            "world/get_block",
            "world/place_block",
            "tools/list",
            "demo/echo",
        ];
        assert_eq!(
            did_you_mean("world/get_blok", known),
            Some("world/get_block")
        );
        assert_eq!(did_you_mean("tools/lst", known), Some("tools/list"));
        assert_eq!(did_you_mean("demo/ecoh", known), Some("demo/echo"));
        assert_eq!(did_you_mean("no/such_method", known), None);
        assert_eq!(did_you_mean("demo/echo", known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
