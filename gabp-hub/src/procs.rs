//! Processes the hub did not fork itself: a game a store launcher started, found by its `stopProcessName`, and
//! a game recorded by an earlier session of the hub. Each is known by its pid and an identity that changes
//! when the pid is reused, so that the hub never signals a stranger.

use std::time::Duration;

/// How often a process that is not the hub's child is checked for its end.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// What makes process `pid` this process and not a later one with the same pid: on Linux its start time
/// (`/proc/<pid>/stat`, field 22), on other Unix systems `ps -o lstart=`, on Windows its image name. `None`
/// when there is no such process (a zombie counts as gone) or it cannot be told.
pub(crate) fn identity(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name in parentheses may hold anything; the fields follow the last ')'.
        let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
        if fields.next()? == "Z" {
            return None;
        }
        // Fields 4 to 22 are the 2nd to 20th after the state.
        fields.nth(18).map(str::to_owned)
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        let out = std::process::Command::new("ps")
            .args(["-o", "stat=,lstart=", "-p", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let (state, started) = text.split_once(char::is_whitespace)?;
        (!state.starts_with('Z') && !started.trim().is_empty()).then(|| started.trim().to_owned())
    }
    #[cfg(windows)]
    {
        tasklist(&format!("PID eq {pid}"))
            .ok()?
            .into_iter()
            .find(|(_, p)| *p == pid)
            .map(|(image, _)| image)
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = pid;
        None
    }
}

/// The processes of this user whose name is `name`, oldest first (the hub's own excluded). On Linux the
/// name is the command name (`/proc/<pid>/comm`), the file name of `argv[0]` or of the executable; on other
/// Unix systems what `pgrep -x` matches; on Windows the image name (`Game.exe`).
pub(crate) fn find_by_name(name: &str) -> Result<Vec<u32>, String> {
    let own = std::process::id();
    let mut found = by_name(name)?;
    found.retain(|pid| *pid != own);
    found.sort_unstable();
    Ok(found)
}

#[cfg(target_os = "linux")]
fn by_name(name: &str) -> Result<Vec<u32>, String> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::geteuid().as_raw();
    let entries = std::fs::read_dir("/proc")
        .map_err(|e| format!("cannot list the processes in /proc: {e}"))?;
    let file_name = |path: &str| {
        std::path::Path::new(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        if entry.metadata().map(|m| m.uid()).ok() != Some(uid) {
            continue;
        }
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let mut argv0 = String::new();
        if let Ok(file) = std::fs::File::open(dir.join("cmdline")) {
            let mut bytes = Vec::new();
            let _ = file.take(4096).read_to_end(&mut bytes);
            let first = bytes.split(|b| *b == 0).next().unwrap_or_default();
            argv0 = String::from_utf8_lossy(first).into_owned();
        }
        let exe = std::fs::read_link(dir.join("exe"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        let hit = comm.trim_end_matches('\n') == name
            || file_name(&argv0).as_deref() == Some(name)
            || exe.as_deref() == Some(name);
        if hit && identity(pid).is_some() {
            pids.push(pid);
        }
    }
    Ok(pids)
}

#[cfg(all(unix, not(target_os = "linux")))]
fn by_name(name: &str) -> Result<Vec<u32>, String> {
    let uid = rustix::process::geteuid().as_raw().to_string();
    let out = std::process::Command::new("pgrep")
        .args(["-x", "-U", &uid, "--", name])
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run pgrep to find '{name}': {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

#[cfg(windows)]
fn by_name(name: &str) -> Result<Vec<u32>, String> {
    Ok(tasklist(&format!("IMAGENAME eq {name}"))?
        .into_iter()
        .filter(|(image, _)| image.eq_ignore_ascii_case(name))
        .map(|(_, pid)| pid)
        .collect())
}

#[cfg(not(any(unix, windows)))]
fn by_name(name: &str) -> Result<Vec<u32>, String> {
    Err(format!(
        "finding a process by name ('{name}') is not supported on this operating system"
    ))
}

/// `tasklist /FI FILTER`: (image name, pid) of each line.
#[cfg(windows)]
fn tasklist(filter: &str) -> Result<Vec<(String, u32)>, String> {
    let out = std::process::Command::new("tasklist")
        .args(["/FI", filter, "/FO", "CSV", "/NH"])
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run tasklist: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut cells = line.split("\",\"");
            let image = cells.next()?.trim_start_matches('"').to_owned();
            let pid = cells.next()?.trim_matches('"').parse().ok()?;
            Some((image, pid))
        })
        .collect())
}

/// A process the hub did not fork: it is watched by polling and ended by signals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Foreign {
    pub(crate) pid: u32,
    pub(crate) identity: String,
    /// It leads a process group of its own (a game the hub started): the group is signalled.
    pub(crate) group: bool,
}

impl Foreign {
    /// The process `pid` as it is now, if it runs.
    pub(crate) fn now(pid: u32) -> Option<Foreign> {
        let identity = identity(pid)?;
        Some(Foreign {
            pid,
            identity,
            group: leads_group(pid),
        })
    }

    /// Whether it still runs (and is still the same process).
    pub(crate) fn alive(&self) -> bool {
        identity(self.pid).as_deref() == Some(self.identity.as_str())
    }

    /// SIGTERM (`kill`: SIGKILL) to it, or to its group when it leads one.
    fn signal(&self, kill: bool) {
        if !self.alive() {
            return;
        }
        #[cfg(unix)]
        {
            use rustix::process::{kill_process, kill_process_group, Pid, Signal};
            let Some(pid) = i32::try_from(self.pid).ok().and_then(Pid::from_raw) else {
                return;
            };
            let signal = if kill { Signal::KILL } else { Signal::TERM };
            let sent = if self.group {
                kill_process_group(pid, signal)
            } else {
                kill_process(pid, signal)
            };
            if let Err(e) = sent {
                tracing::debug!(pid = self.pid, error = %e, "cannot signal the game");
            }
        }
        #[cfg(windows)]
        {
            let mut taskkill = std::process::Command::new("taskkill");
            if self.group {
                taskkill.arg("/T");
            }
            taskkill.args(["/PID", &self.pid.to_string()]);
            if kill {
                taskkill.arg("/F");
            }
            let _ = taskkill
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }

    /// Ends it: SIGTERM, then SIGKILL after `grace` (at once when zero). Returns how it ended.
    pub(crate) async fn end(&self, grace: Duration) -> String {
        if !grace.is_zero() {
            self.signal(false);
            if self.gone_within(grace).await {
                return "ended after SIGTERM".to_owned();
            }
        }
        self.signal(true);
        if self.gone_within(Duration::from_secs(5)).await {
            "killed (SIGKILL)".to_owned()
        } else {
            format!("still running 5 s after SIGKILL (pid {})", self.pid)
        }
    }

    async fn gone_within(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while self.alive() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
        true
    }
}

/// Whether `pid` leads its process group.
fn leads_group(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{getpgid, Pid};
        i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .is_some_and(|p| getpgid(Some(p)).is_ok_and(|g| g == p))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_found_by_its_name_and_known_by_its_start_time() {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("gh-sleep-{}", std::process::id() % 100_000);
        let link = dir.path().join(&name);
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        let mut child = std::process::Command::new(&link).arg("30").spawn().unwrap();
        let pid = child.id();
        // The spawner may resume before exec has renamed the child: the name shows a moment later.
        let mut found = Vec::new();
        for _ in 0..500 {
            found = find_by_name(&name).unwrap();
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(found, vec![pid]);
        let foreign = Foreign::now(pid).unwrap();
        assert!(foreign.alive());
        let stranger = Foreign {
            identity: "0".to_owned(),
            ..foreign.clone()
        };
        assert!(!stranger.alive(), "another start time is another process");
        let _ = child.kill();
        let _ = child.wait();
        assert!(!foreign.alive());
        assert!(find_by_name(&name).unwrap().is_empty());
    }
}
