//! The Python package's tests (tests/python, pytest), run against the extension module this build made:
//! bridges against `gabp mod`, Python mods checked by `gabp conformance`, asyncio, Ctrl-C, every error class.
//! They need a Python with pytest: `$GABP_PY_PYTHON`, else the virtual environment `.ci/run` makes
//! (`~/.cache/gabp-py-venv`). Skipped, with a message, when there is none.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python that has pytest, if there is one.
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("GABP_PY_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| Path::new(&home).join(".cache/gabp-py-venv/bin/python"))
        })?;
    Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .ok()?
        .status
        .success()
        .then_some(python)
}

/// Builds the `gabp` binary (`cargo test` builds only what Rust links) and returns the profile directory it is
/// in, beside the extension module `cargo test` built as this package's library.
fn build() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(Path::parent).unwrap().to_owned();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.args([
        "build", "--quiet", "-p", "gabp-py", "--lib", "-p", "gabp-cli", "--bin", "gabp",
    ]);
    if profile.file_name().is_some_and(|n| n == "release") {
        command.arg("--release");
    }
    let built = command.output().unwrap();
    assert!(
        built.status.success(),
        "cargo build: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    profile
}

/// The package as a wheel lays it out: the Python modules and the extension module beside them.
fn package(profile: &Path, into: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/gabp");
    let target = into.join("gabp");
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, target.join(path.file_name().unwrap())).unwrap();
        }
    }
    let library = ["lib_gabp.so", "lib_gabp.dylib"]
        .iter()
        .map(|name| profile.join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("no lib_gabp in {}", profile.display()));
    std::fs::copy(library, target.join("_gabp.abi3.so")).unwrap();
}

#[test]
#[cfg(unix)]
fn the_python_package_passes_its_tests() {
    let Some(python) = python() else {
        eprintln!(
            "SKIPPED: no Python with pytest (set GABP_PY_PYTHON, or make ~/.cache/gabp-py-venv with \
             `pip install pytest gymnasium numpy`); .ci/run makes one"
        );
        return;
    };
    let profile = build();
    let site = tempfile::tempdir().unwrap();
    package(&profile, site.path());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let ran = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .env("PYTHONPATH", site.path())
        .env("GABP_BIN", profile.join("gabp"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    println!("{stdout}");
    assert!(
        ran.status.success(),
        "pytest failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(stdout.contains(" passed"), "{stdout}");
}
