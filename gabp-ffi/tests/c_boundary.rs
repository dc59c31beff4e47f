//! The header compiles as C (and C++), links against the library, and the boundary rules hold from C:
//! `tests/c/boundary.c`, built with the system C compiler. Skipped, with a message, when there is none.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Command;

use support::library_dir;

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

/// Godot's and Unreal's plugins are C++: the header compiles as C++ too, warnings as errors.
#[test]
fn the_header_compiles_as_cpp() {
    if !support::have("c++") {
        eprintln!("SKIPPED: no C++ compiler (c++) on this machine; .ci/run has one");
        return;
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let source = out.path().join("header.cpp");
    std::fs::write(
        &source,
        "#include \"gabp.h\"\nint main() { return gabp_abi_version() == GABP_ABI_VERSION ? 0 : 1; }\n",
    )
    .unwrap();
    let checked = Command::new("c++")
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
        ])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}
