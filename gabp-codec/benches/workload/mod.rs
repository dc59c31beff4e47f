//! Workloads shared by the `codec` (criterion) and `paired` benchmarks.

#![allow(dead_code)]

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use gabp_codec::FrameCodec;
use gabp_types::decode::{decode, DecodeMode};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

/// A workload: the bodies and both encodings of them.
pub struct Workload {
    pub name: &'static str,
    pub bodies: Vec<Bytes>,
    pub gabp_wire: Bytes,
    pub length_delimited_wire: Bytes,
}

impl Workload {
    pub fn new(name: &'static str, bodies: Vec<Bytes>) -> Self {
        let mut gabp = BytesMut::new();
        let mut codec = FrameCodec::new();
        let mut length_delimited = BytesMut::new();
        let mut ld = length_delimited_codec();
        for body in &bodies {
            codec
                .encode(body.clone(), &mut gabp)
                .expect("body within limit");
            ld.encode(body.clone(), &mut length_delimited)
                .expect("body within limit");
        }
        Self {
            name,
            bodies,
            gabp_wire: gabp.freeze(),
            length_delimited_wire: length_delimited.freeze(),
        }
    }

    pub fn body_bytes(&self) -> u64 {
        self.bodies.iter().map(|b| b.len() as u64).sum()
    }
}

pub fn length_delimited_codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(gabp_codec::DEFAULT_MAX_BODY_SIZE)
        .new_codec()
}

/// A JSON body of exactly `len` bytes (a request with a padded string argument).
pub fn json_body(len: usize, seed: usize) -> Bytes {
    let head = format!(
        r#"{{"v":"gabp/1","id":"8d3c4c1e-8a2b-4f3e-9a59-{seed:012x}","type":"request","method":"tools/call","params":{{"name":"inventory/get","arguments":{{"pad":""#
    );
    let tail = r#""}}}"#;
    let pad = len.saturating_sub(head.len() + tail.len());
    let mut body = head.into_bytes();
    body.extend(std::iter::repeat_n(b'x', pad));
    body.extend_from_slice(tail.as_bytes());
    Bytes::from(body)
}

/// Size of one simulated socket read for the large-body workloads.
pub const READ_SIZE: usize = 64 * 1024;

pub fn workloads() -> Vec<Workload> {
    vec![
        Workload::new(
            "200B",
            (0..10_000).map(|i| json_body(190 + i % 21, i)).collect(),
        ),
        Workload::new("64KiB", (0..16).map(|i| json_body(64 * 1024, i)).collect()),
        Workload::new(
            "1MiB",
            (0..4)
                .map(|i| json_body(gabp_codec::DEFAULT_MAX_BODY_SIZE, i))
                .collect(),
        ),
    ]
}

/// Decodes every frame in `buf` with `codec`.
pub fn decode_buffer<D: Decoder>(codec: &mut D, buf: &mut BytesMut) -> usize
where
    D::Error: std::fmt::Debug,
{
    let mut frames = 0;
    while let Some(frame) = codec.decode(buf).expect("valid wire") {
        black_box(&frame);
        frames += 1;
    }
    frames
}

/// Decodes every frame of `wire` arriving in reads of `READ_SIZE` bytes appended to the read
/// buffer, as `FramedRead` does.
pub fn decode_reads<D: Decoder>(mut codec: D, wire: &Bytes) -> usize
where
    D::Error: std::fmt::Debug,
{
    let mut buf = BytesMut::with_capacity(8 * 1024);
    let mut frames = 0;
    for read in wire.chunks(READ_SIZE) {
        buf.extend_from_slice(read);
        frames += decode_buffer(&mut codec, &mut buf);
    }
    frames
}

/// A typical request: `tools/call` with a few arguments (about 250 bytes).
pub fn typical_request(seed: usize) -> Bytes {
    Bytes::from(format!(
        r#"{{"v":"gabp/1","id":"8d3c4c1e-8a2b-4f3e-9a59-{seed:012x}","type":"request","method":"tools/call","params":{{"name":"inventory/get","arguments":{{"player":"Steve","slot":{seed},"includeMeta":true,"filter":{{"tags":["tool","weapon"],"minDurability":0.25}}}}}}}}"#
    ))
}

/// How many typical requests the `message_decode` group decodes per iteration.
pub const MESSAGES: usize = 100;

/// `MESSAGES` typical requests: the bare bodies, and the same bodies framed in one buffer.
pub fn message_bodies() -> (Vec<Bytes>, Bytes) {
    let bodies: Vec<Bytes> = (0..MESSAGES).map(typical_request).collect();
    let mut wire = BytesMut::new();
    for body in &bodies {
        decode(body, DecodeMode::Strict).expect("the typical request is strictly valid");
        FrameCodec::new()
            .encode(body.clone(), &mut wire)
            .expect("body within limit");
    }
    (bodies, wire.freeze())
}
