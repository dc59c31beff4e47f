//! Property tests: arbitrary valid frame sequences cut into arbitrary chunks; encode/decode identity.

use bytes::BytesMut;
use gabp_codec::{CodecError, Frame, FrameCodec};
use proptest::prelude::*;
use tokio_util::codec::{Decoder, Encoder};

/// How one valid frame spells its header block.
#[derive(Debug, Clone)]
struct HeadStyle {
    name_case: Vec<bool>,
    content_type_first: Option<bool>,
    extra_header: Option<(String, String)>,
    spaces_before: usize,
    spaces_after: usize,
    leading_zeros: usize,
    repeat_length: bool,
}

fn head_style() -> impl Strategy<Value = HeadStyle> {
    (
        prop::collection::vec(any::<bool>(), 14),
        prop::option::of(any::<bool>()),
        prop::option::of(("[A-Za-z][A-Za-z0-9-]{0,12}", "[ -~]{0,20}")),
        0..3usize,
        0..3usize,
        0..3usize,
        any::<bool>(),
    )
        .prop_map(
            |(
                name_case,
                content_type_first,
                extra_header,
                spaces_before,
                spaces_after,
                leading_zeros,
                repeat_length,
            )| {
                HeadStyle {
                    name_case,
                    content_type_first,
                    extra_header,
                    spaces_before,
                    spaces_after,
                    leading_zeros,
                    repeat_length,
                }
            },
        )
}

fn write_frame(style: &HeadStyle, body: &[u8], out: &mut Vec<u8>) {
    let name: String = "content-length"
        .chars()
        .zip(&style.name_case)
        .map(|(c, &upper)| if upper { c.to_ascii_uppercase() } else { c })
        .collect();
    let length_line = format!(
        "{name}:{}{}{}{}\r\n",
        " ".repeat(style.spaces_before),
        "0".repeat(style.leading_zeros),
        body.len(),
        "\t".repeat(style.spaces_after)
    );
    let mut lines = vec![length_line.clone()];
    if style.repeat_length {
        lines.push(length_line);
    }
    if let Some((name, value)) = &style.extra_header {
        if !name.eq_ignore_ascii_case("content-length") {
            lines.insert(0, format!("{name}: {value}\r\n"));
        }
    }
    match style.content_type_first {
        Some(true) => lines.insert(0, "Content-Type: application/json\r\n".into()),
        Some(false) => lines.push("content-type: application/json; charset=utf-8\r\n".into()),
        None => {}
    }
    for line in lines {
        out.extend_from_slice(line.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// Feeds `wire` to `codec` in chunks of the given sizes (cycled), as reads would arrive.
fn decode_chunked(
    mut codec: FrameCodec,
    wire: &[u8],
    chunk_sizes: &[usize],
) -> Result<Vec<Frame>, CodecError> {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = wire;
    let mut sizes = chunk_sizes.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(frame) = codec.decode(&mut buf)? {
            frames.push(frame);
        }
    }
    while let Some(frame) = codec.decode_eof(&mut buf)? {
        frames.push(frame);
    }
    Ok(frames)
}

proptest! {
    #[test]
    fn valid_frames_cut_into_arbitrary_chunks_decode_to_the_same_bodies(
        frames in prop::collection::vec((head_style(), prop::collection::vec(any::<u8>(), 0..300)), 0..12),
        chunk_sizes in prop::collection::vec(1..80usize, 1..16),
    ) {
        let mut wire = Vec::new();
        for (style, body) in &frames {
            write_frame(style, body, &mut wire);
        }
        let decoded = decode_chunked(FrameCodec::new(), &wire, &chunk_sizes)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected: Vec<Frame> = frames.iter().map(|(_, b)| Frame::Body(b.clone().into())).collect();
        prop_assert_eq!(decoded, expected);
    }

    #[test]
    fn oversized_frames_are_skipped_among_valid_ones(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..12),
        limit in 0..150usize,
        chunk_sizes in prop::collection::vec(1..64usize, 1..8),
    ) {
        let mut wire = Vec::new();
        for body in &bodies {
            wire.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            wire.extend_from_slice(body);
        }
        let decoded = decode_chunked(FrameCodec::new().with_max_body_size(limit), &wire, &chunk_sizes)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected: Vec<Frame> = bodies
            .iter()
            .map(|b| {
                if b.len() > limit {
                    Frame::Oversized { declared: b.len() as u64, limit }
                } else {
                    Frame::Body(b.clone().into())
                }
            })
            .collect();
        prop_assert_eq!(decoded, expected);
    }

    #[test]
    fn encode_then_decode_is_the_identity(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..2000), 0..10),
        chunk_sizes in prop::collection::vec(1..4096usize, 1..8),
    ) {
        let mut codec = FrameCodec::new();
        let mut wire = BytesMut::new();
        for body in &bodies {
            codec.encode(bytes::Bytes::copy_from_slice(body), &mut wire).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        let decoded = decode_chunked(FrameCodec::new(), &wire, &chunk_sizes)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let decoded: Vec<Vec<u8>> = decoded
            .into_iter()
            .map(|f| f.into_body().map(|b| b.to_vec()).ok_or_else(|| TestCaseError::fail("oversized")))
            .collect::<Result<_, _>>()?;
        prop_assert_eq!(decoded, bodies);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_stay_bounded(
        wire in prop::collection::vec(any::<u8>(), 0..600),
        chunk_sizes in prop::collection::vec(1..64usize, 1..8),
        max_body in 0..128usize,
        max_header in 0..128usize,
    ) {
        let mut codec = FrameCodec::new().with_max_body_size(max_body).with_max_header_size(max_header);
        let mut buf = BytesMut::new();
        let mut rest = &wire[..];
        let mut sizes = chunk_sizes.iter().cycle();
        'feed: while !rest.is_empty() {
            let n = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            loop {
                prop_assert!(buf.len() <= max_body + max_header + n);
                match codec.decode(&mut buf) {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
    }
}
