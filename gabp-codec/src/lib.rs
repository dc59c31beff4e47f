//! Content-Length framing for the Game Agent Bridge Protocol (`gabp/1`).
#![forbid(unsafe_code)]

mod frame;

pub use frame::{
    Frame, FrameCodec, FrameError, InvalidLength, MalformedHeader, CONTENT_TYPE,
    DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_HEADER_SIZE,
};
