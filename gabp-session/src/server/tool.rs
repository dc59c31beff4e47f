//! Tools: [`Tool`], async or on the game's main thread.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use gabp_types::methods::{Method, ToolsCall, CONTENT_MEMBER};
use gabp_types::{
    ErrorCode, ErrorObject, MessageId, Response, ResultValue, ToolDescriptor, ToolName, UniqueVec,
};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio_util::sync::DropGuard;

use super::arguments::{checked_by_type, Arguments};
use super::context::{CallContext, StateType};
use super::error::CallError;
use super::handler::Handler;

use super::layer::ResponseFuture;
use super::main_thread::Job;
use crate::Error;

/// Serves one call: the context, what cancels it when the answer is dropped, the request id, the arguments;
/// fails only when the arguments do not decode.
pub(crate) type AsyncHandler = Arc<
    dyn Fn(
            CallContext,
            Option<DropGuard>,
            MessageId,
            Arguments<'_>,
        ) -> Result<ResponseFuture, CallError>
        + Send
        + Sync,
>;
/// Decodes the arguments of one call and returns the job the game thread runs.
pub(crate) type SyncHandler =
    Arc<dyn Fn(CallContext, Arguments<'_>) -> Result<Job, CallError> + Send + Sync>;

#[derive(Clone)]
pub(crate) enum Run {
    /// Runs on the runtime, concurrently with everything else; `bool`: whether it takes extractors.
    Async(AsyncHandler, bool),
    /// Runs only inside [`MainThread::pump_with`](super::MainThread::pump_with).
    MainThread(SyncHandler),
}

/// A tool to register with [`ModServerBuilder::tool`](super::ModServerBuilder::tool).
///
/// One way to build one: [`Tool::new`] with an async handler, or [`Tool::on_main_thread`] with a synchronous
/// handler that runs on the game's own thread. Either takes extractors ([`CallContext`],
/// [`State<T>`](super::State), ...) and then its typed arguments; `inputSchema` and `outputSchema` come from
/// the argument and result types' [`JsonSchema`] derive (draft-07, every subschema inlined). For tools only
/// known at run time, take `serde_json::Value` (or a `Map`) and give the schemas with
/// [`Tool::input_schema`] and [`Tool::output_schema`].
///
/// The arguments are checked against `inputSchema` (compiled once, at registration) before the handler runs;
/// a mismatch is answered with `-32602` and `data.errors` listing each `{path, message}`.
///
/// ```
/// use gabp_session::server::{CallError, Tool};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Pos { x: i32, y: i32, z: i32 }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Block { block: Option<String> }
///
/// let tool = Tool::new("world/get_block", |p: Pos| async move {
///     Ok::<_, CallError>(Block { block: (p.y == 0).then(|| "stone".to_owned()) })
/// })
/// .title("Get block")
/// .description("The block at a position")
/// .tags(["world", "read-only"])
/// .version("1.0.0");
/// assert_eq!(tool.name(), "world/get_block");
/// ```
pub struct Tool {
    name: String,
    title: Option<String>,
    description: Option<String>,
    tags: Vec<String>,
    deprecated: Option<bool>,
    version: Option<String>,
    timeout: Option<Duration>,
    input_schema: Value,
    input_schema_given: bool,
    output_schema: Value,
    handler: Run,
    states: Vec<StateType>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("main_thread", &matches!(self.handler, Run::MainThread(_)))
            .finish_non_exhaustive()
    }
}

/// The schema of `T`: draft-07, every subschema inlined, without the root `title` (the type's Rust name).
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
    }
    value
}

/// The result's JSON text, written once: it goes out as it is, with no tree of values.
fn to_result<Out: Serialize>(out: Out) -> Result<ResultValue, CallError> {
    ResultValue::from_serialize(&out).map_err(|e| {
        CallError::new(format!("the tool's result does not serialize: {e}"))
            .with_code(ErrorCode::INTERNAL_ERROR)
    })
}

/// A result whose content items are over the limit, or not valid, is an error, never a cut picture (SPEC/1.0
/// extensions.md §content). Only a result that has `_content` pays for the check; one written as text is
/// read only when the member's name may be in it (spelled out, or behind an escape).
fn check_content(result: ResultValue, limit: usize) -> Result<ResultValue, CallError> {
    let Some(json) = result.json_text() else {
        return content_checked(&result, limit).map(|()| result);
    };
    let bytes = json.as_bytes();
    let mut maybe = memchr::memchr2_iter(b'_', b'\\', bytes).map(|at| &bytes[at..]);
    if !maybe.any(|rest| rest[0] == b'\\' || rest.starts_with(CONTENT_MEMBER.as_bytes())) {
        return Ok(result);
    }
    // Read here rather than through the result's own view, so that text serde_json cannot read back (nested too
    // deeply) is an error, not a result whose content went unchecked.
    let value = serde_json::from_str::<Value>(json).map_err(|e| {
        CallError::new(format!("the tool's result does not read back: {e}"))
            .with_code(ErrorCode::INTERNAL_ERROR)
    })?;
    content_checked(&value, limit).map(|()| result)
}

fn content_checked(value: &Value, limit: usize) -> Result<(), CallError> {
    let Some(Value::Array(items)) = value.as_object().and_then(|m| m.get(CONTENT_MEMBER)) else {
        return Ok(());
    };
    let bytes: usize = items
        .iter()
        .filter_map(|item| item.get("data")?.as_str())
        .map(|data| {
            data.len() / 4 * 3 - data.bytes().rev().take_while(|&b| b == b'=').count().min(2)
        })
        .sum();
    let invalid = |message: String, data: Value| {
        CallError::new(message)
            .with_code(ErrorCode::INTERNAL_ERROR)
            .with_data(data)
    };
    if bytes > limit {
        return Err(invalid(
            format!(
                "the tool's content items hold {bytes} bytes, over this mod's limit of {limit} (maxBytes of the content extension)"
            ),
            json!({ "contentBytes": bytes, "maxBytes": limit }),
        ));
    }
    gabp_types::decode::check_result(ToolsCall::NAME, value).map_err(|e| {
        invalid(
            format!("the tool's content items are not valid: {e}"),
            json!({ "pointer": e.pointer() }),
        )
    })
}

impl Tool {
    fn with_handler<M, H: Handler<M>>(name: String, handler: Run) -> Self
    where
        H::Input: JsonSchema,
        H::Output: JsonSchema,
    {
        Tool {
            name,
            title: None,
            description: None,
            tags: Vec::new(),
            deprecated: None,
            version: None,
            timeout: None,
            input_schema: schema_for::<H::Input>(),
            input_schema_given: false,
            output_schema: schema_for::<H::Output>(),
            handler,
            states: H::states(),
        }
    }

    /// A tool served by an async [`Handler`]: extractors first (any [`FromContext`](super::FromContext)),
    /// then the typed arguments; it returns a typed result or a [`CallError`].
    pub fn new<M, H>(name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M, Call: Future<Output = Result<H::Output, CallError>> + Send + 'static>,
        H::Input: DeserializeOwned + JsonSchema + Send + 'static,
        H::Output: Serialize + JsonSchema + 'static,
    {
        let run: AsyncHandler = Arc::new(move |context, cancel_on_drop, id, args| {
            let limit = context.max_content_bytes();
            let call = handler.call(context, args.decode::<H::Input>()?, &mut ());
            // One allocation per call: the future that answers it.
            Ok(Box::pin(async move {
                let _cancel_on_drop = cancel_on_drop;
                let result = call.await.and_then(to_result);
                Ok(match result.and_then(|v| check_content(v, limit)) {
                    Ok(value) => Response::with_result(id, value),
                    Err(e) => Response::error(id, e.into_error_object()),
                })
            }))
        });
        Self::with_handler::<M, H>(name.into(), Run::Async(run, H::EXTRACTS))
    }

    /// A tool whose synchronous [`Handler`] runs on the game's main thread, inside
    /// [`MainThread::pump_with`](super::MainThread::pump_with), with the game's state as its first argument
    /// (`|world: &mut World, args: In|`), or without it (`|args: In|`). The state need not be `Send`. The
    /// connection never waits for the game thread: the call is queued with a deadline (the tool's timeout)
    /// and answered `-32403` if it has not started by then.
    pub fn on_main_thread<M, H>(name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M, Call = Result<<H as Handler<M>>::Output, CallError>>,
        H::Input: DeserializeOwned + JsonSchema + Send + 'static,
        H::Output: Serialize + JsonSchema + 'static,
    {
        let handler = Arc::new(handler);
        let run: SyncHandler = Arc::new(move |context, args| {
            let input = args.decode::<H::Input>()?;
            let handler = handler.clone();
            Ok(Box::new(move |state: &mut dyn Any| {
                let limit = context.max_content_bytes();
                handler
                    .call(context, input, state)
                    .and_then(to_result)
                    .and_then(|v| check_content(v, limit))
                    .map_err(CallError::into_error_object)
            }))
        });
        Self::with_handler::<M, H>(name.into(), Run::MainThread(run))
    }

    /// The shared states the tool's handler takes.
    pub(crate) fn states(&self) -> &[StateType] {
        &self.states
    }

    /// Replaces the `inputSchema` derived from the argument type (a JSON Schema object; draft-07 unless
    /// `$schema` says otherwise): for tools whose arguments are only known at run time.
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self.input_schema_given = true;
        self
    }

    /// Replaces the `outputSchema` derived from the result type.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = schema;
        self
    }

    /// The tool's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the human-readable title (default: the name).
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description (default: the title).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds tags (for `tools/list` `filter.tags`; repeats are ignored).
    #[must_use]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for tag in tags {
            let tag = tag.into();
            if !self.tags.contains(&tag) {
                self.tags.push(tag);
            }
        }
        self
    }

    /// Marks the tool deprecated (or explicitly not).
    #[must_use]
    pub fn deprecated(mut self, deprecated: bool) -> Self {
        self.deprecated = Some(deprecated);
        self
    }

    /// Sets the tool's version.
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets this tool's time limit instead of the server's request timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Validates the tool and compiles its input schema.
    pub(crate) fn register(self) -> Result<RegisteredTool, Error> {
        let name = ToolName::new(self.name.clone()).map_err(|e| Error::InvalidName {
            kind: "tool",
            reason: e.to_string(),
        })?;
        let invalid = |reason: String| Error::InvalidSchema {
            tool: self.name.clone(),
            reason,
        };
        let schema_object = |schema: Value, which: &'static str| match schema {
            Value::Object(map) => Ok(map),
            Value::Bool(true) => Ok(Map::new()),
            Value::Bool(false) => Ok(Map::from_iter([("not".to_owned(), json!({}))])),
            other => Err(invalid(format!(
                "{which} must be a JSON Schema object, not {other}"
            ))),
        };
        // A schema derived from the argument type, with nothing serde does not enforce, is checked by decoding.
        let checked_by_type = !self.input_schema_given && checked_by_type(&self.input_schema);
        let input_schema = schema_object(self.input_schema, "inputSchema")?;
        let output_schema = schema_object(self.output_schema, "outputSchema")?;
        let validator = compile(&input_schema).map_err(|e| invalid(format!("inputSchema: {e}")))?;
        compile(&output_schema).map_err(|e| invalid(format!("outputSchema: {e}")))?;
        let title = self.title.unwrap_or_else(|| self.name.clone());
        let description = self.description.unwrap_or_else(|| title.clone());
        let non_empty = |s: String, field: &'static str| {
            gabp_types::NonEmptyString::new(s)
                .map_err(|_| invalid(format!("the {field} must not be empty")))
        };
        let descriptor = ToolDescriptor {
            name,
            title: non_empty(title, "title")?,
            description: non_empty(description, "description")?,
            input_schema,
            output_schema,
            tags: (!self.tags.is_empty())
                .then(|| UniqueVec::new(self.tags).ok())
                .flatten(),
            deprecated: self.deprecated,
            version: self.version,
            extra: serde_json::Map::new(),
        };
        Ok(RegisteredTool {
            descriptor,
            validator,
            checked_by_type,
            timeout: self.timeout,
            handler: self.handler,
        })
    }
}

fn compile(schema: &Map<String, Value>) -> Result<jsonschema::Validator, String> {
    let value = Value::Object(schema.clone());
    let options = if schema.contains_key("$schema") {
        jsonschema::options()
    } else {
        jsonschema::options().with_draft(jsonschema::Draft::Draft7)
    };
    options.build(&value).map_err(|e| e.to_string())
}

/// A tool after registration: its descriptor, its compiled input validator, its handler.
pub(crate) struct RegisteredTool {
    pub(crate) descriptor: ToolDescriptor,
    validator: jsonschema::Validator,
    /// Whether decoding into the handler's type checks everything the input schema states.
    pub(crate) checked_by_type: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) handler: Run,
}

/// The most schema errors listed in one `-32602` answer.
const MAX_LISTED_ERRORS: usize = 32;

impl RegisteredTool {
    /// Checks `arguments` against the input schema; on failure, the `-32602` error object with `data.errors`.
    pub(crate) fn check_arguments(&self, arguments: &Value) -> Result<(), ErrorObject> {
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let errors: Vec<Value> = self
            .validator
            .iter_errors(arguments)
            .take(MAX_LISTED_ERRORS)
            .map(|e| {
                json!({
                    "path": format!("/params/arguments{}", e.instance_path().as_str()),
                    "message": e.to_string(),
                })
            })
            .collect();
        let first = errors
            .first()
            .and_then(|e| e["message"].as_str())
            .unwrap_or("arguments do not match the tool's inputSchema")
            .to_owned();
        Err(ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "invalid arguments for {}: {first}",
                self.descriptor.name.as_str()
            ),
        )
        .with_data(json!({ "errors": errors })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn content_is_checked_in_a_result_written_as_text_however_its_name_is_spelled() {
        let item = r#"[{"type":"image","mimeType":"text/plain","data":"AA=="}]"#;
        for name in ["_content", "\\u005fcontent", "_cont\\u0065nt"] {
            let raw = serde_json::value::RawValue::from_string(format!(r#"{{"{name}":{item}}}"#))
                .unwrap();
            let text = ResultValue::from_serialize(&raw).unwrap();
            assert!(text.json_text().is_some());
            let refused = check_content(text, 1000).unwrap_err().into_error_object();
            assert_eq!(
                refused.data.unwrap()["pointer"],
                "/result/_content/0/mimeType",
                "{name}"
            );
        }
        let plain = ResultValue::from_serialize(&json!({"content": "_contents aside"})).unwrap();
        assert!(check_content(plain, 0).is_ok());
        // Deeper than serde_json reads back: refused, not sent unchecked.
        let mut deep = json!([]);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let items: Value = serde_json::from_str(item).unwrap();
        let refused = to_result(json!({"_content": items, "x": deep})).unwrap_err();
        assert!(refused
            .into_error_object()
            .message
            .contains("does not read back"));
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        label: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        x: i32,
        inner: Inner,
        tags: Vec<Inner>,
    }

    #[test]
    fn typed_schemas_are_self_contained_draft07() {
        let tool = Tool::new("a/b", |_: Args| async { Ok::<_, CallError>(5u8) })
            .register()
            .unwrap();
        let schema = Value::Object(tool.descriptor.input_schema.clone());
        let text = schema.to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(!text.contains("definitions"), "{text}");
        assert!(schema.get("title").is_none());
        assert_eq!(schema["type"], "object");
        assert_eq!(tool.descriptor.title.as_str(), "a/b");
        assert_eq!(tool.descriptor.description.as_str(), "a/b");
    }

    #[test]
    fn argument_errors_list_paths() {
        let tool = Tool::new("a/b", |_: Args| async { Ok::<_, CallError>(()) })
            .register()
            .unwrap();
        let err = tool
            .check_arguments(&json!({"x": "one", "inner": {}, "tags": []}))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        let errors = err.data.unwrap()["errors"].as_array().unwrap().clone();
        let paths: Vec<&str> = errors.iter().map(|e| e["path"].as_str().unwrap()).collect();
        assert!(paths.contains(&"/params/arguments/x"), "{paths:?}");
        assert!(paths.contains(&"/params/arguments/inner"), "{paths:?}");
        assert!(tool
            .check_arguments(&json!({"x": 1, "inner": {"label": "l"}, "tags": []}))
            .is_ok());
    }

    fn raw(name: &str, input: Value, output: Value) -> Tool {
        Tool::new(name, |_: Value| async { Ok::<_, CallError>(Value::Null) })
            .input_schema(input)
            .output_schema(output)
    }

    #[test]
    fn registration_errors() {
        let bad_name = raw("inventory.get", json!({}), json!({}));
        assert!(matches!(
            bad_name.register(),
            Err(Error::InvalidName { kind: "tool", .. })
        ));
        let bad_schema = raw("a/b", json!({"type": 5}), json!({}));
        assert!(matches!(
            bad_schema.register(),
            Err(Error::InvalidSchema { .. })
        ));
        let not_object = raw("a/b", json!([]), json!({}));
        assert!(matches!(
            not_object.register(),
            Err(Error::InvalidSchema { .. })
        ));
        let empty_title = raw("a/b", json!({}), json!(true)).title("");
        assert!(empty_title.register().is_err());
    }

    #[test]
    fn tool_error_codes_and_data() {
        let e: CallError = "x".parse::<u8>().unwrap_err().into();
        assert_eq!(e.code(), ErrorCode::TOOL_EXECUTION_FAILED);
        let e = CallError::new("m")
            .with_data(json!({"a": 1}))
            .retryable(false)
            .with_code(-1);
        let obj = e.to_error_object();
        assert_eq!(obj.code, ErrorCode(-1));
        assert_eq!(obj.data.unwrap(), json!({"a": 1, "retryable": false}));
        let e = CallError::new("m").with_data(json!(3)).retryable(true);
        assert_eq!(
            e.into_error_object().data.unwrap(),
            json!({"retryable": true, "detail": 3})
        );
    }
}
