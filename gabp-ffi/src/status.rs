//! What every function returns: a [`GabpStatus`], and on failure a message from [`gabp_last_error`].

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The outcome of a call into the library. `GABP_STATUS_OK` is 0; on any other value
/// [`gabp_last_error`] says what went wrong.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GabpStatus {
    /// It worked.
    Ok = 0,
    /// A pointer the function needs was NULL.
    Null = 1,
    /// A string was not UTF-8.
    Utf8 = 2,
    /// JSON did not parse, or was not the kind of value asked for (an object, say).
    Json = 3,
    /// A JSON Schema was not valid, or a value did not match its schema.
    Schema = 4,
    /// A handle that is not valid: never issued, or already freed.
    Handle = 5,
    /// The call was already answered, failed or cancelled: a call is answered once.
    CallEnded = 6,
    /// Not in this state: a change to a mod that has started, a second start, a pump from a second thread.
    State = 7,
    /// An argument out of range, or a name that is not valid (a tool or channel name).
    Invalid = 8,
    /// Listening, connecting, or reading the settings failed.
    Io = 9,
    /// The time limit passed.
    Timeout = 10,
    /// The peer answered with a GABP error (its code and message are in the last error).
    Remote = 11,
    /// The library failed inside (a caught panic): a bug to report. The handle stays usable where it can.
    Internal = 12,
}

/// A failure: its status and what to tell the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct FfiError {
    pub(crate) status: GabpStatus,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn new(status: GabpStatus, message: impl Into<String>) -> FfiError {
        FfiError {
            status,
            message: message.into(),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // A NUL inside would cut the C string short: it cannot come from our messages, but is replaced anyway.
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
}

/// Runs `body` as an entry point: its error becomes the status and the thread's last error, and a panic
/// becomes [`GabpStatus::Internal`], never an unwind across the boundary.
pub(crate) fn run(body: impl FnOnce() -> Result<(), FfiError>) -> GabpStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => GabpStatus::Ok,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            set_last_error(&format!(
                "internal error in gabp-ffi (please report): {what}"
            ));
            GabpStatus::Internal
        }
    }
}

/// The message of the last failed call on this thread, UTF-8 and NUL-terminated; `*len` (when not NULL)
/// gets its length in bytes without the NUL. Owned by the library: valid until the next call into it on this
/// thread; copy it to keep it. An empty string when nothing failed yet.
///
/// Thread-safety: any thread; each thread has its own last error.
///
/// # Safety
///
/// `len` is NULL or points to a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn gabp_last_error(len: *mut usize) -> *const c_char {
    catch_unwind(|| {
        LAST_ERROR.with(|last| {
            let last = last.borrow();
            if !len.is_null() {
                // SAFETY: the caller passes NULL or a pointer to a writable size_t (header).
                unsafe { *len = last.as_bytes().len() };
            }
            last.as_ptr()
        })
    })
    .unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        let mut len = 0;
        // SAFETY: a writable size_t; then the library's own string, `len` bytes long, read at once.
        let bytes = unsafe {
            let ptr = gabp_last_error(&mut len);
            std::slice::from_raw_parts(ptr.cast::<u8>(), len)
        };
        String::from_utf8(bytes.to_vec()).unwrap_or_default()
    }

    #[test]
    fn an_error_sets_the_status_and_the_message() {
        let status = run(|| Err(FfiError::new(GabpStatus::Json, "args: expected an object")));
        assert_eq!(status, GabpStatus::Json);
        assert_eq!(last(), "args: expected an object");
    }

    #[test]
    fn a_panic_is_an_internal_error_not_an_unwind() {
        let status = run(|| panic!("boom"));
        assert_eq!(status, GabpStatus::Internal);
        assert!(last().contains("boom"), "{}", last());
    }

    #[test]
    fn a_nul_in_a_message_does_not_cut_it() {
        run(|| Err(FfiError::new(GabpStatus::Invalid, "a\0b")));
        assert_eq!(last(), "a b");
        // SAFETY: NULL is allowed.
        assert!(!unsafe { gabp_last_error(std::ptr::null_mut()) }.is_null());
    }
}
