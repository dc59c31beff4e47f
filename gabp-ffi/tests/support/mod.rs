//! What the gabp-ffi tests share: the shared library built for C and C#, a free port, a token.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A token bridges and mods in the tests agree on.
pub const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Whether `tool --version` runs.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds the shared library (`cargo test` builds only what Rust links) and returns its directory: the
/// profile directory above this test's `deps/`.
pub fn library_dir() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a profile directory")
        .to_owned();
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet", "-p", "gabp-ffi", "--lib"]);
    if dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let built = build.output().expect("cargo runs");
    assert!(
        built.status.success(),
        "cargo build -p gabp-ffi: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    dir
}

/// A loopback TCP port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}
