//! Replays every committed fuzz seed (`fuzz/seeds/typed_decode/`) through the fuzz target's own
//! properties, so CI covers them without a fuzzer; and checks that the target covers every method
//! and typed channel this crate defines.

#[allow(dead_code)]
#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::PathBuf;

use gabp_types::methods::{CORE_METHODS, EXTENSION_CHANNELS, EXTENSION_METHODS};

fn seeds() -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/typed_decode");
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).expect("readable seed");
            (path, bytes)
        })
        .collect();
    seeds.sort();
    seeds
}

#[test]
fn typed_decode_seeds_hold() {
    let seeds = seeds();
    assert!(seeds.len() >= 10, "only {} seeds", seeds.len());
    for (path, bytes) in &seeds {
        let outcome = std::panic::catch_unwind(|| harness::typed_decode(bytes));
        assert!(
            outcome.is_ok(),
            "seed {} fails typed_decode",
            path.display()
        );
    }
}

#[test]
fn every_case_has_a_seed() {
    let seeds = seeds();
    for (index, case) in harness::CASES.iter().enumerate() {
        let seeded = seeds.iter().any(|(_, bytes)| {
            bytes
                .first()
                .is_some_and(|&b| usize::from(b) % harness::CASES.len() == index)
        });
        assert!(
            seeded,
            "no seed for case {index} ({} {})",
            case.subject, case.part
        );
    }
}

#[test]
fn every_method_and_typed_channel_is_fuzzed() {
    let mut defined: Vec<&str> = CORE_METHODS
        .iter()
        .chain(EXTENSION_METHODS)
        .copied()
        .collect();
    let mut fuzzed = harness::METHODS.to_vec();
    defined.sort_unstable();
    fuzzed.sort_unstable();
    assert_eq!(
        fuzzed, defined,
        "harness.rs cases! lists other methods than the crate defines"
    );
    for channel in EXTENSION_CHANNELS {
        assert!(
            harness::CHANNELS.contains(channel),
            "no payload case for {channel}"
        );
    }
    assert!(harness::CHANNELS
        .iter()
        .any(|c| c.starts_with("attention/")));
}
