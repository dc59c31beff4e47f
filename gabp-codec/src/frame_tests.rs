//! Unit tests of [`FrameCodec`](super::FrameCodec) that need its private state.

use super::*;

#[test]
fn swapping_buffers_between_calls_does_not_panic() {
    let mut codec = FrameCodec::new();
    let mut long = BytesMut::from(&b"Content-Length: 5\r\nX-Long: aaaaaaaaaaaaaaaa"[..]);
    assert!(matches!(codec.decode(&mut long), Ok(None)));
    let mut short = BytesMut::from(&b"Con"[..]);
    let _ = codec.decode(&mut short);
    let _ = codec.decode_eof(&mut BytesMut::new());
}

#[test]
fn encode_header_refuses_a_body_over_the_limit_and_writes_nothing() {
    let codec = FrameCodec::new().with_max_body_size(10);
    let mut dst = BytesMut::from(&b"keep"[..]);
    let err = codec
        .encode_header(11, &mut dst)
        .expect_err("over the limit");
    assert!(
        matches!(err, CodecError::BodyTooLarge { len: 11, limit: 10 }),
        "{err:?}"
    );
    assert_eq!(&dst[..], b"keep");
    codec.encode_header(10, &mut dst).expect("at the limit");
    assert_eq!(
        &dst[..],
        b"keepContent-Length: 10\r\nContent-Type: application/json\r\n\r\n"
    );
}

#[test]
fn encode_is_encode_header_then_the_body() {
    let mut codec = FrameCodec::new();
    for len in [0usize, 9, 10, 99, 100, 65_536] {
        let body = Bytes::from(vec![b'x'; len]);
        let mut expected = BytesMut::from(&b"before"[..]);
        codec
            .encode_header(len, &mut expected)
            .expect("within the limit");
        expected.extend_from_slice(&body);
        let mut frame = BytesMut::from(&b"before"[..]);
        codec.encode(body, &mut frame).expect("within the limit");
        assert_eq!(frame, expected, "{len}");
    }
}

#[test]
fn swapping_buffers_while_a_body_is_awaited_does_not_panic() {
    let mut codec = FrameCodec::new();
    let mut first = BytesMut::from(&b"Content-Length: 5\r\n\r\n12"[..]);
    assert!(matches!(codec.decode(&mut first), Ok(None)));
    let mut short = BytesMut::from(&b"3"[..]);
    assert!(matches!(codec.decode(&mut short), Ok(None)));
    let err = codec.decode_eof(&mut short).expect_err("truncated");
    assert!(err.is_truncated(), "{err:?}");
    let _ = codec.fault(&err);
}

#[test]
fn encode_frame_is_what_the_encoder_writes_without_a_limit() {
    let mut codec = FrameCodec::new().with_max_body_size(usize::MAX);
    for len in [0usize, 9, 10, DEFAULT_MAX_BODY_SIZE + 1] {
        let body = vec![b'x'; len];
        let mut expected = BytesMut::new();
        codec
            .encode(Bytes::from(body.clone()), &mut expected)
            .expect("no limit");
        assert_eq!(encode_frame(&body), expected.freeze(), "{len}");
    }
}
