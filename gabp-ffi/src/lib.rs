//! gabp-ffi: gabp-rs behind a C ABI, so that a game in any engine (Unity and Godot through C#, Unreal and
//! Godot through C++, anything that calls C) hosts a GABP mod, and a test harness in C or C# drives one. The
//! header is `include/gabp.h`, generated from this crate by cbindgen (`cargo xtask gen-header`).
//!
//! Rules at the boundary, for every function:
//!
//! - It returns a [`GabpStatus`]; on anything but `GABP_STATUS_OK`, [`gabp_last_error`] says what went wrong
//!   (per thread). No panic crosses the boundary: one is caught and returned as `GABP_STATUS_INTERNAL`.
//! - Strings go in as UTF-8 with an explicit length (no NUL needed); NULL with length 0 is the empty string.
//!   The library copies what it keeps.
//! - Mods, calls, bridges and subscriptions are `uint64_t` handles. A number is never given twice, so a
//!   handle used after it was freed, or one never given, is `GABP_STATUS_HANDLE`, never undefined behaviour.
//! - A string the library gives out is a [`GabpString`], owned by the caller and freed with
//!   [`gabp_string_free`]; the last error is the one exception (owned by the library, per thread).
//! - Each function states which threads may call it.
#![warn(missing_docs)]

mod attention;
mod bridge;
mod call;
mod handles;
mod mod_server;
mod resource;
mod status;
mod text;

pub use attention::{
    gabp_attention_open, gabp_attention_resolve, gabp_mod_enable_attention, GabpSeverity,
};
pub use bridge::{
    gabp_bridge_call, gabp_bridge_close, gabp_bridge_connect, gabp_bridge_discover,
    gabp_bridge_subscribe, gabp_subscription_free, GabpEvent, GabpEventFn,
};
pub use call::{
    gabp_call_fail, gabp_call_is_cancelled, gabp_call_progress, gabp_call_reply,
    gabp_call_reply_content, gabp_call_reply_resource, GabpResourceFn, GabpToolFn,
};
pub use mod_server::{
    gabp_mod_add_channel, gabp_mod_add_tool, gabp_mod_enable_time_control, gabp_mod_endpoint,
    gabp_mod_free, gabp_mod_new, gabp_mod_publish, gabp_mod_pump, gabp_mod_set_wake,
    gabp_mod_start, gabp_mod_stop, gabp_mod_tick, gabp_mod_wait, gabp_mod_wake, GabpWakeFn,
    GABP_TOOL_MAIN_THREAD, GABP_TOOL_READ_ONLY,
};
pub use resource::{gabp_mod_add_resource, GABP_RESOURCE_BINARY};
pub use status::{gabp_last_error, GabpStatus};

use std::ffi::c_char;

/// The version of this ABI: it changes when a function or type changes incompatibly. Compare it with
/// [`gabp_abi_version`] at start.
pub const GABP_ABI_VERSION: u32 = 1;

/// The ABI version of the library loaded, to compare with `GABP_ABI_VERSION` of the header compiled against.
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_abi_version() -> u32 {
    GABP_ABI_VERSION
}

/// A UTF-8 string the library gives out: `len` bytes at `ptr`, followed by a NUL. The caller owns it and frees
/// it with [`gabp_string_free`] (once).
#[repr(C)]
#[derive(Debug)]
pub struct GabpString {
    /// The bytes, NUL-terminated; NULL for an empty string that was freed.
    pub ptr: *mut c_char,
    /// The length in bytes, without the NUL.
    pub len: usize,
}

impl GabpString {
    pub(crate) fn new(text: String) -> GabpString {
        let len = text.len();
        let c = std::ffi::CString::new(text.replace('\0', " ")).unwrap_or_default();
        GabpString {
            ptr: c.into_raw(),
            len,
        }
    }
}

/// Frees a [`GabpString`] the library gave out; sets `s->ptr` to NULL and `s->len` to 0. NULL `s`, or one
/// already freed, is nothing to do.
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// `s` is NULL or points to a `GabpString` the library filled in, not copied and freed elsewhere.
#[no_mangle]
pub unsafe extern "C" fn gabp_string_free(s: *mut GabpString) {
    let _ = std::panic::catch_unwind(|| {
        if s.is_null() {
            return;
        }
        // SAFETY: as the function's contract says.
        let s = unsafe { &mut *s };
        if !s.ptr.is_null() {
            // SAFETY: a pointer from `CString::into_raw` in `GabpString::new`, freed once (then set to NULL).
            drop(unsafe { std::ffi::CString::from_raw(s.ptr) });
        }
        s.ptr = std::ptr::null_mut();
        s.len = 0;
    });
}
