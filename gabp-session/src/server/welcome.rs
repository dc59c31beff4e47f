//! The welcome a mod answers `session/hello` with (SPEC/1.0 gabp.md §4.1, §5): what it serves, its limits and
//! extensions, built once from what was registered.

use std::fmt;

use gabp_types::methods::{
    AppInfo, Method, ServerInfo, ToolsCancel, WelcomeResult, CANCEL_EXTENSION, CONTENT_EXTENSION,
    ENV_EXTENSION, INPUT_EXTENSION, MAX_INPUT_TEXT_CHARS, MAX_STEP_TICKS, PROGRESS_CHANNEL,
    PROGRESS_EXTENSION, PROGRESS_MIN_INTERVAL_MS, TIME_CHANGED_CHANNEL, TIME_CONTROL_EXTENSION,
    TOOLS_CHANGED_CHANNEL,
};
use gabp_types::{Capabilities, Extensions, MethodName, NonEmptyString, UniqueVec, Uri};
use serde_json::{json, Map, Value};

use super::limits::ServerLimits;
use crate::Error;

/// The name under which channel patterns are advertised in `capabilities.extensions`.
pub const CHANNEL_PATTERNS_EXTENSION: &str = "channel-patterns";

/// The name under which tools added and removed at run time are advertised in `capabilities.extensions`
/// (SPEC/1.0 extensions.md §tools-changed).
pub use gabp_types::methods::TOOLS_CHANGED_EXTENSION;

/// What the welcome is made of.
pub(crate) struct Parts<'a> {
    pub(crate) app: (String, String),
    pub(crate) agent_id: Option<String>,
    pub(crate) server_info: Option<ServerInfo>,
    pub(crate) channel_patterns: bool,
    pub(crate) tools_changed: bool,
    pub(crate) time_control: bool,
    pub(crate) input: bool,
    /// The `env` extension's member, when the mod serves it.
    pub(crate) env: Option<Value>,
    pub(crate) extensions: Vec<(String, Map<String, Value>)>,
    pub(crate) methods: &'a [String],
    pub(crate) channels: Vec<String>,
    pub(crate) resources: Vec<Uri>,
    pub(crate) limits: &'a ServerLimits,
}

/// Builds the welcome; names and extensions that break the protocol's rules are a [`Error`].
pub(crate) fn build(parts: Parts<'_>) -> Result<WelcomeResult, Error> {
    let welcome_error = |e: &dyn fmt::Display| Error::InvalidWelcomeConfig(e.to_string());
    // The extensions this mod serves (SPEC/1.0 extensions.md), then the author's. Every call can report
    // progress and be cancelled, and its result may carry pictures and sound.
    let patterns = "events/subscribe accepts glob patterns such as player/*; `*` stays within one segment, `**` crosses them";
    let changes =
        "tools are added and removed at run time; each change is announced on tools/changed";
    let builtin = [
        (parts.channel_patterns).then(|| {
            let ext = json!({ "syntax": "glob", "description": patterns });
            (CHANNEL_PATTERNS_EXTENSION, ext)
        }),
        (parts.tools_changed).then(|| {
            let ext = json!({ "channel": TOOLS_CHANGED_CHANNEL, "description": changes });
            (TOOLS_CHANGED_EXTENSION, ext)
        }),
        Some((
            PROGRESS_EXTENSION,
            json!({ "channel": PROGRESS_CHANNEL, "minIntervalMs": PROGRESS_MIN_INTERVAL_MS }),
        )),
        Some((CANCEL_EXTENSION, json!({ "method": ToolsCancel::NAME }))),
        Some((
            CONTENT_EXTENSION,
            json!({ "types": ["image", "audio"], "maxBytes": parts.limits.content_limit() }),
        )),
        (parts.time_control).then(|| {
            let ext = json!({ "channel": TIME_CHANGED_CHANNEL, "maxStepTicks": MAX_STEP_TICKS });
            (TIME_CONTROL_EXTENSION, ext)
        }),
        (parts.input).then(|| {
            let ext =
                json!({ "keyNames": "KeyboardEvent.code", "maxTextChars": MAX_INPUT_TEXT_CHARS });
            (INPUT_EXTENSION, ext)
        }),
        parts.env.map(|ext| (ENV_EXTENSION, ext)),
    ];
    let builtin = builtin
        .into_iter()
        .flatten()
        .map(|(key, value)| match value {
            Value::Object(map) => (key.to_owned(), map),
            _ => (key.to_owned(), Map::new()),
        });
    let mut extensions = Extensions::new();
    for (key, value) in builtin.chain(parts.extensions) {
        extensions
            .insert(key, value)
            .map_err(|e| welcome_error(&e))?;
    }
    let method_names = parts
        .methods
        .iter()
        .map(|m| MethodName::new(m.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| welcome_error(&e))?;
    let capabilities = Capabilities {
        methods: Some(UniqueVec::new(method_names).map_err(|e| welcome_error(&e))?),
        events: Some(UniqueVec::new(parts.channels).map_err(|e| welcome_error(&e))?),
        resources: Some(UniqueVec::new(parts.resources).map_err(|e| welcome_error(&e))?),
        extensions: (!extensions.is_empty()).then_some(extensions),
        limits: Some(parts.limits.advertised()),
        extra: Map::new(),
    };
    let non_empty = |s: String, what: &str| {
        NonEmptyString::new(s).map_err(|_| Error::InvalidWelcomeConfig(format!("{what} is empty")))
    };
    let (app_name, app_version) = parts.app;
    let agent_id = non_empty(
        parts.agent_id.unwrap_or_else(|| app_name.clone()),
        "agentId",
    )?;
    Ok(WelcomeResult {
        agent_id,
        app: AppInfo {
            name: non_empty(app_name, "app.name")?,
            version: non_empty(app_version, "app.version")?,
            extra: Map::new(),
        },
        capabilities,
        schema_version: gabp_types::methods::SchemaVersion::current(),
        server_info: Some(parts.server_info.unwrap_or_else(|| ServerInfo {
            name: Some(env!("CARGO_PKG_NAME").to_owned()),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            author: None,
            extra: Map::new(),
        })),
        extra: Map::new(),
    })
}
