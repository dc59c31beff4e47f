//! `gabp mcp` keeps pictures within what clients take: a game's screenshot over `--max-image-edge` or
//! `--max-image-bytes` is scaled down, never cut, and the answer says so.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod mcp_support;

use base64::Engine as _;
use mcp_support::Mcp;
use rmcp::model::ContentBlock;
use serde_json::json;

/// The width and height in a PNG's header.
fn png_size(data: &str) -> (u32, u32) {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

async fn render(mcp: &Mcp) -> (Vec<(u32, u32)>, Vec<String>) {
    let result = mcp.call("voxel_world_render", json!({"scale": 8})).await;
    assert_ne!(result.is_error, Some(true));
    let mut images = Vec::new();
    let mut texts = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Image(image) => images.push(png_size(&image.data)),
            ContentBlock::Text(text) => texts.push(text.text.clone()),
            _ => {}
        }
    }
    (images, texts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_over_the_limits_is_scaled_down_and_the_answer_says_so() {
    let full = Mcp::start(&["voxel"], &[]).await;
    full.ok("games_start", json!({"gameId": "voxel"})).await;
    let (images, texts) = render(&full).await;
    let (width, height) = images[0];
    assert!(
        width > 40,
        "the demo's picture must be larger than the limit below: {width}"
    );
    assert!(!texts.iter().any(|t| t.contains("scaled")), "{texts:?}");

    let limited = Mcp::start(&["voxel"], &["--max-image-edge", "40"]).await;
    limited.ok("games_start", json!({"gameId": "voxel"})).await;
    let (images, texts) = render(&limited).await;
    assert_eq!(images.len(), 1, "the picture is kept, not dropped");
    let (w, h) = images[0];
    assert_eq!(w.max(h), 40, "{w}x{h}");
    // The shape is kept (to within a pixel of rounding).
    let expected = u64::from(height) * 40 / u64::from(width);
    assert!(
        u64::from(h).abs_diff(expected) <= 1,
        "{w}x{h} from {width}x{height}"
    );
    let note = texts
        .iter()
        .find(|t| t.contains("scaled from"))
        .unwrap_or_else(|| panic!("{texts:?}"));
    assert!(note.contains(&format!("{width}x{height}")), "{note}");
}

#[test]
fn limits_out_of_range_are_refused_naming_the_flag() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_gabp"))
        .args(["mcp", "--max-image-edge", "8", "--print-config"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--max-image-edge"), "{stderr}");
}
