//! Running the `gabp` client commands in tests: an isolated environment (a private home, so no real
//! `bridge.json` is read; no GABS variables; `NO_COLOR`), deadlines on everything, golden files with a bless
//! mode, and masks for what changes from run to run (ports, temporary paths, attention ids, the version).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long a command may take before the test gives up (generous: a loaded 2-core machine, a debug build).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// `gabp ARGS` in an isolated environment whose home is `home`.
pub fn gabp_in(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gabp"));
    command
        .args(args)
        .env_remove("GABP_TOKEN")
        .env_remove("GABP_SERVER_PORT")
        .env_remove("GABS_GAME_ID")
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_RUNTIME_DIR", home)
        .stdin(Stdio::null());
    command
}

/// Runs `command` to completion within [`DEADLINE`] (killing it and failing the test otherwise).
pub fn output(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gabp");
    let stdout = read_all(child.stdout.take().expect("stdout"));
    let stderr = read_all(child.stderr.take().expect("stderr"));
    let status = wait(&mut child, DEADLINE);
    Output {
        status,
        stdout: stdout.recv().unwrap_or_default(),
        stderr: stderr.recv().unwrap_or_default(),
    }
}

/// Runs `gabp ARGS` in a fresh isolated home.
pub fn run(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("tempdir");
    output(gabp_in(home.path(), args))
}

fn read_all<R: Read + Send + 'static>(mut source: R) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = source.read_to_end(&mut bytes);
        let _ = tx.send(bytes);
    });
    rx
}

/// Waits for `child` to exit within `patience`; kills it and panics otherwise.
pub fn wait(child: &mut Child, patience: Duration) -> ExitStatus {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gabp did not exit within {patience:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads `source` line by line on a thread.
pub fn lines<R: Read + Send + 'static>(source: R) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(source).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}

/// Asserts the shape of a failed client command: exit status 1, nothing on stdout, exactly one line on
/// stderr starting with `error: `, no panic or backtrace, and the token nowhere. Returns the line.
pub fn one_error_line(out: &Output, token: &str) -> String {
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stdout, "", "stderr:\n{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.ends_with('\n'),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
    assert!(
        token.is_empty() || !stderr.contains(token),
        "the token leaked: {stderr}"
    );
    stderr.trim_end().to_owned()
}

/// Replaces each `prefix` followed by digits with `prefix` and `mask`.
pub fn mask_digits_after(text: &str, prefix: &str, mask: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let (before, after) = rest.split_at(at + prefix.len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            out.push_str(mask);
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Masks the attention ids of a default attention manager: `att-` and 8 random hex digits.
pub fn mask_attention_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("att-") {
        let (before, after) = rest.split_at(at + 4);
        out.push_str(before);
        let hex = after.chars().take_while(char::is_ascii_hexdigit).count();
        if hex == 8 {
            out.push_str("RANDOM");
            rest = &after[8..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// What changes from run to run or between systems: loopback ports, attention ids, OS error numbers, the
/// crate version.
pub fn mask(text: &str) -> String {
    let text = mask_digits_after(text, "tcp://127.0.0.1:", "PORT");
    let text = mask_digits_after(&text, "(os error ", "N");
    let text = mask_attention_ids(&text);
    text.replace(env!("CARGO_PKG_VERSION"), "VERSION")
}

fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(name)
}

/// Whether to rewrite golden files instead of checking them: `GABP_BLESS_GOLDEN=1`.
pub fn blessing() -> bool {
    std::env::var_os("GABP_BLESS_GOLDEN").is_some_and(|v| v == "1")
}

/// Checks `actual` against `tests/golden/NAME` (or rewrites it when blessing), with a line diff on failure.
pub fn golden(name: &str, actual: &str) {
    let path = golden_path(name);
    if blessing() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir golden");
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run GABP_BLESS_GOLDEN=1 cargo test -p gabp-cli to create it",
            path.display()
        )
    });
    if expected != actual {
        let mut diff = String::new();
        let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
        for i in 0..e.len().max(a.len()) {
            let (x, y) = (e.get(i).copied(), a.get(i).copied());
            if x != y {
                diff.push_str(&format!(
                    "line {}:\n  expected: {}\n  actual:   {}\n",
                    i + 1,
                    x.unwrap_or("<none>"),
                    y.unwrap_or("<none>")
                ));
            }
        }
        panic!(
            "{} differs (GABP_BLESS_GOLDEN=1 cargo test -p gabp-cli rewrites it; review the diff):\n{diff}",
            path.display()
        );
    }
}
