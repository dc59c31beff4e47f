//! [`Shared`]: the state a bridge's handles, services, subscriptions and tasks share.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use gabp_transport::Token;
use gabp_types::methods::WelcomeResult;
use gabp_types::MessageId;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::events::router::Router;
use super::link::Link;
use super::progress::ProgressRoutes;
use super::settings::Settings;
use super::state::ConnectionState;
use super::tools::ToolCache;
use crate::Error;

/// State shared by a bridge's handles, services, subscriptions and tasks.
pub(crate) struct Shared {
    pub(super) token: Token,
    pub(super) launch_id: String,
    pub(super) settings: RwLock<Arc<Settings>>,
    pub(super) current: RwLock<Option<Arc<Link>>>,
    pub(super) welcome: RwLock<Option<Arc<WelcomeResult>>>,
    pub(crate) state: watch::Sender<ConnectionState>,
    pub(super) router: Mutex<Router>,
    /// Serializes subscription changes (local registration plus the round trip) and the restore step of a
    /// handshake, so that the mod sees them in the order they happened here.
    pub(super) subscriptions: tokio::sync::Mutex<()>,
    pub(crate) shutdown: CancellationToken,
    pub(super) closing: AtomicBool,
    pub(super) generation: AtomicU64,
    /// The tool list of [`Bridge::tools`](crate::bridge::Bridge::tools).
    pub(super) tools: ToolCache,
    /// Where the progress events of calls in flight go, by token (SPEC/1.0 extensions.md §progress).
    pub(super) progress: Arc<ProgressRoutes>,
}

impl Shared {
    pub(crate) fn new(token: Token, settings: Settings) -> Arc<Shared> {
        let (state, _) = watch::channel(ConnectionState::Connecting);
        Arc::new(Shared {
            token,
            launch_id: MessageId::new_v4().to_string(),
            router: Mutex::new(Router::new(settings.reorder)),
            settings: RwLock::new(Arc::new(settings)),
            current: RwLock::new(None),
            welcome: RwLock::new(None),
            state,
            subscriptions: tokio::sync::Mutex::new(()),
            shutdown: CancellationToken::new(),
            closing: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            progress: Arc::default(),
            tools: ToolCache::default(),
        })
    }

    pub(crate) fn configure(&self, settings: Settings) {
        self.router.lock().set_reorder(settings.reorder);
        *self.settings.write() = Arc::new(settings);
    }

    pub(crate) fn settings(&self) -> Arc<Settings> {
        self.settings.read().clone()
    }

    pub(crate) fn begin_close(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    /// The current connection, or why there is none.
    pub(super) fn link(&self) -> Result<Arc<Link>, Error> {
        if self.shutdown.is_cancelled() {
            return Err(Error::Closed);
        }
        self.current
            .read()
            .clone()
            .ok_or_else(|| self.no_link_error())
    }

    fn no_link_error(&self) -> Error {
        if self.closing.load(Ordering::SeqCst)
            || self.shutdown.is_cancelled()
            || matches!(*self.state.borrow(), ConnectionState::Closed)
        {
            Error::Closed
        } else {
            Error::Disconnected
        }
    }

    /// Why nothing more can be asked of a bridge whose state is terminal.
    pub(super) fn no_link_error_terminal(&self) -> Error {
        match *self.state.borrow() {
            ConnectionState::Disconnected { .. } if !self.shutdown.is_cancelled() => {
                Error::Disconnected
            }
            _ => Error::Closed,
        }
    }
}
