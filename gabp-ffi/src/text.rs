//! Reading what the caller hands over: UTF-8 strings with explicit lengths, and JSON.

use std::ffi::c_char;

use serde_json::{Map, Value};

use crate::status::{FfiError, GabpStatus};

/// The string of `len` bytes at `ptr`; NULL with length 0 is the empty string.
///
/// # Safety
///
/// `ptr` is NULL or points to `len` readable bytes that stay unchanged during the call (header).
pub(crate) unsafe fn text<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<&'a str, FfiError> {
    // SAFETY: passed on.
    let bytes = unsafe { bytes(ptr.cast::<u8>(), len, what) }?;
    std::str::from_utf8(bytes).map_err(|e| {
        FfiError::new(
            GabpStatus::Utf8,
            format!("{what} is not UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// The `len` bytes at `ptr`; NULL with length 0 is none.
///
/// # Safety
///
/// As [`text`].
pub(crate) unsafe fn bytes<'a>(
    ptr: *const u8,
    len: usize,
    what: &str,
) -> Result<&'a [u8], FfiError> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(FfiError::new(
                GabpStatus::Null,
                format!("{what} is NULL but its length is {len}"),
            ))
        };
    }
    // SAFETY: as the function's contract says.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// As [`text`], for a string that must not be empty.
///
/// # Safety
///
/// As [`text`].
pub(crate) unsafe fn name<'a>(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<&'a str, FfiError> {
    // SAFETY: passed on.
    let s = unsafe { text(ptr, len, what) }?;
    if s.is_empty() {
        return Err(FfiError::new(
            GabpStatus::Invalid,
            format!("{what} is empty"),
        ));
    }
    Ok(s)
}

/// The JSON value in the string at `ptr`; an empty string is `empty`.
///
/// # Safety
///
/// As [`text`].
pub(crate) unsafe fn json(
    ptr: *const c_char,
    len: usize,
    what: &str,
    empty: Value,
) -> Result<Value, FfiError> {
    // SAFETY: passed on.
    let s = unsafe { text(ptr, len, what) }?;
    if s.trim().is_empty() {
        return Ok(empty);
    }
    serde_json::from_str(s).map_err(|e| {
        FfiError::new(
            GabpStatus::Json,
            format!(
                "{what} is not JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })
}

/// As [`json`], for a value that must be an object; an empty string is `{}`.
///
/// # Safety
///
/// As [`text`].
pub(crate) unsafe fn object(
    ptr: *const c_char,
    len: usize,
    what: &str,
) -> Result<Map<String, Value>, FfiError> {
    // SAFETY: passed on.
    match unsafe { json(ptr, len, what, Value::Object(Map::new())) }? {
        Value::Object(map) => Ok(map),
        other => Err(FfiError::new(
            GabpStatus::Json,
            format!("{what} must be a JSON object, not {}", kind(&other)),
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Writes `value` to `*out` when `out` is not NULL.
///
/// # Safety
///
/// `out` is NULL or a writable pointer to a `T` (header).
pub(crate) unsafe fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: as the function's contract says.
        unsafe { out.write(value) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_checked() {
        // SAFETY: the pointers and lengths below are those of live slices.
        unsafe {
            assert_eq!(text(std::ptr::null(), 0, "x").unwrap(), "");
            assert_eq!(
                text(std::ptr::null(), 3, "x").unwrap_err().status,
                GabpStatus::Null
            );
            let bad = [0x66u8, 0xff];
            let e = text(bad.as_ptr().cast(), 2, "the tool name").unwrap_err();
            assert_eq!(e.status, GabpStatus::Utf8);
            assert!(e.message.contains("the tool name"), "{}", e.message);
            let e = name(c"".as_ptr(), 0, "the channel").unwrap_err();
            assert_eq!(e.status, GabpStatus::Invalid);
            let j = "[1,";
            let e = json(j.as_ptr().cast(), j.len(), "the result", Value::Null).unwrap_err();
            assert_eq!(e.status, GabpStatus::Json);
            let a = "[1]";
            let e = object(a.as_ptr().cast(), a.len(), "the schema").unwrap_err();
            assert!(e.message.contains("not an array"), "{}", e.message);
            assert!(object(std::ptr::null(), 0, "x").unwrap().is_empty());
        }
    }
}
