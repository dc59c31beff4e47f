//! Resources of a mod (SPEC/1.0 gabp.md §4.7): listed by `resources/list`, read through a call handle like a
//! tool's call.

use std::ffi::{c_char, c_void};

use gabp_session::server::{CallContext, Resource};

use crate::call::{GabpResourceFn, Pending, UserData};
use crate::mod_server::MODS;
use crate::status::{run, FfiError, GabpStatus};
use crate::text::{name, text};

/// A resource flag: its content is bytes (sent base64-encoded), not UTF-8 text.
pub const GABP_RESOURCE_BINARY: u32 = 1;

/// Adds resource `uri` (such as `gabp://game/world`) to mod `m`, listed by `resources/list` as `name` with
/// `description` and MIME type `mime` (each may be empty) and read by `callback` with `user` on each
/// `resources/read`, on the library's threads. `flags`: [`GABP_RESOURCE_BINARY`] for bytes, else UTF-8 text.
///
/// Errors: `GABP_STATUS_NULL` (no callback), `GABP_STATUS_UTF8`, `GABP_STATUS_INVALID` (an empty URI or name,
/// unknown flags), `GABP_STATUS_STATE` (the mod has started), `GABP_STATUS_HANDLE`. A URI that is not valid,
/// or one added twice, fails [`gabp_mod_start`] with `GABP_STATUS_INVALID`.
///
/// Thread-safety: any thread.
///
/// # Safety
///
/// Each string points to its length in readable bytes (or is NULL with length 0). `user` is passed to
/// `callback` on the library's threads.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gabp_mod_add_resource(
    m: u64,
    uri: *const c_char,
    uri_len: usize,
    resource_name: *const c_char,
    resource_name_len: usize,
    description: *const c_char,
    description_len: usize,
    mime: *const c_char,
    mime_len: usize,
    flags: u32,
    callback: GabpResourceFn,
    user: *mut c_void,
) -> GabpStatus {
    run(|| {
        let m = MODS.get(m)?;
        // SAFETY: as the function's contract says.
        let uri = unsafe { name(uri, uri_len, "the resource URI") }?;
        // SAFETY: as above.
        let resource_name = unsafe { name(resource_name, resource_name_len, "the resource name") }?;
        // SAFETY: as above.
        let description = unsafe { text(description, description_len, "the description") }?;
        // SAFETY: as above.
        let mime = unsafe { text(mime, mime_len, "the MIME type") }?;
        let callback = callback.ok_or_else(|| {
            FfiError::new(
                GabpStatus::Null,
                format!("resource {uri}: the callback is NULL"),
            )
        })?;
        if flags & !GABP_RESOURCE_BINARY != 0 {
            return Err(FfiError::new(
                GabpStatus::Invalid,
                format!("resource {uri}: unknown flags {flags:#x}"),
            ));
        }
        let binary = flags & GABP_RESOURCE_BINARY != 0;
        let user = UserData(user);
        let read = move |context: CallContext| {
            let pending = Pending::read(context, binary);
            pending.hand_to_reader(callback, user);
            pending.answer()
        };
        let mut resource = if binary {
            Resource::binary(uri, resource_name, read)
        } else {
            Resource::text(uri, resource_name, move |context: CallContext| {
                let answer = read(context);
                async move {
                    // Checked as UTF-8 by gabp_call_reply_resource.
                    answer
                        .await
                        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                }
            })
        };
        if !description.is_empty() {
            resource = resource.description(description);
        }
        if !mime.is_empty() {
            resource = resource.mime_type(mime);
        }
        m.build_with(|b| b.resource(resource))
    })
}
