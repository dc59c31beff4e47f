//! `cargo xtask gen-header [--check]`: writes `gabp-ffi/include/gabp.h` from the gabp-ffi crate with cbindgen
//! (its settings in `gabp-ffi/cbindgen.toml`); with `--check` it writes nothing and exits 1 when the committed
//! header differs.

use std::path::Path;
use std::process::ExitCode;

pub fn run(args: &[String], root: &Path) -> ExitCode {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => {
            eprintln!("usage: cargo xtask gen-header [--check]");
            return ExitCode::from(2);
        }
    };
    let crate_dir = root.join("gabp-ffi");
    let path = crate_dir.join("include").join("gabp.h");
    let config = match cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gabp-ffi/cbindgen.toml: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bindings = match cbindgen::generate_with_config(&crate_dir, config) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cbindgen could not read gabp-ffi: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut text = Vec::new();
    bindings.write(&mut text);
    let on_disk = std::fs::read(&path).unwrap_or_default();
    if check {
        if on_disk == text {
            println!("{} is up to date", path.display());
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "{} differs from what gabp-ffi generates; run `cargo xtask gen-header`",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&path, &text) {
        eprintln!("{}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}
