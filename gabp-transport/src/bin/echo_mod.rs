//! A tiny GABP "mod" for this crate's tests: it listens on its own stdin/stdout through
//! [`gabp_transport::Listener`] and echoes every frame body back. Not part of the public surface.
//!
//! Arguments:
//! - `--stderr TEXT`: write TEXT and a newline to stderr first;
//! - `--hang`: after stdin closes, keep running (so tests can see the child killed);
//! - `--exit-code N`: exit with status N once stdin closes;
//! - `--listen ENDPOINT`: listen there instead of on stdio, serve one connection, then exit.
//!
//! It also checks the stdio listener's rules: a second stdio listener is refused, and once the one
//! connection has ended a second `accept` returns `TransportError::Closed`; otherwise it exits
//! with status 1.

use futures::{SinkExt, StreamExt};
use gabp_transport::{Endpoint, Frame, Listener, TransportError};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut hang = false;
    let mut exit_code = 0;
    let mut listen = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--hang" => hang = true,
            "--listen" => listen = args.next(),
            "--stderr" => eprintln!("{}", args.next().unwrap_or_default()),
            "--exit-code" => exit_code = args.next().and_then(|n| n.parse().ok()).unwrap_or(2),
            other => {
                eprintln!("echo mod: unknown argument {other:?}");
                std::process::exit(64);
            }
        }
    }
    let result = match listen {
        Some(endpoint) => serve_one(&endpoint).await,
        None => serve().await,
    };
    if let Err(e) = result {
        eprintln!("echo mod: {e}");
        std::process::exit(1);
    }
    if hang {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
    }
    std::process::exit(exit_code);
}

/// Listen at `endpoint`, echo one connection, return.
async fn serve_one(endpoint: &str) -> Result<(), Box<dyn std::error::Error>> {
    let listener = Listener::bind(&endpoint.parse()?).await?;
    let mut conn = listener.accept().await?;
    while let Some(frame) = conn.next().await {
        if let Some(body) = frame?.into_body() {
            conn.send(body).await?;
        }
    }
    Ok(())
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let listener = Listener::bind(&Endpoint::Stdio).await?;
    if Listener::bind(&Endpoint::Stdio).await.is_ok() {
        return Err("a second stdio listener was allowed".into());
    }
    let mut conn = listener.accept().await?;
    while let Some(frame) = conn.next().await {
        let frame = frame?;
        if let Frame::Oversized { declared, .. } = frame {
            conn.send(format!("{{\"oversized\":{declared}}}").into())
                .await?;
        } else if let Some(body) = frame.into_body() {
            conn.send(body).await?;
        }
    }
    // The bridge closed our stdin. The listener's one connection is gone: a second accept must
    // say so (this is how a serve loop ends on stdio).
    drop(conn);
    match listener.accept().await {
        Err(TransportError::Closed) => Ok(()),
        Err(other) => Err(format!("second accept: expected Closed, got {other}").into()),
        Ok(_) => Err("second accept: expected Closed, got a connection".into()),
    }
}
