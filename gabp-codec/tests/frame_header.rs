//! `FrameCodec`'s fatal header errors (SPEC/1.0 transport.md §1.2, §7): each class of bad header block ends the
//! stream with its own error.

mod support;

use futures::StreamExt;
use gabp_codec::{CodecError, FrameCodec, InvalidLength, MalformedHeader};
use support::{assert_fatal, body, data, read_all, ScriptedReader, Step};
use tokio_util::codec::FramedRead;

// ---- fatal header classes --------------------------------------------------------------------

#[tokio::test]
async fn missing_content_length_is_fatal() {
    assert_fatal(b"Content-Type: application/json\r\n\r\n{}", |e| {
        matches!(e, CodecError::MissingContentLength)
    })
    .await;
}

#[tokio::test]
async fn empty_header_block_is_fatal() {
    assert_fatal(b"\r\n{}", |e| matches!(e, CodecError::MissingContentLength)).await;
}

#[tokio::test]
async fn non_numeric_content_length_is_fatal() {
    for value in ["abc", "0x10", "1e3", "5 5", "12a", "½"] {
        let input = format!("Content-Length: {value}\r\n\r\n{{}}");
        assert_fatal(input.as_bytes(), |e| {
            matches!(
                e,
                CodecError::InvalidContentLength {
                    reason: InvalidLength::NonNumeric
                }
            )
        })
        .await;
    }
}

#[tokio::test]
async fn negative_content_length_is_fatal() {
    assert_fatal(b"Content-Length: -5\r\n\r\n{}", |e| {
        matches!(
            e,
            CodecError::InvalidContentLength {
                reason: InvalidLength::Signed
            }
        )
    })
    .await;
}

#[tokio::test]
async fn plus_signed_content_length_is_fatal() {
    assert_fatal(b"Content-Length: +2\r\n\r\n{}", |e| {
        matches!(
            e,
            CodecError::InvalidContentLength {
                reason: InvalidLength::Signed
            }
        )
    })
    .await;
}

#[tokio::test]
async fn empty_content_length_is_fatal() {
    assert_fatal(b"Content-Length: \r\n\r\n{}", |e| {
        matches!(
            e,
            CodecError::InvalidContentLength {
                reason: InvalidLength::Empty
            }
        )
    })
    .await;
}

#[tokio::test]
async fn overflowing_content_length_is_fatal() {
    for value in ["18446744073709551616", "99999999999999999999999999"] {
        let input = format!("Content-Length: {value}\r\n\r\n{{}}");
        assert_fatal(input.as_bytes(), |e| {
            matches!(
                e,
                CodecError::InvalidContentLength {
                    reason: InvalidLength::Overflow
                }
            )
        })
        .await;
    }
}

#[tokio::test]
async fn conflicting_duplicate_content_length_is_fatal() {
    assert_fatal(b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", |e| {
        matches!(
            e,
            CodecError::ConflictingContentLength {
                first: 2,
                second: 3
            }
        )
    })
    .await;
}

#[tokio::test]
async fn header_block_over_limit_is_fatal() {
    // No end of line at all.
    let endless = vec![b'X'; 10_000];
    assert_fatal(&endless, |e| {
        matches!(e, CodecError::HeaderTooLarge { limit: 8192 })
    })
    .await;
    // Many valid but ignored header lines.
    let mut many = b"Content-Length: 2\r\n".to_vec();
    while many.len() <= 8192 {
        many.extend_from_slice(b"X-Padding: 0123456789\r\n");
    }
    many.extend_from_slice(b"\r\n{}");
    assert_fatal(&many, |e| {
        matches!(e, CodecError::HeaderTooLarge { limit: 8192 })
    })
    .await;
}

#[tokio::test]
async fn header_block_exactly_at_limit_is_accepted() {
    let head = b"Content-Length: 2\r\n\r\n";
    let items = read_all(
        FrameCodec::new().with_max_header_size(head.len()),
        ScriptedReader::chunks([&head[..5], &head[5..], b"{}"]),
    )
    .await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(body(&items[0]), b"{}");
    let items = read_all(
        FrameCodec::new().with_max_header_size(head.len() - 1),
        ScriptedReader::chunks([&head[..5], &head[5..], b"{}"]),
    )
    .await;
    assert!(
        matches!(items[..], [Err(CodecError::HeaderTooLarge { .. })]),
        "{items:?}"
    );
}

#[tokio::test]
async fn header_over_limit_is_detected_while_trickling() {
    // One byte at a time, never a line end: fails once the limit is reached, not at EOF.
    let limit = 256;
    let input = vec![b'a'; 4 * limit];
    let mut reader = FramedRead::new(
        ScriptedReader::chunks(input.chunks(1)),
        FrameCodec::new().with_max_header_size(limit),
    );
    assert!(matches!(
        reader.next().await,
        Some(Err(CodecError::HeaderTooLarge { limit: 256 }))
    ));
    assert!(reader.read_buffer().len() <= limit);
}

#[tokio::test]
async fn bare_line_feed_in_header_is_fatal() {
    assert_fatal(b"Content-Length: 2\n\n{}", |e| {
        matches!(
            e,
            CodecError::MalformedHeader {
                reason: MalformedHeader::BareLineFeed
            }
        )
    })
    .await;
}

#[tokio::test]
async fn header_line_without_colon_is_fatal() {
    assert_fatal(b"Content-Length 2\r\n\r\n{}", |e| {
        matches!(
            e,
            CodecError::MalformedHeader {
                reason: MalformedHeader::MissingColon
            }
        )
    })
    .await;
}

#[tokio::test]
async fn invalid_header_name_is_fatal() {
    for input in [
        &b" Content-Length: 2\r\n\r\n{}"[..],
        b"Content-Length : 2\r\n\r\n{}",
        b": 2\r\n\r\n{}",
    ] {
        assert_fatal(input, |e| {
            matches!(
                e,
                CodecError::MalformedHeader {
                    reason: MalformedHeader::InvalidName
                }
            )
        })
        .await;
    }
}

#[tokio::test]
async fn fatal_error_arrives_before_the_header_block_ends() {
    // A bad Content-Length is reported as soon as its line is complete.
    let mut reader = FramedRead::new(
        ScriptedReader::new([data("Content-Length: -1\r\n"), Step::Pending]),
        FrameCodec::new(),
    );
    assert!(matches!(
        reader.next().await,
        Some(Err(CodecError::InvalidContentLength { .. }))
    ));
    assert!(
        reader.next().await.is_none(),
        "the stream ends after a fatal error"
    );
}
