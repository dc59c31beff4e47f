//! Writing the file atomically and privately (SPEC/1.0/transport.md §4.3).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::write_error;
use super::BridgeConfig;
use crate::error::TransportError;

impl BridgeConfig {
    /// Write this configuration to `path` atomically, readable by the current user only.
    ///
    /// Steps: create the parent directories (mode 0700 where created), write a temporary file in
    /// the same directory created with mode 0600, `fsync` it, `rename` it over `path`, `fsync` the
    /// directory, then check that `path` is a regular file with mode 0600 that is the file just
    /// written. A file already at `path` is replaced, never reused, so its old permissions do not
    /// survive. On Windows the file inherits the per-user ACL of `%APPDATA%` and the mode checks
    /// are skipped.
    ///
    /// This is blocking file-system work; from async code call it through
    /// `tokio::task::spawn_blocking`.
    ///
    /// # Errors
    ///
    /// [`TransportError::BridgeJsonWrite`] naming the step that failed,
    /// [`TransportError::BridgeJsonNotPrivate`] if the written file does not have the expected
    /// owner-only permissions, or [`TransportError::BridgeJsonUnwritable`] (see
    /// [`BridgeConfig::to_json_string`]). The temporary file is removed on every error.
    pub fn write_atomic(&self, path: impl AsRef<Path>) -> Result<(), TransportError> {
        self.write_identified(path.as_ref()).map(drop)
    }

    /// [`BridgeConfig::write_atomic`], returning what identifies the file written.
    pub(super) fn write_identified(&self, path: &Path) -> Result<FileIdentity, TransportError> {
        let text = self.to_json_string()?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .ok_or_else(|| write_error("name the file", path, io::ErrorKind::InvalidInput.into()))?
            .to_string_lossy()
            .into_owned();
        create_private_dir_all(&dir).map_err(|e| write_error("create the directory", &dir, e))?;

        let (tmp_path, mut file) = create_temp_file(&dir, &file_name)?;
        let result = (|| {
            restrict_to_owner(&file).map_err(|e| write_error("set mode 0600 on", &tmp_path, e))?;
            file.write_all(text.as_bytes())
                .map_err(|e| write_error("write", &tmp_path, e))?;
            file.sync_all()
                .map_err(|e| write_error("fsync", &tmp_path, e))?;
            let identity =
                FileIdentity::of(&file, &text).map_err(|e| write_error("stat", &tmp_path, e))?;
            fs::rename(&tmp_path, path).map_err(|e| write_error("rename into", path, e))?;
            Ok(identity)
        })();
        let identity = match result {
            Ok(identity) => identity,
            Err(e) => {
                let _ = fs::remove_file(&tmp_path);
                return Err(e);
            }
        };
        drop(file);
        sync_dir(&dir);
        identity.verify(path)?;
        Ok(identity)
    }
}

/// Create `dir` and its missing parents; those created get mode 0700 on Unix.
fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Create a new temporary file beside the target, mode 0600 from its creation on Unix.
fn create_temp_file(dir: &Path, file_name: &str) -> Result<(PathBuf, fs::File), TransportError> {
    let mut last = None;
    for _ in 0..8 {
        let mut rnd = [0u8; 8];
        getrandom::fill(&mut rnd).map_err(|e| {
            write_error(
                "get random bytes for a temporary name in",
                dir,
                io::Error::other(e.to_string()),
            )
        })?;
        let tmp = dir.join(format!(".{file_name}.{}.tmp", crate::token::to_hex(&rnd)));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(write_error("create a temporary file in", dir, e)),
        }
    }
    Err(write_error(
        "create a temporary file in",
        dir,
        last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()),
    ))
}

/// Set mode 0600 on an open file (the umask may have taken the owner's bits away).
fn restrict_to_owner(file: &fs::File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Flush the directory entry of a rename to disk. Best effort: some file systems refuse it.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), error = %e, "fsync of the bridge.json directory failed");
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// What a written file must still be after the rename (and is, until someone replaces it).
pub(super) struct FileIdentity {
    #[cfg(unix)]
    dev: u64,
    #[cfg(unix)]
    ino: u64,
    #[cfg(unix)]
    uid: u32,
    /// Without inode numbers, the text written tells the file apart (it holds the token).
    #[cfg(not(unix))]
    text: String,
}

impl FileIdentity {
    fn of(file: &fs::File, text: &str) -> io::Result<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = text;
            let m = file.metadata()?;
            Ok(FileIdentity {
                dev: m.dev(),
                ino: m.ino(),
                uid: m.uid(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            Ok(FileIdentity {
                text: text.to_owned(),
            })
        }
    }

    /// Whether the file at `path` is still the one written (not replaced, not removed).
    pub(super) fn is_at(&self, path: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (self.dev, self.ino))
        }
        #[cfg(not(unix))]
        {
            fs::read_to_string(path).is_ok_and(|text| text == self.text)
        }
    }

    fn verify(&self, path: &Path) -> Result<(), TransportError> {
        let m = fs::symlink_metadata(path).map_err(|e| write_error("stat", path, e))?;
        let fail = |problem: String| TransportError::BridgeJsonNotPrivate {
            path: path.to_owned(),
            problem,
        };
        if !m.file_type().is_file() {
            return Err(fail("it is not a regular file".into()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let mode = m.mode() & 0o7777;
            if mode != 0o600 {
                return Err(fail(format!("its mode is {mode:04o}, not 0600")));
            }
            if (m.dev(), m.ino()) != (self.dev, self.ino) {
                return Err(fail("it was replaced by another file".into()));
            }
            if m.uid() != self.uid {
                return Err(fail(format!("it is owned by uid {}", m.uid())));
            }
        }
        Ok(())
    }
}
