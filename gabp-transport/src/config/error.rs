//! The `bridge.json` variants of [`TransportError`], made with their path and field.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::TransportError;

impl TransportError {
    /// The error with `at` as its path, for a field or syntax error found before the path was known.
    pub(super) fn at(mut self, at: &Path) -> Self {
        match &mut self {
            TransportError::BridgeJsonSyntax { path, .. }
            | TransportError::BridgeJsonField { path, .. } => {
                at.clone_into(path);
            }
            _ => {}
        }
        self
    }
}

pub(super) fn read_error(path: &Path, source: io::Error) -> TransportError {
    if source.kind() == io::ErrorKind::NotFound {
        TransportError::BridgeJsonNotFound {
            path: path.to_owned(),
        }
    } else {
        TransportError::BridgeJsonRead {
            path: path.to_owned(),
            source,
        }
    }
}

pub(super) fn write_error(step: &'static str, path: &Path, source: io::Error) -> TransportError {
    TransportError::BridgeJsonWrite {
        step,
        path: path.to_owned(),
        source,
    }
}

pub(super) fn field_error(field: &'static str, problem: impl Into<String>) -> TransportError {
    TransportError::BridgeJsonField {
        path: PathBuf::new(),
        field,
        problem: problem.into(),
    }
}
