//! The mod side: build a mod (tools, channels), start it where the GABS environment or `bridge.json` says
//! (as `ModSettings::for_game` resolves it), publish events, and run main-thread tools from the game's loop.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{
    CallContext, CallError, EventPublisher, MainThread, ModServer, ModServerBuilder, ServeHandle,
    Tool,
};
use gabp_transport::{BridgeJsonGuard, Endpoint, Listener, ModSettings};
use parking_lot::Mutex;
use serde_json::Value;

use crate::call::{GabpToolFn, Pending, UserData};
use crate::handles::Handles;
use crate::status::{run, FfiError, GabpStatus};
use crate::text::{json, name, object, put, text};
use crate::GabpString;

/// A tool flag: the tool only reads (tagged `read-only`, so it answers while an attention item blocks).
pub const GABP_TOOL_READ_ONLY: u32 = 1;
/// A tool flag: the tool runs on the game's thread, inside [`gabp_mod_pump`].
pub const GABP_TOOL_MAIN_THREAD: u32 = 2;

/// Called when a main-thread call is queued, from the library's thread: wake the game loop so that it calls
/// [`gabp_mod_pump`]. Keep it short; do not call into the library from it.
pub type GabpWakeFn = Option<unsafe extern "C" fn(user: *mut c_void)>;

// One per mod, moved only at start and stop.
#[allow(clippy::large_enum_variant)]
enum Stage {
    Building(Box<ModServerBuilder>),
    Running(Running),
    Stopped,
}

struct Running {
    runtime: tokio::runtime::Runtime,
    serve: Option<ServeHandle>,
    endpoint: Endpoint,
    _bridge_json: Option<BridgeJsonGuard>,
}

/// One mod.
pub(crate) struct Mod {
    app: String,
    /// With attention on ([`crate::gabp_mod_enable_attention`]), its manager.
    pub(crate) attention: Mutex<Option<gabp_attention::AttentionManager>>,
    stage: Mutex<Stage>,
    main_thread: MainThread,
    events: EventPublisher,
}

pub(crate) static MODS: Handles<Mod> = Handles::new("mod");

fn state_error(what: &str) -> FfiError {
    FfiError::new(GabpStatus::State, what.to_owned())
}

impl Mod {
    /// Changes the builder; only before the start.
    pub(crate) fn build_with(
        &self,
        change: impl FnOnce(ModServerBuilder) -> ModServerBuilder,
    ) -> Result<(), FfiError> {
        let mut stage = self.stage.lock();
        match std::mem::replace(&mut *stage, Stage::Stopped) {
            Stage::Building(builder) => {
                *stage = Stage::Building(Box::new(change(*builder)));
                Ok(())
            }
            other => {
                *stage = other;
                Err(state_error(
                    "the mod has started: add tools and channels before gabp_mod_start",
                ))
            }
        }
    }
}

/// Creates a mod named `app` at `version` and sets `*out` to its handle. Free it with [`gabp_mod_free`].
///
/// Errors: `GABP_STATUS_NULL`, `GABP_STATUS_UTF8`, `GABP_STATUS_INVALID` (an empty name).
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// `app` and `version` point to that many readable bytes; `out` to a writable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_new(
    app: *const c_char,
    app_len: usize,
    version: *const c_char,
    version_len: usize,
    out: *mut u64,
) -> GabpStatus {
    run(|| {
        if out.is_null() {
            return Err(FfiError::new(GabpStatus::Null, "out is NULL"));
        }
        // SAFETY: as the function's contract says.
        let app = unsafe { name(app, app_len, "the app name") }?;
        // SAFETY: as above.
        let version = unsafe { name(version, version_len, "the app version") }?;
        let builder = ModServer::builder().app(app, version);
        let id = MODS.insert(Mod {
            app: app.to_owned(),
            attention: Mutex::new(None),
            main_thread: builder.main_thread(),
            events: builder.event_publisher(),
            stage: Mutex::new(Stage::Building(Box::new(builder))),
        });
        // SAFETY: checked not NULL; the caller's writable uint64_t.
        unsafe { put(out, id) };
        Ok(())
    })
}

/// Adds tool `name` to mod `m`: `description`, its input schema as JSON (`input_schema`, a JSON Schema
/// object; empty for any object), `flags` ([`GABP_TOOL_READ_ONLY`], [`GABP_TOOL_MAIN_THREAD`]), and the
/// `callback` that serves its calls with `user`.
///
/// Errors: `GABP_STATUS_NULL` (no callback), `GABP_STATUS_UTF8`, `GABP_STATUS_JSON` (the schema does not
/// parse or is not an object), `GABP_STATUS_INVALID` (an empty name, unknown flags), `GABP_STATUS_STATE`
/// (the mod has started). A schema that is not a valid JSON Schema fails [`gabp_mod_start`] with
/// `GABP_STATUS_SCHEMA`, naming the tool.
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// Each string points to its length in readable bytes (or is NULL with length 0). `user` is passed to
/// `callback` on the library's threads.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gabp_mod_add_tool(
    m: u64,
    tool_name: *const c_char,
    tool_name_len: usize,
    description: *const c_char,
    description_len: usize,
    input_schema: *const c_char,
    input_schema_len: usize,
    flags: u32,
    callback: GabpToolFn,
    user: *mut c_void,
) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        // SAFETY: as the function's contract says.
        let tool_name = unsafe { name(tool_name, tool_name_len, "the tool name") }?;
        // SAFETY: as above.
        let description = unsafe { text(description, description_len, "the description") }?;
        // SAFETY: as above.
        let mut schema = unsafe { object(input_schema, input_schema_len, "the input schema") }?;
        if schema.is_empty() {
            schema.insert("type".to_owned(), Value::from("object"));
        }
        let callback = callback.ok_or_else(|| {
            FfiError::new(
                GabpStatus::Null,
                format!("tool {tool_name}: the callback is NULL"),
            )
        })?;
        if flags & !(GABP_TOOL_READ_ONLY | GABP_TOOL_MAIN_THREAD) != 0 {
            return Err(FfiError::new(
                GabpStatus::Invalid,
                format!("tool {tool_name}: unknown flags {flags:#x}"),
            ));
        }
        let user = UserData(user);
        let mut tool = if flags & GABP_TOOL_MAIN_THREAD != 0 {
            Tool::on_main_thread(
                tool_name,
                move |_: &mut (), context: CallContext, args: Value| -> Result<Value, CallError> {
                    let pending = Pending::tool(context);
                    pending.hand_to(callback, user, &args);
                    pending.answered()
                },
            )
        } else {
            Tool::new(tool_name, move |context: CallContext, args: Value| {
                let pending = Pending::tool(context);
                pending.hand_to(callback, user, &args);
                pending.answer()
            })
        };
        tool = tool.input_schema(Value::Object(schema));
        if !description.is_empty() {
            tool = tool.description(description);
        }
        if flags & GABP_TOOL_READ_ONLY != 0 {
            tool = tool.tags(["read-only"]);
        }
        m.build_with(|b| b.tool(tool))
    })
}

/// Adds event channel `channel` to mod `m`, for [`gabp_mod_publish`].
///
/// Errors: `GABP_STATUS_UTF8`, `GABP_STATUS_INVALID` (empty), `GABP_STATUS_STATE` (the mod has started).
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// `channel` points to `channel_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_add_channel(
    m: u64,
    channel: *const c_char,
    channel_len: usize,
) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        // SAFETY: as the function's contract says.
        let channel = unsafe { name(channel, channel_len, "the channel") }?.to_owned();
        m.build_with(|b| b.channel(channel))
    })
}

/// Turns on the time-control extension (SPEC/1.0 extensions.md §time-control) for mod `m`: bridges may pause,
/// resume and step the game; ask [`gabp_mod_tick`] before each tick.
///
/// Errors: `GABP_STATUS_STATE` (the mod has started).
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_mod_enable_time_control(m: u64) -> GabpStatus {
    run(|| MODS.get(m)?.build_with(|b| b.time_control(true)))
}

/// Starts mod `m`: the endpoint and token come from the GABS environment (`GABP_SERVER_PORT`, `GABP_TOKEN`,
/// `GABS_GAME_ID`) when a launcher set it, else from `bridge.json` at the platform path, else a free loopback
/// TCP port and a fresh token, announced in `bridge.json` (removed again by [`gabp_mod_stop`]).
///
/// Errors: `GABP_STATUS_STATE` (started before), `GABP_STATUS_SCHEMA` (a tool's input schema is not valid),
/// `GABP_STATUS_INVALID` (a tool or channel name, or a resource URI, is not valid or comes twice),
/// `GABP_STATUS_IO` (the settings cannot be read, or listening fails).
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_mod_start(m: u64) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        let mut stage = m.stage.lock();
        let builder = match std::mem::replace(&mut *stage, Stage::Stopped) {
            Stage::Building(builder) => *builder,
            other => {
                *stage = other;
                return Err(state_error("the mod was started before; create a new one"));
            }
        };
        let io = |e: &dyn std::fmt::Display| FfiError::new(GabpStatus::Io, e.to_string());
        let settings = ModSettings::for_game(m.app.clone()).map_err(|e| io(&e))?;
        let server = builder.settings(&settings).build().map_err(|e| {
            let message = e.to_string();
            let status = if message.contains("schema") {
                GabpStatus::Schema
            } else {
                GabpStatus::Invalid
            };
            FfiError::new(status, message)
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("gabp-mod")
            .enable_all()
            .build()
            .map_err(|e| io(&e))?;
        let listener = runtime
            .block_on(Listener::bind(&settings.endpoint))
            .map_err(|e| io(&e))?;
        let endpoint = listener.endpoint().clone();
        let bridge_json = settings
            .publish_bridge_json(&endpoint)
            .map_err(|e| io(&e))?;
        let serve = {
            let _entered = runtime.enter();
            server.serve(listener)
        };
        *stage = Stage::Running(Running {
            runtime,
            serve: Some(serve),
            endpoint,
            _bridge_json: bridge_json,
        });
        Ok(())
    })
}

/// Sets `*out` to the endpoint mod `m` listens on (`tcp://127.0.0.1:PORT`, with the real port); free it with
/// [`gabp_string_free`].
///
/// Errors: `GABP_STATUS_STATE` (not running), `GABP_STATUS_NULL`.
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// `out` points to a writable `GabpString`.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_endpoint(m: u64, out: *mut GabpString) -> GabpStatus {
    run(|| {
        if out.is_null() {
            return Err(FfiError::new(GabpStatus::Null, "out is NULL"));
        }
        let m = MODS.get(m)?;
        let stage = m.stage.lock();
        let Stage::Running(running) = &*stage else {
            return Err(state_error("the mod is not running"));
        };
        // SAFETY: checked not NULL; the caller's writable GabpString.
        unsafe { put(out, GabpString::new(running.endpoint.to_string())) };
        Ok(())
    })
}

/// Publishes an event on `channel` of mod `m` with the JSON `payload` (empty means `{}`); sets `*seq` (when
/// not NULL) to its sequence number. Subscribed bridges get it; with none, it is dropped.
///
/// Errors: `GABP_STATUS_JSON`, `GABP_STATUS_INVALID` (a channel the mod did not add).
///
/// Thread-safety: any thread, also from a tool's callback.
///
/// # Safety
///
/// `channel` and `payload` point to that many readable bytes; `seq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_publish(
    m: u64,
    channel: *const c_char,
    channel_len: usize,
    payload: *const c_char,
    payload_len: usize,
    seq: *mut u64,
) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        // SAFETY: as the function's contract says.
        let channel = unsafe { name(channel, channel_len, "the channel") }?;
        // SAFETY: as above.
        let payload = unsafe {
            json(
                payload,
                payload_len,
                "the payload",
                Value::Object(Default::default()),
            )
        }?;
        let published = m
            .events
            .publish(channel, payload)
            .map_err(|e| FfiError::new(GabpStatus::Invalid, e.to_string()))?;
        // SAFETY: NULL or the caller's writable uint64_t.
        unsafe { put(seq, published.seq) };
        Ok(())
    })
}

/// Runs the main-thread calls queued for mod `m`, oldest first, for at most `budget_us` microseconds (a
/// call that has started always finishes); sets `*ran` (when not NULL) to how many ran. Call it from the
/// game's thread, each frame or when woken ([`gabp_mod_set_wake`], [`gabp_mod_wait`]).
///
/// Thread-safety: the game's thread; main-thread tools' callbacks run inside it.
///
/// # Safety
///
/// `ran` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_pump(m: u64, budget_us: u64, ran: *mut u32) -> GabpStatus {
    run(|| {
        let main_thread = MODS.get(m)?.main_thread.clone();
        let report = main_thread.pump(Duration::from_micros(budget_us));
        // SAFETY: NULL or the caller's writable uint32_t.
        unsafe { put(ran, u32::try_from(report.ran).unwrap_or(u32::MAX)) };
        Ok(())
    })
}

/// Blocks the calling thread until a main-thread call is queued for mod `m`, [`gabp_mod_wake`] is called, or
/// `timeout_us` microseconds pass; sets `*work` (when not NULL) to whether calls are queued. For a game loop
/// that would otherwise sleep until its next frame: an idle game answers at once.
///
/// Thread-safety: the game's thread.
///
/// # Safety
///
/// `work` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_wait(m: u64, timeout_us: u64, work: *mut bool) -> GabpStatus {
    run(|| {
        let main_thread = MODS.get(m)?.main_thread.clone();
        let queued = main_thread.wait(Duration::from_micros(timeout_us));
        // SAFETY: NULL or the caller's writable bool.
        unsafe { put(work, queued) };
        Ok(())
    })
}

/// Ends a [`gabp_mod_wait`] in progress on mod `m` (to stop the game loop, say).
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_mod_wake(m: u64) -> GabpStatus {
    run(|| {
        MODS.get(m)?.main_thread.wake();
        Ok(())
    })
}

/// Calls `wake(user)` whenever a main-thread call is queued for mod `m`, from the library's thread, so that a
/// game loop waiting on an event source of its own (an engine's event queue) calls [`gabp_mod_pump`]. NULL
/// `wake` stops it. Replaces an earlier one.
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_mod_set_wake(m: u64, wake: GabpWakeFn, user: *mut c_void) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        let user = UserData(user);
        match wake {
            Some(wake) => m.main_thread.on_work(move || {
                let user = user;
                // SAFETY: the caller's callback with its own user pointer, as the header describes.
                unsafe { wake(user.0) }
            }),
            None => m.main_thread.on_work(|| {}),
        }
        Ok(())
    })
}

/// Asks mod `m`'s game clock whether to run the next tick (the time-control extension): sets `*run_tick` to
/// false while bridges have paused the game, true otherwise (and for each tick a `time/step` owes). Call it
/// once per tick, from the game's thread, then run the tick only when true.
///
/// Errors: `GABP_STATUS_STATE` (time control is not on, or the mod has not started), `GABP_STATUS_NULL`.
///
/// Thread-safety: the game's thread.
///
/// # Safety
///
/// `run_tick` points to a writable `bool`.
#[no_mangle]
pub unsafe extern "C" fn gabp_mod_tick(m: u64, run_tick: *mut bool) -> GabpStatus {
    run(|| {
        if run_tick.is_null() {
            return Err(FfiError::new(GabpStatus::Null, "run_tick is NULL"));
        }
        let clock = MODS.get(m)?.main_thread.clock().ok_or_else(|| {
            state_error(
                "time control is not on (gabp_mod_enable_time_control), or the mod has not started",
            )
        })?;
        let ran = clock.run_tick(|| ());
        // SAFETY: checked not NULL; the caller's writable bool.
        unsafe { put(run_tick, ran) };
        Ok(())
    })
}

fn stop(m: &Mod) {
    let running = {
        let mut stage = m.stage.lock();
        match std::mem::replace(&mut *stage, Stage::Stopped) {
            Stage::Running(running) => Some(running),
            other => {
                *stage = other;
                None
            }
        }
    };
    let Some(mut running) = running else { return };
    // The game thread is here, not pumping: calls waiting for it are answered now (SPEC/1.0 gabp.md §7).
    m.main_thread.close();
    if let Some(serve) = running.serve.take() {
        running.runtime.block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(5), serve.shutdown()).await;
        });
    }
    running.runtime.shutdown_timeout(Duration::from_secs(1));
}

/// Stops mod `m`: stops listening, answers the main-thread calls still queued -32401 (the game is shutting
/// down), lets the other calls in flight answer (up to 5 s), closes the connections and removes the
/// `bridge.json` it wrote. A mod that is not running is left as it is.
///
/// Thread-safety: any thread but the library's own (not from a tool's callback).
#[no_mangle]
pub extern "C" fn gabp_mod_stop(m: u64) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(state_error(
                "gabp_mod_stop was called from a tool's callback; call it from the game's thread",
            ));
        }
        stop(&m);
        Ok(())
    })
}

/// Stops mod `m` (as [`gabp_mod_stop`]) and frees its handle; using it afterwards is `GABP_STATUS_HANDLE`.
///
/// Thread-safety: any thread but the library's own.
#[no_mangle]
pub extern "C" fn gabp_mod_free(m: u64) -> GabpStatus {
    run(|| {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(state_error(
                "gabp_mod_free was called from a tool's callback; call it from the game's thread",
            ));
        }
        let m: Arc<Mod> = MODS.remove(m)?;
        stop(&m);
        Ok(())
    })
}
