//! `gabp mcp --http` over real HTTP on loopback: `Origin` checks and the end of a session.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use gabp_hub::{Hub, HubConfig};
use gabp_mcp::http::{Access, HttpServer};
use gabp_mcp::{GabpMcp, McpOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-http-test","version":"0"}}}"#;

struct Served {
    port: u16,
    stop: CancellationToken,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(origins: &[String]) -> Served {
    let config = HubConfig::from_json_slice(br#"{"version":"1.0","games":{}}"#).unwrap();
    let front = GabpMcp::new(Hub::new(config), McpOptions::default());
    let server = HttpServer::bind(front, "127.0.0.1:0".parse().unwrap(), Access::Open, origins)
        .await
        .unwrap();
    let port = server.addr().port();
    let stop = CancellationToken::new();
    tokio::spawn(server.serve(stop.clone()));
    Served { port, stop }
}

/// Sends one request; returns the status code and the header block (lower-cased), reading no further.
async fn exchange(port: u16, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            head.push(byte[0]);
        }
    })
    .await
    .expect("the server answered within 10 s");
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    (status, head)
}

async fn initialize(port: u16, origin: Option<&str>) -> (u16, String) {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(origin) = origin {
        headers.push(("Origin", origin));
    }
    exchange(port, "POST", &headers, INITIALIZE).await
}

fn session_id(head: &str) -> String {
    head.lines()
        .find_map(|line| line.strip_prefix("mcp-session-id:"))
        .map(|id| id.trim().to_owned())
        .unwrap_or_else(|| panic!("no mcp-session-id in {head:?}"))
}

#[tokio::test]
async fn a_request_from_a_foreign_origin_is_refused_with_403() {
    let served = serve(&[]).await;
    let (status, _) = initialize(served.port, Some("http://evil.example")).await;
    assert_eq!(status, 403);
    let (status, _) = initialize(served.port, Some("https://app.example.com")).await;
    assert_eq!(status, 403, "an origin nobody allowed");
}

#[tokio::test]
async fn loopback_origins_listed_origins_and_no_origin_are_served() {
    let served = serve(&["https://app.example.com".to_owned()]).await;
    for origin in [
        None,
        Some("http://localhost:5173"),
        Some("http://127.0.0.1:3000"),
        Some("https://app.example.com"),
    ] {
        let (status, head) = initialize(served.port, origin).await;
        assert_eq!(status, 200, "{origin:?}: {head}");
    }
}

#[tokio::test]
async fn ending_a_session_with_delete_is_answered_204() {
    let served = serve(&[]).await;
    let (status, head) = initialize(served.port, None).await;
    assert_eq!(status, 200, "{head}");
    let id = session_id(&head);
    let (status, head) = exchange(served.port, "DELETE", &[("Mcp-Session-Id", &id)], "").await;
    assert_eq!(status, 204, "{head}");
}
