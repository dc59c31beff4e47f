//! Hostile glob patterns in the three places a bridge may send one (SPEC/1.0 gabp.md §4.4): each is answered
//! `-32602` naming the field, with a short message that does not echo the pattern, and nothing panics.
//!
//! Its own test binary: it installs a panic hook that counts panics, which would disturb tests that panic on
//! purpose.

mod server_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use gabp_session::server::{MAX_GLOB_BYTES, MAX_GLOB_WILDCARDS};
use gabp_types::ErrorCode;
use serde_json::{json, Value};
use server_support::{connect_hello, fixture, result};

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|_| {
            PANICS.fetch_add(1, Ordering::SeqCst);
        }));
    });
}

fn server() -> gabp_session::server::ModServer {
    fixture::register(server_support::builder())
        .build()
        .expect("build")
}

/// 87,380 stars: what made globset panic with about 1 MB of message.
fn hostile() -> String {
    "*".repeat(87_380)
}

async fn refused(method: &str, params: Value, pointer: &str) {
    count_panics();
    let mut client = connect_hello(&server()).await;
    let r = client.call(method, Some(params)).await;
    let e = r
        .error_object()
        .unwrap_or_else(|| panic!("{method}: {r:?}"));
    assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{method}: {e:?}");
    assert!(e.message.contains(pointer), "{method}: {}", e.message);
    let shown = serde_json::to_string(e).expect("json");
    assert!(
        shown.len() < 400,
        "{method}: answer of {} bytes",
        shown.len()
    );
    assert!(
        !shown.contains("****"),
        "{method} echoes the pattern: {shown}"
    );
    assert_eq!(e.data.as_ref().expect("data")["errors"][0]["path"], pointer);
    // The connection stays usable.
    result(&client.call("session/ping", None).await);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "{method} panicked");
}

#[tokio::test]
async fn hostile_tools_list_name_pattern_is_invalid_params() {
    refused(
        "tools/list",
        json!({"filter": {"namePattern": hostile()}}),
        "/params/filter/namePattern",
    )
    .await;
}

#[tokio::test]
async fn hostile_resources_list_pattern_is_invalid_params() {
    refused(
        "resources/list",
        json!({"pattern": hostile()}),
        "/params/pattern",
    )
    .await;
}

#[tokio::test]
async fn hostile_channel_pattern_is_invalid_params() {
    refused(
        "events/subscribe",
        json!({"channels": ["player/move", hostile()]}),
        "/params/channels/1",
    )
    .await;
    refused(
        "events/unsubscribe",
        json!({"channels": [hostile()]}),
        "/params/channels/0",
    )
    .await;
}

#[tokio::test]
async fn too_many_wildcards_is_invalid_params_and_the_bounds_still_work() {
    let many = "a*".repeat(MAX_GLOB_WILDCARDS + 1);
    refused(
        "tools/list",
        json!({"filter": {"namePattern": many}}),
        "/params/filter/namePattern",
    )
    .await;
    let mut client = connect_hello(&server()).await;
    let at_bound = format!("demo/{}", "*".repeat(MAX_GLOB_WILDCARDS));
    assert!(at_bound.len() <= MAX_GLOB_BYTES);
    let r = client
        .call(
            "tools/list",
            Some(json!({"filter": {"namePattern": at_bound}})),
        )
        .await;
    assert!(!result(&r)["tools"].as_array().unwrap().is_empty());
    let r = client
        .call("events/subscribe", Some(json!({"channels": ["player/*"]})))
        .await;
    assert!(!result(&r)["subscribed"].as_array().unwrap().is_empty());
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
}
