//! The properties the fuzz targets check, shared by the cargo-fuzz targets (`fuzz_targets/`) and the
//! seed replay test of gabp-codec (`tests/fuzz_seeds.rs`), so CI covers every committed seed without
//! a fuzzer. A violated property panics.

use bytes::{Bytes, BytesMut};
use gabp_codec::{CodecError, Frame, FrameCodec, MessageCodec};
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{Message, MessageId, Response};
use tokio_util::codec::{Decoder, Encoder};

const BODY_LIMITS: [usize; 16] = [
    0,
    1,
    2,
    8,
    16,
    32,
    64,
    100,
    128,
    200,
    256,
    512,
    1024,
    4096,
    65_536,
    gabp_codec::DEFAULT_MAX_BODY_SIZE,
];
const HEADER_LIMITS: [usize; 16] = [
    0,
    1,
    8,
    16,
    20,
    24,
    32,
    48,
    64,
    80,
    100,
    128,
    256,
    512,
    1024,
    gabp_codec::DEFAULT_MAX_HEADER_SIZE,
];

/// What decoding a whole input produced: the frames, then how the stream ended.
#[derive(Debug)]
struct Outcome {
    frames: Vec<Frame>,
    /// `None` for a clean end, else the fatal error (as text: `CodecError` holds `io::Error`).
    error: Option<String>,
}

/// `frame_decoder` input: byte 0 picks the limits (low nibble: body limit, high nibble: header
/// limit, from the tables above); byte 1 says how many of the following bytes are read sizes
/// (`byte % 8`; each size is `byte + 1`, cycled; none means one read of everything); the rest is
/// the stream.
///
/// Properties: no panic; the read buffer never exceeds body limit + header limit + one read (and
/// its capacity stays within a small multiple of that); every oversized frame really is over the
/// limit; every body is within the limit and re-encodes to bytes that decode to the same body; the
/// result does not depend on how the stream was cut into reads.
pub fn frame_decoder(data: &[u8]) {
    let Some((&limits, rest)) = data.split_first() else {
        return;
    };
    let max_body = BODY_LIMITS[usize::from(limits & 0x0f)];
    let max_header = HEADER_LIMITS[usize::from(limits >> 4)];
    let (reads, stream) = match rest.split_first() {
        Some((&count, rest)) => rest.split_at(usize::from(count % 8).min(rest.len())),
        None => (&[][..], &[][..]),
    };
    let read_sizes: Vec<usize> = reads.iter().map(|&b| usize::from(b) + 1).collect();
    let codec = || {
        FrameCodec::new()
            .with_max_body_size(max_body)
            .with_max_header_size(max_header)
    };

    let chunked = decode_in_reads(codec(), stream, &read_sizes, max_body, max_header);
    let whole = decode_in_reads(codec(), stream, &[], max_body, max_header);
    assert_eq!(
        format!("{chunked:?}"),
        format!("{whole:?}"),
        "the result depends on how the stream was read"
    );

    for frame in chunked.frames {
        match frame {
            Frame::Body(body) => {
                assert!(body.len() <= max_body, "a body over the limit was yielded");
                let mut wire = BytesMut::new();
                FrameCodec::new()
                    .with_max_body_size(max_body)
                    .encode(body.clone(), &mut wire)
                    .expect("a yielded body re-encodes");
                let mut again = FrameCodec::new().with_max_body_size(max_body);
                let decoded = again.decode(&mut wire).expect("a re-encoded frame decodes");
                assert_eq!(
                    decoded,
                    Some(Frame::Body(body)),
                    "re-encoding changed the body"
                );
                assert!(wire.is_empty(), "re-encoding left bytes behind");
                assert!(matches!(again.decode_eof(&mut wire), Ok(None)));
            }
            Frame::Oversized { declared, limit } => {
                assert_eq!(limit, max_body);
                assert!(
                    declared > max_body as u64,
                    "an oversized frame within the limit"
                );
            }
        }
    }
}

/// Feeds `stream` to `codec` in reads of `read_sizes` (cycled; empty: one read), checking the
/// memory bound after every decode call.
fn decode_in_reads(
    mut codec: FrameCodec,
    stream: &[u8],
    read_sizes: &[usize],
    max_body: usize,
    max_header: usize,
) -> Outcome {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = stream;
    let mut sizes = read_sizes.iter().cycle();
    while !rest.is_empty() {
        let n = sizes.next().map_or(rest.len(), |&n| n.min(rest.len()));
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        let bound = max_body + max_header + n;
        loop {
            let result = codec.decode(&mut buf);
            assert!(
                buf.len() <= bound,
                "read buffer holds {} bytes, over body limit + header limit + one read = {bound}",
                buf.len()
            );
            assert!(
                buf.capacity() <= 4 * bound + 8192,
                "read buffer reserved {} bytes for a bound of {bound}",
                buf.capacity()
            );
            match result {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(error) => return fatal(frames, &error),
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => {
                return Outcome {
                    frames,
                    error: None,
                }
            }
            Err(error) => return fatal(frames, &error),
        }
    }
}

fn fatal(frames: Vec<Frame>, error: &CodecError) -> Outcome {
    assert!(
        !matches!(error, CodecError::BodyTooLarge { .. } | CodecError::Io(_)),
        "decoding produced an encoding or i/o error: {error:?}"
    );
    Outcome {
        frames,
        error: Some(format!("{error:?}")),
    }
}

/// `message_decode` input: one message body.
///
/// Properties: no panic in either mode; a message accepted strictly re-serializes to a body that
/// decodes (strictly and leniently) to the same message; a message accepted leniently round-trips
/// leniently; every refusal carries a GABP code and yields an answer that passes the strict
/// decoder; `MessageCodec` over a frame of the body agrees with the bare decoder.
pub fn message_decode(body: &[u8]) {
    for mode in [DecodeMode::Strict, DecodeMode::Lenient] {
        let direct = decode(body, mode);
        match &direct {
            Ok(message) => {
                let json = serde_json::to_vec(message).expect("a decoded message serializes");
                let again = decode(&json, mode).expect("a re-serialized message decodes");
                assert_eq!(
                    &again, message,
                    "re-serializing changed the message ({mode:?})"
                );
                if mode == DecodeMode::Strict {
                    let lenient = decode(body, DecodeMode::Lenient)
                        .expect("a strictly valid body is leniently valid");
                    assert_eq!(&lenient, message, "strict and lenient readings differ");
                }
            }
            Err(error) => {
                assert!(
                    gabp_types::decode::DecodeError::CODES.contains(&error.code()),
                    "unexpected refusal code {:?}",
                    error.code()
                );
                assert!(!error.to_string().is_empty());
                let answer = Response::error(
                    error.id().unwrap_or_else(MessageId::nil),
                    error.to_error_object(),
                );
                let answer = serde_json::to_vec(&Message::from(answer)).expect("answer serializes");
                decode(&answer, DecodeMode::Strict).expect("our answer is strictly valid");
            }
        }
        through_message_codec(body, mode, &direct);
    }
}

fn through_message_codec(
    body: &[u8],
    mode: DecodeMode,
    direct: &Result<Message, gabp_types::decode::DecodeError>,
) {
    let mut wire = BytesMut::new();
    FrameCodec::new()
        .encode(Bytes::copy_from_slice(body), &mut wire)
        .expect("fuzz bodies are far below the default limit");
    let mut codec = MessageCodec::new().with_mode(mode);
    let item = codec
        .decode(&mut wire)
        .expect("a well-formed frame is not fatal")
        .expect("a complete frame yields an item");
    assert!(wire.is_empty());
    match (direct, &item) {
        (Ok(expected), Ok(message)) => {
            assert_eq!(expected, message);
            // Encoding it again through MessageCodec gives a frame MessageCodec reads back.
            let mut out = BytesMut::new();
            codec
                .encode(message.clone(), &mut out)
                .expect("a decoded message encodes");
            let back = codec.decode(&mut out).expect("not fatal").expect("an item");
            assert_eq!(back.as_ref().ok(), Some(message));
        }
        (Err(expected), Err(CodecError::Invalid { error, body: seen })) => {
            assert_eq!(expected, error);
            assert_eq!(&seen[..], body);
            assert_eq!(
                item.as_ref().err().map(CodecError::code),
                Some(expected.code())
            );
        }
        _ => panic!("MessageCodec disagrees with the bare decoder: {direct:?} vs {item:?}"),
    }
}
