//! Keeping the bridge's token out of what a mod answers to `session/hello`: a mod may quote the token it
//! refused, in any case or in part, and the bridge's errors are printed and logged (SPEC/1.0 security.md §6).

use gabp_types::{ErrorObject, NonEmptyString};
use serde_json::Value;

use crate::Error;

/// The shortest run of the token that is redacted. Shorter runs of a 32-character or longer token are too
/// common in ordinary text to remove, and too short to help a guess.
const MIN_RUN: usize = 8;

const REDACTED: &str = "<redacted>";

/// `text` with every run of at least [`MIN_RUN`] characters that appears in `secret`, ignoring ASCII case,
/// replaced by `<redacted>`.
pub(crate) fn redact(text: &str, secret: &str) -> String {
    let secret: Vec<char> = secret.chars().map(|c| c.to_ascii_lowercase()).collect();
    let chars: Vec<char> = text.chars().collect();
    if secret.len() < MIN_RUN || chars.len() < MIN_RUN {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let run = longest_run_at(&chars[i..], &secret);
        if run >= MIN_RUN {
            out.push_str(REDACTED);
            i += run;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The length of the longest prefix of `text` that appears in `secret` (ASCII case ignored).
fn longest_run_at(text: &[char], secret: &[char]) -> usize {
    (0..secret.len())
        .map(|start| {
            text.iter()
                .zip(&secret[start..])
                .take_while(|(t, s)| t.to_ascii_lowercase() == **s)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn redact_value(value: &mut Value, secret: &str) {
    match value {
        Value::String(s) => *s = redact(s, secret),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(v, secret)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut v) in entries {
                redact_value(&mut v, secret);
                map.insert(redact(&key, secret), v);
            }
        }
        _ => {}
    }
}

fn redact_error_object(mut error: ErrorObject, secret: &str) -> ErrorObject {
    if let Ok(message) = NonEmptyString::new(redact(&error.message, secret)) {
        error.message = message;
    }
    if let Some(data) = error.data.as_mut() {
        redact_value(data, secret);
    }
    error
}

/// `error`, from the answer to `method`, with every run of `secret` taken out of what the mod wrote.
pub(crate) fn redact_error(error: Error, method: &str, secret: &str) -> Error {
    if let Some(object) = error.error_object() {
        let object = redact_error_object(object.clone(), secret);
        return Error::from_remote(object, method, None);
    }
    match error {
        Error::InvalidWelcome { reason } => Error::InvalidWelcome {
            reason: redact(&reason, secret),
        },
        Error::InvalidResponse { method, reason } => Error::InvalidResponse {
            method,
            reason: redact(&reason, secret),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "MiXeD-CaSe-ToKeN-0123456789-aBcDeF-SeCrEt";

    #[test]
    fn runs_of_the_secret_in_any_case_are_redacted() {
        let upper = SECRET.to_uppercase();
        let text = format!(
            "Invalid token '{upper}' (expected {}) near {}",
            SECRET.to_lowercase(),
            &SECRET[5..20]
        );
        let shown = redact(&text, SECRET);
        assert_eq!(
            shown,
            "Invalid token '<redacted>' (expected <redacted>) near <redacted>"
        );
        assert_eq!(
            redact("authentication failed", SECRET),
            "authentication failed"
        );
        // Runs shorter than MIN_RUN stay: "Case" alone is an ordinary word.
        assert_eq!(redact("the Case of it", SECRET), "the Case of it");
    }

    #[test]
    fn error_objects_are_redacted_in_message_and_data() {
        let error = ErrorObject::new(
            gabp_types::ErrorCode::AUTHENTICATION_FAILED,
            format!("bad token {}", SECRET.to_uppercase()),
        )
        .with_data(serde_json::json!({"token": SECRET, SECRET: [SECRET.to_lowercase()]}));
        let e = redact_error(
            Error::from_remote(error, "session/hello", None),
            "session/hello",
            SECRET,
        );
        assert!(matches!(e, Error::AuthenticationFailed { .. }));
        let shown = format!("{e} {e:?}").to_lowercase();
        assert!(!shown.contains("0123456789"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
