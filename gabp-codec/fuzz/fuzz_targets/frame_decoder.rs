//! `FrameCodec` on arbitrary bytes in arbitrary chunkings. See `harness.rs` for the input layout and
//! the properties checked.
#![no_main]

#[path = "../harness.rs"]
#[allow(dead_code)]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::frame_decoder(data));
