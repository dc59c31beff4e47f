//! Framed echo against raw echo, per transport and body size.
//!
//! Each iteration is one round trip: the bridge sends a body of N bytes, the mod sends it back.
//!
//! - `framed`: both ends are `Connection`s (`Content-Length` frames through `gabp_codec::FrameCodec`);
//! - `raw`: the same N bytes with no framing over the same transport (`ByteStream`s from
//!   `Listener::accept_stream` / `connect_stream`, `read_exact` + `write_all`): the floor.
//!
//! Transports: loopback TCP, a Unix socket, and a `tokio::io::duplex` pair; bodies of 200 B and
//! 64 KiB. Criterion reports time per round trip (frames/s = 1 / time) and bytes/s of payload
//! (N bytes each way per iteration). Run with `cargo bench -p gabp-transport --bench echo`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::{SinkExt, StreamExt};
use gabp_transport::{connect, connect_stream, ByteStream, Connection, Endpoint, Listener};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;

const SIZES: [usize; 2] = [200, 64 * 1024];
const DUPLEX_BUFFER: usize = 256 * 1024;

#[derive(Clone, Copy)]
enum Transport {
    Tcp,
    #[cfg(unix)]
    Unix,
    Duplex,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            #[cfg(unix)]
            Transport::Unix => "unix",
            Transport::Duplex => "duplex",
        }
    }
}

/// Keeps a Unix socket's directory alive for the duration of a benchmark.
struct Setup {
    _dir: Option<tempfile::TempDir>,
}

/// A connected raw pair: (bridge end, mod end).
async fn raw_pair(transport: Transport) -> (ByteStream, ByteStream, Setup) {
    match transport {
        Transport::Duplex => {
            let (a, b) = tokio::io::duplex(DUPLEX_BUFFER);
            (ByteStream::new(a), ByteStream::new(b), Setup { _dir: None })
        }
        Transport::Tcp => {
            let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
            let (client, server) = tokio::join!(
                connect_stream(listener.endpoint()),
                listener.accept_stream()
            );
            (
                client.expect("connect"),
                server.expect("accept").0,
                Setup { _dir: None },
            )
        }
        #[cfg(unix)]
        Transport::Unix => {
            let dir = tempfile::tempdir().expect("tempdir");
            let endpoint = Endpoint::unix(dir.path().join("bench.sock")).expect("path");
            let listener = Listener::bind(&endpoint).await.expect("bind");
            let (client, server) =
                tokio::join!(connect_stream(&endpoint), listener.accept_stream());
            (
                client.expect("connect"),
                server.expect("accept").0,
                Setup { _dir: Some(dir) },
            )
        }
    }
}

/// A connected framed pair: (bridge end, mod end), made the way users make them.
async fn framed_pair(transport: Transport) -> (Connection, Connection, Setup) {
    match transport {
        Transport::Duplex => {
            let (a, b) = tokio::io::duplex(DUPLEX_BUFFER);
            (Connection::new(a), Connection::new(b), Setup { _dir: None })
        }
        Transport::Tcp => {
            let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
            let (client, server) = tokio::join!(connect(listener.endpoint()), listener.accept());
            (
                client.expect("connect"),
                server.expect("accept"),
                Setup { _dir: None },
            )
        }
        #[cfg(unix)]
        Transport::Unix => {
            let dir = tempfile::tempdir().expect("tempdir");
            let endpoint = Endpoint::unix(dir.path().join("bench.sock")).expect("path");
            let listener = Listener::bind(&endpoint).await.expect("bind");
            let (client, server) = tokio::join!(connect(&endpoint), listener.accept());
            (
                client.expect("connect"),
                server.expect("accept"),
                Setup { _dir: Some(dir) },
            )
        }
    }
}

fn bench_echo(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let transports = [
        Transport::Tcp,
        #[cfg(unix)]
        Transport::Unix,
        Transport::Duplex,
    ];
    for transport in transports {
        let mut group = c.benchmark_group(format!("echo/{}", transport.name()));
        group
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        for size in SIZES {
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(BenchmarkId::new("framed", size), &size, |b, &size| {
                bench_framed(b, &rt, transport, size);
            });
            group.bench_with_input(BenchmarkId::new("raw", size), &size, |b, &size| {
                bench_raw(b, &rt, transport, size);
            });
        }
        group.finish();
    }
}

fn bench_framed(b: &mut criterion::Bencher<'_>, rt: &Runtime, transport: Transport, size: usize) {
    let (mut client, mut server, _setup) = rt.block_on(framed_pair(transport));
    let echo = rt.spawn(async move {
        while let Some(Ok(frame)) = server.next().await {
            let Some(body) = frame.into_body() else { break };
            if server.send(body).await.is_err() {
                break;
            }
        }
    });
    let body = Bytes::from(vec![b'x'; size]);
    b.iter_custom(|iters| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                client.send(body.clone()).await.expect("send");
                let reply = client.next().await.expect("reply").expect("frame");
                assert!(reply.into_body().is_some_and(|r| r.len() == size));
            }
            start.elapsed()
        })
    });
    drop(client);
    rt.block_on(echo).expect("echo task");
}

fn bench_raw(b: &mut criterion::Bencher<'_>, rt: &Runtime, transport: Transport, size: usize) {
    let (mut client, mut server, _setup) = rt.block_on(raw_pair(transport));
    let echo = rt.spawn(async move {
        let mut buf = vec![0u8; size];
        while server.read_exact(&mut buf).await.is_ok() {
            if server.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let body = vec![b'x'; size];
    let mut reply = vec![0u8; size];
    b.iter_custom(|iters| {
        rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                client.write_all(&body).await.expect("write");
                client.read_exact(&mut reply).await.expect("read");
            }
            start.elapsed()
        })
    });
    drop(client);
    rt.block_on(echo).expect("echo task");
}

criterion_group!(benches, bench_echo);
criterion_main!(benches);
