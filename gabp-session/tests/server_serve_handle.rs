//! `ServeHandle` without consuming it: `status`, `is_running`, and a cloneable `ShutdownTrigger`; and the life
//! cycle of a stdio mod, which stops serving when its stdin reaches end of input (SPEC/1.0 transport.md §2.1).
#![allow(clippy::unwrap_used)]

mod server_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gabp_session::server::{CallError, ModServer, ServeHandle, ServeStatus, Tool};
use gabp_transport::{Endpoint, Listener};
use serde_json::{json, Value};
use server_support::{builder, hello_params, request, RawClient, PATIENCE, TOKEN};
use tokio::sync::Semaphore;

/// Set in the environment of the child process of [`a_stdio_mod_stops_serving_at_end_of_input`].
const CHILD: &str = "GABP_TEST_STDIO_CHILD";

async fn serve_tcp(server: ModServer) -> ServeHandle {
    server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap())
}

async fn until_stopped(handle: &ServeHandle) {
    let deadline = Instant::now() + PATIENCE;
    while handle.is_running() {
        assert!(Instant::now() < deadline, "still {:?}", handle.status());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_trigger_from_another_task_stops_serving() {
    let handle = serve_tcp(builder().build().unwrap()).await;
    assert_eq!(handle.status(), ServeStatus::Running);
    assert!(handle.is_running());
    let trigger = handle.shutdown_trigger();
    assert!(!trigger.is_triggered());
    tokio::spawn(async move { trigger.trigger() })
        .await
        .unwrap();
    until_stopped(&handle).await;
    assert_eq!(handle.status(), ServeStatus::Stopped);
    assert!(gabp_transport::connect(handle.endpoint()).await.is_err());
    // The handle still works once stopped.
    tokio::time::timeout(PATIENCE, handle.wait()).await.unwrap();
}

#[tokio::test]
async fn triggers_are_clones_of_one_switch() {
    let handle = serve_tcp(builder().build().unwrap()).await;
    let a = handle.shutdown_trigger();
    let b = a.clone();
    b.trigger();
    assert!(a.is_triggered() && handle.shutdown_trigger().is_triggered());
    b.trigger(); // again: nothing more happens
    tokio::time::timeout(PATIENCE, handle.wait()).await.unwrap();
}

#[tokio::test]
async fn shutting_down_lasts_while_calls_in_flight_are_answered() {
    let gate = std::sync::Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let server = builder()
        .tool(Tool::new("test/held", move |_: Value| {
            let held = held.clone();
            async move {
                let _permit = held.acquire().await;
                Ok::<_, CallError>(json!({"released": true}))
            }
        }))
        .build()
        .unwrap();
    let handle = serve_tcp(server).await;
    let mut client = RawClient::connect(handle.endpoint()).await.unwrap();
    client
        .call("session/hello", Some(hello_params(TOKEN)))
        .await;
    let (_, call) = request(
        "tools/call",
        Some(json!({"name": "test/held", "arguments": {}})),
    );
    client.send_value(&call).await;
    // The call is running when the trigger fires.
    while handle.server().connection_count() == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.shutdown_trigger().trigger();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(handle.status(), ServeStatus::ShuttingDown);
    assert!(handle.is_running(), "shutting down is still running");

    gate.add_permits(1);
    let answer = client.next_message().await.expect("the answer");
    assert!(format!("{answer:?}").contains("released"), "{answer:?}");
    until_stopped(&handle).await;
}

/// The child process: a mod served on its own stdin and stdout, reporting its status on stderr the way a game
/// loop would poll it. Run only by [`a_stdio_mod_stops_serving_at_end_of_input`].
#[test]
#[ignore = "the child process of a_stdio_mod_stops_serving_at_end_of_input"]
fn stdio_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = builder().build().unwrap();
        let handle = server.serve(Listener::bind(&Endpoint::Stdio).await.unwrap());
        eprintln!("status: {:?}", handle.status());
        while handle.is_running() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        eprintln!("status: {:?}", handle.status());
    });
}

#[test]
fn a_stdio_mod_stops_serving_at_end_of_input() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "stdio_child", "--nocapture"])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let next_status = || loop {
        let line = lines.recv_timeout(PATIENCE).expect("a status line");
        if let Some(status) = line.strip_prefix("status: ") {
            return status.to_owned();
        }
    };
    assert_eq!(next_status(), "Running");
    std::thread::sleep(Duration::from_millis(100));
    drop(child.stdin.take()); // end of input
    assert_eq!(next_status(), "Stopped");
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the stdio child did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
}
