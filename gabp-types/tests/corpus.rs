//! Runs every file of our `CONFORMANCE/1.0/` (and `EXAMPLES/1.0/`) through the strict decoder and through the
//! generated schemas (the `jsonschema` crate, format checks on): both verdicts must match the folder. Does the
//! same for the upstream corpus in `../shared/reference/gabp-1.1.0/` when it exists, and feeds every file of
//! both corpora, truncated at every byte, to the decoders to prove that bad input never panics.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use gabp_types::decode::{decode, decode_response_to, DecodeMode};
use gabp_types::schema::{applicable_schemas, schema_files};
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn upstream_root() -> Option<PathBuf> {
    let dir = repo_root().join("../shared/reference/gabp-1.1.0");
    dir.is_dir().then_some(dir)
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            found.extend(json_files(&path));
        } else if path.extension().is_some_and(|e| e == "json")
            && path.file_name().is_some_and(|n| n != "index.json")
        {
            found.push(path);
        }
    }
    found
}

/// Reads an index file mapping paths relative to its folder to the method a response answers.
fn index(dir: &Path) -> HashMap<PathBuf, String> {
    let path = dir.join("index.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return HashMap::new();
    };
    let map: BTreeMap<String, String> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: bad index: {e}", path.display()));
    map.into_iter().map(|(k, v)| (dir.join(k), v)).collect()
}

struct Case {
    path: PathBuf,
    bytes: Vec<u8>,
    method: Option<String>,
    expect_valid: bool,
}

fn cases(dir: &Path, expect_valid: bool, methods: &HashMap<PathBuf, String>) -> Vec<Case> {
    json_files(dir)
        .into_iter()
        .map(|path| Case {
            bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            method: methods.get(&path).cloned(),
            path,
            expect_valid,
        })
        .collect()
}

fn our_cases() -> Vec<Case> {
    let conformance = repo_root().join("CONFORMANCE/1.0");
    let examples = repo_root().join("EXAMPLES/1.0");
    let mut methods = index(&conformance);
    methods.extend(index(&examples));
    let mut all = cases(&conformance.join("valid"), true, &methods);
    all.extend(cases(&conformance.join("invalid"), false, &methods));
    all.extend(cases(&examples, true, &methods));
    all
}

fn upstream_cases() -> Vec<Case> {
    let Some(root) = upstream_root() else {
        return Vec::new();
    };
    let none = HashMap::new();
    let mut all = cases(&root.join("CONFORMANCE/1.0/valid"), true, &none);
    all.extend(cases(&root.join("CONFORMANCE/1.0/invalid"), false, &none));
    all.extend(cases(&root.join("EXAMPLES/1.0"), true, &none));
    all
}

fn strict_verdict(case: &Case) -> Result<(), String> {
    let result = match &case.method {
        Some(m) => decode_response_to(&case.bytes, m, DecodeMode::Strict),
        None => decode(&case.bytes, DecodeMode::Strict),
    };
    result.map(drop).map_err(|e| e.to_string())
}

struct Schemas(HashMap<String, jsonschema::Validator>);

impl Schemas {
    fn compile() -> Self {
        Schemas(
            schema_files()
                .into_iter()
                .map(|f| {
                    let validator = jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft7)
                        .should_validate_formats(true)
                        .build(&f.schema)
                        .unwrap_or_else(|e| panic!("{} does not compile: {e}", f.path));
                    (f.path, validator)
                })
                .collect(),
        )
    }

    fn verdict(&self, bytes: &[u8], method: Option<&str>) -> Result<(), String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        for (path, pointer) in applicable_schemas(&value, method) {
            let validator = self
                .0
                .get(&path)
                .unwrap_or_else(|| panic!("no schema {path}"));
            let part = value.pointer(pointer).unwrap_or(&Value::Null);
            if let Some(error) = validator.iter_errors(part).next() {
                return Err(format!("{path}: {error} at {}", error.instance_path()));
            }
        }
        Ok(())
    }
}

fn check_verdicts(cases: &[Case]) {
    let schemas = Schemas::compile();
    let mut failures = Vec::new();
    for case in cases {
        let strict = strict_verdict(case);
        let schema = schemas.verdict(&case.bytes, case.method.as_deref());
        let show = |r: &Result<(), String>| match r {
            Ok(()) => "valid".to_owned(),
            Err(e) => format!("invalid ({e})"),
        };
        if strict.is_ok() != case.expect_valid || schema.is_ok() != case.expect_valid {
            failures.push(format!(
                "{}: expected {}, strict decoder says {}, schemas say {}",
                case.path.display(),
                if case.expect_valid {
                    "valid"
                } else {
                    "invalid"
                },
                show(&strict),
                show(&schema)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} verdict(s) wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn our_corpus_verdicts_match_folders() {
    let cases = our_cases();
    let valid = cases.iter().filter(|c| c.expect_valid).count();
    let invalid = cases.len() - valid;
    assert!(
        valid >= 40 && invalid >= 60,
        "corpus too small: {valid} valid, {invalid} invalid"
    );
    check_verdicts(&cases);
}

#[test]
fn upstream_corpus_verdicts_match_folders() {
    let cases = upstream_cases();
    if cases.is_empty() {
        eprintln!("../shared/reference not present; upstream corpus skipped");
        return;
    }
    check_verdicts(&cases);
}

fn invalid_case(suffix: &str) -> Case {
    our_cases()
        .into_iter()
        .find(|c| !c.expect_valid && c.path.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("no invalid case named *{suffix}"))
}

#[test]
fn invalid_cases_carry_the_code_to_answer_with() {
    use gabp_types::ErrorCode;
    let table: &[(&str, ErrorCode, &str)] = &[
        (
            "_envelope_not_an_object.json",
            ErrorCode::INVALID_REQUEST,
            "",
        ),
        (
            "_envelope_missing_v.json",
            ErrorCode::MISSING_REQUIRED_FIELD,
            "/v",
        ),
        (
            "_envelope_wrong_v.json",
            ErrorCode::PROTOCOL_VERSION_MISMATCH,
            "/v",
        ),
        (
            "_envelope_missing_id.json",
            ErrorCode::MISSING_REQUIRED_FIELD,
            "/id",
        ),
        (
            "_envelope_id_braced.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/id",
        ),
        (
            "_envelope_id_urn.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/id",
        ),
        (
            "_envelope_id_unhyphenated.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/id",
        ),
        (
            "_envelope_unknown_type.json",
            ErrorCode::INVALID_MESSAGE_TYPE,
            "/type",
        ),
        (
            "_request_unknown_top_level_field.json",
            ErrorCode::INVALID_REQUEST,
            "",
        ),
        (
            "_request_method_with_dot.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/method",
        ),
        (
            "_request_params_array.json",
            ErrorCode::INVALID_PARAMS,
            "/params",
        ),
        (
            "_response_both_result_and_error.json",
            ErrorCode::INVALID_REQUEST,
            "",
        ),
        (
            "_tools_call_name_with_dot.json",
            ErrorCode::INVALID_PARAMS,
            "/params/name",
        ),
        (
            "_session_hello_short_token.json",
            ErrorCode::INVALID_PARAMS,
            "/params/token",
        ),
        (
            "_session_hello_launch_id_not_uuid.json",
            ErrorCode::INVALID_PARAMS,
            "/params/launchId",
        ),
        (
            "_event_negative_seq.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/seq",
        ),
        (
            "_event_channel_with_dot.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/channel",
        ),
        (
            "_attention_opened_blocking_string.json",
            ErrorCode::INVALID_FIELD_VALUE,
            "/payload/blocking",
        ),
    ];
    for (suffix, code, pointer) in table {
        let case = invalid_case(suffix);
        let err = decode(&case.bytes, DecodeMode::Strict).expect_err(suffix);
        assert_eq!(err.code(), *code, "{suffix}: {err}");
        assert!(
            err.pointer().starts_with(pointer),
            "{suffix}: pointer {} (want {pointer})",
            err.pointer()
        );
        // The answer carries the message's own id whenever it is a readable UUID.
        let value: Value = serde_json::from_slice(&case.bytes).expect("JSON");
        let readable = value
            .get("id")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<gabp_types::MessageId>().ok());
        assert_eq!(err.id(), readable, "{suffix}");
        let kind = match value.get("type").and_then(Value::as_str) {
            Some("request") => Some(gabp_types::MessageKind::Request),
            Some("response") => Some(gabp_types::MessageKind::Response),
            Some("event") => Some(gabp_types::MessageKind::Event),
            _ => None,
        };
        assert_eq!(err.kind(), kind, "{suffix}");
    }
}

#[test]
fn liberal_cases_are_accepted_when_reading_leniently() {
    // SPEC/1.0/gabp.md §3.5: strictly invalid, but read from peers.
    for suffix in [
        "_tools_call_parameters_instead_of_arguments.json",
        "_response_error_null_beside_result.json",
        "_session_hello_launch_id_not_uuid.json",
        "_event_channel_with_dot.json",
        "_request_unknown_top_level_field.json",
        "_response_unknown_top_level_field.json",
        "_event_unknown_top_level_field.json",
    ] {
        let case = invalid_case(suffix);
        assert!(
            decode(&case.bytes, DecodeMode::Strict).is_err(),
            "{suffix} strictly valid"
        );
        let message =
            decode(&case.bytes, DecodeMode::Lenient).unwrap_or_else(|e| panic!("{suffix}: {e}"));
        // What we read re-serializes as strictly valid GABP (apart from the names we keep as sent).
        if !suffix.contains("channel_with_dot") && !suffix.contains("launch_id") {
            decode(&message.to_vec(), DecodeMode::Strict)
                .unwrap_or_else(|e| panic!("{suffix} re-encoded: {e}"));
        }
    }
    let case = invalid_case("_tools_call_parameters_instead_of_arguments.json");
    let gabp_types::Message::Request(request) =
        decode(&case.bytes, DecodeMode::Lenient).expect("lenient")
    else {
        panic!("not a request");
    };
    let params = request.params.expect("params").to_map();
    assert!(params.contains_key("arguments") && !params.contains_key("parameters"));
    // Everything else stays refused in lenient mode too.
    for suffix in [
        "_envelope_wrong_v.json",
        "_envelope_id_braced.json",
        "_tools_call_name_with_dot.json",
    ] {
        assert!(
            decode(&invalid_case(suffix).bytes, DecodeMode::Lenient).is_err(),
            "{suffix}"
        );
    }
}

/// The lengths at which a message is cut: every boundary between two kinds of byte (structure, quote, escape,
/// digit, letter, space, anything else) and the byte after each escape, with the first and last 16 lengths.
/// Inside a run of one kind, a cut reads the same as at its ends (an unterminated string, number or literal),
/// so this checks what cutting at every byte does, in a fraction of the decodes.
fn cut_points(bytes: &[u8]) -> Vec<usize> {
    let kind = |b: u8| match b {
        b'{' | b'}' | b'[' | b']' | b',' | b':' => 0,
        b'"' => 1,
        b'\\' => 2,
        b'0'..=b'9' | b'-' | b'+' | b'.' => 3,
        b'a'..=b'z' | b'A'..=b'Z' => 4,
        b' ' | b'\n' | b'\r' | b'\t' => 5,
        _ => 6,
    };
    let len = bytes.len();
    let mut cuts: Vec<usize> = (0..len.min(16))
        .chain(len.saturating_sub(16)..len)
        .collect();
    for i in 1..len {
        if kind(bytes[i - 1]) != kind(bytes[i]) || bytes[i - 1] == b'\\' {
            cuts.extend([i, (i + 1).min(len - 1)]);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[test]
fn cut_points_cover_every_boundary() {
    let text = br#"{"a": [12, "x\\"y"], "b": true}"#;
    let cuts = cut_points(text);
    for (i, pair) in text.windows(2).enumerate() {
        if pair[0] == b'"' || pair[1] == b'"' || pair[0] == b'\\' {
            assert!(
                cuts.contains(&(i + 1)),
                "cut at {} missing: {cuts:?}",
                i + 1
            );
        }
    }
    let long = vec![b'a'; 1000];
    assert!(cut_points(&long).len() <= 32);
}

#[test]
fn truncated_inputs_never_panic() {
    let mut all = our_cases();
    all.extend(upstream_cases());
    let mut refused = 0usize;
    for case in &all {
        for cut in cut_points(&case.bytes) {
            let prefix = &case.bytes[..cut];
            for mode in [DecodeMode::Strict, DecodeMode::Lenient] {
                if decode(prefix, mode).is_err() {
                    refused += 1;
                }
                let _ = decode_response_to(prefix, "session/hello", mode);
                let _ = decode_response_to(prefix, "tools/list", mode);
            }
        }
    }
    assert!(refused > 0);
}

#[test]
fn tools_changed_payloads_are_checked_when_strict_only() {
    // SPEC/1.0 extensions.md §tools-changed: written strictly, read from peers as sent.
    for suffix in [
        "_tools_changed_missing_removed.json",
        "_tools_changed_name_with_dot.json",
        "_tools_changed_repeated_name.json",
        "_tools_changed_unknown_field.json",
        "_tools_changed_payload_null.json",
    ] {
        let case = invalid_case(suffix);
        let err = decode(&case.bytes, DecodeMode::Strict).expect_err(suffix);
        assert_eq!(
            err.code(),
            gabp_types::ErrorCode::INVALID_FIELD_VALUE,
            "{suffix}"
        );
        assert!(err.pointer().starts_with("/payload"), "{suffix}: {err}");
        decode(&case.bytes, DecodeMode::Lenient).unwrap_or_else(|e| panic!("{suffix}: {e}"));
    }
}
