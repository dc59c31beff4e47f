//! `Bridge::spawn`: a real child process speaking GABP on its stdin and stdout (a POSIX shell script that
//! answers one request at a time).
#![cfg(unix)]
// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

mod bridge_support;

use bridge_support::{soon, token, TOKEN};
use gabp_session::bridge::{Bridge, ConnectionState};
use gabp_session::Error;
use serde_json::json;

/// Reads a frame, answers by method: hello with a welcome (after checking the token), tools/call with the
/// arguments' `value`, goodbye with `{}` and exit; stops at end of input.
const SCRIPT: &str = r#"
read_frame() {
  len=""
  while IFS= read -r line; do
    line=$(printf '%s' "$line" | tr -d '\r')
    [ -z "$line" ] && break
    case "$line" in Content-Length:*) len=${line#Content-Length: } ;; esac
  done
  [ -n "$len" ] || exit 0
  body=$(dd bs=1 count="$len" 2>/dev/null)
}
reply() {
  id=$(printf '%s' "$body" | sed -n 's/.*"id":"\([0-9a-fA-F-]*\)".*/\1/p')
  resp="{\"v\":\"gabp/1\",\"id\":\"$id\",\"type\":\"response\",$1}"
  printf 'Content-Length: %d\r\n\r\n%s' "${#resp}" "$resp"
}
while read_frame; do
  case "$body" in
    *'"method":"session/hello"'*)
      case "$body" in
        *"\"token\":\"$GABP_TOKEN\""*) reply '"result":{"agentId":"sh-mod","app":{"name":"Shell","version":"1"},"capabilities":{"methods":["tools/call","session/goodbye"]},"schemaVersion":"1.0"}' ;;
        *) reply '"error":{"code":-32101,"message":"Authentication failed"}'; exit 0 ;;
      esac ;;
    *'"method":"tools/call"'*)
      value=$(printf '%s' "$body" | sed -n 's/.*"value":\([0-9]*\).*/\1/p')
      reply "\"result\":{\"value\":$value}" ;;
    *'"method":"session/goodbye"'*) reply '"result":{}'; exit 0 ;;
    *) reply '"error":{"code":-32601,"message":"Method not found"}' ;;
  esac
done
"#;

fn command(token: &str) -> std::process::Command {
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(SCRIPT).env("GABP_TOKEN", token);
    command
}

#[tokio::test]
async fn spawn_talks_to_a_child_over_stdio() {
    let (bridge, mut process) = soon(Bridge::spawn(command(TOKEN), token())).await.unwrap();
    assert_eq!(bridge.welcome().agent_id.as_str(), "sh-mod");
    for value in [1, 22, 333] {
        let result = soon(bridge.call_tool("demo/echo", json!({"value": value}))).await;
        assert_eq!(result.unwrap(), json!({"value": value}));
    }
    soon(bridge.goodbye(Some("done"))).await.unwrap();
    assert_eq!(bridge.state(), ConnectionState::Closed);
    assert!(soon(process.wait()).await.unwrap().success());
}

#[tokio::test]
async fn a_spawned_mod_refusing_the_token() {
    let other = "f".repeat(64);
    let result = soon(Bridge::spawn(command(&other), token())).await;
    assert!(
        matches!(result, Err(Error::AuthenticationFailed { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn closing_ends_the_child_s_input() {
    let (bridge, mut process) = soon(Bridge::spawn(command(TOKEN), token())).await.unwrap();
    soon(bridge.close()).await;
    assert!(soon(process.wait()).await.unwrap().success());
}

#[tokio::test]
async fn a_program_that_cannot_start_is_a_transport_error() {
    let command = std::process::Command::new("/nonexistent/gabp-mod");
    let result = Bridge::spawn(command, token()).await;
    assert!(matches!(result, Err(Error::Transport(_))), "{result:?}");
}
