//! [`MockTool`]: a tool of a mock mod, and [`ToolCall`], the log of its calls.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use gabp_session::server::{CallError, Tool};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

type SyncHandler = Arc<dyn Fn(Map<String, Value>) -> Result<Value, CallError> + Send + Sync>;
type AsyncHandler =
    Arc<dyn Fn(Map<String, Value>) -> BoxFuture<'static, Result<Value, CallError>> + Send + Sync>;

#[derive(Clone)]
enum Behavior {
    Value(Value),
    Error(CallError),
    Sync(SyncHandler),
    Async(AsyncHandler),
}

/// A tool of a [`MockMod`]: a canned value, a canned error, or a closure over the raw JSON arguments.
///
/// Its input schema defaults to any object (`{"type": "object"}`) and its output schema to anything; the mod
/// validates arguments against the input schema before the tool runs (-32602 otherwise). Every call that
/// reaches the tool is logged ([`MockMod::calls`]).
///
/// [`MockMod`]: super::MockMod
/// [`MockMod::calls`]: super::MockMod::calls
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::CallError;
/// use gabp_testkit::MockTool;
/// use serde_json::json;
///
/// let version = MockTool::returning("game/version", json!("1.2.3"));
/// let broken = MockTool::failing("game/save", CallError::new("disk full"));
/// let add = MockTool::with("math/add", |args| {
///     let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
///     Ok(json!({ "sum": sum }))
/// })
/// .input_schema(json!({
///     "type": "object",
///     "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
///     "required": ["a", "b"]
/// }));
/// let slow = MockTool::returning("world/load", json!({})).delay(Duration::from_millis(50));
/// # let _ = (version, broken, add, slow);
/// ```
#[derive(Clone)]
pub struct MockTool {
    name: String,
    input_schema: Value,
    output_schema: Value,
    behavior: Behavior,
    delay: Option<Duration>,
    timeout: Option<Duration>,
    title: Option<String>,
    description: Option<String>,
    tags: Vec<String>,
}

impl fmt::Debug for MockTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockTool")
            .field("name", &self.name)
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl MockTool {
    fn new(name: impl Into<String>, behavior: Behavior) -> Self {
        MockTool {
            name: name.into(),
            input_schema: json!({ "type": "object" }),
            output_schema: json!({}),
            behavior,
            delay: None,
            timeout: None,
            title: None,
            description: None,
            tags: Vec::new(),
        }
    }

    /// A tool that always returns `value`.
    pub fn returning(name: impl Into<String>, value: Value) -> Self {
        Self::new(name, Behavior::Value(value))
    }

    /// A tool that always fails with `error` (-32402 unless the error carries its own code).
    pub fn failing(name: impl Into<String>, error: CallError) -> Self {
        Self::new(name, Behavior::Error(error))
    }

    /// A tool that answers with what `handler` makes of the arguments.
    pub fn with<F>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Map<String, Value>) -> Result<Value, CallError> + Send + Sync + 'static,
    {
        Self::new(name, Behavior::Sync(Arc::new(handler)))
    }

    /// A tool that answers with what the future `handler` returns.
    pub fn with_async<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, CallError>> + Send + 'static,
    {
        Self::new(
            name,
            Behavior::Async(Arc::new(move |args| handler(args).boxed())),
        )
    }

    /// Sets the JSON Schema the arguments must pass (draft-07 unless `$schema` says otherwise).
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Sets the JSON Schema advertised for the result.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = schema;
        self
    }

    /// Waits `delay` before answering (a slow tool).
    #[must_use]
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Sets the tool's own time limit (the mod answers -32403 past it).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the title listed by `tools/list` (default: the name).
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description listed by `tools/list` (default: the title).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the tags listed by `tools/list`.
    #[must_use]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    pub(super) fn into_tool(self, calls: Arc<Mutex<Vec<ToolCall>>>) -> Tool {
        let MockTool {
            name,
            input_schema,
            output_schema,
            behavior,
            delay,
            timeout,
            title,
            description,
            tags,
        } = self;
        let tool_name = name.clone();
        let mut tool = Tool::new(name, move |args: Map<String, Value>| {
            calls.lock().push(ToolCall {
                tool: tool_name.clone(),
                arguments: args.clone(),
            });
            let behavior = behavior.clone();
            async move {
                if let Some(delay) = delay {
                    tokio::time::sleep(delay).await;
                }
                match behavior {
                    Behavior::Value(value) => Ok(value),
                    Behavior::Error(error) => Err(error),
                    Behavior::Sync(handler) => handler(args),
                    Behavior::Async(handler) => handler(args).await,
                }
            }
        })
        .input_schema(input_schema)
        .output_schema(output_schema);
        if let Some(title) = title {
            tool = tool.title(title);
        }
        if let Some(description) = description {
            tool = tool.description(description);
        }
        if let Some(timeout) = timeout {
            tool = tool.timeout(timeout);
        }
        if !tags.is_empty() {
            tool = tool.tags(tags);
        }
        tool
    }
}

/// One call of a [`MockTool`], as the tool received it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// Its arguments (already validated against the input schema).
    pub arguments: Map<String, Value>,
}
