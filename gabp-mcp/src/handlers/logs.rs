//! `games_logs`: the last lines a game printed on stdout and stderr (the hub reads them through pipes and
//! keeps the newest; `launch.log` in the game's directory has them all).

use gabp_hub::console::ConsoleTail;
use gabp_hub::{Game, Hub};
use serde_json::{json, Value};

use crate::reply::{Args, Reply};

/// Lines returned when `tail` is left out.
pub(crate) const DEFAULT_TAIL: usize = 100;
/// Most lines one call returns.
pub(crate) const MAX_TAIL: usize = 1_000;
/// Most bytes of line text one call returns; older lines beyond it are left out.
pub(crate) const MAX_OUTPUT: usize = 64 << 10;
/// Longest `grep` pattern.
const MAX_PATTERN: usize = 1_000;

/// The game's last lines, newest last, at most `max` of them and [`MAX_OUTPUT`] bytes; whether lines were
/// left out for the byte bound.
pub(crate) fn tail(game: &Game, max: usize, filter: &dyn Fn(&str) -> bool) -> (ConsoleTail, bool) {
    let mut tail = game.console_tail(max, filter);
    let mut bytes = 0;
    let mut keep = tail.lines.len();
    for line in tail.lines.iter().rev() {
        if bytes + line.text.len() + 1 > MAX_OUTPUT {
            break;
        }
        bytes += line.text.len() + 1;
        keep -= 1;
    }
    let cut = keep > 0;
    tail.lines.drain(..keep);
    (tail, cut)
}

pub(crate) fn logs(hub: &Hub, args: &Args<'_>) -> Result<Reply, Reply> {
    let game = hub.game(args.required_str("gameId")?)?;
    let max = match args.integer("tail")? {
        None => DEFAULT_TAIL,
        Some(n) if (1..=MAX_TAIL as i64).contains(&n) => usize::try_from(n).unwrap_or(MAX_TAIL),
        Some(_) => {
            return Err(Reply::error(
                "invalid_argument",
                format!("Argument 'tail' must be an integer from 1 to {MAX_TAIL}"),
                json!({ "path": "/tail" }),
            ))
        }
    };
    let pattern = args.str("grep")?.filter(|p| !p.is_empty());
    let regex = match pattern {
        None => None,
        Some(p) => Some(compile(p)?),
    };
    let filter = |text: &str| regex.as_ref().is_none_or(|r| r.is_match(text));
    let (tail, cut) = tail(game, max, &filter);
    let id = game.id();
    let mut text = if tail.lines.is_empty() {
        format!("Game '{id}': no console lines (the hub sees what the games it started print)")
    } else {
        format!("Game '{id}': the last {} console line(s)", tail.lines.len())
    };
    if let Some(p) = pattern {
        text.push_str(&format!(" matching /{p}/ ({} matched)", tail.matched));
    }
    text.push('.');
    if cut {
        text.push_str(&format!(
            " Truncated: older lines were left out to stay within {MAX_OUTPUT} bytes."
        ));
    }
    if tail.dropped > 0 {
        text.push_str(&format!(
            " {} older line(s) are only in launch.log.",
            tail.dropped
        ));
    }
    for line in &tail.lines {
        text.push_str(&format!("\n[{}] {}", line.stream.as_str(), line.text));
    }
    let lines: Vec<Value> = tail
        .lines
        .iter()
        .map(|l| json!({ "seq": l.seq, "stream": l.stream, "text": l.text }))
        .collect();
    Ok(Reply::ok(
        text,
        json!({
            "gameId": id, "lines": lines, "matched": tail.matched,
            "truncated": cut, "dropped": tail.dropped,
        }),
    ))
}

/// `grep` as a regular expression (a plain word matches as a substring), bounded in size.
fn compile(pattern: &str) -> Result<regex::Regex, Reply> {
    let invalid = |why: String| {
        Reply::error(
            "invalid_argument",
            format!("Argument 'grep' must be a regular expression (Rust regex syntax): {why}"),
            json!({ "path": "/grep" }),
        )
    };
    if pattern.len() > MAX_PATTERN {
        return Err(invalid(format!("at most {MAX_PATTERN} bytes")));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| invalid(e.to_string()))
}
