//! The GABS environment variables (SPEC/1.0/transport.md §3), each checked, and reported by name.

use std::ffi::OsString;

use gabp_types::shorten;

use crate::error::TransportError;
use crate::token::Token;

/// The variable GABS sets to the TCP port the mod must listen on (on `127.0.0.1`).
pub const GABP_SERVER_PORT: &str = "GABP_SERVER_PORT";
/// The variable GABS sets to the session token.
pub const GABP_TOKEN: &str = "GABP_TOKEN";
/// The variable GABS sets to the game's id; a mod reports it as `agentId`.
pub const GABS_GAME_ID: &str = "GABS_GAME_ID";

fn invalid(var: &'static str, problem: impl Into<String>) -> TransportError {
    TransportError::InvalidVariable {
        var,
        problem: problem.into(),
    }
}

/// A variable's value as UTF-8, if set.
fn env_str<F>(env: &F, var: &'static str) -> Result<Option<String>, TransportError>
where
    F: Fn(&str) -> Option<OsString>,
{
    match env(var) {
        None => Ok(None),
        Some(value) => value
            .into_string()
            .map(Some)
            .map_err(|_| invalid(var, "is not valid Unicode")),
    }
}

pub(super) fn env_port<F>(env: &F) -> Result<Option<u16>, TransportError>
where
    F: Fn(&str) -> Option<OsString>,
{
    let Some(raw) = env_str(env, GABP_SERVER_PORT)? else {
        return Ok(None);
    };
    let value = raw.trim();
    // Quote the bad value, unless it holds the token (pasted into the wrong variable). The whole
    // value is searched, not the quoted part: a cut token would otherwise show its first characters.
    let holds_token = env(GABP_TOKEN)
        .and_then(|t| t.into_string().ok())
        .is_some_and(|secret| secret.trim().len() >= 4 && value.contains(secret.trim()));
    let shown = if holds_token {
        "<redacted>".into()
    } else {
        shorten(value, 40)
    };
    let bad = || {
        invalid(
            GABP_SERVER_PORT,
            format!("is {shown:?}, not a TCP port in 1-65535"),
        )
    };
    if value.is_empty() {
        return Err(invalid(
            GABP_SERVER_PORT,
            "is empty, not a TCP port in 1-65535",
        ));
    }
    if value.len() > 5 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match value.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(port) => Ok(Some(port)),
    }
}

pub(super) fn env_token<F>(env: &F) -> Result<Option<Token>, TransportError>
where
    F: Fn(&str) -> Option<OsString>,
{
    // Never echo the value: it is the secret, even when malformed.
    match env_str(env, GABP_TOKEN)? {
        None => Ok(None),
        Some(value) => Token::new(value)
            .map(Some)
            .map_err(|_| invalid(GABP_TOKEN, "is empty")),
    }
}

pub(super) fn env_game_id<F>(env: &F) -> Result<Option<String>, TransportError>
where
    F: Fn(&str) -> Option<OsString>,
{
    match env_str(env, GABS_GAME_ID)? {
        None => Ok(None),
        Some(value) if value.trim().is_empty() => Err(invalid(GABS_GAME_ID, "is empty")),
        Some(value) if value.chars().any(char::is_control) => {
            Err(invalid(GABS_GAME_ID, "contains control characters"))
        }
        Some(value) => Ok(Some(value)),
    }
}
