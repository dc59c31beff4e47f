//! The runtime record: what the hub started, in `DIR/<id>/runtime.json`, so that a later session (after the
//! hub was killed) finds a game still running and attaches to it or stops it instead of starting a second
//! copy (docs/mcp.md, "Games do not outlive the hub").
//!
//! ```json
//! {"gameId": "voxel", "pid": 4242, "identity": "1234567", "port": 23456, "launchMode": "DirectPath", "hubPid": 4200}
//! ```
//!
//! `identity` tells the process from a later one with the same pid (on Linux its start time in
//! `/proc/<pid>/stat`). The token is not in it: it is in `bridge.json` beside it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::procs::Foreign;

/// The file name, in the game's directory.
pub const RUNTIME_FILE: &str = "runtime.json";
/// A record longer than this is not one the hub wrote.
const MAX_BYTES: u64 = 16 * 1024;

/// One game the hub started (or found, for a store launch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    pub(crate) game_id: String,
    pub(crate) pid: u32,
    pub(crate) identity: String,
    pub(crate) port: u16,
    pub(crate) launch_mode: String,
    pub(crate) hub_pid: u32,
}

pub(crate) fn path(game_dir: &Path) -> PathBuf {
    game_dir.join(RUNTIME_FILE)
}

/// Writes the record (0600, through a temporary file and a rename, so a reader never sees half of it).
pub(crate) fn write(game_dir: &Path, record: &Record) -> Result<(), String> {
    let path = path(game_dir);
    let tmp = game_dir.join("runtime.json.tmp");
    let text = serde_json::to_vec(record).map_err(|e| e.to_string())?;
    let write = || -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The record of game `id`, if there is a valid one. A file that cannot be read, is too long or is not a
/// record of this game is reported (warn) and removed.
pub(crate) fn read(game_dir: &Path, id: &str) -> Option<Record> {
    let path = path(game_dir);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the runtime record; ignored");
            return None;
        }
    };
    let mut bytes = Vec::new();
    let read = file.take(MAX_BYTES + 1).read_to_end(&mut bytes);
    let record = match read {
        Ok(n) if n as u64 > MAX_BYTES => Err(format!("longer than {MAX_BYTES} bytes")),
        Ok(_) => serde_json::from_slice::<Record>(&bytes).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
    .and_then(|r| {
        if r.game_id == id {
            Ok(r)
        } else {
            Err(format!("/gameId: expected \"{id}\""))
        }
    });
    match record {
        Ok(record) => Some(record),
        Err(reason) => {
            tracing::warn!(path = %path.display(), %reason, "not a runtime record; ignored and removed");
            remove(game_dir);
            None
        }
    }
}

/// Removes the record (when the game has ended).
pub(crate) fn remove(game_dir: &Path) {
    let path = path(game_dir);
    if let Err(e) = std::fs::remove_file(&path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove the runtime record");
        }
    }
}

/// The process a record names, when it still runs and is the one recorded.
pub(crate) fn live(record: &Record) -> Option<Foreign> {
    Foreign::now(record.pid).filter(|now| now.identity == record.identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        Record {
            game_id: "g".to_owned(),
            pid: 1,
            identity: "7".to_owned(),
            port: 2,
            launch_mode: "DirectPath".to_owned(),
            hub_pid: 3,
        }
    }

    #[test]
    fn a_record_is_read_back_and_a_corrupt_one_is_ignored_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), "g"), None);
        write(dir.path(), &record()).unwrap();
        assert_eq!(read(dir.path(), "g"), Some(record()));
        // Another game's record is not this game's.
        assert_eq!(read(dir.path(), "h"), None);
        assert!(!path(dir.path()).exists());
        std::fs::write(path(dir.path()), b"{not json").unwrap();
        assert_eq!(read(dir.path(), "g"), None);
        assert!(!path(dir.path()).exists());
        std::fs::write(path(dir.path()), vec![b' '; 20_000]).unwrap();
        assert_eq!(read(dir.path(), "g"), None);
        assert!(!path(dir.path()).exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_record_of_a_process_that_ended_or_was_replaced_is_not_live() {
        let mut own = record();
        own.pid = std::process::id();
        own.identity = crate::procs::identity(own.pid).unwrap();
        assert!(live(&own).is_some());
        own.identity.push('0');
        assert!(live(&own).is_none(), "a reused pid is not the game");
    }
}
