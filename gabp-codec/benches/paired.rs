//! The ratios of the `codec` benchmark, measured with the two sides interleaved: each round times
//! one iteration of `gabp`, then one of the baseline, so both see the same machine load. Criterion
//! measures one function after the other, which a busy shared machine can skew by tens of percent.
//!
//! Run: `cargo bench -p gabp-codec --bench paired [-- FILTER...]`; with filters, only the groups whose
//! names contain one of them run (`-- encode_200B`). Prints, per group, the median of the per-round
//! throughput ratios and the ratio of the fastest rounds.

mod workload;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use gabp_codec::{FrameCodec, MessageCodec};
use gabp_types::decode::{decode, DecodeMode};
use tokio_util::codec::{Decoder, Encoder};
use workload::{
    decode_buffer, decode_reads, length_delimited_codec, message_bodies, workloads, MESSAGES,
};

/// Times `run` on an input made (untimed) by `prepare`.
fn timed<I>(prepare: impl FnOnce() -> I, run: impl FnOnce(I)) -> Duration {
    let input = prepare();
    let start = Instant::now();
    run(input);
    start.elapsed()
}

/// Runs `rounds` rounds of `ours` then `baseline`; prints the median per-round ratio
/// `baseline / ours` (a throughput ratio) and the ratio of the fastest rounds. Does nothing when
/// `filters` is not empty and `name` contains none of them.
fn paired(
    name: &str,
    filters: &[String],
    rounds: usize,
    mut ours: impl FnMut() -> Duration,
    mut baseline: impl FnMut() -> Duration,
) {
    if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
        return;
    }
    for _ in 0..rounds / 10 {
        ours();
        baseline();
    }
    let mut ratios = Vec::with_capacity(rounds);
    let (mut best_ours, mut best_baseline) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let a = ours();
        let b = baseline();
        best_ours = best_ours.min(a);
        best_baseline = best_baseline.min(b);
        ratios.push(b.as_secs_f64() / a.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "{name:<16} median ratio {:.3}   fastest rounds {:>10.1?} vs {:>10.1?} -> ratio {:.3}",
        ratios[ratios.len() / 2],
        best_ours,
        best_baseline,
        best_baseline.as_secs_f64() / best_ours.as_secs_f64(),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then run briefly.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        300
    } else {
        println!("test mode: 3 rounds, figures not meaningful (run with `cargo bench`)");
        3
    };
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    println!("throughput of gabp relative to length_delimited (>1: gabp faster)");
    for workload in workloads() {
        let frames = workload.bodies.len();
        let name = format!("decode_{}", workload.name);
        if workload.name == "200B" {
            paired(
                &name,
                &filters,
                rounds,
                || {
                    timed(
                        || BytesMut::from(&workload.gabp_wire[..]),
                        |mut buf| {
                            assert_eq!(decode_buffer(&mut FrameCodec::new(), &mut buf), frames)
                        },
                    )
                },
                || {
                    timed(
                        || BytesMut::from(&workload.length_delimited_wire[..]),
                        |mut buf| {
                            assert_eq!(
                                decode_buffer(&mut length_delimited_codec(), &mut buf),
                                frames
                            )
                        },
                    )
                },
            );
        } else {
            paired(
                &name,
                &filters,
                rounds,
                || {
                    timed(
                        || (),
                        |()| {
                            assert_eq!(decode_reads(FrameCodec::new(), &workload.gabp_wire), frames)
                        },
                    )
                },
                || {
                    timed(
                        || (),
                        |()| {
                            assert_eq!(
                                decode_reads(
                                    length_delimited_codec(),
                                    &workload.length_delimited_wire
                                ),
                                frames
                            )
                        },
                    )
                },
            );
        }
    }
    for workload in workloads() {
        let capacity = workload
            .gabp_wire
            .len()
            .max(workload.length_delimited_wire.len());
        let mut ours = BytesMut::with_capacity(capacity);
        let mut baseline = BytesMut::with_capacity(capacity);
        paired(
            &format!("encode_{}", workload.name),
            &filters,
            rounds,
            || {
                timed(
                    || workload.bodies.clone(),
                    |bodies: Vec<Bytes>| {
                        ours.clear();
                        let mut codec = FrameCodec::new();
                        for body in bodies {
                            codec.encode(body, &mut ours).expect("body within limit");
                        }
                    },
                )
            },
            || {
                timed(
                    || workload.bodies.clone(),
                    |bodies: Vec<Bytes>| {
                        baseline.clear();
                        let mut codec = length_delimited_codec();
                        for body in bodies {
                            codec
                                .encode(body, &mut baseline)
                                .expect("body within limit");
                        }
                    },
                )
            },
        );
    }
    println!("strict decoding alone relative to MessageCodec (1 - ratio = framing overhead)");
    let (bodies, wire) = message_bodies();
    paired(
        "message_decode",
        &filters,
        rounds * 4,
        || {
            timed(
                || BytesMut::from(&wire[..]),
                |mut buf| {
                    let mut codec = MessageCodec::new().with_mode(DecodeMode::Strict);
                    let mut messages = Vec::with_capacity(MESSAGES);
                    while let Some(item) = codec.decode(&mut buf).expect("valid wire") {
                        messages.push(item.expect("valid message"));
                    }
                    assert_eq!(messages.len(), MESSAGES);
                },
            )
        },
        || {
            timed(
                || bodies.clone(),
                |bodies| {
                    let messages: Vec<_> = bodies
                        .iter()
                        .map(|body| decode(body, DecodeMode::Strict).expect("valid message"))
                        .collect();
                    assert_eq!(messages.len(), MESSAGES);
                },
            )
        },
    );
}
