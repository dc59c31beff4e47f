//! Pictures within what MCP clients take: an image content item over [`ImageLimits::max_bytes`] or with an
//! edge over [`ImageLimits::max_edge`] is scaled down (never cut), in its own format, and a text item says
//! so. PNG and JPEG are scaled; other formats pass as they are, with a note when they are over the limits.

use std::io::Cursor;

use base64::Engine as _;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use rmcp::model::{ContentBlock, ImageContent};

/// How large an image a client is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImageLimits {
    /// The most bytes of one image, before base64 (default 1 MiB).
    pub max_bytes: usize,
    /// The longest edge in pixels (default 1568, what Claude takes without scaling itself).
    pub max_edge: u32,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            max_bytes: 1 << 20,
            max_edge: 1568,
        }
    }
}

impl ImageLimits {
    /// Limits of `max_bytes` bytes and `max_edge` pixels.
    #[must_use]
    pub fn new(max_bytes: usize, max_edge: u32) -> ImageLimits {
        ImageLimits {
            max_bytes,
            max_edge,
        }
    }
}

/// The largest picture the hub decodes to scale it: larger ones pass as they are, with a note.
const MAX_DECODED_EDGE: u32 = 16_384;
const MAX_DECODED_BYTES: u64 = 512 << 20;
/// The smallest edge scaling goes down to while looking for a size under `max_bytes`.
const MIN_EDGE: u32 = 16;
/// JPEG quality of a scaled JPEG.
const JPEG_QUALITY: u8 = 85;

/// What became of one image.
#[derive(Debug, PartialEq, Eq)]
enum Fit {
    /// Within the limits, or not an image the hub can read: sent as it came.
    Unchanged,
    /// Scaled: the new base64 data and the note for the client.
    Scaled { data: String, note: String },
    /// Over the limits and not scaled, with why.
    Kept { note: String },
}

/// Scales every image item of `content` that is over `limits`, on a blocking thread, and adds a text item
/// for each one scaled or left over the limits.
pub(crate) async fn fit_content(content: &mut Vec<ContentBlock>, limits: ImageLimits) {
    let mut notes = Vec::new();
    for (index, block) in content.iter_mut().enumerate() {
        let ContentBlock::Image(ImageContent {
            data, mime_type, ..
        }) = block
        else {
            continue;
        };
        let (input, mime) = (std::mem::take(data), mime_type.clone());
        let (input, fit) = tokio::task::spawn_blocking(move || {
            let fit = fit(&input, &mime, limits);
            (input, fit)
        })
        .await
        .unwrap_or_else(|e| {
            (
                String::new(),
                Fit::Kept {
                    note: format!("not scaled: {e}"),
                },
            )
        });
        *data = input;
        match fit {
            Fit::Unchanged => {}
            Fit::Scaled { data: scaled, note } => {
                *data = scaled;
                notes.push(format!("Image {}: {note}", index + 1));
            }
            Fit::Kept { note } => notes.push(format!("Image {}: {note}", index + 1)),
        }
    }
    content.extend(notes.into_iter().map(ContentBlock::text));
}

fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// Scales base64 image `data` of type `mime` to fit `limits`.
fn fit(data: &str, mime: &str, limits: ImageLimits) -> Fit {
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return Fit::Unchanged;
    };
    let kept = |why: String| Fit::Kept {
        note: format!(
            "{mime}, {}, is over the client's limits and was sent as it is: {why}",
            size(bytes.len())
        ),
    };
    let reader = || ImageReader::new(Cursor::new(&bytes)).with_guessed_format();
    let format = match reader().map(|r| r.format()) {
        Ok(Some(f @ (ImageFormat::Png | ImageFormat::Jpeg))) => f,
        _ if bytes.len() <= limits.max_bytes => return Fit::Unchanged,
        _ => return kept("only PNG and JPEG are scaled".to_owned()),
    };
    let (width, height) = match reader()
        .map_err(image::ImageError::IoError)
        .and_then(ImageReader::into_dimensions)
    {
        Ok(d) => d,
        Err(e) => return kept(e.to_string()),
    };
    if bytes.len() <= limits.max_bytes && width.max(height) <= limits.max_edge {
        return Fit::Unchanged;
    }
    let mut decode_limits = Limits::default();
    decode_limits.max_image_width = Some(MAX_DECODED_EDGE);
    decode_limits.max_image_height = Some(MAX_DECODED_EDGE);
    decode_limits.max_alloc = Some(MAX_DECODED_BYTES);
    let decoded = reader()
        .map_err(image::ImageError::IoError)
        .and_then(|mut r| {
            r.limits(decode_limits);
            r.decode()
        });
    let picture = match decoded {
        Ok(p) => p,
        Err(e) => return kept(e.to_string()),
    };
    let mut edge = limits.max_edge.min(width.max(height)).max(1);
    loop {
        let scaled = picture.resize(edge, edge, FilterType::Triangle);
        let encoded = match encode(&scaled, format) {
            Ok(e) => e,
            Err(e) => return kept(e.to_string()),
        };
        if encoded.len() <= limits.max_bytes {
            let note = format!(
                "scaled from {width}x{height} ({}) to {}x{} ({}) to fit the client's limits ({} px, {}); \
                 ask for a smaller picture or a region to see more detail",
                size(bytes.len()),
                scaled.width(),
                scaled.height(),
                size(encoded.len()),
                limits.max_edge,
                size(limits.max_bytes),
            );
            return Fit::Scaled {
                data: base64::engine::general_purpose::STANDARD.encode(&encoded),
                note,
            };
        }
        if edge <= MIN_EDGE {
            return kept(format!(
                "even {edge} px wide it takes {}",
                size(encoded.len())
            ));
        }
        // Bytes grow with the area: shrink the edge by the square root of the excess, and a little more.
        let ratio = (limits.max_bytes as f64 / encoded.len() as f64).sqrt() * 0.9;
        edge = ((f64::from(edge) * ratio) as u32).clamp(MIN_EDGE, edge - 1);
    }
}

fn encode(picture: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, image::ImageError> {
    let mut out = Vec::new();
    if format == ImageFormat::Jpeg {
        let rgb = DynamicImage::ImageRgb8(picture.to_rgb8());
        rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))?;
    } else {
        picture.write_to(&mut Cursor::new(&mut out), ImageFormat::Png)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use image::{Rgb, RgbImage};

    use super::*;

    /// A noisy picture (noise does not compress) of `width` x `height`, encoded as `format`, in base64.
    fn picture(width: u32, height: u32, format: ImageFormat) -> String {
        let mut state = 0x2545_f491_u32;
        let img = RgbImage::from_fn(width, height, |_, _| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let [r, g, b, _] = state.to_le_bytes();
            Rgb([r, g, b])
        });
        let bytes = encode(&DynamicImage::ImageRgb8(img), format).unwrap();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn dimensions(data: &str) -> (u32, u32, usize) {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let (w, h) = ImageReader::new(Cursor::new(&bytes))
            .with_guessed_format()
            .unwrap()
            .into_dimensions()
            .unwrap();
        (w, h, bytes.len())
    }

    #[test]
    fn a_picture_within_the_limits_is_left_alone() {
        let data = picture(64, 32, ImageFormat::Png);
        assert_eq!(
            fit(&data, "image/png", ImageLimits::default()),
            Fit::Unchanged
        );
    }

    #[test]
    fn a_wide_picture_is_scaled_to_the_edge_limit_keeping_its_shape() {
        let data = picture(400, 100, ImageFormat::Png);
        let Fit::Scaled { data, note } = fit(&data, "image/png", ImageLimits::new(1 << 20, 200))
        else {
            panic!("not scaled");
        };
        assert_eq!(dimensions(&data).0, 200);
        assert_eq!(dimensions(&data).1, 50);
        assert!(
            note.contains("400x100") && note.contains("200x50"),
            "{note}"
        );
    }

    #[test]
    fn a_heavy_picture_is_scaled_until_it_fits_the_byte_limit() {
        for (format, mime) in [
            (ImageFormat::Png, "image/png"),
            (ImageFormat::Jpeg, "image/jpeg"),
        ] {
            let data = picture(300, 300, format);
            let limit = 20_000;
            assert!(
                dimensions(&data).2 > limit,
                "{mime}: the test picture must be over the limit"
            );
            let Fit::Scaled { data, .. } = fit(&data, mime, ImageLimits::new(limit, 1568)) else {
                panic!("{mime}: not scaled");
            };
            let (w, h, bytes) = dimensions(&data);
            assert!(bytes <= limit, "{mime}: {bytes} bytes");
            assert_eq!(w, h);
            assert!((MIN_EDGE..300).contains(&w), "{mime}: {w}");
        }
    }

    #[test]
    fn what_cannot_be_scaled_is_sent_as_it_is_with_a_note() {
        let gif = base64::engine::general_purpose::STANDARD
            .encode(b"GIF89a not really a gif, but large".repeat(100));
        match fit(&gif, "image/gif", ImageLimits::new(100, 1568)) {
            Fit::Kept { note } => assert!(note.contains("only PNG and JPEG"), "{note}"),
            other => panic!("{other:?}"),
        }
        let broken = base64::engine::general_purpose::STANDARD
            .encode(b"\x89PNG\r\n\x1a\n broken".repeat(50));
        assert!(matches!(
            fit(&broken, "image/png", ImageLimits::new(100, 1568)),
            Fit::Kept { .. }
        ));
        assert_eq!(
            fit("not base64!", "image/png", ImageLimits::new(1, 1)),
            Fit::Unchanged
        );
    }

    #[tokio::test]
    async fn content_gets_a_note_for_each_scaled_image() {
        let mut content = vec![
            ContentBlock::text("result"),
            ContentBlock::image(picture(400, 100, ImageFormat::Png), "image/png"),
            ContentBlock::image(picture(20, 20, ImageFormat::Png), "image/png"),
        ];
        fit_content(&mut content, ImageLimits::new(1 << 20, 200)).await;
        assert_eq!(content.len(), 4);
        let ContentBlock::Image(scaled) = &content[1] else {
            panic!()
        };
        assert_eq!(dimensions(&scaled.data).0, 200);
        let ContentBlock::Text(note) = &content[3] else {
            panic!()
        };
        assert!(
            note.text.starts_with("Image 2: scaled from 400x100"),
            "{}",
            note.text
        );
    }
}
