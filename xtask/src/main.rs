//! Repository tasks for gabp-rs.
//!
//! - `cargo xtask gen-schemas [--check] [--out DIR] [--asyncapi FILE] [--npm DIR]` writes `SCHEMA/1.0/`,
//!   `asyncapi.yaml` and the generated files of the npm package `packages/npm/gabp-schemas` (see [`npm`])
//!   from the Rust types in `gabp-types` and `gabp-record`; with `--check` it writes nothing and exits 1,
//!   naming each file that differs from what is on disk (missing, changed or stale).
//! - `cargo xtask gen-header [--check]` writes the C header `gabp-ffi/include/gabp.h` with cbindgen; see
//!   [`header`].
//! - `cargo xtask check-spec-examples [PATH...]` validates every ```` ```json ```` block of the
//!   specification (`SPEC/1.0/` by default) with the strict decoder; see [`spec_examples`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod asyncapi;
mod header;
mod npm;
mod spec_examples;
mod ts;
mod yaml;

const USAGE: &str =
    "usage: cargo xtask gen-schemas [--check] [--out DIR] [--asyncapi FILE] [--npm DIR]
       cargo xtask gen-header [--check]
       cargo xtask check-spec-examples [PATH...]

gen-schemas writes SCHEMA/1.0/, asyncapi.yaml and the generated files of the npm package
packages/npm/gabp-schemas (its schemas/, catalog.json, types.d.ts, package.json and LICENSE) from
the gabp-types Rust types. With --check, it writes nothing and exits 1 naming every file that
differs from the generated output (missing, changed or stale).

gen-header writes gabp-ffi/include/gabp.h from the gabp-ffi crate (cbindgen); with --check it
writes nothing and exits 1 when the committed header differs.

check-spec-examples validates every ```json block of the Markdown files under PATH (default
SPEC/1.0) with the strict decoder, one line per block, and exits 1 if any is invalid.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen-schemas") => gen_schemas(&args[1..]),
        Some("gen-header") => header::run(&args[1..], &repo_root()),
        Some("check-spec-examples") => spec_examples::run(&args[1..], &repo_root()),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// One file `gen-schemas` writes, or compares with what is on disk under `--check`.
struct Output {
    path: PathBuf,
    text: String,
    /// What the file should be, for the message naming a file that differs.
    kind: &'static str,
}

fn gen_schemas(args: &[String]) -> ExitCode {
    let mut check = false;
    let mut out = repo_root().join("SCHEMA").join("1.0");
    let mut asyncapi_path = repo_root().join("asyncapi.yaml");
    let mut npm_dir = repo_root().join(npm::PACKAGE_DIR);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let target = match arg.as_str() {
            "--check" => {
                check = true;
                continue;
            }
            "--out" => &mut out,
            "--asyncapi" => &mut asyncapi_path,
            "--npm" => &mut npm_dir,
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        };
        match it.next() {
            Some(value) => *target = PathBuf::from(value),
            None => {
                eprintln!("{arg} needs a path\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let mut files = gabp_types::schema::schema_files();
    // The recording format of gabp-record (SPEC/1.0 recording.md), one schema for every line.
    files.push(gabp_types::schema::schema_file_for::<gabp_record::Line>(
        "recording.schema.json",
        "GABP recording line",
        "One line of a gabp-recording JSON Lines file: the header (line 1) or a record.",
    ));
    let mut outputs: Vec<Output> = files
        .iter()
        .map(|f| Output {
            path: out.join(&f.path),
            text: f.render(),
            kind: "the generated schema",
        })
        .collect();
    outputs.push(Output {
        path: asyncapi_path.clone(),
        text: asyncapi::render(),
        kind: "the generated AsyncAPI document",
    });
    let license_path = repo_root().join("LICENSES").join("CODE-LICENSE.txt");
    let license = match std::fs::read_to_string(&license_path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", license_path.display());
            return ExitCode::from(2);
        }
    };
    match npm::files(&files, &license) {
        Ok(npm_files) => outputs.extend(npm_files.into_iter().map(|f| Output {
            path: npm_dir.join(&f.path),
            text: f.text,
            kind: "the generated npm package file",
        })),
        Err(e) => {
            eprintln!("error: the npm package: {e}");
            return ExitCode::from(2);
        }
    }
    let mut problems = Vec::new();
    for output in &outputs {
        let path = &output.path;
        if check {
            match std::fs::read_to_string(path) {
                Ok(existing) if existing == output.text => {}
                Ok(_) => problems.push(format!("{}: differs from {}", path.display(), output.kind)),
                Err(_) => problems.push(format!("{}: missing", path.display())),
            }
        } else {
            let write = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(path, &output.text));
            if let Err(e) = write {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    // JSON files under the generated directories that the generator no longer produces.
    let expected: BTreeSet<&Path> = outputs.iter().map(|o| o.path.as_path()).collect();
    let generated_dirs = [out.clone(), npm_dir.join(npm::SCHEMAS_DIR)];
    for stale in generated_dirs
        .iter()
        .flat_map(|dir| json_files(dir))
        .filter(|p| !expected.contains(p.as_path()))
    {
        if check {
            problems.push(format!("{}: not generated (stale)", stale.display()));
        } else if let Err(e) = std::fs::remove_file(&stale) {
            eprintln!("error: cannot remove stale {}: {e}", stale.display());
            return ExitCode::from(2);
        }
    }
    let summary = format!(
        "{} schema files in {}, {}, and the npm package in {}",
        files.len(),
        out.display(),
        asyncapi_path.display(),
        npm_dir.display()
    );
    if !check {
        println!("wrote {summary}");
        return ExitCode::SUCCESS;
    }
    if problems.is_empty() {
        println!("up to date: {summary}");
        ExitCode::SUCCESS
    } else {
        for p in &problems {
            eprintln!("{p}");
        }
        eprintln!("run `cargo xtask gen-schemas` to regenerate");
        ExitCode::from(1)
    }
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(json_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(path);
        }
    }
    found
}
