//! `gabp validate`: strict validation of message files.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use gabp_types::decode::{decode, decode_response_to, DecodeMode};
use gabp_types::MethodName;

use crate::terminal::Progress;

/// Arguments of `gabp validate`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  gabp validate CONFORMANCE/1.0/valid
  gabp validate --method tools/list response.json
  cat message.json | gabp validate -

Directories are searched recursively for *.json. A file named index.json in a directory is not
validated: it maps files of that directory (relative paths) to the request method their response
answers, as --method does for one file.

Exit status: 0 when every file is valid, 1 when any is invalid, 2 on a usage or I/O error.")]
pub struct ValidateArgs {
    /// The request method whose result a success response carries (checks the result's schema too).
    #[arg(long, value_name = "METHOD")]
    pub method: Option<String>,
    /// Files, directories, or `-` for standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// One input to validate.
struct Input {
    label: String,
    path: Option<PathBuf>,
}

/// What `validate` concluded overall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every file is valid.
    AllValid,
    /// At least one file is invalid.
    SomeInvalid,
    /// A usage or I/O error happened.
    Error,
}

impl Outcome {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Outcome::AllValid => 0,
            Outcome::SomeInvalid => 1,
            Outcome::Error => 2,
        }
    }
}

/// Runs `gabp validate`, writing verdicts to `out` and errors to `err`.
pub fn run(
    args: &ValidateArgs,
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    if let Some(m) = &args.method {
        if let Err(e) = MethodName::new(m.as_str()) {
            let _ = writeln!(err, "error: --method: {e}");
            return Outcome::Error;
        }
    }
    let mut methods: HashMap<PathBuf, String> = HashMap::new();
    let mut inputs = Vec::new();
    let mut failed_io = false;
    for path in &args.paths {
        if path.as_os_str() == "-" {
            inputs.push(Input {
                label: "-".into(),
                path: None,
            });
        } else if path.exists() {
            load_ancestor_indexes(path, &mut methods);
            if path.is_dir() {
                if let Err(e) = collect_dir(path, &mut inputs, &mut methods) {
                    let _ = writeln!(err, "error: {e}");
                    failed_io = true;
                }
                continue;
            }
            inputs.push(Input {
                label: path.display().to_string(),
                path: Some(path.clone()),
            });
        } else {
            let _ = writeln!(err, "error: {}: no such file or directory", path.display());
            failed_io = true;
        }
    }
    let mut any_invalid = false;
    let mut progress = Progress::new(inputs.len() as u64, "files");
    for (done, input) in inputs.iter().enumerate() {
        progress.set(done as u64, &input.label);
        let bytes = match &input.path {
            None => {
                let mut buf = Vec::new();
                match stdin.read_to_end(&mut buf) {
                    Ok(_) => buf,
                    Err(e) => {
                        let _ = progress
                            .suspend(|| writeln!(err, "error: -: cannot read standard input: {e}"));
                        failed_io = true;
                        continue;
                    }
                }
            }
            Some(p) => match std::fs::read(p) {
                Ok(b) => b,
                Err(e) => {
                    let _ = progress.suspend(|| writeln!(err, "error: {}: {e}", input.label));
                    failed_io = true;
                    continue;
                }
            },
        };
        let method = args.method.clone().or_else(|| {
            input
                .path
                .as_ref()
                .and_then(|p| methods.get(&normalize(p)).cloned())
        });
        let verdict = match &method {
            Some(m) => decode_response_to(&bytes, m, DecodeMode::Strict),
            None => decode(&bytes, DecodeMode::Strict),
        };
        let line = match verdict {
            Ok(_) => format!("{}: ok", input.label),
            Err(e) => {
                any_invalid = true;
                let pointer = if e.pointer().is_empty() {
                    "(message)"
                } else {
                    e.pointer()
                };
                format!(
                    "{}: invalid: {}: {} [{}]",
                    input.label,
                    pointer,
                    e.reason(),
                    e.code().code()
                )
            }
        };
        progress.suspend(|| writeln!(out, "{line}")).ok();
    }
    progress.clear();
    if failed_io {
        Outcome::Error
    } else if any_invalid {
        Outcome::SomeInvalid
    } else {
        Outcome::AllValid
    }
}

/// A path normalized for index lookups: canonical when it exists, so that `a/../b/x.json` and `b/x.json` match.
fn normalize(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Loads the `index.json` of every directory above `path`, so that validating `CONFORMANCE/1.0/valid` still
/// finds `CONFORMANCE/1.0/index.json`. An ancestor's `index.json` that is not a method index is someone else's
/// file and is ignored; a broken index inside a validated directory is reported by [`collect_dir`].
fn load_ancestor_indexes(path: &Path, methods: &mut HashMap<PathBuf, String>) {
    let start = normalize(path);
    for dir in start.ancestors().skip(1) {
        let _ = load_index(dir, methods);
    }
}

fn load_index(dir: &Path, methods: &mut HashMap<PathBuf, String>) -> Result<(), String> {
    let index = dir.join("index.json");
    if !index.is_file() {
        return Ok(());
    }
    let text = std::fs::read_to_string(&index).map_err(|e| format!("{}: {e}", index.display()))?;
    let map: HashMap<String, String> = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: an index maps relative paths to method names ({e})",
            index.display()
        )
    })?;
    for (rel, method) in map {
        methods.entry(normalize(&dir.join(rel))).or_insert(method);
    }
    Ok(())
}

fn collect_dir(
    dir: &Path,
    inputs: &mut Vec<Input>,
    methods: &mut HashMap<PathBuf, String>,
) -> Result<(), String> {
    load_index(&normalize(dir), methods)?;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_dir(&path, inputs, methods)?;
        } else if path.extension().is_some_and(|e| e == "json")
            && path.file_name().is_some_and(|n| n != "index.json")
        {
            inputs.push(Input {
                label: path.display().to_string(),
                path: Some(path),
            });
        }
    }
    Ok(())
}
