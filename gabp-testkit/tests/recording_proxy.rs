//! What gives way when the disk is slower than the wire (SPEC/1.0 recording.md §5): the recording, never the
//! forwarding. A sink that blocks until released stands for the slow disk.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_record::{ProxyConfig, Record, Recording, RecordingProxy};
use gabp_testkit::wire::{self, RawClient};
use gabp_testkit::MockMod;
use gabp_transport::{Endpoint, Listener, Token};
use parking_lot::Mutex;
use serde_json::json;

/// Takes no bytes until `open`, then keeps them in `bytes`.
struct Gate {
    open: Arc<AtomicBool>,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Write for Gate {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        while !self.open.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.bytes.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_disk_loses_recorded_frames_never_forwarded_ones() {
    let mock = MockMod::demo().unwrap();
    let served = mock.serve_tcp().await.unwrap();
    let proxy_token = Token::generate().unwrap();
    let mut config = ProxyConfig::new(
        served.endpoint().clone(),
        mock.token().clone(),
        proxy_token.clone(),
    );
    config.writer_queue = 8;
    let (open, bytes) = (Arc::new(AtomicBool::new(false)), Arc::default());
    let sink = Gate {
        open: open.clone(),
        bytes: Arc::clone(&bytes),
    };
    let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap();
    let proxy = RecordingProxy::start(listener, config, Box::new(sink));

    let mut client = RawClient::connect(proxy.endpoint()).await.unwrap();
    client.hello(proxy_token.expose_secret()).await;
    // 300 pipelined calls of 1 KiB each way: far more than the writer's buffer and queue hold.
    let mut burst = Vec::new();
    for i in 0..300 {
        let (_, call) = wire::request(
            "tools/call",
            Some(json!({"name": "demo/echo", "arguments": {"value": ["x".repeat(1024), i]}})),
        );
        burst.extend(wire::frame(&serde_json::to_vec(&call).unwrap()));
    }
    client.write_raw(&burst).await;
    for _ in 0..300 {
        assert!(client.recv_response().await.result().is_some());
    }
    // Every answer came while the sink took nothing.
    assert!(bytes.lock().is_empty());
    let written = bytes.lock().len();
    assert_eq!(written, 0);

    open.store(true, Ordering::Release);
    client.shutdown_write().await;
    client.until_closed().await;
    let stats = proxy.shutdown().await.unwrap();
    let recording = Recording::from_reader(&bytes.lock()[..]).expect("still a valid recording");
    let dropped: u64 = recording
        .records
        .iter()
        .map(|(_, r)| match r {
            Record::Dropped { bytes, .. } => *bytes,
            _ => 0,
        })
        .sum();
    let messages = recording
        .records
        .iter()
        .filter(|(_, r)| matches!(r, Record::Message { .. }))
        .count() as u64;
    assert!(dropped > 0, "{stats:?}");
    assert_eq!(dropped, stats.dropped_bytes);
    assert_eq!(messages, stats.recorded_frames);
    assert!(messages < 2 + 600, "some frames were left out: {messages}");
    // What was recorded is whole: every message is a JSON object with an id.
    for (line, record) in &recording.records {
        if let Record::Message { message, .. } = record {
            assert!(message["id"].is_string(), "line {line}: {message:?}");
        }
    }
}
