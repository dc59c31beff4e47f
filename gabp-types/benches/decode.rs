//! Strict typed decoding beside an untyped `serde_json::Value` parse of the same bytes.
//!
//! Target: strict decode within 1.5x of the untyped parse.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gabp_types::decode::{decode, decode_response_to, DecodeMode};
use serde_json::{json, Value};

/// A typical ~200-byte `tools/call` request.
fn tools_call() -> Vec<u8> {
    let body = json!({
        "v": "gabp/1",
        "id": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11",
        "type": "request",
        "method": "tools/call",
        "params": {
            "name": "world/place_block",
            "arguments": { "x": 12, "y": 64, "z": -7, "blockType": "minecraft:oak_planks" }
        }
    });
    serde_json::to_vec(&body).expect("serializable")
}

/// A ~8 KiB `tools/list` response.
fn tools_list() -> Vec<u8> {
    let tools: Vec<Value> = (0..24)
        .map(|i| {
            json!({
                "name": format!("world/tool_{i}"),
                "title": format!("World tool number {i}"),
                "description": "Reads or changes a part of the voxel world; see the input schema for arguments.",
                "inputSchema": {
                    "type": "object",
                    "required": ["x", "y", "z"],
                    "properties": {
                        "x": { "type": "integer" },
                        "y": { "type": "integer" },
                        "z": { "type": "integer" },
                        "blockType": { "type": "string" }
                    },
                    "additionalProperties": false
                },
                "outputSchema": { "type": "object", "properties": { "success": { "type": "boolean" } } },
                "tags": ["world", "building"]
            })
        })
        .collect();
    let body = json!({
        "v": "gabp/1",
        "id": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a12",
        "type": "response",
        "result": { "tools": tools }
    });
    serde_json::to_vec(&body).expect("serializable")
}

fn bench(c: &mut Criterion) {
    for (name, body) in [
        ("tools_call_request", tools_call()),
        ("tools_list_response", tools_list()),
    ] {
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function("serde_json_value", |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(&body)).expect("valid JSON"))
        });
        group.bench_function("strict_decode", |b| {
            b.iter(|| decode(black_box(&body), DecodeMode::Strict).expect("valid message"))
        });
        group.bench_function("lenient_decode", |b| {
            b.iter(|| decode(black_box(&body), DecodeMode::Lenient).expect("valid message"))
        });
        if name == "tools_list_response" {
            group.bench_function("strict_decode_with_result_check", |b| {
                b.iter(|| {
                    decode_response_to(black_box(&body), "tools/list", DecodeMode::Strict)
                        .expect("valid")
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
