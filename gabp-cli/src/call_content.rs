//! The content items of a tool result (`_content`, SPEC/1.0 extensions.md §content) as `gabp call` shows them:
//! images saved to files with `--save-images`, long base64 data shortened on a terminal.

use std::path::{Path, PathBuf};

use gabp_types::methods::{ContentItem, ToolResult};
use serde_json::{json, Value};

/// Base64 data longer than this is shortened when printed on a terminal.
const SHOWN_DATA: usize = 80;

/// A file extension for an image of type `mime`.
fn extension(mime: &str) -> &'static str {
    match mime.split(';').next().unwrap_or_default().trim() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    }
}

/// What `gabp call` prints for a tool's `result`, and the files it wrote.
pub struct Shown {
    /// The result to print.
    pub result: Value,
    /// Each file written, with its size.
    pub saved: Vec<(PathBuf, usize)>,
}

/// `result` of tool `tool` for printing: with `save_to`, each image item is written to a file there and its
/// data replaced by a note naming the file; with `shorten`, other data longer than a line is replaced by a
/// note of its size.
///
/// # Errors
///
/// One line: an item whose data is not base64, or a file that cannot be written.
pub fn show(
    tool: &str,
    result: Value,
    save_to: Option<&Path>,
    shorten: bool,
) -> Result<Shown, String> {
    let split = ToolResult::from_value(result.clone());
    if split.content.is_empty() {
        return Ok(Shown {
            result,
            saved: Vec::new(),
        });
    }
    if let Some(dir) = save_to {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--save-images: cannot create {}: {e}", dir.display()))?;
    }
    let stem = tool.replace('/', "_");
    let mut saved = Vec::new();
    let mut items = Vec::with_capacity(split.content.len());
    for item in &split.content {
        let mut shown = serde_json::to_value(item).map_err(|e| e.to_string())?;
        let note = match (save_to, item) {
            (Some(dir), ContentItem::Image { .. }) => {
                let bytes = item
                    .decode()
                    .ok_or_else(|| format!("{tool}: an image item's data is not valid base64"))?;
                let path = dir.join(format!(
                    "{stem}-{}.{}",
                    saved.len() + 1,
                    extension(item.mime_type())
                ));
                std::fs::write(&path, &bytes)
                    .map_err(|e| format!("--save-images: cannot write {}: {e}", path.display()))?;
                let note = format!("<saved to {}, {} bytes>", path.display(), bytes.len());
                saved.push((path, bytes.len()));
                Some(note)
            }
            _ if shorten && item.data().len() > SHOWN_DATA => Some(format!(
                "<{} bytes of {}; --save-images DIR writes images to files>",
                item.decoded_len().unwrap_or_default(),
                item.mime_type()
            )),
            _ => None,
        };
        if let Some(note) = note {
            shown["data"] = json!(note);
        }
        items.push(shown);
    }
    let mut result = split.value;
    if let Some(object) = result.as_object_mut() {
        object.insert("_content".into(), Value::Array(items));
    }
    Ok(Shown { result, saved })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_items(items: Vec<ContentItem>) -> Value {
        ToolResult::new(json!({"width": 2}))
            .with_content(items)
            .into_value()
    }

    #[test]
    fn images_are_saved_and_their_data_replaced_by_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("shots");
        let result = with_items(vec![
            ContentItem::image("image/png", b"\x89PNG one"),
            ContentItem::audio("audio/wav", b"RIFF"),
            ContentItem::image("image/x-unknown", b"two"),
        ]);
        let shown = show("world/render", result, Some(&out), false).unwrap();
        let first = out.join("world_render-1.png");
        let second = out.join("world_render-2.bin");
        assert_eq!(std::fs::read(&first).unwrap(), b"\x89PNG one");
        assert_eq!(std::fs::read(&second).unwrap(), b"two");
        assert_eq!(shown.saved, vec![(first.clone(), 8), (second, 3)]);
        assert_eq!(shown.result["width"], 2);
        let items = shown.result["_content"].as_array().unwrap();
        assert_eq!(
            items[0]["data"],
            format!("<saved to {}, 8 bytes>", first.display())
        );
        assert_eq!(items[0]["mimeType"], "image/png");
        // Not an image, not long: as it came.
        assert_eq!(items[1]["data"], "UklGRg==");
    }

    #[test]
    fn long_data_is_shortened_only_when_asked() {
        let result = with_items(vec![ContentItem::image("image/png", &[7u8; 300])]);
        let full = show("t/x", result.clone(), None, false).unwrap();
        assert_eq!(full.result, result);
        let short = show("t/x", result, None, true).unwrap();
        assert_eq!(
            short.result["_content"][0]["data"],
            "<300 bytes of image/png; --save-images DIR writes images to files>"
        );
        let plain = json!({"block": "grass"});
        assert_eq!(
            show("t/x", plain.clone(), None, true).unwrap().result,
            plain
        );
    }

    #[test]
    fn extensions_follow_the_media_type() {
        assert_eq!(extension("image/png"), "png");
        assert_eq!(extension("image/jpeg"), "jpg");
        assert_eq!(extension("image/gif"), "gif");
        assert_eq!(extension("image/webp"), "webp");
        assert_eq!(extension("image/bmp"), "bin");
    }
}
