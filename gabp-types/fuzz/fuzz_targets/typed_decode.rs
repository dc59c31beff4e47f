//! Typed decoding of every message type: the envelope decoders, the params and result of every
//! method, the typed event payloads and the string formats. See `harness.rs` for the input layout
//! and the properties checked.
#![no_main]

#[path = "../harness.rs"]
#[allow(dead_code)]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::typed_decode(data));
