//! SIGINT and SIGTERM (Ctrl-C elsewhere) for the commands that serve until told to stop.

/// SIGINT and SIGTERM (Ctrl-C elsewhere).
pub(crate) struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn new() -> Result<Self, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let install = |kind: SignalKind, name: &str| {
                signal(kind).map_err(|e| format!("cannot handle {name}: {e}"))
            };
            Ok(Signals {
                interrupt: install(SignalKind::interrupt(), "SIGINT")?,
                terminate: install(SignalKind::terminate(), "SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// Waits for the next signal and names it.
    pub(crate) async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                Err(_) => std::future::pending().await,
            }
        }
    }
}
