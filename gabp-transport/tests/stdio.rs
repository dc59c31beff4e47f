//! stdio through a real child process: the echo mod binary of this crate listens on its own
//! stdin/stdout with `Listener::bind(&Endpoint::Stdio)`, the test is the bridge and uses `spawn`.

mod common;

use std::process::Stdio;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{spawn, Frame, ModProcess};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

fn echo_mod() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gabp-transport-echo-mod"))
}

async fn wait(process: &mut ModProcess) -> std::process::ExitStatus {
    common::within("the child's exit", process.wait())
        .await
        .expect("exit status")
}

#[tokio::test]
async fn frames_both_ways_through_a_child_process() {
    let (mut conn, mut process) = spawn(echo_mod()).expect("spawn");
    assert!(process.id().is_some());
    assert!(conn.peer().starts_with("child process "), "{}", conn.peer());

    for body in common::bodies() {
        conn.send(body.clone()).await.expect("send");
        let echoed = common::next_body(&mut conn).await;
        assert!(echoed == body, "echo of {} bytes differs", body.len());
    }

    // Closing our side is end of input for the mod: its connection ends, its stdio listener
    // reports `Closed`, and it exits with status 0.
    conn.close().await.expect("close");
    assert!(common::within("end of stream", conn.next()).await.is_none());
    let status = wait(&mut process).await;
    assert!(status.success(), "{status}");
    assert_eq!(process.try_status(), Some(status));
}

#[tokio::test]
async fn frames_both_ways_through_split_halves() {
    let (conn, mut process) = spawn(echo_mod()).expect("spawn");
    let (mut reader, mut writer) = conn.into_split();
    let writing = tokio::spawn(async move {
        for body in common::bodies() {
            writer.send(body).await.expect("send");
        }
        writer
    });
    for body in common::bodies() {
        let echoed = common::next_body(&mut reader).await;
        assert!(echoed == body, "echo of {} bytes differs", body.len());
    }
    let mut writer = writing.await.expect("writer");
    writer.close().await.expect("close");
    assert!(common::within("end of stream", reader.next())
        .await
        .is_none());
    assert!(wait(&mut process).await.success());
}

#[tokio::test]
async fn the_mod_answers_an_oversized_frame_and_goes_on() {
    let (mut conn, mut process) = spawn(echo_mod()).expect("spawn");
    let too_big = Bytes::from(vec![b' '; 1024 * 1024 + 1]);
    // Our codec refuses to write it (same default limit); write it with a bigger one.
    *conn.codec_mut() = gabp_transport::FrameCodec::new().with_max_body_size(2 * 1024 * 1024);
    conn.send(too_big).await.expect("send");
    conn.send(Bytes::from_static(b"{}")).await.expect("send");
    assert_eq!(
        &common::next_body(&mut conn).await[..],
        br#"{"oversized":1048577}"#
    );
    assert_eq!(&common::next_body(&mut conn).await[..], b"{}");
    drop(conn);
    let _ = wait(&mut process).await;
}

#[tokio::test]
async fn exit_status_is_observable() {
    let mut cmd = echo_mod();
    cmd.args(["--exit-code", "7"]);
    let (mut conn, mut process) = spawn(cmd).expect("spawn");
    conn.close().await.expect("close");
    let status = wait(&mut process).await;
    assert_eq!(status.code(), Some(7), "{status}");
}

#[tokio::test]
async fn child_is_killed_when_the_connection_is_dropped() {
    let mut cmd = echo_mod();
    // `--hang`: the mod keeps running after its stdin closes, so only a kill can end it.
    cmd.arg("--hang");
    let (mut conn, mut process) = spawn(cmd).expect("spawn");
    conn.send(Bytes::from_static(b"{}")).await.expect("send");
    assert_eq!(&common::next_body(&mut conn).await[..], b"{}");
    assert_eq!(process.try_status(), None, "the mod must still be running");

    drop(conn);
    let status = wait(&mut process).await;
    assert!(!status.success(), "{status}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
        // And it is really gone (reaped): no such process any more.
        let pid = process.id().expect("pid");
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists() || !cfg!(target_os = "linux"),
            "process {pid} still exists"
        );
    }
}

#[tokio::test]
async fn child_is_killed_when_both_split_halves_are_dropped() {
    let mut cmd = echo_mod();
    cmd.arg("--hang");
    let (conn, mut process) = spawn(cmd).expect("spawn");
    let (reader, writer) = conn.into_split();
    drop(writer);
    // Our stdin end is still open through the reader half: the mod must still run.
    tokio::task::yield_now().await;
    assert_eq!(process.try_status(), None);
    drop(reader);
    assert!(!wait(&mut process).await.success());
}

#[tokio::test]
async fn kill_on_request() {
    let mut cmd = echo_mod();
    cmd.arg("--hang");
    let (_conn, mut process) = spawn(cmd).expect("spawn");
    process.kill();
    assert!(!wait(&mut process).await.success());
}

#[tokio::test]
async fn stderr_can_be_captured() {
    let mut cmd = echo_mod();
    cmd.args(["--stderr", "hello from the mod's stderr"])
        .stderr(Stdio::piped());
    let (mut conn, mut process) = spawn(cmd).expect("spawn");
    let mut stderr = process.take_stderr().expect("captured stderr");
    assert!(process.take_stderr().is_none(), "handed out once");
    conn.close().await.expect("close");
    let mut text = String::new();
    common::within("reading stderr", stderr.read_to_string(&mut text))
        .await
        .expect("stderr");
    assert_eq!(text, "hello from the mod's stderr\n");
    assert!(wait(&mut process).await.success());
}

#[tokio::test]
async fn stderr_is_passed_through_by_default() {
    let mut cmd = echo_mod();
    cmd.args([
        "--stderr",
        "(expected test output: the echo mod's stderr passes through)",
    ]);
    let (mut conn, mut process) = spawn(cmd).expect("spawn");
    assert!(process.take_stderr().is_none(), "not captured unless asked");
    conn.close().await.expect("close");
    assert!(wait(&mut process).await.success());
}

#[tokio::test]
async fn a_missing_program_is_an_error_naming_it() {
    let err = spawn(Command::new("/nonexistent/gabp-mod")).expect_err("missing");
    assert!(err.to_string().contains("/nonexistent/gabp-mod"), "{err}");
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::NotFound));
}

#[test]
fn spawn_outside_a_runtime_is_an_error_not_a_panic() {
    let err = spawn(std::process::Command::new("true")).expect_err("no runtime");
    assert!(
        matches!(err, gabp_transport::TransportError::NoRuntime(_)),
        "{err:?}"
    );
}

#[tokio::test]
async fn frame_items_are_bodies() {
    // The stream yields `Frame`s; a plain body comes out as `Frame::Body`.
    let (mut conn, mut process) = spawn(echo_mod()).expect("spawn");
    conn.send(Bytes::from_static(b"[]")).await.expect("send");
    let frame = common::within("a frame", conn.next()).await;
    assert!(matches!(frame, Some(Ok(Frame::Body(ref b))) if &b[..] == b"[]"));
    conn.close().await.expect("close");
    assert!(wait(&mut process).await.success());
}
