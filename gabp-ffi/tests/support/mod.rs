//! What the gabp-ffi tests share: the shared library built for C and C#, a free port, a token.
#![allow(dead_code)]

use std::ffi::c_char;
use std::path::{Path, PathBuf};
use std::process::Command;

use gabp::{gabp_last_error, gabp_string_free, GabpStatus, GabpString};

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

/// A Rust string as the pointer and length a C caller passes.
pub fn s(text: &str) -> (*const c_char, usize) {
    (text.as_ptr().cast(), text.len())
}

/// This thread's last error.
pub fn last_error() -> String {
    let mut len = 0;
    // SAFETY: the library's own per-thread string, read at once.
    let ptr = unsafe { gabp_last_error(&mut len) };
    // SAFETY: `len` bytes at `ptr`, as gabp_last_error gives them.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// Asserts `GABP_STATUS_OK`, showing the last error otherwise.
pub fn ok(status: GabpStatus) {
    assert_eq!(status, GabpStatus::Ok, "{}", last_error());
}

/// An empty string for the library to fill in.
pub fn empty() -> GabpString {
    GabpString {
        ptr: std::ptr::null_mut(),
        len: 0,
    }
}

/// The text of a string the library gave out, which is freed.
pub fn take(mut string: GabpString) -> String {
    // SAFETY: a string the library filled in: `len` bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(string.ptr.cast::<u8>(), string.len) };
    let text = String::from_utf8(bytes.to_vec()).expect("UTF-8");
    // SAFETY: freed once, here.
    unsafe { gabp_string_free(&mut string) };
    text
}
