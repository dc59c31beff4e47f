//! Replays every committed fuzz seed (`fuzz/seeds/<target>/`) through the fuzz targets' own
//! properties, so CI covers them without a fuzzer.

#[allow(dead_code)]
#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::PathBuf;

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
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

fn replay(target: &str, run: fn(&[u8])) {
    let seeds = seeds(target);
    assert!(seeds.len() >= 10, "only {} seeds for {target}", seeds.len());
    for (path, bytes) in seeds {
        let outcome = std::panic::catch_unwind(|| run(&bytes));
        assert!(outcome.is_ok(), "seed {} fails {target}", path.display());
    }
}

#[test]
fn frame_decoder_seeds_hold() {
    replay("frame_decoder", harness::frame_decoder);
}

#[test]
fn message_decode_seeds_hold() {
    replay("message_decode", harness::message_decode);
}
