//! The session's lifecycle on the bridge side (SPEC/1.0 gabp.md §7): the handshake, restoring
//! subscriptions, the supervisor that notices the end of a connection and reconnects per the policy.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use gabp_transport::Connection;
use gabp_types::methods::{
    ClientInfo, EventsSubscribe, HelloParams, HelloToken, Method, Platform, SessionHello,
    WelcomeResult,
};
use gabp_types::NonEmptyString;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::engine::{self, Engine, Queues};

use super::connection::{run_engine, BridgeRole, CLOSE_GRACE};
use super::events::subscription::restore;
use super::link::{call_link, keep_alive, Link, LinkInfo};
use super::reconnect::{Connector, ReconnectPolicy};
use super::redact::redact_error;
use super::request::BridgeRequest;
use super::settings::Settings;
use super::shared::Shared;
use super::state::{ConnectionState, DisconnectReason};
use super::welcome::parse_welcome;
use crate::Error;

/// A connection's running tasks.
pub(crate) struct Running {
    pub(super) link: Arc<Link>,
    pub(super) reader: JoinHandle<()>,
    pub(super) keepalive: Option<JoinHandle<()>>,
}

/// Performs the first handshake over `connection`, then supervises the connection in a task.
pub(crate) async fn start(
    shared: &Arc<Shared>,
    connection: Connection,
    connector: Option<Arc<dyn Connector>>,
) -> Result<Arc<WelcomeResult>, Error> {
    // If this future is dropped before the handshake completes, nothing will ever connect this bridge.
    let mut abandon = OnDrop(Some(|| finish(shared, ConnectionState::Closed)));
    let result = establish(shared, connection, false).await;
    abandon.disarm();
    match result {
        Ok((running, welcome)) => {
            tokio::spawn(supervise(shared.clone(), running, connector));
            Ok(welcome)
        }
        Err(e) => {
            finish(
                shared,
                ConnectionState::Disconnected {
                    reason: DisconnectReason::Transport(e.to_string()),
                },
            );
            Err(e)
        }
    }
}

/// Runs a closure when dropped, unless disarmed.
pub(super) struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    pub(super) fn new(f: F) -> Self {
        OnDrop(Some(f))
    }

    pub(super) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Starts the tasks of a connection, performs the handshake, restores subscriptions, and publishes the
/// connection as current.
pub(super) async fn establish(
    shared: &Arc<Shared>,
    connection: Connection,
    reconnect: bool,
) -> Result<(Running, Arc<WelcomeResult>), Error> {
    let settings = shared.settings();
    let generation = shared.generation.load(Ordering::SeqCst) + 1;
    let peer = connection.peer().to_owned();
    let codec_max_body = connection.codec().max_body_size();
    // Bounded in frames; in bytes by the frames, each at most the codec's largest body.
    let (outgoing, queue) = engine::frame_queue(settings.outgoing_queue, None);
    let base = Instant::now();
    let link = Arc::new(Link {
        generation,
        outgoing,
        pending: AtomicUsize::new(0),
        in_flight: Semaphore::new(settings.max_in_flight.min(Semaphore::MAX_PERMITS)),
        kill: CancellationToken::new(),
        close_writes: CancellationToken::new(),
        reason: Mutex::new(None),
        base,
        last_rx: AtomicU64::new(0),
        info: std::sync::OnceLock::new(),
        codec_max_body,
        settings: settings.clone(),
    });
    let span = tracing::debug_span!("gabp.bridge", peer = %peer, generation);
    let role = BridgeRole::new(link.clone(), shared.clone());
    let queues = Queues {
        outgoing: Some(queue),
        events: None,
        progress: None,
        in_flight: None,
    };
    let limits = engine::Limits {
        max_message_size: codec_max_body,
        backlog: settings.outgoing_queue,
        // A bridge answers nothing (SPEC/1.0 gabp.md §8): only its answers to bad frames could queue, and it
        // writes none.
        backlog_bytes: codec_max_body,
        calls: settings.max_in_flight,
        drain_timeout: CLOSE_GRACE,
    };
    let engine = Engine::new(connection, role, queues, limits);
    let reader = tokio::spawn(run_engine(engine, link.clone()).instrument(span.clone()));
    let running = Running {
        link: link.clone(),
        reader,
        keepalive: None,
    };
    // Dropped mid-handshake (the caller gave up): stop the connection's tasks.
    let mut stop = OnDrop(Some(|| link.shut(DisconnectReason::Shutdown)));
    let handshake = handshake(shared, &link, &settings, reconnect).instrument(span.clone());
    let welcome = tokio::select! {
        result = handshake => result,
        () = shared.shutdown.cancelled() => Err(Error::Closed),
    };
    stop.disarm();
    match welcome {
        Ok(welcome) => {
            let mut running = running;
            if let Some(keepalive) = settings.keepalive {
                running.keepalive = Some(tokio::spawn(
                    keep_alive(link.clone(), keepalive).instrument(span),
                ));
            }
            Ok((running, welcome))
        }
        Err(e) => {
            link.shut(DisconnectReason::Shutdown);
            teardown(shared, running).await;
            Err(e)
        }
    }
}

/// The token as `session/hello` carries it. One shorter than the 32 characters the schema asks for is sent
/// anyway, with a warning: it is the token the mod was given, and some mods (Lib.GAB) accept any.
fn hello_token(secret: &str) -> Result<HelloToken, Error> {
    if let Ok(token) = HelloToken::new(secret) {
        return Ok(token);
    }
    tracing::warn!(
        length = secret.chars().count(),
        "the token is shorter than the {} characters session/hello asks for; sending it as the mod was given it",
        HelloToken::MIN_LEN
    );
    HelloToken::new_short(secret)
        .map_err(|e| Error::invalid_request(format!("the token cannot be sent: {e}")))
}

pub(super) async fn handshake(
    shared: &Arc<Shared>,
    link: &Arc<Link>,
    settings: &Settings,
    reconnect: bool,
) -> Result<Arc<WelcomeResult>, Error> {
    let token = hello_token(shared.token.expose_secret())?;
    let bridge_version = NonEmptyString::new(env!("CARGO_PKG_VERSION"))
        .map_err(|e| Error::invalid_request(e.to_string()))?;
    let hello = HelloParams {
        token,
        bridge_version,
        platform: Platform::current(),
        launch_id: shared.launch_id.clone(),
        client_info: Some(ClientInfo {
            name: Some(settings.client_name.clone()),
            version: Some(settings.client_version.clone()),
        }),
    };
    let hello = BridgeRequest::typed::<SessionHello>(&hello)?;
    // The answer may quote the token it refused (SPEC/1.0 security.md §6).
    let secret = shared.token.expose_secret();
    let value = call_link(link, hello, settings.handshake_timeout)
        .await
        .map_err(|e| redact_error(e, SessionHello::NAME, secret))?;
    let welcome = parse_welcome(value.into_value())
        .map_err(|e| redact_error(e, SessionHello::NAME, secret))?;
    let welcome = Arc::new(welcome);
    let max_body = welcome
        .capabilities
        .limits
        .as_ref()
        .and_then(|l| l.max_message_size)
        .and_then(|m| usize::try_from(m.get()).ok())
        .map_or(link.codec_max_body, |m| m.min(link.codec_max_body));
    if let Some(limit) = welcome
        .capabilities
        .limits
        .as_ref()
        .and_then(|l| l.max_concurrent_requests)
        .and_then(|m| usize::try_from(m.get()).ok())
    {
        if limit < settings.max_in_flight {
            link.in_flight
                .forget_permits(settings.max_in_flight - limit);
        }
    }
    let advertised = welcome
        .capabilities
        .methods
        .as_ref()
        .map(|m| m.iter().map(|n| n.as_str().to_owned()).collect());
    let _ = link.info.set(LinkInfo::new(advertised, max_body));
    // Restore (or establish) subscriptions, then publish the connection, all under the subscription lock so no
    // local subscription can slip between the two. A subscribe holds the lock during its round trip; should a
    // layer hold that request back, this attempt fails after the handshake timeout instead of waiting forever.
    let _order = tokio::time::timeout(settings.handshake_timeout, shared.subscriptions.lock())
        .await
        .map_err(|_| Error::Timeout {
            method: EventsSubscribe::NAME.to_owned(),
            after: settings.handshake_timeout,
        })?;
    if reconnect {
        shared.router.lock().mark_reconnected();
    }
    restore(shared, link, settings.request_timeout).await?;
    shared.generation.store(link.generation, Ordering::SeqCst);
    // Another connection, perhaps another mod: the cached tool list is stale.
    shared.tools.invalidate();
    *shared.welcome.write() = Some(welcome.clone());
    *shared.current.write() = Some(link.clone());
    shared.state.send_replace(ConnectionState::Connected {
        generation: link.generation,
    });
    tracing::debug!(agent = %welcome.agent_id, "connected");
    Ok(welcome)
}

/// Ends a connection: waits for the reader (so every response it already read is delivered), then fails the
/// pending calls and resets event ordering.
pub(super) async fn teardown(shared: &Shared, running: Running) -> DisconnectReason {
    let Running {
        link,
        reader,
        keepalive,
    } = running;
    link.kill.cancel();
    let _ = reader.await;
    {
        let mut current = shared.current.write();
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &link)) {
            *current = None;
        }
    }
    link.fail_all();
    if let Some(keepalive) = keepalive {
        keepalive.abort();
    }
    shared.router.lock().reset_order();
    link.reason()
}

/// Watches a connection; when it ends, reconnects per the policy or reports the end.
pub(super) async fn supervise(
    shared: Arc<Shared>,
    mut running: Running,
    connector: Option<Arc<dyn Connector>>,
) {
    loop {
        tokio::select! {
            () = running.link.kill.cancelled() => {}
            () = shared.shutdown.cancelled() => {
                // Close our side and give the mod a moment to close its own (a mod on stdio sees the end of its
                // input and exits), reading whatever it still sends.
                running.link.close_writes.cancel();
                let _ = tokio::time::timeout(CLOSE_GRACE, running.link.kill.cancelled()).await;
                running.link.shut(DisconnectReason::Shutdown);
            }
        }
        let reason = teardown(&shared, running).await;
        tracing::debug!(%reason, "connection ended");
        if shared.closing.load(Ordering::SeqCst) || shared.shutdown.is_cancelled() {
            finish(&shared, ConnectionState::Closed);
            return;
        }
        let policy = shared.settings().reconnect.clone();
        let (Some(policy), Some(connector)) = (policy, connector.as_ref()) else {
            finish(&shared, ConnectionState::Disconnected { reason });
            return;
        };
        match reconnect(&shared, &policy, connector.as_ref(), reason).await {
            Ok(next) => running = next,
            Err(state) => {
                finish(&shared, state);
                return;
            }
        }
    }
}

/// Ends the bridge for good, whether it connected or not: ends the subscriptions and publishes the terminal
/// `state`.
pub(super) fn finish(shared: &Shared, state: ConnectionState) {
    let closed = matches!(state, ConnectionState::Closed);
    shared.router.lock().close_all(|| {
        if closed {
            Error::Closed
        } else {
            Error::Disconnected
        }
    });
    shared.state.send_replace(state);
}

pub(super) async fn reconnect(
    shared: &Arc<Shared>,
    policy: &ReconnectPolicy,
    connector: &dyn Connector,
    lost: DisconnectReason,
) -> Result<Running, ConnectionState> {
    let timeout = shared.settings().handshake_timeout;
    let mut last_error = lost.to_string();
    let mut attempt: u32 = 0;
    loop {
        attempt = attempt.saturating_add(1);
        if policy.attempts_limit().is_some_and(|max| attempt > max) {
            return Err(ConnectionState::Disconnected {
                reason: DisconnectReason::GaveUp {
                    attempts: attempt - 1,
                    last_error,
                },
            });
        }
        shared.state.send_replace(ConnectionState::Reconnecting {
            attempt,
            reason: lost.clone(),
        });
        let delay = policy.delay(attempt);
        tracing::debug!(attempt, ?delay, "reconnecting");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shared.shutdown.cancelled() => return Err(ConnectionState::Closed),
        }
        let connected = tokio::select! {
            r = tokio::time::timeout(timeout, connector.connect()) => r,
            () = shared.shutdown.cancelled() => return Err(ConnectionState::Closed),
        };
        let connection = match connected {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                last_error = e.to_string();
                continue;
            }
            Err(_) => {
                last_error = format!("connecting took longer than {timeout:?}");
                continue;
            }
        };
        match establish(shared, connection, true).await {
            Ok((running, _)) => return Ok(running),
            Err(Error::AuthenticationFailed { .. }) => {
                return Err(ConnectionState::Disconnected {
                    reason: DisconnectReason::AuthenticationFailed,
                })
            }
            Err(Error::Closed) => return Err(ConnectionState::Closed),
            Err(e) => last_error = e.to_string(),
        }
    }
}
