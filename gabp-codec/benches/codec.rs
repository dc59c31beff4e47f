//! Framing throughput of `FrameCodec` against tokio-util's `LengthDelimitedCodec` (the framing
//! floor: a 4-byte binary length), and the framing overhead of `MessageCodec` over strict decoding.
//!
//! Run: `cargo bench -p gabp-codec --bench codec`.

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use gabp_codec::{FrameCodec, MessageCodec};
use gabp_types::decode::{decode, DecodeMode};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

/// A workload: the bodies and both encodings of them.
struct Workload {
    name: &'static str,
    bodies: Vec<Bytes>,
    gabp_wire: Bytes,
    length_delimited_wire: Bytes,
}

impl Workload {
    fn new(name: &'static str, bodies: Vec<Bytes>) -> Self {
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

    fn body_bytes(&self) -> u64 {
        self.bodies.iter().map(|b| b.len() as u64).sum()
    }
}

fn length_delimited_codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(gabp_codec::DEFAULT_MAX_BODY_SIZE)
        .new_codec()
}

/// A JSON body of exactly `len` bytes (a request with a padded string argument).
fn json_body(len: usize, seed: usize) -> Bytes {
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
const READ_SIZE: usize = 64 * 1024;

fn workloads() -> Vec<Workload> {
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
fn decode_buffer<D: Decoder>(codec: &mut D, buf: &mut BytesMut) -> usize
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
fn decode_reads<D: Decoder>(mut codec: D, wire: &Bytes) -> usize
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

/// Benchmarks decoding `wire` with codecs from `codec`.
fn bench_decode<D: Decoder>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    function: &str,
    wire: &Bytes,
    frames: usize,
    in_one_buffer: bool,
    codec: impl Fn() -> D,
) where
    D::Error: std::fmt::Debug,
{
    group.bench_function(BenchmarkId::from_parameter(function), |b| {
        if in_one_buffer {
            b.iter_batched(
                || BytesMut::from(&wire[..]),
                |mut buf| {
                    assert_eq!(decode_buffer(&mut codec(), &mut buf), frames);
                    buf
                },
                BatchSize::LargeInput,
            );
        } else {
            b.iter(|| assert_eq!(decode_reads(codec(), wire), frames));
        }
    });
}

fn decode_benches(c: &mut Criterion) {
    for workload in workloads() {
        let mut group = c.benchmark_group(format!("decode_{}", workload.name));
        group.throughput(Throughput::Bytes(workload.body_bytes()));
        let frames = workload.bodies.len();
        // Small frames: all of them already in one buffer (pure framing cost). Large frames:
        // arriving in 64 KiB reads, so getting a body into the buffer (reservations, copies) counts.
        let in_one_buffer = workload.name == "200B";
        let wire = &workload.gabp_wire;
        bench_decode(
            &mut group,
            "gabp",
            wire,
            frames,
            in_one_buffer,
            FrameCodec::new,
        );
        let wire = &workload.length_delimited_wire;
        bench_decode(
            &mut group,
            "length_delimited",
            wire,
            frames,
            in_one_buffer,
            length_delimited_codec,
        );
        group.finish();
    }
}

fn encode_benches(c: &mut Criterion) {
    for workload in workloads() {
        let mut group = c.benchmark_group(format!("encode_{}", workload.name));
        group.throughput(Throughput::Bytes(workload.body_bytes()));
        let capacity = workload
            .gabp_wire
            .len()
            .max(workload.length_delimited_wire.len());
        // The output buffer is reused, as `FramedWrite` reuses its own.
        let mut dst = BytesMut::with_capacity(capacity);
        group.bench_function(BenchmarkId::from_parameter("gabp"), |b| {
            b.iter_batched(
                || workload.bodies.clone(),
                |bodies| {
                    dst.clear();
                    let mut codec = FrameCodec::new();
                    for body in bodies {
                        codec.encode(body, &mut dst).expect("body within limit");
                    }
                },
                BatchSize::LargeInput,
            );
        });
        group.bench_function(BenchmarkId::from_parameter("length_delimited"), |b| {
            b.iter_batched(
                || workload.bodies.clone(),
                |bodies| {
                    dst.clear();
                    let mut codec = length_delimited_codec();
                    for body in bodies {
                        codec.encode(body, &mut dst).expect("body within limit");
                    }
                },
                BatchSize::LargeInput,
            );
        });
        group.finish();
    }
}

/// A typical request: `tools/call` with a few arguments (about 250 bytes).
fn typical_request(seed: usize) -> Bytes {
    Bytes::from(format!(
        r#"{{"v":"gabp/1","id":"8d3c4c1e-8a2b-4f3e-9a59-{seed:012x}","type":"request","method":"tools/call","params":{{"name":"inventory/get","arguments":{{"player":"Steve","slot":{seed},"includeMeta":true,"filter":{{"tags":["tool","weapon"],"minDurability":0.25}}}}}}}}"#
    ))
}

fn message_decode_benches(c: &mut Criterion) {
    const MESSAGES: usize = 100;
    let bodies: Vec<Bytes> = (0..MESSAGES).map(typical_request).collect();
    for body in &bodies {
        decode(body, DecodeMode::Strict).expect("the typical request is strictly valid");
    }
    let mut wire = BytesMut::new();
    for body in &bodies {
        FrameCodec::new()
            .encode(body.clone(), &mut wire)
            .expect("body within limit");
    }
    let wire = wire.freeze();
    let mut group = c.benchmark_group("message_decode");
    group.throughput(Throughput::Bytes(
        bodies.iter().map(|b| b.len() as u64).sum(),
    ));
    // MessageCodec over frames: framing plus strict decoding.
    group.bench_function(BenchmarkId::from_parameter("message_codec"), |b| {
        b.iter_batched(
            || BytesMut::from(&wire[..]),
            |mut buf| {
                let mut codec = MessageCodec::new().with_mode(DecodeMode::Strict);
                let mut messages = Vec::with_capacity(MESSAGES);
                while let Some(item) = codec.decode(&mut buf).expect("valid wire") {
                    messages.push(item.expect("valid message"));
                }
                assert_eq!(messages.len(), MESSAGES);
                messages
            },
            BatchSize::SmallInput,
        );
    });
    // The same bodies, already split out: strict decoding alone.
    group.bench_function(BenchmarkId::from_parameter("strict_decode"), |b| {
        b.iter_batched(
            || bodies.clone(),
            |bodies| {
                bodies
                    .iter()
                    .map(|body| decode(body, DecodeMode::Strict).expect("valid message"))
                    .collect::<Vec<_>>()
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group!(
    benches,
    decode_benches,
    encode_benches,
    message_decode_benches
);
criterion_main!(benches);
