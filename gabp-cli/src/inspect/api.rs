//! The inspector's HTTP surface: the page and its JSON API, behind the [`Guard`].
//!
//! Answers of the mod, good or bad, are `200 {"result": ..., "content": [...]}` or `200 {"error": {code,
//! message, data}}`; a request the API cannot read is `400 {"error": {"message"}}`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gabp_session::Error as SessionError;
use gabp_types::methods::{ResourcesListParams, ToolResult};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{Guard, Inspector};
use crate::target::describe_call_error;

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const FORMS: &str = include_str!("forms.js");
const STYLE: &str = include_str!("page.css");

/// What the page may load: itself, and pictures as data URLs; never another site, never in a frame.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

type Shared = State<Arc<Inspector>>;

/// The whole service: requests the guard admits go to the page and the API, without the secret prefix.
pub fn app(inspector: Arc<Inspector>, guard: Guard) -> Router {
    let inner = Router::new()
        .route("/", get(page))
        .route(
            "/page.js",
            get(|| asset(SCRIPT, "text/javascript; charset=utf-8")),
        )
        .route(
            "/forms.js",
            get(|| asset(FORMS, "text/javascript; charset=utf-8")),
        )
        .route("/page.css", get(|| asset(STYLE, "text/css; charset=utf-8")))
        .route("/api/info", get(info))
        .route("/api/tools", get(tools))
        .route("/api/call", post(call))
        .route("/api/resources", get(resources))
        .route("/api/resource", post(resource))
        .route("/api/attention", get(attention))
        .route("/api/ack", post(ack))
        .route("/api/events", get(events))
        .route("/api/time", post(time))
        .with_state(inspector);
    Router::new().fallback(move |request: Request| {
        let inner = inner.clone();
        let guard = guard.clone();
        async move {
            let path = match guard.admit(request.uri(), request.headers()) {
                Ok(path) => path,
                Err(status) => return status.into_response(),
            };
            if path.is_empty() {
                return Redirect::permanent(&format!("{}/", request.uri().path())).into_response();
            }
            let Ok(uri) = path.parse::<Uri>() else {
                return StatusCode::BAD_REQUEST.into_response();
            };
            let (mut parts, body) = request.into_parts();
            parts.uri = uri;
            let mut response = match inner.oneshot(Request::from_parts(parts, body)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let headers = response.headers_mut();
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            // The URL holds the secret: never send it along as a referrer.
            headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
            headers.insert(
                "x-content-type-options",
                HeaderValue::from_static("nosniff"),
            );
            response
        }
    })
}

async fn page() -> Response {
    let mut response = asset(PAGE, "text/html; charset=utf-8").await;
    response
        .headers_mut()
        .insert("content-security-policy", HeaderValue::from_static(CSP));
    response
}

async fn asset(text: &'static str, mime: &'static str) -> Response {
    ([(header::CONTENT_TYPE, mime)], Body::from(text)).into_response()
}

/// The mod's error answer (or the bridge's own failure) as the page shows it.
fn error_answer(e: &SessionError) -> Json<Value> {
    Json(match e.error_object() {
        Some(error) => json!({"error": {
            "code": error.code.code(),
            "message": error.message,
            "data": error.data,
        }}),
        None => json!({"error": {"code": null, "message": describe_call_error(e)}}),
    })
}

fn bad_request(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": {"code": null, "message": message}})),
    )
        .into_response()
}

/// `value` as an answer, or the error.
fn answer<T: serde::Serialize>(outcome: Result<T, SessionError>, member: &str) -> Response {
    match outcome {
        Ok(value) => Json(json!({ member: value })).into_response(),
        Err(e) => error_answer(&e).into_response(),
    }
}

async fn info(State(inspector): Shared) -> Json<Value> {
    let state = inspector.bridge.state();
    Json(json!({
        "endpoint": inspector.endpoint,
        "connected": state.is_connected(),
        "welcome": *inspector.bridge.welcome(),
    }))
}

async fn tools(State(inspector): Shared) -> Response {
    answer(inspector.bridge.list_tools().await, "tools")
}

async fn call(State(inspector): Shared, body: Option<Json<Value>>) -> Response {
    let Some(Json(body)) = body else {
        return bad_request("the body must be JSON: {\"name\": TOOL, \"arguments\": {...}}");
    };
    let Some(name) = body.get("name").and_then(Value::as_str) else {
        return bad_request("name: the tool to call is missing");
    };
    let arguments = body.get("arguments").cloned().unwrap_or_else(|| json!({}));
    match inspector.bridge.call_tool(name, arguments).await {
        Ok(result) => {
            let split = ToolResult::from_value(result);
            Json(json!({"result": split.value, "content": split.content})).into_response()
        }
        Err(e) => error_answer(&e).into_response(),
    }
}

async fn resources(State(inspector): Shared) -> Response {
    let listed = inspector
        .bridge
        .list_resources(ResourcesListParams::default())
        .await;
    answer(listed, "resources")
}

async fn resource(State(inspector): Shared, body: Option<Json<Value>>) -> Response {
    let Some(uri) = body
        .as_ref()
        .and_then(|b| b.get("uri"))
        .and_then(Value::as_str)
    else {
        return bad_request("the body must be JSON: {\"uri\": URI}");
    };
    answer(inspector.bridge.read_resource(uri).await, "resource")
}

async fn attention(State(inspector): Shared) -> Response {
    answer(inspector.bridge.current_attention().await, "attention")
}

async fn ack(State(inspector): Shared, body: Option<Json<Value>>) -> Response {
    let id = body
        .as_ref()
        .and_then(|b| b.get("attentionId"))
        .and_then(Value::as_str);
    let Some(id) = id else {
        return bad_request("the body must be JSON: {\"attentionId\": ID}");
    };
    answer(inspector.bridge.ack_attention(id).await, "ack")
}

/// The time-control methods the page may call (SPEC/1.0 extensions.md §time-control).
const TIME_METHODS: [&str; 4] = ["time/status", "time/pause", "time/resume", "time/step"];

/// `{"method": "time/step", "ticks": N}` or one of the other time methods: the mod's time state, or the
/// error (a bad `ticks` is refused with its pointer, `/params/ticks`).
async fn time(State(inspector): Shared, body: Option<Json<Value>>) -> Response {
    let method = body
        .as_ref()
        .and_then(|b| b.get("method"))
        .and_then(Value::as_str)
        .filter(|m| TIME_METHODS.contains(m));
    let Some(method) = method else {
        return bad_request(
            "the body must be JSON: {\"method\": \"time/status\", \"time/pause\", \"time/resume\" or \
             \"time/step\", \"ticks\": N for time/step}",
        );
    };
    let params = match body.as_ref().and_then(|b| b.get("ticks")) {
        Some(ticks) if method == "time/step" => json!({ "ticks": ticks }),
        _ => json!({}),
    };
    answer(inspector.bridge.request(method, params).await, "time")
}

async fn events(State(inspector): Shared) -> Response {
    inspector.feed.stream().into_response()
}
