//! The bridge side, for test harnesses in C or C#: connect to a mod, call its tools with a time limit,
//! receive its events through a callback, close.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use futures::future::Either;
use futures::StreamExt;
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::Error;
use gabp_transport::{BridgeConfig, Endpoint, Token};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;

use crate::call::UserData;
use crate::handles::Handles;
use crate::status::{run, FfiError, GabpStatus};
use crate::text::{name, object, put, text};
use crate::GabpString;

/// One event handed to a subscription's callback. The strings are UTF-8, owned by the library and valid
/// during the callback only.
#[repr(C)]
#[derive(Debug)]
pub struct GabpEvent {
    /// The channel, such as `player/move` (not NUL-terminated).
    pub channel: *const c_char,
    /// Its length in bytes.
    pub channel_len: usize,
    /// The event's sequence number on its channel (SPEC/1.0 gabp.md §7); 0 on a notice of missed events.
    pub seq: u64,
    /// The payload as JSON (not NUL-terminated); empty when `missed` is not 0.
    pub payload: *const c_char,
    /// Its length in bytes.
    pub payload_len: usize,
    /// Not 0: this many events of `channel` were lost (the mod dropped them, or the callback fell behind);
    /// no payload comes with this notice.
    pub missed: u64,
}

/// A subscription's callback: `user` as given to [`gabp_bridge_subscribe`], and one event, in `seq` order
/// for its channel. It runs on a thread the library starts for the subscription, one event at a time; it may
/// call any function of the library, this bridge's calls and [`gabp_subscription_free`] included. While it
/// runs, the subscription's next events wait (up to its queue's bound; then they are reported as missed).
pub type GabpEventFn = Option<unsafe extern "C" fn(user: *mut c_void, event: *const GabpEvent)>;

/// Waiting this long is waiting without a limit (`UINT64_MAX` milliseconds asks for none).
const NO_LIMIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// One connection to a mod, with the runtime that drives it and the subscriptions it delivers.
struct Client {
    runtime: tokio::runtime::Runtime,
    bridge: Bridge,
    subscribers: Mutex<Vec<Arc<Subscriber>>>,
}

static BRIDGES: Handles<Client> = Handles::new("bridge");

/// One subscription: its delivery thread stops when `stop` is notified, and calls no callback once `closed`.
struct Subscriber {
    bridge: u64,
    stop: Notify,
    closed: AtomicBool,
    /// Held while the callback runs, so that freeing from another thread waits for a callback in progress.
    delivering: Mutex<()>,
}

impl Subscriber {
    /// Ends delivery: no callback starts after this, and, unless called from inside an event callback (where
    /// waiting for another could wait forever), none is in progress when it returns.
    fn end(&self) {
        self.closed.store(true, Ordering::Release);
        self.stop.notify_one();
        if IN_CALLBACK.with(Cell::get) == 0 {
            drop(self.delivering.lock());
        }
    }
}

static SUBSCRIPTIONS: Handles<Subscriber> = Handles::new("subscription");

thread_local! {
    /// The subscription whose callback this thread is running, if any.
    static IN_CALLBACK: Cell<u64> = const { Cell::new(0) };
}

/// Refuses to block a thread that runs async tasks (a tool's callback, a bridge's own thread): blocking it
/// could wait for itself, and a runtime cannot be started or dropped there.
fn outside_runtime(what: &str) -> Result<(), FfiError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(FfiError::new(
            GabpStatus::State,
            format!(
                "{what} was called on one of the library's threads (a tool's callback, say); call it from a thread of your own"
            ),
        ));
    }
    Ok(())
}

/// The status of a bridge error: the mod's own errors are `REMOTE`, the time limit `TIMEOUT`.
fn failure(e: &Error) -> FfiError {
    let status = match e {
        Error::Timeout { .. } => GabpStatus::Timeout,
        e if e.is_remote() => GabpStatus::Remote,
        Error::InvalidRequest { .. } | Error::InvalidName { .. } | Error::TokenTooShort { .. } => {
            GabpStatus::Invalid
        }
        _ => GabpStatus::Io,
    };
    FfiError::new(status, e.to_string())
}

/// Runs `work` on the bridge's runtime and waits for it on the calling thread.
fn block<T: Send + 'static>(
    client: &Client,
    what: &str,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, FfiError> {
    outside_runtime(what)?;
    let (tx, rx) = mpsc::sync_channel(1);
    client.runtime.spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv()
        .map_err(|_| FfiError::new(GabpStatus::Io, format!("{what}: the bridge has closed")))
}

fn connect_with(
    out: *mut u64,
    connect: impl std::future::Future<Output = Result<Bridge, Error>> + Send + 'static,
) -> Result<(), FfiError> {
    if out.is_null() {
        return Err(FfiError::new(GabpStatus::Null, "out is NULL"));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("gabp-bridge")
        .enable_all()
        .build()
        .map_err(|e| FfiError::new(GabpStatus::Io, e.to_string()))?;
    let bridge = {
        let (tx, rx) = mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(connect.await);
        });
        rx.recv()
            .map_err(|_| FfiError::new(GabpStatus::Internal, "the connecting task ended"))?
            .map_err(|e| failure(&e))?
    };
    let id = BRIDGES.insert(Client {
        runtime,
        bridge,
        subscribers: Mutex::new(Vec::new()),
    });
    // SAFETY: checked not NULL; the caller's writable uint64_t.
    unsafe { put(out, id) };
    Ok(())
}

/// Connects to the mod at `endpoint` (`tcp://127.0.0.1:PORT`, `unix:///path`, ...) with `token`, completes
/// the handshake, and sets `*out` to the bridge's handle. Close it with [`gabp_bridge_close`].
///
/// Errors: `GABP_STATUS_NULL`, `GABP_STATUS_UTF8`, `GABP_STATUS_INVALID` (an endpoint or token that is not
/// valid), `GABP_STATUS_IO` (nobody listens there, the connection failed), `GABP_STATUS_REMOTE` (the mod
/// refused the token), `GABP_STATUS_TIMEOUT` (no welcome within 10 s).
///
/// Thread-safety: any thread of the caller's, event callbacks included; not a tool's callback of a mod
/// (`GABP_STATUS_STATE`), which runs on the library's async threads.
///
/// # Safety
///
/// `endpoint` and `token` point to that many readable bytes; `out` to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn gabp_bridge_connect(
    endpoint: *const c_char,
    endpoint_len: usize,
    token: *const c_char,
    token_len: usize,
    out: *mut u64,
) -> GabpStatus {
    run(|| {
        outside_runtime("gabp_bridge_connect")?;
        // SAFETY: as the function's contract says.
        let endpoint_text = unsafe { name(endpoint, endpoint_len, "the endpoint") }?;
        // SAFETY: as above.
        let token = unsafe { name(token, token_len, "the token") }?;
        let endpoint: Endpoint = endpoint_text.parse().map_err(|e| {
            FfiError::new(
                GabpStatus::Invalid,
                format!("the endpoint {endpoint_text:?}: {e}"),
            )
        })?;
        let token = Token::new(token)
            .map_err(|e| FfiError::new(GabpStatus::Invalid, format!("the token: {e}")))?;
        connect_with(out, async move {
            Bridge::builder(token)
                .client_info("gabp-ffi", env!("CARGO_PKG_VERSION"))
                .connect(&endpoint)
                .await
        })
    })
}

/// Reads the `bridge.json` at `path` (empty: the platform path a mod announces itself at, SPEC/1.0
/// transport.md §4.1), connects to the mod it names with its token, and sets `*out` to the bridge's handle.
///
/// Errors: as [`gabp_bridge_connect`]; `GABP_STATUS_IO` also when the file cannot be read (the message
/// names it).
///
/// Thread-safety: any thread of the caller's, event callbacks included; not a tool's callback of a mod
/// (`GABP_STATUS_STATE`), which runs on the library's async threads.
///
/// # Safety
///
/// `path` points to `path_len` readable bytes (or is NULL with length 0); `out` to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn gabp_bridge_discover(
    path: *const c_char,
    path_len: usize,
    out: *mut u64,
) -> GabpStatus {
    run(|| {
        outside_runtime("gabp_bridge_discover")?;
        // SAFETY: as the function's contract says.
        let path = unsafe { text(path, path_len, "the path") }?;
        let path = if path.is_empty() {
            BridgeConfig::default_path()
                .map_err(|e| FfiError::new(GabpStatus::Io, e.to_string()))?
        } else {
            path.into()
        };
        connect_with(out, async move { Bridge::discover_at(path).await })
    })
}

/// Calls tool `tool` of bridge `b`'s mod with the JSON object `args` (empty means `{}`) and waits at most
/// `timeout_ms` milliseconds (0: 30 s; `UINT64_MAX`: no limit). On `GABP_STATUS_OK`, `*out` is the tool's result as JSON; on
/// `GABP_STATUS_REMOTE`, the mod's error object (`{"code":...,"message":...,"data":...}`). Free `*out` with
/// [`gabp_string_free`]; on any other status it is left untouched.
///
/// Errors: `GABP_STATUS_TIMEOUT` (no answer in time; the call may still run in the mod), `GABP_STATUS_REMOTE`
/// (the mod answered with an error: unknown tool, invalid arguments, the tool failed), `GABP_STATUS_IO` (the
/// connection is gone), `GABP_STATUS_INVALID` (an empty tool name), `GABP_STATUS_JSON`, `GABP_STATUS_UTF8`,
/// `GABP_STATUS_NULL`, `GABP_STATUS_HANDLE`, `GABP_STATUS_STATE` (called from a mod's tool callback).
///
/// Thread-safety: as [`gabp_bridge_connect`]; calls from several threads run concurrently.
///
/// # Safety
///
/// `tool` and `args` point to that many readable bytes (or NULL with length 0); `out` to a writable
/// `GabpString`.
#[no_mangle]
pub unsafe extern "C" fn gabp_bridge_call(
    b: u64,
    tool: *const c_char,
    tool_len: usize,
    args: *const c_char,
    args_len: usize,
    timeout_ms: u64,
    out: *mut GabpString,
) -> GabpStatus {
    run(|| {
        if out.is_null() {
            return Err(FfiError::new(GabpStatus::Null, "out is NULL"));
        }
        let client = BRIDGES.get(b)?;
        // SAFETY: as the function's contract says.
        let tool = unsafe { name(tool, tool_len, "the tool name") }?.to_owned();
        // SAFETY: as above.
        let args = Value::Object(unsafe { object(args, args_len, "the arguments") }?);
        let bridge = match timeout_ms {
            0 => client.bridge.clone(),
            u64::MAX => client.bridge.with_timeout(NO_LIMIT),
            ms => client.bridge.with_timeout(Duration::from_millis(ms)),
        };
        let outcome = block(&client, "gabp_bridge_call", async move {
            bridge.call_tool(&tool, args).await
        })?;
        let (answer, error) = match outcome {
            Ok(result) => (result.to_string(), None),
            Err(e) => match e.error_object() {
                Some(object) if e.is_remote() => (
                    serde_json::to_string(object).unwrap_or_default(),
                    Some(failure(&e)),
                ),
                _ => return Err(failure(&e)),
            },
        };
        // SAFETY: checked not NULL; the caller's writable GabpString.
        unsafe { put(out, GabpString::new(answer)) };
        error.map_or(Ok(()), Err)
    })
}

/// Subscribes bridge `b` to event channel `channel` (or a glob pattern, when the mod advertises
/// `channel-patterns`) and calls `callback(user, event)` for each event, on the library's thread, until
/// [`gabp_subscription_free`] or [`gabp_bridge_close`]. Sets `*out` to the subscription's handle.
///
/// Errors: `GABP_STATUS_INVALID` (the mod does not offer the channel, or no channel matches the pattern),
/// `GABP_STATUS_REMOTE` (the mod refused, a pattern it cannot read), `GABP_STATUS_NULL` (no callback),
/// `GABP_STATUS_UTF8`, `GABP_STATUS_HANDLE`, `GABP_STATUS_IO`, `GABP_STATUS_STATE` (called from a mod's tool
/// callback). When the connection ends, the callback is simply called no more.
///
/// Thread-safety: as [`gabp_bridge_connect`].
///
/// # Safety
///
/// `channel` points to `channel_len` readable bytes; `out` to a writable `uint64_t`. `user` is passed to
/// `callback` on the library's thread.
#[no_mangle]
pub unsafe extern "C" fn gabp_bridge_subscribe(
    b: u64,
    channel: *const c_char,
    channel_len: usize,
    callback: GabpEventFn,
    user: *mut c_void,
    out: *mut u64,
) -> GabpStatus {
    run(|| {
        if out.is_null() {
            return Err(FfiError::new(GabpStatus::Null, "out is NULL"));
        }
        let client = BRIDGES.get(b)?;
        // SAFETY: as the function's contract says.
        let channel = unsafe { name(channel, channel_len, "the channel") }?.to_owned();
        let callback = callback.ok_or_else(|| {
            FfiError::new(
                GabpStatus::Null,
                format!("subscription to {channel}: the callback is NULL"),
            )
        })?;
        let bridge = client.bridge.clone();
        let asked = channel.clone();
        let subscription = block(&client, "gabp_bridge_subscribe", async move {
            bridge.subscribe([asked]).await
        })?
        .map_err(|e| failure(&e))?;
        if subscription.channels().is_empty() {
            return Err(FfiError::new(
                GabpStatus::Invalid,
                format!("the mod does not offer channel {channel} (SPEC/1.0 gabp.md §4.6)"),
            ));
        }
        let id = SUBSCRIPTIONS.insert(Subscriber {
            bridge: b,
            stop: Notify::new(),
            closed: AtomicBool::new(false),
            delivering: Mutex::new(()),
        });
        let subscriber = SUBSCRIPTIONS.get(id)?;
        client.subscribers.lock().push(subscriber.clone());
        let user = UserData(user);
        let runtime = client.runtime.handle().clone();
        let spawned = std::thread::Builder::new()
            .name("gabp-events".to_owned())
            .spawn(move || {
                let mut subscription = subscription;
                futures::executor::block_on(async {
                    loop {
                        let item = {
                            let stopped = subscriber.stop.notified();
                            let next = subscription.next();
                            futures::pin_mut!(stopped);
                            match futures::future::select(stopped, next).await {
                                Either::Left(_) => break,
                                Either::Right((item, _)) => item,
                            }
                        };
                        // The stream ends with the connection.
                        let Some(Ok(item)) = item else { break };
                        let _delivering = subscriber.delivering.lock();
                        if subscriber.closed.load(Ordering::Acquire) {
                            break;
                        }
                        IN_CALLBACK.with(|c| c.set(id));
                        deliver(&item, callback, user);
                        IN_CALLBACK.with(|c| c.set(0));
                    }
                });
                // Dropping it unsubscribes, on the bridge's runtime (a no-op once the bridge has closed).
                let _runtime = runtime.enter();
                drop(subscription);
            });
        if let Err(e) = spawned {
            let _ = SUBSCRIPTIONS.remove(id);
            client.subscribers.lock().pop();
            return Err(FfiError::new(
                GabpStatus::Io,
                format!("starting the subscription's thread: {e}"),
            ));
        }
        // SAFETY: checked not NULL; the caller's writable uint64_t.
        unsafe { put(out, id) };
        Ok(())
    })
}

fn deliver(
    item: &SubscriptionItem,
    callback: unsafe extern "C" fn(*mut c_void, *const GabpEvent),
    user: UserData,
) {
    let (channel, seq, payload, missed) = match item {
        SubscriptionItem::Event(event) => (
            event.channel.as_str(),
            event.seq,
            event.payload.to_string(),
            0,
        ),
        SubscriptionItem::Lagged { channel, missed } => {
            (channel.as_str(), 0, String::new(), *missed)
        }
        _ => return,
    };
    let event = GabpEvent {
        channel: channel.as_ptr().cast(),
        channel_len: channel.len(),
        seq,
        payload: payload.as_ptr().cast(),
        payload_len: payload.len(),
        missed,
    };
    // SAFETY: the caller's callback with its own user pointer; the event's strings live across it.
    unsafe { callback(user.0, &event) };
}

/// Ends subscription `s`: once it returns, its callback is not called again, and none is running (unless
/// called from inside an event callback, where a callback of `s` running on another thread may still be
/// finishing). Using `s` afterwards is `GABP_STATUS_HANDLE`.
///
/// Errors: `GABP_STATUS_HANDLE`.
///
/// Thread-safety: any thread, also from an event callback.
#[no_mangle]
pub extern "C" fn gabp_subscription_free(s: u64) -> GabpStatus {
    run(|| {
        let subscriber = SUBSCRIPTIONS.remove(s)?;
        subscriber.end();
        if let Ok(client) = BRIDGES.get(subscriber.bridge) {
            client
                .subscribers
                .lock()
                .retain(|other| !Arc::ptr_eq(other, &subscriber));
        }
        Ok(())
    })
}

/// Says goodbye to bridge `b`'s mod, closes the connection and frees the handle; using it afterwards is
/// `GABP_STATUS_HANDLE`. Calls in progress on other threads end with `GABP_STATUS_IO`; its subscriptions
/// call their callbacks no more (free their handles with [`gabp_subscription_free`]).
///
/// Errors: `GABP_STATUS_HANDLE`, `GABP_STATUS_STATE` (called from a mod's tool callback).
///
/// Thread-safety: as [`gabp_bridge_connect`].
#[no_mangle]
pub extern "C" fn gabp_bridge_close(b: u64) -> GabpStatus {
    run(|| {
        outside_runtime("gabp_bridge_close")?;
        let client = BRIDGES.remove(b)?;
        for subscriber in std::mem::take(&mut *client.subscribers.lock()) {
            subscriber.end();
        }
        let bridge = client.bridge.clone();
        let _ = block(&client, "gabp_bridge_close", async move {
            let _ = bridge.goodbye(Some("closed")).await;
        });
        if let Ok(client) = Arc::try_unwrap(client) {
            client.runtime.shutdown_timeout(Duration::from_secs(1));
        }
        Ok(())
    })
}
