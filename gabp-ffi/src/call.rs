//! Call handles: what a tool's callback answers through, at once or later from any thread.

use std::ffi::{c_char, c_void};

use gabp_session::server::{CallContext, CallError};
use gabp_types::methods::{ContentItem, ToolResult};
use gabp_types::ErrorCode;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::handles::Handles;
use crate::status::{run, FfiError, GabpStatus};
use crate::text::{bytes, json, put, text};

/// A tool's callback: `user` as given with the tool, the call's handle, and its arguments as JSON (UTF-8,
/// `args_len` bytes, not NUL-terminated), which the library owns and which are valid during the callback
/// only. The arguments have been checked against the tool's input schema. Answer with
/// [`gabp_call_reply`] or [`gabp_call_fail`]: a main-thread tool before the callback returns, any other
/// tool at once or later from any thread.
pub type GabpToolFn = Option<
    unsafe extern "C" fn(user: *mut c_void, call: u64, args: *const c_char, args_len: usize),
>;

/// A resource's callback: `user` as given with the resource, and the read's handle. Answer with
/// [`gabp_call_reply_resource`] (or [`gabp_call_fail`]) at once or later from any thread; it may ask
/// [`gabp_call_is_cancelled`].
pub type GabpResourceFn = Option<unsafe extern "C" fn(user: *mut c_void, call: u64)>;

/// A resource callback known not to be NULL.
pub(crate) type GabpResourceFnChecked = unsafe extern "C" fn(user: *mut c_void, call: u64);

/// The caller's `user` pointer, passed back to its callbacks on the library's threads.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the header states that `user` is handed to callbacks on other threads; the caller promises it may be.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

/// Where an answer goes: a tool call answers JSON, a resource read its content.
enum Answer {
    Tool(oneshot::Sender<Result<Value, CallError>>),
    Read {
        binary: bool,
        content: oneshot::Sender<Result<Vec<u8>, CallError>>,
    },
}

/// One call in progress: a tool call or a resource read.
pub(crate) struct Call {
    answer: Mutex<Option<Answer>>,
    context: CallContext,
}

pub(crate) static CALLS: Handles<Call> = Handles::new("call");

/// A call handed to a callback; frees its handle when the call ends, however it ends. `T` is what it answers:
/// JSON for a tool, bytes for a resource.
pub(crate) struct Pending<T> {
    id: u64,
    answer: oneshot::Receiver<Result<T, CallError>>,
}

impl Pending<Value> {
    /// A tool call.
    pub(crate) fn tool(context: CallContext) -> Pending<Value> {
        let (tx, rx) = oneshot::channel();
        Pending::insert(context, Answer::Tool(tx), rx)
    }

    /// Hands the call to `callback` with `args`.
    pub(crate) fn hand_to(&self, callback: GabpToolFnChecked, user: UserData, args: &Value) {
        let args = args.to_string();
        // SAFETY: a callback the caller registered, with its own user pointer; the arguments live across it.
        unsafe { callback(user.0, self.id, args.as_ptr().cast(), args.len()) };
    }

    /// The answer given so far (for a main-thread tool, after its callback returned).
    pub(crate) fn answered(mut self) -> Result<Value, CallError> {
        self.answer.try_recv().unwrap_or_else(|_| {
            Err(CallError::new(
                "the main-thread tool's callback returned without answering: answer main-thread calls inside the callback",
            ))
        })
    }
}

impl Pending<Vec<u8>> {
    /// A resource read; a text resource's content must be UTF-8.
    pub(crate) fn read(context: CallContext, binary: bool) -> Pending<Vec<u8>> {
        let (tx, rx) = oneshot::channel();
        Pending::insert(
            context,
            Answer::Read {
                binary,
                content: tx,
            },
            rx,
        )
    }

    /// Hands the read to `callback`.
    pub(crate) fn hand_to_reader(&self, callback: GabpResourceFnChecked, user: UserData) {
        // SAFETY: a callback the caller registered, with its own user pointer.
        unsafe { callback(user.0, self.id) };
    }
}

impl<T> Pending<T> {
    fn insert(
        context: CallContext,
        answer: Answer,
        rx: oneshot::Receiver<Result<T, CallError>>,
    ) -> Pending<T> {
        let id = CALLS.insert(Call {
            answer: Mutex::new(Some(answer)),
            context,
        });
        Pending { id, answer: rx }
    }

    /// Waits for the answer.
    pub(crate) async fn answer(mut self) -> Result<T, CallError> {
        (&mut self.answer)
            .await
            .unwrap_or_else(|_| Err(CallError::new("the call ended without an answer")))
    }
}

impl<T> Drop for Pending<T> {
    fn drop(&mut self) {
        let _ = CALLS.remove(self.id);
    }
}

/// A tool callback known not to be NULL.
pub(crate) type GabpToolFnChecked =
    unsafe extern "C" fn(user: *mut c_void, call: u64, args: *const c_char, args_len: usize);

fn live(call: u64) -> Result<std::sync::Arc<Call>, FfiError> {
    CALLS.get(call).map_err(|e| {
        if CALLS.was_issued(call) {
            FfiError::new(
                GabpStatus::CallEnded,
                format!("call {call} has already ended: it was answered, failed, cancelled or timed out"),
            )
        } else {
            e
        }
    })
}

/// Takes the answer slot of `call` when `fits` accepts what it answers; `fits` says why not otherwise.
fn take(call: u64, fits: impl FnOnce(&Answer) -> Result<(), FfiError>) -> Result<Answer, FfiError> {
    let c = live(call)?;
    let mut slot = c.answer.lock();
    let Some(answer) = slot.as_ref() else {
        return Err(FfiError::new(
            GabpStatus::CallEnded,
            format!("call {call} was already answered"),
        ));
    };
    fits(answer)?;
    slot.take()
        .ok_or_else(|| FfiError::new(GabpStatus::Internal, "the answer slot emptied"))
}

/// Answers `call`: a tool call with `outcome`, a resource read only with its error.
fn answer(call: u64, outcome: Result<Value, CallError>) -> Result<(), FfiError> {
    let is_error = outcome.is_err();
    let slot = take(call, |answer| match answer {
        Answer::Read { .. } if !is_error => Err(FfiError::new(
            GabpStatus::State,
            format!("call {call} reads a resource: answer it with gabp_call_reply_resource"),
        )),
        _ => Ok(()),
    })?;
    // The caller may have stopped waiting (cancelled, timed out) a moment ago: then nobody reads it.
    match (slot, outcome) {
        (Answer::Tool(sender), outcome) => {
            let _ = sender.send(outcome);
        }
        (Answer::Read { content, .. }, outcome) => {
            let _ = content.send(outcome.map(|_| Vec::new()));
        }
    }
    Ok(())
}

/// The JSON result at `json_text` (empty means `{}`).
///
/// # Safety
///
/// As [`json`].
unsafe fn result(json_text: *const c_char, json_len: usize) -> Result<Value, FfiError> {
    // SAFETY: passed on.
    unsafe {
        json(
            json_text,
            json_len,
            "the result",
            Value::Object(Default::default()),
        )
    }
}

/// Answers `call` with the JSON value in `json` (`json_len` bytes; empty means `{}`).
///
/// Errors: `GABP_STATUS_JSON` when it does not parse, `GABP_STATUS_CALL_ENDED` when the call was answered
/// already or has ended (cancelled, timed out), `GABP_STATUS_HANDLE` for a handle never issued.
///
/// Thread-safety: any thread, once per call.
///
/// # Safety
///
/// `json` is NULL with `json_len` 0, or points to `json_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gabp_call_reply(
    call: u64,
    json_text: *const c_char,
    json_len: usize,
) -> GabpStatus {
    run(|| {
        // SAFETY: as the function's contract says.
        let value = unsafe { result(json_text, json_len) }?;
        answer(call, Ok(value))
    })
}

/// Answers `call` with the JSON value in `json` and one picture or sound (`data`, `data_len` bytes, of
/// type `mime`, such as `image/png` or `audio/wav`), sent as a content item (SPEC/1.0 extensions.md
/// §content). The library copies `data`.
///
/// Errors: as [`gabp_call_reply`], and `GABP_STATUS_INVALID` for a `mime` that is neither an image type nor
/// an audio type.
///
/// Thread-safety: any thread, once per call.
///
/// # Safety
///
/// Each pointer is NULL with its length 0, or points to that many readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gabp_call_reply_content(
    call: u64,
    json_text: *const c_char,
    json_len: usize,
    mime: *const c_char,
    mime_len: usize,
    data: *const u8,
    data_len: usize,
) -> GabpStatus {
    run(|| {
        // SAFETY: as the function's contract says.
        let value = unsafe { result(json_text, json_len) }?;
        // SAFETY: as above.
        let mime = unsafe { text(mime, mime_len, "the content's MIME type") }?;
        // SAFETY: as the function's contract says.
        let bytes = unsafe { bytes(data, data_len, "the content's data") }?;
        let item = if mime.starts_with("image/") {
            ContentItem::image(mime, bytes)
        } else if mime.starts_with("audio/") {
            ContentItem::audio(mime, bytes)
        } else {
            return Err(FfiError::new(
                GabpStatus::Invalid,
                format!("the content's MIME type is {mime:?}: expected image/... or audio/..."),
            ));
        };
        let result = ToolResult::new(value).with_content(vec![item]).into_value();
        answer(call, Ok(result))
    })
}

/// Answers resource read `call` with its content: `data_len` bytes at `data`, UTF-8 text for a text
/// resource, any bytes for a binary one (sent base64-encoded). The library copies `data`.
///
/// Errors: `GABP_STATUS_UTF8` (a text resource's content is not UTF-8), `GABP_STATUS_STATE` (`call` is a
/// tool call: answer it with [`gabp_call_reply`]), otherwise as [`gabp_call_reply`].
///
/// Thread-safety: any thread, once per read.
///
/// # Safety
///
/// `data` is NULL with `data_len` 0, or points to `data_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gabp_call_reply_resource(
    call: u64,
    data: *const u8,
    data_len: usize,
) -> GabpStatus {
    run(|| {
        // SAFETY: as the function's contract says.
        let bytes = unsafe { bytes(data, data_len, "the resource's content") }?;
        let slot = take(call, |answer| match answer {
            Answer::Tool(_) => Err(FfiError::new(
                GabpStatus::State,
                format!("call {call} is a tool call: answer it with gabp_call_reply"),
            )),
            Answer::Read { binary: false, .. } => match std::str::from_utf8(bytes) {
                Err(e) => Err(FfiError::new(
                    GabpStatus::Utf8,
                    format!(
                        "call {call} reads a text resource and its content is not UTF-8 (byte {})",
                        e.valid_up_to()
                    ),
                )),
                Ok(_) => Ok(()),
            },
            Answer::Read { .. } => Ok(()),
        })?;
        if let Answer::Read { content, .. } = slot {
            let _ = content.send(Ok(bytes.to_vec()));
        }
        Ok(())
    })
}

/// Fails `call` with GABP error `code` (0 for the tool-failure code, -32402) and `message`.
///
/// Errors: as [`gabp_call_reply`].
///
/// Thread-safety: any thread, once per call.
///
/// # Safety
///
/// `message` is NULL with `message_len` 0, or points to `message_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gabp_call_fail(
    call: u64,
    code: i32,
    message: *const c_char,
    message_len: usize,
) -> GabpStatus {
    run(|| {
        // SAFETY: as the function's contract says.
        let message = unsafe { text(message, message_len, "the error message") }?;
        let mut error = CallError::new(if message.is_empty() {
            "the tool failed"
        } else {
            message
        });
        if code != 0 {
            error = error.with_code(ErrorCode(i64::from(code)));
        }
        answer(call, Err(error))
    })
}

/// Sets `*cancelled` to whether anyone still waits for `call`: true once the bridge cancelled it, it timed
/// out, or it has ended otherwise; stop its work then.
///
/// Errors: `GABP_STATUS_NULL` for a NULL `cancelled`, `GABP_STATUS_HANDLE` for a handle never issued.
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// `cancelled` points to a writable `bool`.
#[no_mangle]
pub unsafe extern "C" fn gabp_call_is_cancelled(call: u64, cancelled: *mut bool) -> GabpStatus {
    run(|| {
        if cancelled.is_null() {
            return Err(FfiError::new(GabpStatus::Null, "cancelled is NULL"));
        }
        let value = match live(call) {
            Ok(c) => c.context.is_cancelled() || c.answer.lock().is_none(),
            Err(e) if e.status == GabpStatus::CallEnded => true,
            Err(e) => return Err(e),
        };
        // SAFETY: checked not NULL; the caller's writable bool.
        unsafe { put(cancelled, value) };
        Ok(())
    })
}

/// Reports progress of `call`: `done` of `total` (a negative `total` when unknown), with an optional
/// `message`. Sent only when the bridge asked for progress; otherwise nothing happens.
///
/// Errors: as [`gabp_call_reply`].
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// `message` is NULL with `message_len` 0, or points to `message_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn gabp_call_progress(
    call: u64,
    done: f64,
    total: f64,
    message: *const c_char,
    message_len: usize,
) -> GabpStatus {
    run(|| {
        // SAFETY: as the function's contract says.
        let message = unsafe { text(message, message_len, "the progress message") }?;
        if !done.is_finite() {
            return Err(FfiError::new(
                GabpStatus::Invalid,
                "done must be a finite number",
            ));
        }
        let total = (total.is_finite() && total >= 0.0).then_some(total);
        let call = live(call)?;
        call.context
            .progress(done, total, (!message.is_empty()).then_some(message));
        Ok(())
    })
}
