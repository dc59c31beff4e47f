//! `gabp validate` end to end: the upstream and our corpora, stdin, `--method`, index files and exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn gabp(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gabp"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gabp runs");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        // The command may exit before reading (usage errors): a broken pipe is not a failure here.
        let _ = input.write_all(bytes);
    }
    drop(input);
    child.wait_with_output().expect("gabp finishes")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn upstream() -> Option<PathBuf> {
    let dir = root().join("../shared/reference/gabp-1.1.0");
    dir.is_dir().then_some(dir)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(path);
        }
    }
    found
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn upstream_valid_and_examples_are_accepted() {
    let Some(up) = upstream() else {
        eprintln!("../shared/reference not present; skipped");
        return;
    };
    let valid = up.join("CONFORMANCE/1.0/valid");
    let examples = up.join("EXAMPLES/1.0");
    let out = gabp(
        &[
            "validate",
            valid.to_str().unwrap(),
            examples.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    let count = |d: &Path| walk(d).len();
    assert_eq!(
        text.lines().count(),
        count(&valid) + count(&examples),
        "{text}"
    );
    assert!(text.lines().all(|l| l.ends_with(": ok")), "{text}");
}

#[test]
fn upstream_invalid_files_are_each_rejected() {
    let Some(up) = upstream() else {
        eprintln!("../shared/reference not present; skipped");
        return;
    };
    let dir = up.join("CONFORMANCE/1.0/invalid");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 8);
    for file in files {
        let out = gabp(&["validate", file.to_str().unwrap()], None);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {text}", file.display());
        assert!(
            text.starts_with(&format!("{}: invalid: ", file.display())),
            "{text}"
        );
    }
}

#[test]
fn our_corpus_and_examples_with_their_index_files() {
    let conformance = root().join("CONFORMANCE/1.0");
    let out = gabp(
        &["validate", conformance.join("valid").to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = gabp(
        &["validate", root().join("EXAMPLES/1.0").to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // index.json is read as the method map, not validated as a message.
    assert!(!stdout(&out).contains("index.json"));
    let out = gabp(
        &["validate", conformance.join("invalid").to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.lines().all(|l| l.contains(": invalid: ")), "{text}");
}

#[test]
fn stdin_and_pointer_output() {
    let body = br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request",
        "method":"tools/call","params":{"name":"inventory.get"}}"#;
    let out = gabp(&["validate", "-"], Some(body));
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.starts_with("-: invalid: /params/name: "), "{text}");
    let ok = br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request","method":"tools/list"}"#;
    let out = gabp(&["validate", "-"], Some(ok));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "-: ok\n");
}

#[test]
fn method_checks_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("response.json");
    std::fs::write(
        &file,
        br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"response","result":{"tools":[{"name":"a/b"}]}}"#,
    )
    .unwrap();
    let path = file.to_str().unwrap();
    assert_eq!(gabp(&["validate", path], None).status.code(), Some(0));
    let out = gabp(&["validate", "--method", "tools/list", path], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(": invalid: /result/tools/0"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(gabp(&["validate"], None).status.code(), Some(2));
    assert_eq!(
        gabp(&["validate", "--bogus", "x"], None).status.code(),
        Some(2)
    );
    let out = gabp(&["validate", "/nonexistent/gabp/file.json"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
    let out = gabp(&["validate", "--method", "NotAMethod", "-"], Some(b"{}"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn not_json_is_invalid_not_an_error() {
    // A whole frame is not a message.
    let out = gabp(&["validate", "-"], Some(&gabp_testkit::wire::frame(b"{}")));
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("[-32700]"));
}

#[test]
fn a_broken_index_in_a_validated_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.json"), b"[1, 2]").unwrap();
    std::fs::write(
        dir.path().join("m.json"),
        br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"response","result":{}}"#,
    )
    .unwrap();
    let out = gabp(&["validate", dir.path().to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("index.json"));
    // The same file named directly: the parent's unrelated index.json is ignored.
    let out = gabp(
        &["validate", dir.path().join("m.json").to_str().unwrap()],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
