//! The session checks: connecting, the handshake, authentication, ping and goodbye
//! (SPEC/1.0/gabp.md §4.1-§4.3, §7; SPEC/1.0/security.md §2).

use gabp_transport::Token;
use gabp_types::decode::check_result;
use gabp_types::{ErrorCode, Message};
use serde_json::json;

use super::{expect_error, expect_result, kept_open, still_works, CheckResult, Ctx, Verdict};
use crate::conformance::wire::{seconds, WireError};

pub(super) async fn transport_connect(ctx: &mut Ctx) -> CheckResult {
    let wire = ctx.open().await?;
    drop(wire);
    ctx.connected = true;
    Ok(())
}

pub(super) async fn handshake_welcome_valid(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.open().await?;
    let r = match wire.hello(ctx.token(), ctx.answer()).await {
        Ok(r) => r,
        Err(e) => fail!("session/hello with the right token: {e}"),
    };
    let welcome = expect_result(&r, "session/hello with the right token")?.clone();
    ctx.welcome = Some(welcome.clone());
    if let Err(e) = check_result("session/hello", &welcome) {
        fail!("the welcome does not match its schema: {e}");
    }
    for method in ["session/hello", "session/ping", "session/goodbye"] {
        // Upstream reserves session/ping and session/goodbye without requiring them.
        if !ctx.advertises(method) && (ctx.strict() || method == "session/hello") {
            fail!("capabilities.methods does not list {method} (a mod advertises every method it serves)");
        }
    }
    Ok(())
}

pub(super) async fn auth_hello_required(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.open().await?;
    let what = "tools/list before session/hello";
    let r = match wire.call("tools/list", Some(json!({})), ctx.answer()).await {
        Ok(r) => r,
        Err(WireError::Closed) => {
            fail!(
                "the mod closed the connection on {what} (it must answer -32100 and keep it open)"
            )
        }
        Err(e) => fail!("{what}: {e}"),
    };
    expect_error(&r, ErrorCode::AUTHENTICATION_REQUIRED, what)?;
    if ctx.welcome.is_some() {
        let r = wire
            .hello(ctx.token(), ctx.answer())
            .await
            .map_err(|e| kept_open(e, "refusing a request before session/hello"))?;
        expect_result(&r, "session/hello after a refused early request")?;
    }
    Ok(())
}

pub(super) async fn auth_wrong_token_refused(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.open().await?;
    let wrong = loop {
        let candidate = match Token::generate() {
            Ok(t) => t.expose_secret().to_owned(),
            Err(e) => skip!("cannot make a wrong token: {e}"),
        };
        if candidate != ctx.token() {
            break candidate;
        }
    };
    let r = match wire.hello(&wrong, ctx.answer()).await {
        Ok(r) => r,
        Err(WireError::Closed) => fail!("the mod closed the connection without answering -32101"),
        Err(e) => fail!("session/hello with a wrong token: {e}"),
    };
    if r.result().is_some() {
        fail!("the mod accepted a wrong token: session/hello was answered with a welcome");
    }
    expect_error(
        &r,
        ErrorCode::AUTHENTICATION_FAILED,
        "session/hello with a wrong token",
    )?;
    if serde_json::to_string(&Message::from(r.clone()))
        .unwrap_or_default()
        .contains(&wrong)
    {
        fail!("the refusal echoes the token (a mod never echoes a token)");
    }
    if !ctx.strict() {
        // Upstream requires the refusal, not that the connection closes.
        return Ok(());
    }
    match wire.wait_closed(ctx.options.stall_timeout).await {
        Ok(()) => Ok(()),
        Err(WireError::Timeout(t)) => fail!(
            "the mod refused the token but kept the connection open for {} (it must close it)",
            seconds(t)
        ),
        Err(e) => fail!("after refusing the token: {e}"),
    }
}

pub(super) async fn handshake_second_hello_refused(ctx: &mut Ctx) -> CheckResult {
    let mut wire = ctx.session().await?;
    let what = "a second session/hello";
    let r = wire
        .hello(ctx.token(), ctx.answer())
        .await
        .map_err(|e| kept_open(e, what))?;
    expect_error(&r, ErrorCode::INVALID_REQUEST, what)?;
    still_works(&mut wire, ctx, "refusing a second session/hello").await
}

pub(super) async fn session_ping(ctx: &mut Ctx) -> CheckResult {
    if !ctx.strict() && !ctx.advertises("session/ping") {
        skip!("the mod does not advertise session/ping (not required of a 1.0 mod)");
    }
    let mut wire = ctx.session().await?;
    let r = wire.call("session/ping", None, ctx.answer()).await?;
    let result = expect_result(&r, "session/ping")?;
    if let Err(e) = check_result("session/ping", result) {
        fail!("the ping result does not match its schema: {e}");
    }
    Ok(())
}

pub(super) async fn session_goodbye(ctx: &mut Ctx) -> CheckResult {
    if !ctx.strict() && !ctx.advertises("session/goodbye") {
        skip!("the mod does not advertise session/goodbye (reserved upstream, not required)");
    }
    let mut wire = ctx.session().await?;
    let r = wire
        .call(
            "session/goodbye",
            Some(json!({ "reason": "conformance run done" })),
            ctx.answer(),
        )
        .await?;
    let result = expect_result(&r, "session/goodbye")?;
    if let Err(e) = check_result("session/goodbye", result) {
        fail!("the goodbye result does not match its schema: {e}");
    }
    match wire.wait_closed(ctx.options.stall_timeout).await {
        Ok(()) => Ok(()),
        Err(WireError::Timeout(t)) => fail!(
            "the mod answered session/goodbye but kept the connection open for {} (it must close it)",
            seconds(t)
        ),
        Err(e) => fail!("after session/goodbye: {e}"),
    }
}
