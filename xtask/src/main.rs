//! Repository tasks for gabp-rs.
//!
//! - `cargo xtask gen-schemas [--check] [--out DIR] [--asyncapi FILE]` writes `SCHEMA/1.0/` and
//!   `asyncapi.yaml` from the Rust types in `gabp-types` and `gabp-record`; with `--check` it writes nothing
//!   and exits 1, naming each file that differs from what is on disk (missing, changed or stale).
//! - `cargo xtask check-spec-examples [PATH...]` validates every ```` ```json ```` block of the
//!   specification (`SPEC/1.0/` by default) with the strict decoder; see [`spec_examples`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod asyncapi;
mod spec_examples;
mod yaml;

const USAGE: &str = "usage: cargo xtask gen-schemas [--check] [--out DIR] [--asyncapi FILE]
       cargo xtask check-spec-examples [PATH...]

gen-schemas writes SCHEMA/1.0/ and asyncapi.yaml from the gabp-types Rust types. With --check,
it writes nothing and exits 1 naming every file that differs from the generated output (missing,
changed or stale).

check-spec-examples validates every ```json block of the Markdown files under PATH (default
SPEC/1.0) with the strict decoder, one line per block, and exits 1 if any is invalid.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen-schemas") => gen_schemas(&args[1..]),
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

fn gen_schemas(args: &[String]) -> ExitCode {
    let mut check = false;
    let mut out = repo_root().join("SCHEMA").join("1.0");
    let mut asyncapi_path = repo_root().join("asyncapi.yaml");
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--out" => match it.next() {
                Some(dir) => out = PathBuf::from(dir),
                None => {
                    eprintln!("--out needs a directory\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--asyncapi" => match it.next() {
                Some(file) => asyncapi_path = PathBuf::from(file),
                None => {
                    eprintln!("--asyncapi needs a file\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
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
    let expected: BTreeSet<PathBuf> = files.iter().map(|f| PathBuf::from(&f.path)).collect();
    let mut problems = Vec::new();
    for file in &files {
        let path = out.join(&file.path);
        let text = file.render();
        if check {
            match std::fs::read_to_string(&path) {
                Ok(existing) if existing == text => {}
                Ok(_) => problems.push(format!(
                    "{}: differs from the generated schema",
                    path.display()
                )),
                Err(_) => problems.push(format!("{}: missing", path.display())),
            }
        } else {
            let write = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, &text));
            if let Err(e) = write {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let asyncapi_text = asyncapi::render();
    if check {
        match std::fs::read_to_string(&asyncapi_path) {
            Ok(existing) if existing == asyncapi_text => {}
            Ok(_) => problems.push(format!(
                "{}: differs from the generated AsyncAPI document",
                asyncapi_path.display()
            )),
            Err(_) => problems.push(format!("{}: missing", asyncapi_path.display())),
        }
    } else if let Err(e) = std::fs::write(&asyncapi_path, &asyncapi_text) {
        eprintln!("error: cannot write {}: {e}", asyncapi_path.display());
        return ExitCode::from(2);
    }
    // Files under the output directory that the generator no longer produces.
    for stale in json_files(&out)
        .into_iter()
        .filter_map(|p| p.strip_prefix(&out).ok().map(Path::to_path_buf))
        .filter(|rel| !expected.contains(rel))
    {
        let path = out.join(&stale);
        if check {
            problems.push(format!(
                "{}: not generated by gabp-types (stale)",
                path.display()
            ));
        } else if let Err(e) = std::fs::remove_file(&path) {
            eprintln!("error: cannot remove stale {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if check {
        if problems.is_empty() {
            println!(
                "{} schema files up to date in {}, and {}",
                files.len(),
                out.display(),
                asyncapi_path.display()
            );
            ExitCode::SUCCESS
        } else {
            for p in &problems {
                eprintln!("{p}");
            }
            eprintln!("run `cargo xtask gen-schemas` to regenerate");
            ExitCode::from(1)
        }
    } else {
        println!(
            "wrote {} schema files to {}, and {}",
            files.len(),
            out.display(),
            asyncapi_path.display()
        );
        ExitCode::SUCCESS
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
