//! `gabp demo`: the tour exits 0 quickly, prints plain text when NO_COLOR is set or stdout is not a terminal,
//! and its transcript is golden (`tests/golden/demo.txt`) once the port, the attention id prefix and the
//! version are masked: everything else in it is deterministic.

mod cli_support;

use std::time::{Duration, Instant};

use cli_support::{gabp_in, golden, mask, output, text};

#[test]
fn demo_transcript_is_golden_and_plain() {
    let home = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let out = output(gabp_in(home.path(), &["demo"]));
    let took = started.elapsed();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "the tour writes nothing to stderr");
    // The acceptance criterion is 10 s; it takes well under a second, even in a debug build.
    assert!(took < Duration::from_secs(10), "the tour took {took:?}");
    assert!(
        !stdout.contains('\x1b'),
        "colour with NO_COLOR set:\n{stdout}"
    );
    golden("demo.txt", &mask(&stdout));

    // Without NO_COLOR, stdout is still not a terminal here: still plain.
    let mut command = gabp_in(home.path(), &["demo"]);
    command.env_remove("NO_COLOR");
    let out = output(command);
    assert_eq!(out.status.code(), Some(0));
    assert!(!text(&out.stdout).contains('\x1b'), "colour on a pipe");
    assert_eq!(
        mask(&text(&out.stdout)),
        mask(&stdout),
        "the tour is deterministic"
    );
}

#[test]
fn demo_tours_every_step() {
    let out = cli_support::run(&["demo"]);
    let stdout = text(&out.stdout);
    for step in [
        "1. Handshake",
        "2. Tools",
        "3. Calls, and a call with a validation error",
        "4. Events",
        "5. Resources",
        "6. State",
        "7. Attention",
        "8. Goodbye",
        "mod     <- error -32602",
        "event   ** player/move #0",
        "event   ** attention/opened #0",
        "gate    <- refused by the bridge's attention gate; nothing was sent",
        "event   ** attention/cleared #0",
    ] {
        assert!(stdout.contains(step), "missing {step:?} in:\n{stdout}");
    }
    // The token is never printed.
    assert!(stdout.contains("\"token\":\"(64 hex digits, never printed)\""));
}
