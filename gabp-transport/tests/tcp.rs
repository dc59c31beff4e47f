//! Loopback TCP: frames both ways on IPv4 and IPv6, and refusal of everything that is not loopback.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use gabp_transport::{connect, Endpoint, Listener, TransportError};

async fn exchange_over(endpoint: Endpoint) {
    let listener = Listener::bind(&endpoint).await.expect("bind");
    let bound = listener.endpoint().clone();
    let Endpoint::Tcp(addr) = &bound else {
        panic!("bound a TCP endpoint, got {bound}");
    };
    assert_ne!(addr.port(), 0, "port 0 must be replaced by the real port");
    assert_eq!(addr.ip(), endpoint_ip(&endpoint));

    let (bridge, game) = tokio::join!(connect(&bound), listener.accept());
    let (bridge, game) = (bridge.expect("connect"), game.expect("accept"));
    assert_eq!(bridge.peer(), bound.to_string());
    assert!(game.peer().starts_with("tcp://"), "{}", game.peer());
    common::exchange_both_ways(bridge, game).await;
}

fn endpoint_ip(endpoint: &Endpoint) -> IpAddr {
    match endpoint {
        Endpoint::Tcp(addr) => addr.ip(),
        other => panic!("not TCP: {other}"),
    }
}

#[tokio::test]
async fn frames_both_ways_over_ipv4_loopback() {
    exchange_over(Endpoint::tcp_v4(0)).await;
}

#[tokio::test]
async fn frames_both_ways_over_ipv6_loopback() {
    // Some machines (containers, CI runners) have no ::1; say so instead of failing.
    if let Err(e) = std::net::TcpListener::bind("[::1]:0") {
        eprintln!("SKIPPED frames_both_ways_over_ipv6_loopback: ::1 is not available here ({e})");
        return;
    }
    exchange_over("tcp://[::1]:0".parse().expect("endpoint")).await;
}

#[tokio::test]
async fn accepts_several_connections() {
    let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
    for _ in 0..3 {
        let (bridge, game) = tokio::join!(connect(listener.endpoint()), listener.accept());
        let (mut bridge, game) = (bridge.expect("connect"), game.expect("accept"));
        let game = tokio::spawn(common::game_side(game, 0));
        let greeting = common::next_body(&mut bridge).await;
        assert_eq!(&greeting[..], br#"{"hello":"from the game"}"#);
        game.await.expect("game");
    }
}

fn assert_loopback_refusal(err: TransportError) {
    assert!(matches!(err, TransportError::NotLoopback(_)), "{err:?}");
    assert!(err.to_string().contains("loopback"), "{err}");
}

#[tokio::test]
async fn bind_refuses_unspecified_ipv4() {
    let ep = Endpoint::Tcp(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    assert_loopback_refusal(Listener::bind(&ep).await.expect_err("0.0.0.0"));
    let parsed = "tcp://0.0.0.0:0".parse::<Endpoint>().expect_err("0.0.0.0");
    assert!(parsed.to_string().contains("loopback"));
}

#[tokio::test]
async fn bind_refuses_unspecified_ipv6() {
    let ep = Endpoint::Tcp("[::]:0".parse().expect("addr"));
    assert_loopback_refusal(Listener::bind(&ep).await.expect_err("::"));
}

#[tokio::test]
async fn bind_refuses_a_lan_address() {
    // Refused before any socket is made: nothing is ever bound or sent on a LAN address.
    let ep = Endpoint::Tcp("192.168.1.20:4711".parse().expect("addr"));
    assert_loopback_refusal(Listener::bind(&ep).await.expect_err("LAN"));
    let parsed = "tcp://192.168.1.20:4711"
        .parse::<Endpoint>()
        .expect_err("LAN");
    assert!(parsed.to_string().contains("loopback"));
}

#[tokio::test]
async fn connect_refuses_a_lan_address_without_touching_the_network() {
    let ep = Endpoint::Tcp("10.0.0.1:4711".parse().expect("addr"));
    assert_loopback_refusal(connect(&ep).await.expect_err("LAN"));
}

#[test]
fn refuses_a_host_name_that_is_not_loopback() {
    // No name lookup is made; only `localhost` is read (as 127.0.0.1).
    let err = "tcp://example.com:4711"
        .parse::<Endpoint>()
        .expect_err("host name");
    assert!(matches!(&err, TransportError::NotLoopback(host) if host == "example.com"));
    assert!(err.to_string().contains("loopback"), "{err}");
    assert_eq!(
        "tcp://localhost:4711".parse::<Endpoint>().ok(),
        Some(Endpoint::tcp_v4(4711))
    );
}

#[tokio::test]
async fn bind_reports_address_in_use() {
    let first = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
    let err = Listener::bind(first.endpoint()).await.expect_err("in use");
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::AddrInUse), "{err}");
}

#[tokio::test]
async fn connect_to_stdio_or_a_pipe_is_refused_with_advice() {
    let err = connect(&Endpoint::Stdio).await.expect_err("stdio");
    assert!(err.to_string().contains("spawn"), "{err}");
    #[cfg(unix)]
    {
        let err = connect(&Endpoint::pipe("gabp-x").expect("pipe"))
            .await
            .expect_err("pipe");
        assert!(matches!(err, TransportError::Unsupported { .. }), "{err:?}");
    }
}
