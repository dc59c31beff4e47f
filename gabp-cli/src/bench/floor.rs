//! The floor of `gabp bench --self`: a raw `Content-Length` framed echo (SPEC/1.0 transport.md §1) over loopback
//! TCP, frames of the measured request's size. It stays up between rounds, as the bridge does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{Endpoint, FrameReader, FrameWriter, Listener};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::{with_progress, Run};
use crate::terminal::Progress;

/// The echo task and the client's connection to it.
pub(super) struct Floor {
    echo: JoinHandle<()>,
    /// Taken by a measurement and put back when it ends; `None` after one failed.
    halves: Option<(FrameReader, FrameWriter)>,
    body: Bytes,
}

impl Drop for Floor {
    fn drop(&mut self) {
        self.echo.abort();
    }
}

fn echo_error(e: &dyn std::fmt::Display) -> String {
    format!("the echo failed: {e}")
}

impl Floor {
    /// Starts the echo and connects to it.
    pub(super) async fn start(body: Bytes) -> Result<Floor, String> {
        let listener = Listener::bind(&Endpoint::tcp_v4(0))
            .await
            .map_err(|e| format!("cannot listen on loopback: {e}"))?;
        let endpoint = listener.endpoint().clone();
        let echo = tokio::spawn(async move {
            let Ok(connection) = listener.accept().await else {
                return;
            };
            let (mut reader, mut writer) = connection.into_split();
            while let Some(Ok(frame)) = reader.next().await {
                let Some(body) = frame.into_body() else {
                    continue;
                };
                if writer.send(body).await.is_err() {
                    break;
                }
            }
        });
        // Built first, so that a failed connect ends the echo too.
        let mut floor = Floor {
            echo,
            halves: None,
            body,
        };
        let connection = gabp_transport::connect(&endpoint)
            .await
            .map_err(|e| format!("cannot connect to the echo: {e}"))?;
        floor.halves = Some(connection.into_split());
        Ok(floor)
    }

    fn take(&mut self) -> Result<(FrameReader, FrameWriter), String> {
        self.halves
            .take()
            .ok_or_else(|| echo_error(&"an earlier round failed"))
    }

    /// `calls` frames one at a time, unmeasured.
    pub(super) async fn warm_up(&mut self, calls: u64) -> Result<(), String> {
        let (mut reader, mut writer) = self.take()?;
        for _ in 0..calls {
            echo_once(&mut writer, &mut reader, &self.body).await?;
        }
        self.halves = Some((reader, writer));
        Ok(())
    }

    /// `calls` measured frames, `concurrency` in flight on the one connection.
    pub(super) async fn measure(
        &mut self,
        calls: u64,
        concurrency: usize,
        progress: &mut Progress,
        offset: u64,
    ) -> Result<Run, String> {
        let (reader, writer) = self.take()?;
        let done = Arc::new(AtomicU64::new(0));
        // The client runs on the runtime's workers, as the bridge's callers do, so that neither side pays for
        // waking the thread that awaits the results.
        let run = if concurrency == 1 {
            tokio::spawn(one_at_a_time(
                reader,
                writer,
                self.body.clone(),
                calls,
                done.clone(),
            ))
        } else {
            tokio::spawn(in_flight(
                reader,
                writer,
                self.body.clone(),
                calls,
                concurrency,
                done.clone(),
            ))
        };
        let (run, reader, writer) = with_progress(progress, "floor", offset, &done, run)
            .await
            .map_err(|e| echo_error(&e))??;
        self.halves = Some((reader, writer));
        Ok(run)
    }
}

type Measured = Result<(Run, FrameReader, FrameWriter), String>;

/// One task writing and reading: the tightest loop there is.
async fn one_at_a_time(
    mut reader: FrameReader,
    mut writer: FrameWriter,
    body: Bytes,
    calls: u64,
    done: Arc<AtomicU64>,
) -> Measured {
    let mut latencies = Vec::with_capacity(usize::try_from(calls).unwrap_or(0));
    let started = Instant::now();
    for _ in 0..calls {
        let start = Instant::now();
        echo_once(&mut writer, &mut reader, &body).await?;
        latencies.push(start.elapsed());
        done.fetch_add(1, Ordering::Relaxed);
    }
    let run = Run {
        latencies,
        elapsed: started.elapsed(),
    };
    Ok((run, reader, writer))
}

/// A writer keeping `concurrency` frames outstanding and a reader timing each echo from its send.
async fn in_flight(
    mut reader: FrameReader,
    mut writer: FrameWriter,
    body: Bytes,
    calls: u64,
    concurrency: usize,
    done: Arc<AtomicU64>,
) -> Measured {
    let window = Arc::new(Semaphore::new(concurrency));
    // Bounded by the window: at most `concurrency` send times wait.
    let (sent_at_tx, mut sent_at_rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let started = Instant::now();
    let sender = {
        let window = window.clone();
        tokio::spawn(async move {
            for _ in 0..calls {
                match window.acquire().await {
                    Ok(permit) => permit.forget(),
                    Err(_) => break,
                }
                if sent_at_tx.send(Instant::now()).is_err() {
                    break;
                }
                if let Err(e) = writer.send(body.clone()).await {
                    return Err(e.to_string());
                }
            }
            Ok(writer)
        })
    };
    let mut latencies = Vec::with_capacity(usize::try_from(calls).unwrap_or(0));
    for _ in 0..calls {
        let echoed = match reader.next().await {
            Some(Ok(_)) => sent_at_rx.recv().await.ok_or("the sender stopped"),
            Some(Err(e)) => return stop(&sender, echo_error(&e)),
            None => Err("the connection closed"),
        };
        let sent_at = match echoed {
            Ok(sent_at) => sent_at,
            Err(why) => return stop(&sender, echo_error(&why)),
        };
        latencies.push(sent_at.elapsed());
        window.add_permits(1);
        done.fetch_add(1, Ordering::Relaxed);
    }
    let elapsed = started.elapsed();
    let writer = sender
        .await
        .map_err(|e| echo_error(&e))?
        .map_err(|e| echo_error(&e))?;
    Ok((Run { latencies, elapsed }, reader, writer))
}

/// Ends the sender, which may wait for a window that no echo will open, and fails the run.
fn stop<T>(sender: &JoinHandle<T>, error: String) -> Measured {
    sender.abort();
    Err(error)
}

/// One frame to the echo and its copy back.
async fn echo_once(
    writer: &mut FrameWriter,
    reader: &mut FrameReader,
    body: &Bytes,
) -> Result<(), String> {
    writer
        .send(body.clone())
        .await
        .map_err(|e| echo_error(&e))?;
    match reader.next().await {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(echo_error(&e)),
        None => Err(echo_error(&"the connection closed")),
    }
}
