//! Generation of the JSON Schemas in `SCHEMA/1.0/` from the Rust types (run by `cargo xtask gen-schemas`).
//!
//! Every file is a self-contained draft-07 schema (no reference to another file, so independent validators need
//! no resolver), with `$id` under [`ID_BASE`]. Output is deterministic: keys sorted, 2-space indent, final
//! newline.
//!
//! ```
//! let files = gabp_types::schema::schema_files();
//! let envelope = files.iter().find(|f| f.path == "envelope.schema.json").unwrap();
//! assert_eq!(envelope.schema["$id"], "https://gabp-rs.dev/schema/1.0/envelope.schema.json");
//! assert!(envelope.render().ends_with("}\n"));
//! ```

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::methods::{self, Method};
use crate::{
    Attention, Capabilities, ChannelName, ErrorObject, MessageId, MethodName, Timestamp,
    ToolDescriptor,
};

/// The `$id` prefix of every generated schema.
pub const ID_BASE: &str = "https://gabp-rs.dev/schema/1.0/";

/// The meta-schema every generated file declares.
pub const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// Formats the generated schemas use; any other `format` schemars would emit (such as `uint64`) is dropped,
/// because validators treat unknown formats inconsistently.
const KNOWN_FORMATS: &[&str] = &["uuid", "uri", "date-time"];

/// One generated schema file.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaFile {
    /// Path relative to `SCHEMA/1.0/`, with `/` separators.
    pub path: String,
    /// The schema.
    pub schema: Value,
}

impl SchemaFile {
    /// The file's exact text: sorted keys, 2-space indent, final newline.
    pub fn render(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.schema).unwrap_or_default();
        text.push('\n');
        text
    }
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

/// The inline schema of `T`, normalized (see [`normalize`]).
fn schema_of<T: JsonSchema>() -> Value {
    let mut value = generator().into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
    }
    normalize(&mut value);
    value
}

/// `text` without its fenced code blocks (the doc comment's examples), paragraphs kept.
fn without_code_blocks(text: &str) -> String {
    text.split("```")
        .step_by(2)
        .flat_map(|part| part.split("\n\n"))
        .map(str::trim)
        .filter(|paragraph| !paragraph.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Normalizes a generated schema in place: optional properties never accept `null` (we omit them instead of
/// sending `null`, and the typed decoder refuses `null` for them), formats validators disagree on are dropped,
/// `default` annotations are removed, and so are the Rust examples of doc comments.
fn normalize(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    map.remove("default");
    if let Some(Value::String(text)) = map.get_mut("description") {
        *text = without_code_blocks(text);
    }
    collapse_const_one_of(map);
    if let Some(Value::String(f)) = map.get("format") {
        if !KNOWN_FORMATS.contains(&f.as_str()) {
            map.remove("format");
        }
    }
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                strip_null(prop);
            }
            normalize(prop);
        }
    }
    for key in ["patternProperties", "definitions", "$defs"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(normalize);
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else"] {
        if let Some(child) = map.get_mut(key) {
            normalize(child);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(normalize);
        }
    }
}

/// Turns schemars' rendering of a documented unit-variant enum (`oneOf` of string `const`s) into a plain
/// `enum`, which reads better and gives validators a clearer error ("not one of [...]").
fn collapse_const_one_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(options)) = map.get("oneOf") else {
        return;
    };
    let consts: Option<Vec<Value>> = options
        .iter()
        .map(|o| {
            let o = o.as_object()?;
            let only_const = o
                .keys()
                .all(|k| matches!(k.as_str(), "const" | "type" | "description"));
            (only_const && o.get("type") == Some(&json!("string")))
                .then(|| o.get("const").cloned())?
        })
        .collect();
    if let Some(values) = consts.filter(|v| !v.is_empty()) {
        map.remove("oneOf");
        map.insert("type".into(), json!("string"));
        map.insert("enum".into(), Value::Array(values));
    }
}

fn strip_null(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = map.get_mut(key) {
            options.retain(|o| o != &json!({"type": "null"}));
            if options.len() == 1 {
                if let Some(Value::Object(only)) = options.pop() {
                    map.remove(key);
                    for (k, v) in only {
                        map.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
}

/// The file at `path` holding `body` with its header.
fn file(path: &str, title: &str, description: &str, body: Value) -> SchemaFile {
    SchemaFile {
        path: path.into(),
        schema: with_header(path, title, description, body),
    }
}

fn with_header(id: &str, title: &str, description: &str, body: Value) -> Value {
    let mut map = match body {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("allOf".into(), json!([other]));
            m
        }
    };
    map.insert("$schema".into(), json!(DRAFT_07));
    map.insert("$id".into(), json!(format!("{ID_BASE}{id}")));
    map.insert("title".into(), json!(title));
    map.insert("description".into(), json!(description));
    Value::Object(map)
}

fn version() -> Value {
    json!({ "const": crate::PROTOCOL_VERSION, "description": "Protocol version identifier." })
}

fn with_description(mut schema: Value, description: &str) -> Value {
    if let Value::Object(m) = &mut schema {
        m.insert("description".into(), json!(description));
    }
    schema
}

/// The response rules: exactly one of `result` and `error`.
fn exactly_one_outcome() -> Value {
    json!([
        { "not": { "required": ["result", "error"] } },
        { "anyOf": [ { "required": ["result"] }, { "required": ["error"] } ] }
    ])
}

fn request_schema(method: Value, params: Value, params_required: bool) -> Value {
    let mut required = vec!["v", "id", "type", "method"];
    if params_required {
        required.push("params");
    }
    json!({
        "type": "object",
        "required": required,
        "properties": {
            "v": version(),
            "id": with_description(schema_of::<MessageId>(), "Unique request identifier."),
            "type": { "const": "request" },
            "method": method,
            "params": params,
        },
        "additionalProperties": false
    })
}

fn response_schema(result: Value) -> Value {
    json!({
        "type": "object",
        "required": ["v", "id", "type"],
        "properties": {
            "v": version(),
            "id": with_description(schema_of::<MessageId>(), "Identifier of the request this response answers."),
            "type": { "const": "response" },
            "result": result,
            "error": schema_of::<ErrorObject>(),
        },
        "allOf": exactly_one_outcome(),
        "additionalProperties": false
    })
}

/// An event payload typed here (SPEC/1.0 gabp.md §3.4, extensions.md): its channel (a name ending in `/` is a
/// prefix), its schema file and the schema.
struct Payload {
    channel: &'static str,
    file: &'static str,
    title: &'static str,
    description: &'static str,
    schema: fn() -> Value,
}

const PAYLOADS: [Payload; 4] = [
    Payload {
        channel: "attention/",
        file: "events/attention.payload.schema.json",
        title: "GABP attention event payload",
        description: "Payload of the attention/opened, attention/updated and attention/cleared channels.",
        schema: schema_of::<Attention>,
    },
    Payload {
        channel: methods::TOOLS_CHANGED_CHANNEL,
        file: "events/tools-changed.payload.schema.json",
        title: "GABP tools-changed event payload",
        description: "Payload of the tools/changed channel (the tools-changed extension): the tools one change added and removed.",
        schema: schema_of::<methods::ToolsChangedPayload>,
    },
    Payload {
        channel: methods::PROGRESS_CHANNEL,
        file: "events/tools-progress.payload.schema.json",
        title: "GABP progress event payload",
        description: "Payload of the tools/progress channel (the progress extension): how far one tools/call has come.",
        schema: schema_of::<methods::ProgressPayload>,
    },
    Payload {
        channel: methods::TIME_CHANGED_CHANNEL,
        file: "events/time-changed.payload.schema.json",
        title: "GABP time-changed event payload",
        description: "Payload of the time/changed channel (the time-control extension): time was paused or resumed.",
        schema: schema_of::<methods::TimeState>,
    },
];

impl Payload {
    fn of(channel: &str) -> Option<&'static Payload> {
        PAYLOADS.iter().find(|p| match p.channel.strip_suffix('/') {
            Some(_) => channel.starts_with(p.channel),
            None => channel == p.channel,
        })
    }
}

fn event_schema() -> Value {
    let payloads: Vec<Value> = PAYLOADS
        .iter()
        .map(|p| {
            let channel = match p.channel.strip_suffix('/') {
                Some(_) => json!({ "type": "string", "pattern": format!("^{}", p.channel) }),
                None => json!({ "const": p.channel }),
            };
            json!({
                "if": { "required": ["channel"], "properties": { "channel": channel } },
                "then": { "properties": { "payload": (p.schema)() } }
            })
        })
        .collect();
    json!({
        "type": "object",
        "required": ["v", "id", "type", "channel", "seq", "payload"],
        "properties": {
            "v": version(),
            "id": with_description(schema_of::<MessageId>(), "Unique event identifier."),
            "type": { "const": "event" },
            "channel": with_description(schema_of::<ChannelName>(), "Channel the event was published on."),
            "seq": { "type": "integer", "minimum": 0, "description": "Sequence number, per channel, from 0." },
            "payload": { "description": "The event's data." },
            "timestamp": with_description(schema_of::<Timestamp>(), "When the event occurred (RFC 3339)."),
        },
        "allOf": payloads,
        "additionalProperties": false
    })
}

fn method_files<M: Method>(files: &mut Vec<SchemaFile>) {
    let stem = M::NAME.replace('/', ".");
    let mut params = with_description(schema_of::<M::Params>(), "Method parameters.");
    let params_definitions = take_definitions(&mut params);
    let mut request = request_schema(json!({ "const": M::NAME }), params, M::PARAMS_REQUIRED);
    put_definitions(&mut request, params_definitions);
    files.push(file(
        &format!("methods/{stem}.request.json"),
        &format!("{} request", M::NAME),
        &format!("A `{}` request message.", M::NAME),
        request,
    ));
    let response_stem = if M::NAME == methods::SessionHello::NAME {
        "session.welcome".to_owned()
    } else {
        stem
    };
    let mut result = with_description(schema_of::<M::Result>(), "The method's result.");
    let result_definitions = take_definitions(&mut result);
    let mut response = response_schema(result);
    put_definitions(&mut response, result_definitions);
    files.push(file(
        &format!("methods/{response_stem}.response.json"),
        &format!("{} response", M::NAME),
        &format!(
            "A response to a `{}` request: its result, or an error.",
            M::NAME
        ),
        response,
    ));
}

/// The `definitions` of a schema that is embedded in a file (those of a recursive type such as the `env`
/// extension's `Space`, which cannot be inlined): its `$ref`s point at the file's root.
fn take_definitions(schema: &mut Value) -> Option<Value> {
    schema.as_object_mut()?.remove("definitions")
}

/// Puts `definitions` at the root of a file's `schema`, beside those it has.
fn put_definitions(schema: &mut Value, definitions: Option<Value>) {
    let (Some(Value::Object(definitions)), Some(root)) = (definitions, schema.as_object_mut())
    else {
        return;
    };
    let slot = root
        .entry("definitions")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(existing) = slot {
        existing.extend(definitions);
    }
}

/// The schema file at `path` (relative to `SCHEMA/1.0/`) for a type defined outside gabp-types (the recording
/// format of gabp-record, say), generated and normalized like the files of [`schema_files`].
#[must_use]
pub fn schema_file_for<T: JsonSchema>(path: &str, title: &str, description: &str) -> SchemaFile {
    file(path, title, description, schema_of::<T>())
}

/// Every schema file of `SCHEMA/1.0/`, in a stable order.
pub fn schema_files() -> Vec<SchemaFile> {
    let envelope = json!({
        "type": "object",
        "oneOf": [
            { "$ref": "#/definitions/request" },
            { "$ref": "#/definitions/response" },
            { "$ref": "#/definitions/event" }
        ],
        "definitions": {
            "request": request_schema(
                with_description(schema_of::<MethodName>(), "Method to invoke."),
                json!({ "type": "object", "description": "Method parameters." }),
                false,
            ),
            "response": response_schema(json!({ "description": "The method's result (any JSON value)." })),
            "event": event_schema(),
        }
    });
    let mut files = vec![
        file(
            "envelope.schema.json",
            "GABP envelope",
            "Any gabp/1 message: a request, a response or an event.",
            envelope,
        ),
        file(
            "common/error.schema.json",
            "GABP error object",
            "The error member of a failed response.",
            schema_of::<ErrorObject>(),
        ),
        file(
            "common/tool.schema.json",
            "GABP tool",
            "A tool as listed by tools/list.",
            schema_of::<ToolDescriptor>(),
        ),
        file(
            "common/capabilities.schema.json",
            "GABP capabilities",
            "What a mod supports, advertised in the welcome.",
            schema_of::<Capabilities>(),
        ),
        file(
            "common/attention.schema.json",
            "GABP attention object",
            "A summarized attention item.",
            schema_of::<Attention>(),
        ),
        file(
            "events/event.message.json",
            "GABP event",
            "An event message; on attention/* channels the payload is an attention object, on tools/changed a tools-changed payload, on tools/progress a progress payload, on time/changed a time state.",
            event_schema(),
        ),
    ];
    files.extend(
        PAYLOADS
            .iter()
            .map(|p| file(p.file, p.title, p.description, (p.schema)())),
    );
    use methods::*;
    method_files::<SessionHello>(&mut files);
    method_files::<SessionPing>(&mut files);
    method_files::<SessionGoodbye>(&mut files);
    method_files::<ToolsList>(&mut files);
    method_files::<ToolsCall>(&mut files);
    method_files::<ToolsCancel>(&mut files);
    method_files::<TimeStatus>(&mut files);
    method_files::<TimePause>(&mut files);
    method_files::<TimeResume>(&mut files);
    method_files::<TimeStep>(&mut files);
    method_files::<InputKey>(&mut files);
    method_files::<InputTextMethod>(&mut files);
    method_files::<InputMouse>(&mut files);
    method_files::<EnvSpaces>(&mut files);
    method_files::<EnvReset>(&mut files);
    method_files::<EnvStep>(&mut files);
    method_files::<EventsSubscribe>(&mut files);
    method_files::<EventsUnsubscribe>(&mut files);
    method_files::<ResourcesList>(&mut files);
    method_files::<ResourcesRead>(&mut files);
    method_files::<StateGet>(&mut files);
    method_files::<StateSet>(&mut files);
    method_files::<AttentionCurrent>(&mut files);
    method_files::<AttentionAck>(&mut files);
    files
}

/// Whether `method` has params and result types here: a core method or an extension's.
fn is_typed(method: &str) -> bool {
    methods::CORE_METHODS.contains(&method) || methods::EXTENSION_METHODS.contains(&method)
}

/// The schemas a message must satisfy, as `(schema path relative to SCHEMA/1.0/, JSON pointer of the part of
/// the message it applies to)`: the envelope always (to the whole message); a core method's request schema for
/// its requests; the response schema of `response_to`, when given, for a response; the attention payload schema
/// (to `/payload`) for an event on an `attention/*` channel, the tools-changed payload schema for one on
/// `tools/changed`, the progress payload schema for one on `tools/progress`, the time state schema for one on `time/changed`.
pub fn applicable_schemas(
    message: &Value,
    response_to: Option<&str>,
) -> Vec<(String, &'static str)> {
    let mut paths = vec![("envelope.schema.json".to_owned(), "")];
    let stem = |m: &str| {
        if m == methods::SessionHello::NAME {
            "session.welcome".to_owned()
        } else {
            m.replace('/', ".")
        }
    };
    match message.get("type").and_then(Value::as_str) {
        Some("request") => {
            if let Some(m) = message.get("method").and_then(Value::as_str) {
                if is_typed(m) {
                    paths.push((format!("methods/{}.request.json", m.replace('/', ".")), ""));
                }
            }
        }
        Some("response") => {
            if let Some(m) = response_to.filter(|m| is_typed(m)) {
                paths.push((format!("methods/{}.response.json", stem(m)), ""));
            }
        }
        Some("event") => {
            let channel = message.get("channel").and_then(Value::as_str);
            if let Some(p) = channel.and_then(Payload::of) {
                paths.push((p.file.to_owned(), "/payload"));
            }
        }
        _ => {}
    }
    paths
}
