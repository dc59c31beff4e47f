//! `session/hello` params, checked by hand so that no error quotes a value or the name of an unknown
//! member: any of them may be a token sent in the wrong place or the wrong case (SPEC/1.0 security.md §6).
//! A name is quoted only when it is one of the expected names in another case (`Token`, `Linux`).

use serde_json::{Map, Value};

use super::params::repeated_member;
use super::{DecodeError, DecodeMode};
use crate::json_kind::json_type_name;
use crate::methods::HelloToken;
use crate::{ErrorCode, Params};

const MEMBERS: &[&str] = &[
    "token",
    "bridgeVersion",
    "platform",
    "launchId",
    "clientInfo",
];
const CLIENT_INFO_MEMBERS: &[&str] = &["name", "version"];
const PLATFORMS: &[&str] = &["windows", "macos", "linux"];

fn invalid(pointer: &str, reason: impl Into<String>) -> DecodeError {
    DecodeError::new(ErrorCode::INVALID_PARAMS, pointer, reason.into())
}

/// `` `a`, `b` or `c` ``.
fn listed(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// The expected name `text` is in another case, if any.
fn in_other_case<'a>(text: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .copied()
        .find(|n| n.eq_ignore_ascii_case(text) && *n != text)
}

fn unknown_members(
    map: &Map<String, Value>,
    base: &str,
    names: &[&str],
) -> Result<(), DecodeError> {
    let Some(key) = map.keys().find(|k| !names.contains(&k.as_str())) else {
        return Ok(());
    };
    Err(match in_other_case(key, names) {
        Some(name) => invalid(
            &format!("{base}/{key}"),
            format!("unknown field `{key}`, did you mean `{name}`?"),
        ),
        None => invalid(
            base,
            format!("an unknown field; expected {}", listed(names)),
        ),
    })
}

fn string<'a>(
    map: &'a Map<String, Value>,
    base: &str,
    name: &str,
) -> Result<Option<&'a str>, DecodeError> {
    match map.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(
            &format!("{base}/{name}"),
            format!("invalid type: {}, expected a string", json_type_name(other)),
        )),
    }
}

fn required<'a>(map: &'a Map<String, Value>, name: &str) -> Result<&'a str, DecodeError> {
    string(map, "/params", name)?
        .ok_or_else(|| invalid("/params", format!("missing field `{name}`")))
}

/// Checks `session/hello` params as received: [`check_hello`] on the map they parse to, which keeps the last
/// of repeated members; then refuses a repeated member, which the typed read refuses and a member-by-member
/// read ([`Params::member`], the first) reads otherwise. By then every name is a known one, safe to quote.
pub(super) fn check_hello_params(
    params: Option<&Params>,
    mode: DecodeMode,
) -> Result<(), DecodeError> {
    check_hello(params.map(Params::to_map).as_ref(), mode)?;
    let Some(p) = params else {
        return Ok(());
    };
    let client_info = p
        .member("clientInfo")
        .map(|raw| ("/params/clientInfo", raw.get()));
    for (base, text) in std::iter::once(("/params", p.as_json())).chain(client_info) {
        if let Some(name) = repeated_member(text) {
            return Err(invalid(
                &format!("{base}/{name}"),
                format!("duplicate field `{name}`"),
            ));
        }
    }
    Ok(())
}

/// Checks `session/hello` params as the typed [`HelloParams`](crate::methods::HelloParams) reads them,
/// plus, in strict mode, a hyphenated UUID `launchId`.
fn check_hello(params: Option<&Map<String, Value>>, mode: DecodeMode) -> Result<(), DecodeError> {
    let Some(p) = params else {
        return Err(invalid("/params", "`session/hello` requires params"));
    };
    unknown_members(p, "/params", MEMBERS)?;
    let token = required(p, "token")?;
    if token.chars().count() < HelloToken::MIN_LEN {
        return Err(invalid(
            "/params/token",
            format!(
                "the token must be at least {} characters long",
                HelloToken::MIN_LEN
            ),
        ));
    }
    if required(p, "bridgeVersion")?.is_empty() {
        return Err(invalid("/params/bridgeVersion", "must not be empty"));
    }
    let platform = required(p, "platform")?;
    if !PLATFORMS.contains(&platform) {
        let reason = match in_other_case(platform, PLATFORMS) {
            Some(name) => format!("unknown variant `{platform}`, did you mean `{name}`?"),
            None => format!("unknown variant; expected {}", listed(PLATFORMS)),
        };
        return Err(invalid("/params/platform", reason));
    }
    let launch_id = required(p, "launchId")?;
    if mode == DecodeMode::Strict && !crate::format::is_hyphenated_uuid(launch_id) {
        return Err(invalid(
            "/params/launchId",
            "`launchId` must be a hyphenated UUID",
        ));
    }
    match p.get("clientInfo") {
        None => Ok(()),
        Some(Value::Object(info)) => {
            let base = "/params/clientInfo";
            unknown_members(info, base, CLIENT_INFO_MEMBERS)?;
            for name in CLIENT_INFO_MEMBERS {
                string(info, base, name)?;
            }
            Ok(())
        }
        Some(other) => Err(invalid(
            "/params/clientInfo",
            format!(
                "invalid type: {}, expected an object",
                json_type_name(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOKEN: &str = "TokEn-In-MiXeD-cAsE-0123456789-aBcDeF-SeCrEt";

    fn check(params: Value, mode: DecodeMode) -> Result<(), DecodeError> {
        check_hello(params.as_object(), mode)
    }

    fn hello() -> Value {
        json!({
            "token": TOKEN, "bridgeVersion": "1.0.0", "platform": "linux",
            "launchId": "550e8400-e29b-41d4-a716-446655440001",
            "clientInfo": {"name": "n", "version": "1"}
        })
    }

    /// Every 6-character window of the token, case-folded.
    fn leaks(shown: &str, secret: &str) -> bool {
        let shown = shown.to_lowercase();
        let secret: Vec<char> = secret.to_lowercase().chars().collect();
        secret
            .windows(6)
            .any(|w| shown.contains(&w.iter().collect::<String>()))
    }

    #[test]
    fn a_valid_hello_passes_and_agrees_with_the_typed_read() {
        check(hello(), DecodeMode::Strict).expect("valid");
        let typed: Result<crate::methods::HelloParams, _> = serde_json::from_value(hello());
        assert!(typed.is_ok());
        let mut minimal = hello();
        minimal
            .as_object_mut()
            .expect("object")
            .remove("clientInfo");
        check(minimal, DecodeMode::Strict).expect("valid");
    }

    #[test]
    fn no_error_quotes_a_token_wherever_and_in_whatever_case_it_is() {
        let variants = [TOKEN.to_owned(), TOKEN.to_uppercase(), TOKEN.to_lowercase()];
        let mut cases: Vec<Value> = Vec::new();
        for t in &variants {
            for field in ["bridgeVersion", "platform", "launchId"] {
                let mut h = hello();
                h[field] = json!(t);
                // A wrong field next to a wrong token: the token must not show either.
                h["token"] = json!(TOKEN.to_lowercase());
                cases.push(h);
            }
            let mut h = hello();
            h[t.as_str()] = json!(t);
            cases.push(h);
            let mut h = hello();
            h["clientInfo"] = json!({ t.as_str(): t });
            cases.push(h);
            let mut h = hello();
            h["clientInfo"] = json!({ "name": [t] });
            cases.push(h);
            let mut h = hello();
            h["token"] = json!(&t[..20]);
            cases.push(h);
            let mut h = hello();
            h["token"] = json!([t]);
            cases.push(h);
            let mut h = hello();
            h.as_object_mut().expect("object").remove("token");
            h["Token"] = json!(t);
            cases.push(h);
        }
        for case in cases {
            for mode in [DecodeMode::Strict, DecodeMode::Lenient] {
                let Err(e) = check(case.clone(), mode) else {
                    continue;
                };
                let shown = format!("{e} {e:?} {}", e.pointer());
                for t in &variants {
                    assert!(!leaks(&shown, t), "{shown}");
                }
            }
        }
    }

    /// The fuzz target found it: the map read keeps the last of repeated members, so the check passed
    /// params that the typed read refuses and that `Params::member` reads otherwise.
    #[test]
    fn repeated_members_are_refused_without_quoting_values() {
        let parse = |text: String| serde_json::from_str::<Params>(&text).expect("an object");
        let launch = "550e8400-e29b-41d4-a716-446655440001";
        let cases = [
            (
                format!(
                    r#"{{"token":"short","token":"{TOKEN}","bridgeVersion":"1","platform":"linux","launchId":"{launch}"}}"#
                ),
                "/params/token",
            ),
            (
                format!(
                    r#"{{"token":"{TOKEN}","bridgeVersion":"1","platform":"linux","launchId":"{launch}","clientInfo":{{"name":"{TOKEN}","name":"n"}}}}"#
                ),
                "/params/clientInfo/name",
            ),
        ];
        for (text, pointer) in cases {
            let e = check_hello_params(Some(&parse(text)), DecodeMode::Lenient).expect_err(pointer);
            assert_eq!(
                (e.code(), e.pointer()),
                (ErrorCode::INVALID_PARAMS, pointer)
            );
            assert!(!leaks(&format!("{e} {e:?}"), TOKEN), "{e}");
        }
        let once = parse(hello().to_string());
        assert!(check_hello_params(Some(&once), DecodeMode::Strict).is_ok());
    }

    #[test]
    fn hello_tokens_and_their_errors_never_show_the_secret() {
        let token = HelloToken::new(TOKEN).expect("long enough");
        let short = HelloToken::new(&TOKEN[..20]).expect_err("short");
        let shown = format!("{token:?} {short} {short:?}");
        assert!(!leaks(&shown, TOKEN), "{shown}");
    }

    #[test]
    fn errors_name_the_field() {
        let cases: &[(Value, &str)] = &[
            (json!({"token": TOKEN}), "/params"),
            (
                json!({"Token": TOKEN, "bridgeVersion": "1", "platform": "linux", "launchId": "x"}),
                "/params/Token",
            ),
            (
                json!({"token": "short", "bridgeVersion": "1", "platform": "linux", "launchId": "x"}),
                "/params/token",
            ),
            (
                json!({"token": TOKEN, "bridgeVersion": "", "platform": "linux", "launchId": "x"}),
                "/params/bridgeVersion",
            ),
            (
                json!({"token": TOKEN, "bridgeVersion": "1", "platform": "Linux", "launchId": "x"}),
                "/params/platform",
            ),
            (
                json!({"token": TOKEN, "bridgeVersion": "1", "platform": "linux", "launchId": 7}),
                "/params/launchId",
            ),
            (
                json!({"token": TOKEN, "bridgeVersion": "1", "platform": "linux", "launchId": "x",
                       "clientInfo": null}),
                "/params/clientInfo",
            ),
        ];
        for (params, pointer) in cases {
            let e = check(params.clone(), DecodeMode::Lenient).expect_err(pointer);
            assert_eq!(e.pointer(), *pointer, "{e}");
            assert_eq!(e.code(), ErrorCode::INVALID_PARAMS);
        }
        let e = check(
            json!({"Token": TOKEN, "bridgeVersion": "1", "platform": "linux", "launchId": "x"}),
            DecodeMode::Lenient,
        )
        .expect_err("Token");
        assert!(e.to_string().contains("did you mean `token`"), "{e}");
        let e = check(hello(), DecodeMode::Lenient).map(|()| "ok");
        assert_eq!(e.ok(), Some("ok"));
        let mut h = hello();
        h["launchId"] = json!("not-a-uuid");
        assert!(check(h.clone(), DecodeMode::Lenient).is_ok());
        let e = check(h, DecodeMode::Strict).expect_err("strict launchId");
        assert_eq!(e.pointer(), "/params/launchId");
    }
}
