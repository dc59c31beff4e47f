//! Unix domain sockets: private from the first instant, never clobbering a live socket.
//!
//! How a socket at `DIR/NAME` is created:
//!
//! 1. make a private directory `DIR/.gabp-<random>` with mode 0700 (no one else can even reach
//!    what is inside it);
//! 2. bind the socket inside it, then `chmod` it to 0600;
//! 3. `link(2)` it to `DIR/NAME`. `link` never replaces an existing file, so a socket that is
//!    already at the path is never clobbered; the socket appears at its public path already
//!    0600, so there is no instant at which it has wider permissions there;
//! 4. remove the temporary name and directory.
//!
//! When `link` finds the path taken, the file there is probed: a socket nobody listens on
//! (connecting is refused) is stale and is removed, then step 3 is retried; a live socket, or
//! anything that is not a socket, is left alone and reported.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::endpoint::Endpoint;
use crate::error::TransportError;
use crate::stream::ByteStream;

/// How often to retry `link` after removing a stale socket (another process may be racing us).
const LINK_ATTEMPTS: usize = 3;

/// A bound Unix socket listener that removes its socket file when dropped.
#[derive(Debug)]
pub(crate) struct UnixSocketListener {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    /// `(dev, ino)` of our socket file, so that drop never removes somebody else's.
    identity: (u64, u64),
}

/// What is at a socket path.
enum Probe {
    Nothing,
    Live,
    Stale((u64, u64)),
    NotASocket,
}

/// The private directory of steps 1-4; removed (with the temporary socket name) on drop.
struct PrivateDir {
    dir: PathBuf,
    socket: PathBuf,
}

impl PrivateDir {
    fn create(parent: &Path) -> io::Result<Self> {
        let mut last = None;
        for _ in 0..8 {
            let mut rnd = [0u8; 6];
            getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
            let dir = parent.join(format!(".gabp-{}", crate::token::to_hex(&rnd)));
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    let private = PrivateDir {
                        socket: dir.join("s"),
                        dir,
                    };
                    // The umask can only have removed bits; make sure the owner has them.
                    fs::set_permissions(&private.dir, fs::Permissions::from_mode(0o700))?;
                    return Ok(private);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into()))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.socket);
        let _ = fs::remove_dir(&self.dir);
    }
}

fn identity(m: &fs::Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

async fn probe(path: &Path) -> io::Result<Probe> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Nothing),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Ok(Probe::NotASocket);
    }
    // Non-blocking connect: a listener answers (or has a full backlog), a stale file refuses.
    match tokio::net::UnixStream::connect(path).await {
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(Probe::Stale(identity(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Probe::Nothing),
        // Connected, or any other answer: treat as live and leave it alone.
        _ => Ok(Probe::Live),
    }
}

impl UnixSocketListener {
    pub(crate) async fn bind(path: &Path) -> Result<Self, TransportError> {
        let endpoint = Endpoint::Unix(path.to_owned());
        let io_err = |op, e| TransportError::io(op, &endpoint, e);

        // Early, friendly refusals; the `link` below is what actually guarantees no clobbering.
        match probe(path).await.map_err(|e| io_err("inspect", e))? {
            Probe::Live => {
                return Err(TransportError::SocketInUse {
                    path: path.to_owned(),
                })
            }
            Probe::NotASocket => {
                return Err(TransportError::NotASocket {
                    path: path.to_owned(),
                })
            }
            Probe::Nothing | Probe::Stale(_) => {}
        }

        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("/"),
        };
        let private = PrivateDir::create(parent)
            .map_err(|e| io_err("create a private directory beside", e))?;
        let std_listener = std::os::unix::net::UnixListener::bind(&private.socket)
            .map_err(|e| io_err("bind", e))?;
        fs::set_permissions(&private.socket, fs::Permissions::from_mode(0o600))
            .map_err(|e| io_err("set mode 0600 on", e))?;
        let ours = fs::symlink_metadata(&private.socket)
            .map(|m| identity(&m))
            .map_err(|e| io_err("inspect", e))?;

        let mut attempt = 0;
        loop {
            attempt += 1;
            match fs::hard_link(&private.socket, path) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < LINK_ATTEMPTS => {
                    match probe(path).await.map_err(|e| io_err("inspect", e))? {
                        Probe::Live => {
                            return Err(TransportError::SocketInUse {
                                path: path.to_owned(),
                            })
                        }
                        Probe::NotASocket => {
                            return Err(TransportError::NotASocket {
                                path: path.to_owned(),
                            })
                        }
                        Probe::Nothing => {}
                        Probe::Stale(stale) => {
                            // Remove only the very file found stale, not one that replaced it.
                            let same = fs::symlink_metadata(path)
                                .map(|m| identity(&m) == stale)
                                .unwrap_or(false);
                            if same {
                                tracing::debug!(path = %path.display(), "replacing a stale socket");
                                match fs::remove_file(path) {
                                    Ok(()) => {}
                                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                                    Err(e) => return Err(io_err("remove the stale socket", e)),
                                }
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(TransportError::SocketInUse {
                        path: path.to_owned(),
                    })
                }
                Err(e) => return Err(io_err("link the socket to", e)),
            }
        }
        drop(private);

        let listener = std_listener
            .set_nonblocking(true)
            .and_then(|()| tokio::net::UnixListener::from_std(std_listener))
            .map_err(|e| {
                let _ = fs::remove_file(path);
                io_err("register", e)
            })?;
        tracing::debug!(path = %path.display(), "listening on a unix socket (mode 0600)");
        Ok(UnixSocketListener {
            listener,
            path: path.to_owned(),
            identity: ours,
        })
    }

    pub(crate) async fn accept(&self) -> Result<ByteStream, TransportError> {
        let (stream, _) =
            self.listener.accept().await.map_err(|e| {
                TransportError::io("accept on", Endpoint::Unix(self.path.clone()), e)
            })?;
        Ok(ByteStream::new(stream))
    }
}

impl Drop for UnixSocketListener {
    fn drop(&mut self) {
        let ours = fs::symlink_metadata(&self.path)
            .map(|m| identity(&m) == self.identity)
            .unwrap_or(false);
        if ours {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Connect to the Unix socket at `path`, refusing a socket run by another user: the bridge is
/// about to send its token, and a socket squatted by someone else must not receive it.
pub(crate) async fn connect(path: &Path) -> Result<ByteStream, TransportError> {
    let endpoint = Endpoint::Unix(path.to_owned());
    let stream = tokio::net::UnixStream::connect(path)
        .await
        .map_err(|e| TransportError::io("connect to", &endpoint, e))?;
    let peer = stream
        .peer_cred()
        .map_err(|e| TransportError::io("read the peer credentials of", &endpoint, e))?;
    let own =
        own_uid().map_err(|e| TransportError::io("read our own credentials for", &endpoint, e))?;
    if peer.uid() != own {
        return Err(TransportError::ForeignPeer {
            endpoint: endpoint.to_string(),
            uid: peer.uid(),
        });
    }
    Ok(ByteStream::new(stream))
}

/// This process's user id, without `libc`: the peer credentials of a socket pair we own.
fn own_uid() -> io::Result<u32> {
    let (a, _b) = tokio::net::UnixStream::pair()?;
    Ok(a.peer_cred()?.uid())
}
