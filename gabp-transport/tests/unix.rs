//! Unix sockets: frames both ways, mode 0600 from creation, no clobbering of a live socket,
//! replacement of a stale one, removal on drop.
#![cfg(unix)]

mod common;

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{connect, Endpoint, Listener, TransportError};

fn socket_in(dir: &tempfile::TempDir, name: &str) -> (PathBuf, Endpoint) {
    let path = dir.path().join(name);
    let endpoint = Endpoint::unix(&path).expect("absolute path");
    (path, endpoint)
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("stat").mode() & 0o7777
}

/// Everything in `dir`, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn frames_both_ways_over_a_unix_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, endpoint) = socket_in(&dir, "game.sock");
    let listener = Listener::bind(&endpoint).await.expect("bind");
    assert_eq!(listener.endpoint(), &endpoint);
    let (bridge, game) = tokio::join!(connect(&endpoint), listener.accept());
    let (bridge, game) = (bridge.expect("connect"), game.expect("accept"));
    assert_eq!(bridge.peer(), endpoint.to_string());
    common::exchange_both_ways(bridge, game).await;
}

#[tokio::test]
async fn socket_has_mode_0600_from_the_first_instant() {
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..20 {
        let (path, endpoint) = socket_in(&dir, &format!("watched-{round}.sock"));

        // A watcher polls the directory as fast as it can while the socket is created: it records
        // the mode of the socket at its public path the first time it sees it, and the mode of
        // every other entry (the private temporary directory) it ever sees.
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (stop, path, dir) = (Arc::clone(&stop), path.clone(), dir.path().to_owned());
            std::thread::spawn(move || {
                let mut first_socket_mode = None;
                let mut other_modes = Vec::new();
                loop {
                    // After `stop`, one last look, so the socket is seen at least once.
                    let last = stop.load(Ordering::SeqCst);
                    if first_socket_mode.is_none() {
                        if let Ok(m) = fs::symlink_metadata(&path) {
                            first_socket_mode = Some(m.mode() & 0o7777);
                        }
                    }
                    if let Ok(rd) = fs::read_dir(&dir) {
                        for entry in rd.flatten() {
                            if entry.file_name().to_string_lossy().starts_with(".gabp-") {
                                if let Ok(m) = entry.metadata() {
                                    other_modes.push(m.mode() & 0o7777);
                                }
                            }
                        }
                    }
                    if last {
                        break;
                    }
                }
                (first_socket_mode, other_modes)
            })
        };

        let listener = Listener::bind(&endpoint).await.expect("bind");
        stop.store(true, Ordering::SeqCst);
        let (first_seen, private_dir_modes) = watcher.join().expect("watcher");

        assert_eq!(
            first_seen,
            Some(0o600),
            "round {round}: first mode seen at the path"
        );
        assert!(
            private_dir_modes.iter().all(|&m| m & 0o077 == 0),
            "round {round}: a temporary entry was reachable by others: {private_dir_modes:?}"
        );
        let meta = fs::symlink_metadata(&path).expect("stat");
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o7777, 0o600);
        assert_eq!(meta.nlink(), 1, "the temporary name must be gone");
        drop(listener);
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[tokio::test]
async fn refuses_to_clobber_a_live_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, endpoint) = socket_in(&dir, "live.sock");
    let first = Listener::bind(&endpoint).await.expect("first bind");
    let inode = fs::symlink_metadata(&path).expect("stat").ino();

    let err = Listener::bind(&endpoint).await.expect_err("second bind");
    assert!(matches!(err, TransportError::SocketInUse { .. }), "{err:?}");
    assert!(err.to_string().contains("live socket"), "{err}");

    // The first listener is untouched and still serves. (It has also seen the probe the second
    // bind made: a connection that closed without a frame.)
    assert_eq!(fs::symlink_metadata(&path).expect("stat").ino(), inode);
    assert_eq!(entries(dir.path()), vec!["live.sock".to_owned()]);
    let game = tokio::spawn(async move {
        loop {
            let mut conn = first.accept().await.expect("accept");
            if let Some(Ok(frame)) = conn.next().await {
                conn.send(frame.into_body().expect("body"))
                    .await
                    .expect("echo");
                return;
            }
        }
    });
    let mut bridge = connect(&endpoint).await.expect("connect");
    bridge.send(Bytes::from_static(b"{}")).await.expect("send");
    assert_eq!(&common::next_body(&mut bridge).await[..], b"{}");
    common::within("the game side", game).await.expect("game");
}

#[tokio::test]
async fn replaces_a_stale_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, endpoint) = socket_in(&dir, "stale.sock");
    // A socket file whose listener is gone: std does not unlink on drop.
    drop(std::os::unix::net::UnixListener::bind(&path).expect("std bind"));
    assert!(fs::symlink_metadata(&path)
        .expect("stale file")
        .file_type()
        .is_socket());
    let stale_inode = fs::symlink_metadata(&path).expect("stat").ino();

    let listener = Listener::bind(&endpoint)
        .await
        .expect("bind over a stale socket");
    let meta = fs::symlink_metadata(&path).expect("stat");
    assert_ne!(meta.ino(), stale_inode, "the stale socket must be replaced");
    assert_eq!(meta.mode() & 0o7777, 0o600);

    let (bridge, game) = tokio::join!(connect(&endpoint), listener.accept());
    let (mut bridge, game) = (bridge.expect("connect"), game.expect("accept"));
    let game = tokio::spawn(common::game_side(game, 0));
    common::next_body(&mut bridge).await;
    game.await.expect("game");
}

#[tokio::test]
async fn refuses_to_replace_something_that_is_not_a_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, endpoint) = socket_in(&dir, "precious.txt");
    fs::write(&path, "keep me").expect("write");
    let err = Listener::bind(&endpoint).await.expect_err("not a socket");
    assert!(matches!(err, TransportError::NotASocket { .. }), "{err:?}");
    assert_eq!(fs::read_to_string(&path).expect("read"), "keep me");
    assert_eq!(entries(dir.path()), vec!["precious.txt".to_owned()]);
}

#[tokio::test]
async fn removes_the_socket_when_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, endpoint) = socket_in(&dir, "gone.sock");
    let listener = Listener::bind(&endpoint).await.expect("bind");
    assert!(path.exists());
    drop(listener);
    assert!(
        fs::symlink_metadata(&path).is_err(),
        "socket file left behind"
    );
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    let err = connect(&endpoint).await.expect_err("nobody listens");
    assert!(matches!(err, TransportError::Io { .. }), "{err:?}");
}

#[tokio::test]
async fn drop_leaves_a_socket_that_replaced_ours_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, endpoint) = socket_in(&dir, "shared.sock");
    let first = Listener::bind(&endpoint).await.expect("first");
    // Someone removes our file and a second listener takes the path.
    fs::remove_file(&path).expect("remove");
    let second = Listener::bind(&endpoint).await.expect("second");
    drop(first);
    assert!(
        path.exists(),
        "dropping the first listener removed the second's socket"
    );
    drop(second);
    assert!(!path.exists());
}

#[tokio::test]
async fn unique_paths_are_unpredictable_and_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let endpoint = Endpoint::unix_unique_in(dir.path()).expect("unique");
    let listener = Listener::bind(&endpoint).await.expect("bind");
    let Endpoint::Unix(path) = listener.endpoint() else {
        panic!("not unix");
    };
    let name = path
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("gabp-") && name.ends_with(".sock") && name.len() == 42,
        "{name}"
    );
    assert_eq!(mode(path), 0o600);
}

#[tokio::test]
async fn bind_in_a_missing_directory_fails_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let endpoint = Endpoint::unix(dir.path().join("missing").join("x.sock")).expect("path");
    let err = Listener::bind(&endpoint).await.expect_err("no directory");
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::NotFound), "{err}");
    assert!(entries(dir.path()).is_empty());
}

#[tokio::test]
async fn socket_mode_ignores_a_permissive_directory() {
    // Even in a world-writable directory the socket is 0600 and the temporary directory 0700.
    let dir = tempfile::tempdir().expect("tempdir");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
    let (path, endpoint) = socket_in(&dir, "open.sock");
    let _listener = Listener::bind(&endpoint).await.expect("bind");
    assert_eq!(mode(&path), 0o600);
}

/// This process's user id, without `libc`: the owner of a file it creates.
fn own_uid(dir: &Path) -> u32 {
    let probe = dir.join("uid-probe");
    fs::write(&probe, "").expect("write");
    let uid = fs::metadata(&probe).expect("stat").uid();
    fs::remove_file(&probe).expect("remove");
    uid
}

#[tokio::test]
async fn a_bridge_refuses_a_socket_served_by_another_user() {
    const NOBODY: u32 = 65534;
    let dir = tempfile::tempdir().expect("tempdir");
    if own_uid(dir.path()) != 0 {
        eprintln!(
            "SKIPPED a_bridge_refuses_a_socket_served_by_another_user: \
             starting a mod as another user needs root"
        );
        return;
    }
    // A directory the other user can create its socket in.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
    let (path, endpoint) = socket_in(&dir, "foreign.sock");
    let mut squatter = tokio::process::Command::new(env!("CARGO_BIN_EXE_gabp-transport-echo-mod"));
    squatter
        .args(["--listen", &endpoint.to_string()])
        .uid(NOBODY)
        .gid(NOBODY)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut squatter = match squatter.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("SKIPPED a_bridge_refuses_a_socket_served_by_another_user: {e}");
            return;
        }
    };
    // The socket appears at its path only once it is listening.
    common::within("the other user's socket", async {
        while fs::symlink_metadata(&path).is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(fs::symlink_metadata(&path).expect("stat").uid(), NOBODY);

    let err = connect(&endpoint).await.expect_err("another user's socket");
    assert!(
        matches!(err, TransportError::ForeignPeer { uid: NOBODY, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("65534"), "{err}");
    let _ = squatter.kill().await;
}
