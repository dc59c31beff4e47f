//! WebSocket on loopback (SPEC/1.0 transport.md §2.5): frames both ways, one envelope per text
//! message, messages that arrive together read together, the handshake checks (Origin, token,
//! subprotocol), binary and oversized messages closed with 1003 and 1009, ping/pong liveness,
//! loopback only.

mod common;

use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{
    connect, connect_with, Endpoint, FrameCodec, Listener, Token, WsSettings, WS_SUBPROTOCOL,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

type RawWs = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn ws_listener() -> (Listener, std::net::SocketAddr) {
    let listener = Listener::bind(&"ws://127.0.0.1:0".parse().expect("endpoint"))
        .await
        .expect("bind");
    let Endpoint::WebSocket(addr) = listener.endpoint().clone() else {
        panic!("bound {}", listener.endpoint());
    };
    assert_ne!(addr.port(), 0);
    (listener, addr)
}

/// A hand-made client: the handshake with `headers`, then raw access.
async fn raw_client(
    addr: std::net::SocketAddr,
    headers: &[(&'static str, &str)],
) -> Result<(RawWs, Option<String>), WsError> {
    let mut request = format!("ws://{addr}/").into_client_request()?;
    for (name, value) in headers {
        request
            .headers_mut()
            .append(*name, HeaderValue::from_str(value).expect("header"));
    }
    let socket = tokio::net::TcpStream::connect(addr).await?;
    let (ws, response) = tokio_tungstenite::client_async(request, socket).await?;
    let protocol = response
        .headers()
        .get("sec-websocket-protocol")
        .map(|v| v.to_str().expect("ascii").to_owned());
    Ok((ws, protocol))
}

fn refused_with(result: Result<(RawWs, Option<String>), WsError>, status: u16) {
    match result {
        Err(WsError::Http(response)) => assert_eq!(response.status().as_u16(), status),
        Err(other) => panic!("expected HTTP {status}, got {other}"),
        Ok(_) => panic!("expected HTTP {status}, the handshake succeeded"),
    }
}

/// The close code the server sends next.
async fn close_code(ws: &mut RawWs) -> CloseCode {
    loop {
        match common::within("a close frame", ws.next()).await {
            Some(Ok(Message::Close(Some(frame)))) => return frame.code,
            Some(Ok(_)) => {}
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn frames_both_ways_over_a_websocket() {
    let (listener, addr) = ws_listener().await;
    let endpoint = listener.endpoint().clone();
    assert_eq!(endpoint.to_string(), format!("ws://{addr}"));
    let (bridge, game) = tokio::join!(connect(&endpoint), listener.accept());
    let (bridge, game) = (bridge.expect("connect"), game.expect("accept"));
    assert!(
        game.peer().starts_with("ws://127.0.0.1:"),
        "{}",
        game.peer()
    );
    common::exchange_both_ways(bridge, game).await;
}

#[tokio::test]
async fn each_envelope_is_one_text_message_without_a_header() {
    let (listener, addr) = ws_listener().await;
    let (client, game) = tokio::join!(
        raw_client(addr, &[("sec-websocket-protocol", "other, gabp.v1")]),
        listener.accept()
    );
    let ((mut ws, protocol), mut game) = (client.expect("handshake"), game.expect("accept"));
    assert_eq!(protocol.as_deref(), Some(WS_SUBPROTOCOL));

    ws.send(Message::text(r#"{"v":"gabp/1"}"#))
        .await
        .expect("send");
    assert_eq!(
        &common::next_body(&mut game).await[..],
        br#"{"v":"gabp/1"}"#
    );
    game.send(Bytes::from_static(b"{\"a\":1}"))
        .await
        .expect("send");
    game.send(Bytes::from_static(b"{}")).await.expect("send");
    for expected in ["{\"a\":1}", "{}"] {
        match common::within("a message", ws.next()).await {
            Some(Ok(Message::Text(text))) => assert_eq!(text.as_str(), expected),
            other => panic!("expected a text message, got {other:?}"),
        }
    }
}

/// `body` as the frame a read hands out.
fn frame(body: &str) -> String {
    format!(
        "Content-Length: {}\r\nContent-Type: application/json\r\n\r\n{body}",
        body.len()
    )
}

/// What one read of the raw stream gives, as text.
async fn read_once(stream: &mut gabp_transport::ByteStream) -> String {
    let mut buf = vec![0u8; 64 * 1024];
    let n = common::within("a read", stream.read(&mut buf))
        .await
        .expect("read");
    String::from_utf8(buf[..n].to_vec()).expect("UTF-8")
}

#[tokio::test]
async fn messages_that_arrive_together_are_read_together_and_none_is_held_back() {
    let (listener, addr) = ws_listener().await;
    let (client, game) = tokio::join!(raw_client(addr, &[]), listener.accept_stream());
    let ((mut ws, _), (mut game, _)) = (client.expect("handshake"), game.expect("accept"));

    // Three messages in one write: one read hands out all three frames, so that their answers can leave in
    // one write too.
    for body in ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"] {
        ws.feed(Message::text(body)).await.expect("feed");
    }
    ws.flush().await.expect("flush");
    let mut read = read_once(&mut game).await;
    let bodies = ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"];
    assert_eq!(read, bodies.map(frame).concat());

    // A message followed by nothing is handed out without waiting for another one.
    ws.send(Message::text("{}")).await.expect("send");
    read = read_once(&mut game).await;
    assert_eq!(read, frame("{}"));

    // A message and a close in one write: the message, then the end of the stream on the next read.
    ws.feed(Message::text("[]")).await.expect("feed");
    ws.feed(Message::Close(None)).await.expect("feed");
    ws.flush().await.expect("flush");
    assert_eq!(read_once(&mut game).await, frame("[]"));
    assert_eq!(read_once(&mut game).await, "");
}

#[tokio::test]
async fn no_subprotocol_is_answered_unless_gabp_v1_is_offered() {
    let (listener, addr) = ws_listener().await;
    let (client, _game) = tokio::join!(raw_client(addr, &[]), listener.accept());
    assert_eq!(client.expect("handshake").1, None);
}

#[tokio::test]
async fn a_foreign_origin_is_refused_at_the_handshake() {
    let (listener, addr) = ws_listener().await;
    refused_with(
        raw_client(addr, &[("origin", "https://evil.example")]).await,
        403,
    );
    let page = format!("http://127.0.0.1:{}", addr.port() + 1);
    refused_with(raw_client(addr, &[("origin", &page)]).await, 403);

    // The mod's own page, once allowed; a client without Origin always.
    assert!(listener.allow_ws_origin(&page));
    let headers = [("origin", page.as_str())];
    let (client, game) = tokio::join!(raw_client(addr, &headers), listener.accept());
    client.expect("allowed origin");
    game.expect("accept");
    let (client, game) = tokio::join!(raw_client(addr, &[]), listener.accept());
    client.expect("no origin");
    game.expect("accept");
    refused_with(
        raw_client(addr, &[("origin", "https://evil.example")]).await,
        403,
    );
}

#[tokio::test]
async fn a_wrong_token_at_the_handshake_is_refused_and_the_right_one_never_echoed() {
    let (listener, addr) = ws_listener().await;
    let token = Token::new("k".repeat(40)).expect("token");
    let listener = listener.with_ws_token(token.clone());
    let wrong = format!("Bearer {}", "w".repeat(40));
    refused_with(raw_client(addr, &[("authorization", &wrong)]).await, 401);
    let wrong = format!("gabp.v1, gabp.token.{}", "w".repeat(40));
    refused_with(
        raw_client(addr, &[("sec-websocket-protocol", &wrong)]).await,
        401,
    );

    let right = format!("gabp.v1, gabp.token.{}", token.expose_secret());
    let headers = [("sec-websocket-protocol", right.as_str())];
    let (client, game) = tokio::join!(raw_client(addr, &headers), listener.accept());
    assert_eq!(client.expect("right token").1.as_deref(), Some("gabp.v1"));
    game.expect("accept");

    let settings = WsSettings::new().with_token(token);
    let (bridge, game) = tokio::join!(
        connect_with(listener.endpoint(), &settings),
        listener.accept()
    );
    common::exchange_both_ways(bridge.expect("connect"), game.expect("accept")).await;
    let settings = WsSettings::new().with_token(Token::new("w".repeat(40)).expect("token"));
    let err = connect_with(listener.endpoint(), &settings)
        .await
        .expect_err("wrong token");
    assert!(err.to_string().contains("401"), "{err}");
}

#[tokio::test]
async fn a_binary_message_is_refused_with_1003() {
    let (listener, addr) = ws_listener().await;
    let (client, game) = tokio::join!(raw_client(addr, &[]), listener.accept());
    let ((mut ws, _), mut game) = (client.expect("handshake"), game.expect("accept"));
    ws.send(Message::binary(&b"{}"[..])).await.expect("send");
    let read = common::within("the refusal", game.next()).await;
    assert!(matches!(read, Some(Err(_))), "{read:?}");
    assert_eq!(close_code(&mut ws).await, CloseCode::Unsupported);
}

#[tokio::test]
async fn an_oversized_message_is_refused_with_1009_before_its_body_arrives() {
    let (listener, addr) = ws_listener().await;
    let listener = listener.with_codec(FrameCodec::new().with_max_body_size(1024));
    let (client, game) = tokio::join!(raw_client(addr, &[]), listener.accept());
    let ((mut ws, _), mut game) = (client.expect("handshake"), game.expect("accept"));
    assert_eq!(game.codec().max_body_size(), 1024);

    // Within the limit: a message of exactly 1024 bytes passes.
    let body = format!("\"{}\"", "x".repeat(1022));
    ws.send(Message::text(body.clone())).await.expect("send");
    assert_eq!(common::next_body(&mut game).await, body.as_bytes());

    // A text frame header announcing 1 TiB, masked as a client must, and no payload at all.
    let mut header = vec![0x81u8, 0x80 | 127];
    header.extend_from_slice(&(1u64 << 40).to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4]);
    ws.get_mut().write_all(&header).await.expect("write");
    let read = common::within("the refusal", game.next()).await;
    assert!(matches!(read, Some(Err(_))), "{read:?}");
    assert_eq!(close_code(&mut ws).await, CloseCode::Size);
}

// The error type is the one tungstenite's handshake callback returns.
#[allow(clippy::result_large_err)]
#[tokio::test]
async fn a_peer_that_stops_answering_pings_is_dropped() {
    // A server that completes the handshake, then never reads again (so never answers a Ping).
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = tcp.local_addr().expect("address");
    let server = tokio::spawn(async move {
        let (socket, _) = tcp.accept().await.expect("accept");
        let answer = |_: &Request, mut response: Response| {
            let protocol = HeaderValue::from_static(WS_SUBPROTOCOL);
            response
                .headers_mut()
                .insert("sec-websocket-protocol", protocol);
            Ok(response)
        };
        let ws = tokio_tungstenite::accept_hdr_async(socket, answer)
            .await
            .expect("handshake");
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(ws);
    });
    let settings = WsSettings::new()
        .with_ping_interval(Duration::from_millis(50))
        .with_pong_timeout(Duration::from_millis(100));
    let mut bridge = connect_with(&Endpoint::WebSocket(addr), &settings)
        .await
        .expect("connect");
    match common::within("the liveness timeout", bridge.next()).await {
        Some(Err(gabp_transport::CodecError::Io(e))) => {
            assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    server.abort();
}

#[tokio::test]
async fn a_peer_that_answers_pings_stays_through_idle_time() {
    let (listener, _) = ws_listener().await;
    let settings = WsSettings::new()
        .with_ping_interval(Duration::from_millis(20))
        .with_pong_timeout(Duration::from_millis(200));
    let listener = listener.with_ws_settings(settings.clone());
    let (bridge, game) = tokio::join!(
        connect_with(listener.endpoint(), &settings),
        listener.accept()
    );
    let (mut bridge, mut game) = (bridge.expect("connect"), game.expect("accept"));
    let echo = tokio::spawn(async move {
        while let Some(Ok(frame)) = game.next().await {
            if let Some(body) = frame.into_body() {
                game.send(body).await.expect("echo");
            }
        }
    });
    // Idle for many ping intervals and pong timeouts; both sides keep reading.
    let idle = tokio::time::timeout(Duration::from_millis(600), bridge.next()).await;
    assert!(idle.is_err(), "nothing should arrive while idle: {idle:?}");
    bridge.send(Bytes::from_static(b"{}")).await.expect("send");
    assert_eq!(&common::next_body(&mut bridge).await[..], b"{}");
    drop(bridge);
    common::within("the echo to end", echo).await.expect("echo");
}

#[tokio::test]
async fn websocket_is_loopback_only() {
    for addr in ["0.0.0.0:0", "192.168.1.2:0"] {
        let endpoint = Endpoint::WebSocket(addr.parse().expect("address"));
        let err = Listener::bind(&endpoint).await.expect_err(addr);
        assert!(err.to_string().contains("loopback"), "{err}");
        let err = connect(&endpoint).await.expect_err(addr);
        assert!(err.to_string().contains("loopback"), "{err}");
    }
}
