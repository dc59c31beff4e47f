//! The paddle example driven through `gabp mcp` by the official MCP Python SDK (`tests/mcp_paddle.py`):
//! started from config.json, paused, stepped 10 ticks with the ball's `Transform` read before and after, a key
//! tap that moves the paddle, a bounce event. Skipped, with a message, without a Python that has `mcp`
//! (`.ci/run` makes one in ~/.cache/gabp-mcp-venv, or `GABP_MCP_VENV`).
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::built;

/// The Python of the venv `.ci/run` makes, when it can import the MCP SDK.
fn python_with_mcp() -> Option<PathBuf> {
    let venv = std::env::var_os("GABP_MCP_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/gabp-mcp-venv")))?;
    let python = venv.join("bin/python");
    let imports = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    matches!(imports, Ok(status) if status.success()).then_some(python)
}

#[test]
fn the_python_mcp_sdk_pauses_steps_and_plays_the_paddle_game_through_gabp_mcp() {
    let Some(python) = python_with_mcp() else {
        eprintln!(
            "SKIPPED: no Python with the MCP SDK in ~/.cache/gabp-mcp-venv (or $GABP_MCP_VENV); .ci/run makes \
             one (python3 -m venv, pip install mcp==2.3.0)"
        );
        return;
    };
    let gabp = built("gabp-cli", "--bin", "gabp");
    let paddle = built("gabp-bevy", "--example", "paddle");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_paddle.py");
    let out = Command::new(python)
        .arg(script)
        .arg(&gabp)
        .arg(&paddle)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}
