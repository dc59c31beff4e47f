//! The header compiles as C (and C++), links against the library, and the boundary rules hold from C:
//! `tests/c/boundary.c`, built with the system C compiler. Skipped, with a message, when there is none.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the shared library (`cargo test` builds only what Rust links) and returns its directory: the
/// profile directory above this test's `deps/`.
fn library_dir() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().to_owned();
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet", "-p", "gabp-ffi", "--lib"]);
    if dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let built = build.output().unwrap();
    assert!(
        built.status.success(),
        "cargo build -p gabp-ffi: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    dir
}

fn compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()?
        .status
        .success()
        .then_some(cc)
}

#[test]
#[cfg(unix)]
fn the_boundary_rules_hold_from_c() {
    let Some(cc) = compiler() else {
        eprintln!("SKIPPED: no C compiler (cc, or $CC) on this machine; .ci/run has one");
        return;
    };
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let exe = out.path().join("boundary");
    let lib = library_dir();
    assert!(
        lib.join("libgabp.so").exists() || lib.join("libgabp.dylib").exists(),
        "{}",
        lib.display()
    );
    let built = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg(crate_dir.join("tests/c/boundary.c"))
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lgabp", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).env("HOME", out.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(stdout.contains("0 failed"), "{stdout}");
}
