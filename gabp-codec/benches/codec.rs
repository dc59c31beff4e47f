//! Framing throughput of `FrameCodec` against tokio-util's `LengthDelimitedCodec` (the framing
//! floor: a 4-byte binary length), and the framing overhead of `MessageCodec` over strict decoding.
//!
//! Run: `cargo bench -p gabp-codec --bench codec`. On a busy machine, `--bench paired` measures
//! the same ratios with the two sides interleaved.

mod workload;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use gabp_codec::{FrameCodec, MessageCodec};
use gabp_types::decode::{decode, DecodeMode};
use tokio_util::codec::{Decoder, Encoder};
use workload::{
    decode_buffer, decode_reads, length_delimited_codec, message_bodies, workloads, MESSAGES,
};

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

fn message_decode_benches(c: &mut Criterion) {
    let (bodies, wire) = message_bodies();
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
