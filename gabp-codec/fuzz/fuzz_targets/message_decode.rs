//! The strict (and lenient) message decoder, directly and through `MessageCodec`, on arbitrary
//! bodies. See `harness.rs` for the properties checked.
#![no_main]

#[path = "../harness.rs"]
#[allow(dead_code)]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::message_decode(data));
