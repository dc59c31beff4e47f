//! Attention (SPEC/1.0 attention.md): the game opens an item when something needs a person's or an agent's
//! look, blocking bridges' calls until they acknowledge it, and resolves it when the cause is gone.

use std::ffi::c_char;

use gabp_attention::{AttentionManager, Entry};
use gabp_types::Severity;

use crate::mod_server::MODS;
use crate::status::{run, FfiError, GabpStatus};
use crate::text::{name, put};
use crate::GabpString;

/// How serious an attention entry is.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GabpSeverity {
    /// Informational.
    Info = 0,
    /// A warning.
    Warning = 1,
    /// An error.
    Error = 2,
    /// A fatal error.
    Fatal = 3,
}

/// Turns on attention for mod `m` (before [`gabp_mod_start`](crate::gabp_mod_start)): it serves
/// `attention/current` and `attention/ack` and publishes on the attention channels.
///
/// Errors: `GABP_STATUS_STATE` (the mod has started, or attention is on already).
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_mod_enable_attention(m: u64) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        let mut attention = m.attention.lock();
        if attention.is_some() {
            return Err(FfiError::new(GabpStatus::State, "attention is on already"));
        }
        let manager = AttentionManager::new();
        m.build_with(|b| manager.install(b))?;
        *attention = Some(manager);
        Ok(())
    })
}

/// Records `message` at `severity` on mod `m`: it opens an attention item (or folds into the open one), which
/// blocks bridges' calls until acknowledged when `blocking`. Sets `*attention_id` (when not NULL) to the item's
/// id; free it with [`gabp_string_free`](crate::gabp_string_free).
///
/// Errors: `GABP_STATUS_STATE` (attention is not on), `GABP_STATUS_INVALID` (an empty message, a severity
/// out of range, or the policy opened no item).
///
/// Thread-safety: any thread, also from a tool's callback.
///
/// # Safety
///
/// `message` points to `message_len` readable bytes; `attention_id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gabp_attention_open(
    m: u64,
    severity: i32,
    message: *const c_char,
    message_len: usize,
    blocking: bool,
    attention_id: *mut GabpString,
) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        // SAFETY: as the function's contract says.
        let message = unsafe { name(message, message_len, "the message") }?;
        let severity = match severity {
            0 => Severity::Info,
            1 => Severity::Warning,
            2 => Severity::Error,
            3 => Severity::Fatal,
            other => {
                return Err(FfiError::new(
                    GabpStatus::Invalid,
                    format!("severity {other} is not one of GABP_SEVERITY_INFO to GABP_SEVERITY_FATAL (0 to 3)"),
                ))
            }
        };
        let manager = m.attention.lock().clone().ok_or_else(|| {
            FfiError::new(
                GabpStatus::State,
                "attention is not on (gabp_mod_enable_attention)",
            )
        })?;
        let id = manager
            .record_entry(Entry::new(severity, message).blocking(blocking))
            .attention_id
            .ok_or_else(|| {
                FfiError::new(GabpStatus::Invalid, "the attention policy opened no item")
            })?;
        // SAFETY: NULL or the caller's writable GabpString.
        unsafe { put(attention_id, GabpString::new(id.to_string())) };
        Ok(())
    })
}

/// Resolves mod `m`'s open attention item, if any (its cause is gone): bridges are told on
/// `attention/cleared` and calls are no longer blocked.
///
/// Errors: `GABP_STATUS_STATE` (attention is not on).
///
/// Thread-safety: any thread.
#[no_mangle]
pub extern "C" fn gabp_attention_resolve(m: u64) -> GabpStatus {
    run(|| {
        let manager = MODS.get(m)?.attention.lock().clone().ok_or_else(|| {
            FfiError::new(
                GabpStatus::State,
                "attention is not on (gabp_mod_enable_attention)",
            )
        })?;
        manager.clear();
        Ok(())
    })
}
