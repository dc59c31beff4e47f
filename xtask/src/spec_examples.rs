//! `cargo xtask check-spec-examples [PATH...]`: every ```` ```json ```` block of the specification is a
//! complete message, checked with the strict decoder of `gabp-types`.
//!
//! A block may be preceded (on the nearest non-blank line) by a directive comment:
//!
//! ```text
//! <!-- gabp-validate: method=tools/list -->
//! <!-- gabp-validate: expect=lenient -->
//! <!-- gabp-validate: expect=invalid -->
//! <!-- gabp-validate: as=bridge-json -->
//! ```
//!
//! - `method=NAME`: the block is a response to a `NAME` request; a success result is checked against
//!   that method's result type (`gabp_types::decode::decode_response_to`). Every success response
//!   needs it, so that no result goes unchecked by accident.
//! - `expect=valid` (the default): the strict decoder accepts the block.
//! - `expect=lenient`: the strict decoder refuses the block and the lenient decoder accepts it (what a
//!   mod reads from other implementations but never sends).
//! - `expect=invalid`: the strict decoder refuses the block.
//! - `as=bridge-json`: the block is a `bridge.json` file, checked as `gabp_types::BridgeFile`.
//!
//! One line per block (`FILE:LINE: ok: ...` or `FILE:LINE: FAIL: ...`), then `N passed, M failed`.
//! Exits 1 when any block fails, or when no block was found at all; 2 on a usage or I/O error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use gabp_types::decode::{decode, decode_response_to, DecodeMode};
use gabp_types::{Message, Outcome};

const DIRECTIVE: &str = "gabp-validate:";

/// What a block is expected to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Expect {
    #[default]
    Valid,
    Lenient,
    Invalid,
}

/// One ```` ```json ```` block and its directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The block's text.
    pub body: String,
    method: Option<String>,
    expect: Expect,
    bridge_json: bool,
}

/// Finds the JSON blocks of a Markdown text, with their directives. A malformed directive, or one that
/// is not followed by a JSON block, is an error naming its line.
pub fn extract(markdown: &str) -> Result<Vec<Example>, String> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut examples = Vec::new();
    let mut pending: Option<(usize, Directive)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(directive) = parse_directive_line(trimmed) {
            if let Some((at, _)) = pending {
                return Err(format!(
                    "line {}: directive is not followed by a ```json block",
                    at + 1
                ));
            }
            pending = Some((i, directive.map_err(|e| format!("line {}: {e}", i + 1))?));
            i += 1;
            continue;
        }
        let fence_len = trimmed.bytes().take_while(|&b| b == b'`').count();
        if fence_len >= 3 {
            let info = trimmed[fence_len..].trim();
            let language = info.split_whitespace().next().unwrap_or("");
            let indent = line.len() - trimmed.len();
            let mut body = Vec::new();
            let mut j = i + 1;
            while j < lines.len() {
                let t = lines[j].trim_start();
                let closing = t.bytes().take_while(|&b| b == b'`').count();
                if closing >= fence_len && t[closing..].trim().is_empty() {
                    break;
                }
                body.push(strip_indent(lines[j], indent));
                j += 1;
            }
            let directive = pending.take();
            if language == "json" {
                let d = directive.map(|(_, d)| d).unwrap_or_default();
                examples.push(Example {
                    line: i + 1,
                    body: body.join("\n"),
                    method: d.method,
                    expect: d.expect,
                    bridge_json: d.bridge_json,
                });
            } else if let Some((at, _)) = directive {
                return Err(format!(
                    "line {}: directive is followed by a ```{language} block, not ```json",
                    at + 1
                ));
            }
            i = j + 1;
            continue;
        }
        if !trimmed.is_empty() {
            if let Some((at, _)) = pending {
                return Err(format!(
                    "line {}: directive is not followed by a ```json block",
                    at + 1
                ));
            }
        }
        i += 1;
    }
    if let Some((at, _)) = pending {
        return Err(format!(
            "line {}: directive is not followed by a ```json block",
            at + 1
        ));
    }
    Ok(examples)
}

fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.bytes().take(indent).take_while(|&b| b == b' ').count();
    &line[spaces..]
}

#[derive(Debug, Default)]
struct Directive {
    method: Option<String>,
    expect: Expect,
    bridge_json: bool,
}

/// `Some(..)` when the line is a `<!-- gabp-validate: ... -->` comment.
fn parse_directive_line(line: &str) -> Option<Result<Directive, String>> {
    let inner = line
        .strip_prefix("<!--")?
        .trim_end()
        .strip_suffix("-->")?
        .trim();
    let args = inner.strip_prefix(DIRECTIVE)?;
    let mut directive = Directive::default();
    for arg in args.split_whitespace() {
        let parsed = match arg.split_once('=') {
            Some(("method", m)) if gabp_types::MethodName::new(m).is_ok() => {
                directive.method = Some(m.to_owned());
                Ok(())
            }
            Some(("expect", "valid")) => {
                directive.expect = Expect::Valid;
                Ok(())
            }
            Some(("expect", "lenient")) => {
                directive.expect = Expect::Lenient;
                Ok(())
            }
            Some(("expect", "invalid")) => {
                directive.expect = Expect::Invalid;
                Ok(())
            }
            Some(("as", "bridge-json")) => {
                directive.bridge_json = true;
                Ok(())
            }
            _ => Err(format!(
                "unknown gabp-validate argument {arg:?} (expected method=NAME, expect=valid|lenient|invalid or as=bridge-json)"
            )),
        };
        if let Err(e) = parsed {
            return Some(Err(e));
        }
    }
    Some(Ok(directive))
}

/// Checks one example; `Ok` carries a short description, `Err` the reason it fails.
pub fn check(example: &Example) -> Result<String, String> {
    let body = example.body.as_bytes();
    if example.bridge_json {
        return serde_json::from_slice::<gabp_types::BridgeFile>(body)
            .map(|f| format!("bridge.json ({} transport)", f.transport.kind))
            .map_err(|e| format!("not a valid bridge.json: {e}"));
    }
    let strict = match &example.method {
        Some(method) => decode_response_to(body, method, DecodeMode::Strict),
        None => decode(body, DecodeMode::Strict),
    };
    match (example.expect, strict) {
        (Expect::Valid, Ok(message)) => describe(&message, example.method.as_deref()),
        (Expect::Valid, Err(e)) => Err(e.to_string()),
        (Expect::Invalid, Ok(_)) => Err("expected the strict decoder to refuse it".to_owned()),
        (Expect::Invalid, Err(e)) => Ok(format!("refused as expected: {e}")),
        (Expect::Lenient, Ok(_)) => {
            Err("expected the strict decoder to refuse it (expect=lenient)".to_owned())
        }
        (Expect::Lenient, Err(strict_error)) => {
            let lenient = match &example.method {
                Some(method) => decode_response_to(body, method, DecodeMode::Lenient),
                None => decode(body, DecodeMode::Lenient),
            };
            match lenient {
                Ok(_) => Ok(format!("lenient only: strict refuses with {strict_error}")),
                Err(e) => Err(format!("the lenient decoder refuses it too: {e}")),
            }
        }
    }
}

fn describe(message: &Message, method: Option<&str>) -> Result<String, String> {
    match message {
        Message::Request(r) => Ok(format!("request {}", r.method)),
        Message::Event(e) => Ok(format!("event {} seq {}", e.channel, e.seq)),
        Message::Response(r) => match (&r.outcome, method) {
            (Outcome::Result(_), Some(m)) => Ok(format!("response to {m}")),
            (Outcome::Result(_), None) => Err(
                "a success response needs <!-- gabp-validate: method=NAME --> before its block"
                    .to_owned(),
            ),
            (Outcome::Error(e), Some(m)) => Ok(format!("error {} answering {m}", e.code.0)),
            (Outcome::Error(e), None) => Ok(format!("error {}", e.code.0)),
        },
    }
}

fn markdown_files(path: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for entry in entries {
            if entry.is_dir() || entry.extension().is_some_and(|e| e == "md") {
                markdown_files(&entry, found)?;
            }
        }
    } else {
        found.push(path.to_owned());
    }
    Ok(())
}

/// The command: checks the given files or directories (default `SPEC/1.0`).
pub fn run(args: &[String], root: &Path) -> ExitCode {
    let mut paths: Vec<PathBuf> = Vec::new();
    for arg in args {
        if arg.starts_with('-') {
            eprintln!("unknown option {arg:?}\nusage: cargo xtask check-spec-examples [PATH...]");
            return ExitCode::from(2);
        }
        paths.push(PathBuf::from(arg));
    }
    if paths.is_empty() {
        paths.push(root.join("SPEC").join("1.0"));
    }
    let mut files = Vec::new();
    for path in &paths {
        if let Err(e) = markdown_files(path, &mut files) {
            eprintln!("error: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: cannot read {shown}: {e}");
                return ExitCode::from(2);
            }
        };
        let examples = match extract(&text) {
            Ok(x) => x,
            Err(e) => {
                println!("{shown}: FAIL: {e}");
                failed += 1;
                continue;
            }
        };
        for example in &examples {
            match check(example) {
                Ok(what) => {
                    println!("{shown}:{}: ok: {what}", example.line);
                    passed += 1;
                }
                Err(why) => {
                    println!("{shown}:{}: FAIL: {why}", example.line);
                    failed += 1;
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        ExitCode::from(1)
    } else if passed == 0 {
        eprintln!(
            "error: no ```json example found in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &str = r#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request","method":"tools/list"}"#;

    #[test]
    fn extracts_blocks_with_directives() {
        let md = format!(
            "# T\n\n```json\n{REQUEST}\n```\n\n<!-- gabp-validate: method=tools/list -->\n\n```json\n{{}}\n```\n\n```text\nnot json\n```\n"
        );
        let examples = extract(&md).unwrap();
        assert_eq!(examples.len(), 2);
        assert_eq!(examples[0].line, 3);
        assert_eq!(examples[0].method, None);
        assert_eq!(examples[1].method.as_deref(), Some("tools/list"));
        assert!(check(&examples[0]).is_ok());
        assert!(check(&examples[1]).is_err());
    }

    #[test]
    fn directive_errors_are_reported() {
        assert!(extract("<!-- gabp-validate: method=Bad -->\n```json\n{}\n```\n").is_err());
        assert!(extract("<!-- gabp-validate: expect=valid -->\ntext\n```json\n{}\n```\n").is_err());
        assert!(extract("<!-- gabp-validate: expect=valid -->\n```text\n{}\n```\n").is_err());
        assert!(extract("<!-- gabp-validate: expect=valid -->\n").is_err());
    }

    #[test]
    fn success_responses_need_a_method() {
        let md = "```json\n{\"v\":\"gabp/1\",\"id\":\"550e8400-e29b-41d4-a716-446655440000\",\"type\":\"response\",\"result\":{}}\n```\n";
        let examples = extract(md).unwrap();
        assert!(check(&examples[0]).unwrap_err().contains("method="));
    }

    #[test]
    fn lenient_and_invalid_expectations() {
        let lenient = r#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request","method":"tools/call","params":{"name":"demo/echo","parameters":{"value":1}}}"#;
        let md = format!("<!-- gabp-validate: expect=lenient -->\n```json\n{lenient}\n```\n<!-- gabp-validate: expect=invalid -->\n```json\n{lenient}\n```\n<!-- gabp-validate: expect=lenient -->\n```json\n{REQUEST}\n```\n");
        let examples = extract(&md).unwrap();
        assert!(check(&examples[0]).is_ok());
        assert!(check(&examples[1]).is_ok());
        assert!(check(&examples[2]).is_err());
    }
}
