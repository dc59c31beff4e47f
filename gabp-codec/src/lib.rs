//! `Content-Length` framing and a typed message codec for the Game Agent Bridge Protocol (`gabp/1`).
//!
//! Every GABP message travels as one frame:
//!
//! ```text
//! Content-Length: 99\r\n
//! Content-Type: application/json\r\n
//! \r\n
//! {"v":"gabp/1","id":"8d3c4c1e-8a2b-4f3e-9a59-0c8e4a2b7d10","type":"request","method":"session/ping"}
//! ```
//!
//! Two tokio-util codecs read and write them:
//!
//! - [`FrameCodec`] splits a byte stream into bodies ([`Frame`]) and writes bodies as frames. It
//!   depends only on `bytes` and `tokio-util`, enforces a body limit and a header-block limit before
//!   reserving any memory, skips an oversized body without buffering it ([`Frame::Oversized`]), and
//!   reports every broken header as a distinct, fatal [`CodecError`].
//! - [`MessageCodec`] sits on top: each frame becomes a [`gabp_types::Message`] or a per-frame
//!   [`CodecError`] carrying the answer the receiver owes (code, id, error object), so one bad frame
//!   never ends the stream. It encodes messages straight into the output buffer and never writes a
//!   frame over the limit.
//!
//! Both keep all decoding progress inside the codec, so reading through `FramedRead` is cancel-safe
//! inside `tokio::select!`.
//!
//! Layering: above `gabp-types` (the messages), below `gabp-transport` (which puts [`FrameCodec`] on every
//! connection). Games and bridges rarely use this crate directly: `gabp-session` does the framing for them.
//!
//! # Example
//!
//! ```
//! use futures::{SinkExt, StreamExt};
//! use gabp_codec::{CodecError, MessageCodec};
//! use gabp_types::{ErrorCode, Message, MethodName, Request};
//! use tokio::io::AsyncWriteExt;
//! use tokio_util::codec::FramedRead;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (mut peer, ours) = tokio::io::duplex(4096);
//! peer.write_all(b"Content-Length: 9\r\n\r\nnot json!").await?;
//! let ping = Message::from(Request::new(MethodName::new("session/ping")?, None));
//! let mut frame = bytes::BytesMut::new();
//! tokio_util::codec::Encoder::encode(&mut MessageCodec::new(), ping.clone(), &mut frame)?;
//! peer.write_all(&frame).await?;
//! drop(peer);
//!
//! let mut incoming = FramedRead::new(ours, MessageCodec::new());
//! // The bad frame is reported with the answer it needs; the stream goes on.
//! let bad: CodecError = incoming.next().await.ok_or("eof")??.unwrap_err();
//! assert_eq!(bad.code(), ErrorCode::PARSE_ERROR);
//! assert!(bad.to_response().id.is_nil());
//! assert_eq!(incoming.next().await.ok_or("eof")???, ping);
//! assert!(incoming.next().await.is_none());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod error;
mod fault;
mod frame;
mod header;
mod message;

pub use error::{CodecError, InvalidLength, MalformedHeader};
pub use fault::FrameFault;
pub use frame::{encode_frame, Frame, FrameCodec, DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_HEADER_SIZE};
pub use header::CONTENT_TYPE;
pub use message::MessageCodec;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
