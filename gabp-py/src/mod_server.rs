//! `gabp.Mod`: a Python program (a game, a test double) serves GABP. Tools are Python functions called with
//! their arguments as keywords, on a worker thread, or on the game's thread inside `pump` (main-thread tools,
//! for a game loop that owns its world).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{
    CallContext, CallError, EventPublisher, MainThread, ModServer, ModServerBuilder, ServeHandle,
    Tool,
};
use gabp_transport::{BridgeJsonGuard, Endpoint, ExplicitSettings, Listener, ModSettings, Token};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;

use crate::bridge::seconds;
use crate::errors::{config_error, state_error, to_call_error, to_py};
use crate::json::{from_python, to_python};
use crate::runtime::{runtime, wait};

#[allow(clippy::large_enum_variant)]
enum Stage {
    Building(ModServerBuilder),
    Running(Running),
    Stopped,
}

struct Running {
    serve: Option<ServeHandle>,
    endpoint: Endpoint,
    _bridge_json: Option<BridgeJsonGuard>,
}

/// A mod: add tools and channels, then `serve`.
#[pyclass(name = "Mod", module = "gabp._gabp", frozen)]
pub(crate) struct PyMod {
    app: String,
    stage: Mutex<Stage>,
    main_thread: MainThread,
    events: EventPublisher,
}

/// What a tool's function may ask of its call, given as the parameter annotated `gabp.ToolCall`.
#[pyclass(name = "ToolCall", module = "gabp._gabp", frozen)]
pub(crate) struct ToolCall {
    context: CallContext,
}

#[pymethods]
impl ToolCall {
    /// Whether the bridge gave up on the call or asked to cancel it (SPEC/1.0 extensions.md §cancel): a long
    /// tool looks now and then, and stops.
    #[getter]
    fn cancelled(&self) -> bool {
        self.context.is_cancelled()
    }

    /// Reports progress to a bridge that asked for it (SPEC/1.0 extensions.md §progress); otherwise nothing.
    #[pyo3(signature = (done, total=None, message=None))]
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        self.context.progress(done, total, message);
    }
}

/// A tool's Python function, and the name of its `gabp.ToolCall` parameter, if it has one.
struct Function {
    function: Py<PyAny>,
    call_parameter: Option<String>,
}

/// Calls a tool's Python function with `args` as keywords; its return value is the result.
fn invoke(
    py: Python<'_>,
    function: &Function,
    context: CallContext,
    args: &Value,
) -> Result<Value, CallError> {
    let run = || -> PyResult<Value> {
        let kwargs = to_python(py, args)?;
        let kwargs = kwargs.cast_into::<PyDict>().map_err(PyErr::from)?;
        if let Some(parameter) = &function.call_parameter {
            kwargs.set_item(parameter, ToolCall { context })?;
        }
        let function = &function.function;
        let returned = function.bind(py).call((), Some(&kwargs))?;
        if returned.hasattr("__await__")? {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "the tool's function returned an awaitable: tools are plain functions (def, not async def)",
            ));
        }
        from_python(&returned, &"the tool's result")
    };
    run().map_err(|e| to_call_error(py, &e))
}

impl PyMod {
    fn build_with(
        &self,
        py: Python<'_>,
        change: impl FnOnce(ModServerBuilder) -> ModServerBuilder,
    ) -> PyResult<()> {
        let mut stage = self.stage.lock();
        match std::mem::replace(&mut *stage, Stage::Stopped) {
            Stage::Building(builder) => {
                *stage = Stage::Building(change(builder));
                Ok(())
            }
            other => {
                *stage = other;
                Err(state_error(
                    py,
                    "the mod is serving: add tools and channels before serve()",
                ))
            }
        }
    }
}

#[pymethods]
impl PyMod {
    #[new]
    fn new(py: Python<'_>, app: &str, version: &str) -> PyResult<Self> {
        if app.is_empty() || version.is_empty() {
            return Err(config_error(py, "a mod needs an app name and a version"));
        }
        crate::errors::load(py)?;
        let builder = ModServer::builder().app(app, version);
        Ok(PyMod {
            app: app.to_owned(),
            main_thread: builder.main_thread(),
            events: builder.event_publisher(),
            stage: Mutex::new(Stage::Building(builder)),
        })
    }

    /// Adds tool `name` served by `function` (called with the arguments as keywords): its JSON Schema
    /// `input_schema` checks the arguments before the function sees them.
    #[pyo3(signature = (name, function, *, input_schema, description=None, read_only=false, main_thread=false, call_parameter=None, timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_tool(
        &self,
        py: Python<'_>,
        name: String,
        function: Py<PyAny>,
        input_schema: &Bound<'_, PyAny>,
        description: Option<String>,
        read_only: bool,
        main_thread: bool,
        call_parameter: Option<String>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        let timeout = seconds(py, timeout, &format!("tool {name}: timeout"))?;
        if !function.bind(py).is_callable() {
            return Err(config_error(
                py,
                format!("tool {name}: the function is not callable"),
            ));
        }
        let schema = from_python(input_schema, &format_args!("tool {name}: the input schema"))?;
        if !schema.is_object() {
            return Err(config_error(
                py,
                format!("tool {name}: the input schema must be a dict"),
            ));
        }
        let function = Arc::new(Function {
            function,
            call_parameter,
        });
        let mut tool = if main_thread {
            Tool::on_main_thread(
                name.clone(),
                move |_: &mut (), context: CallContext, args: Value| {
                    Python::attach(|py| invoke(py, &function, context, &args))
                },
            )
        } else {
            Tool::new(name.clone(), move |context: CallContext, args: Value| {
                let function = function.clone();
                async move {
                    tokio::task::spawn_blocking(move || {
                        Python::attach(|py| invoke(py, &function, context, &args))
                    })
                    .await
                    .unwrap_or_else(|e| {
                        Err(CallError::new(format!("the tool's thread failed: {e}")))
                    })
                }
            })
        };
        tool = tool.input_schema(schema);
        if let Some(description) = description {
            tool = tool.description(description);
        }
        if read_only {
            tool = tool.tags(["read-only"]);
        }
        if let Some(timeout) = timeout {
            tool = tool.timeout(timeout);
        }
        self.build_with(py, |b| b.tool(tool))
    }

    /// Adds event channel `name`, for `publish`.
    fn add_channel(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.build_with(py, |b| b.channel(name))
    }

    /// Turns on the time-control extension (SPEC/1.0 extensions.md §time-control): bridges pause, resume and
    /// step the game; ask `tick()` before each tick.
    fn enable_time_control(&self, py: Python<'_>) -> PyResult<()> {
        self.build_with(py, |b| b.time_control(true))
    }

    /// Starts serving, in the background: on `endpoint` with `token` when given, else where the GABS
    /// environment says, else a free loopback port and a fresh token announced in `bridge.json` (removed at
    /// `stop`). Returns the endpoint, with its real port.
    #[pyo3(signature = (endpoint=None, token=None, *, bridge_json=None))]
    fn serve(
        &self,
        py: Python<'_>,
        endpoint: Option<&str>,
        token: Option<&str>,
        bridge_json: Option<PathBuf>,
    ) -> PyResult<String> {
        let explicit = ExplicitSettings {
            endpoint: endpoint
                .map(|e| {
                    e.parse::<Endpoint>()
                        .map_err(|err| config_error(py, format!("the endpoint {e:?}: {err}")))
                })
                .transpose()?,
            token: token
                .map(|t| Token::new(t).map_err(|err| config_error(py, format!("the token: {err}"))))
                .transpose()?,
            agent_id: None,
            bridge_json,
        };
        let mut stage = self.stage.lock();
        let builder = match std::mem::replace(&mut *stage, Stage::Stopped) {
            Stage::Building(builder) => builder,
            other => {
                *stage = other;
                return Err(state_error(py, "the mod was served before; make a new one"));
            }
        };
        let mut settings = ModSettings::from_env_or_default(explicit)
            .map_err(|e| to_py(py, &gabp_session::Error::Config(e)))?;
        settings.agent_id.get_or_insert_with(|| self.app.clone());
        let server = builder
            .settings(&settings)
            .build()
            .map_err(|e| config_error(py, e.to_string()))?;
        let runtime = runtime()?;
        let listener = wait(py, Listener::bind(&settings.endpoint))?
            .map_err(|e| to_py(py, &gabp_session::Error::Transport(e)))?;
        let endpoint = listener.endpoint().clone();
        let bridge_json = settings
            .publish_bridge_json(&endpoint)
            .map_err(|e| to_py(py, &gabp_session::Error::Config(e)))?;
        let serve = {
            let _entered = runtime.enter();
            server.serve(listener)
        };
        *stage = Stage::Running(Running {
            serve: Some(serve),
            endpoint: endpoint.clone(),
            _bridge_json: bridge_json,
        });
        Ok(endpoint.to_string())
    }

    /// The endpoint the mod serves on, once serving.
    #[getter]
    fn endpoint(&self) -> Option<String> {
        match &*self.stage.lock() {
            Stage::Running(running) => Some(running.endpoint.to_string()),
            _ => None,
        }
    }

    /// Publishes an event on `channel` with `payload`; returns its sequence number.
    #[pyo3(signature = (channel, payload=None))]
    fn publish(
        &self,
        py: Python<'_>,
        channel: &str,
        payload: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let payload = match payload {
            Some(p) if !p.is_none() => from_python(p, &format_args!("the payload of {channel}"))?,
            _ => Value::Object(Default::default()),
        };
        self.events
            .publish(channel, payload)
            .map(|published| published.seq)
            .map_err(|e| config_error(py, e.to_string()))
    }

    /// Runs the main-thread calls queued, oldest first, for at most `budget` seconds (a call that has started
    /// finishes); returns how many ran. Call it from the game's loop.
    #[pyo3(signature = (budget=0.002))]
    fn pump(&self, py: Python<'_>, budget: f64) -> PyResult<usize> {
        let budget = seconds(py, Some(budget), "budget")?.unwrap_or_default();
        Ok(self.main_thread.pump(budget).ran)
    }

    /// Waits up to `timeout` seconds for a main-thread call to be queued (or `wake()`); returns whether
    /// calls are queued. For a loop that would otherwise sleep until its next frame.
    #[pyo3(signature = (timeout))]
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let limit = seconds(py, Some(timeout), "timeout")?.unwrap_or_default();
        let main_thread = self.main_thread.clone();
        let mut left = limit;
        loop {
            let slice = left.min(Duration::from_millis(50));
            if py.detach(|| main_thread.wait(slice)) {
                return Ok(true);
            }
            py.check_signals()?;
            left = left.saturating_sub(slice);
            if left.is_zero() {
                return Ok(false);
            }
        }
    }

    /// Ends a `wait` in progress (to stop the game loop from another thread).
    fn wake(&self) {
        self.main_thread.wake();
    }

    /// With time control on: whether to run the next tick (false while bridges have paused the game, true for
    /// each tick a `time/step` owes). Call it once per tick, from the game's loop.
    fn tick(&self, py: Python<'_>) -> PyResult<bool> {
        let clock = self.main_thread.clock().ok_or_else(|| {
            state_error(
                py,
                "time control is not on (enable_time_control before serve)",
            )
        })?;
        Ok(clock.run_tick(|| ()))
    }

    /// Stops: no new connections, main-thread calls still queued are answered -32401 (the game is shutting
    /// down), other calls in flight answer (up to 5 s), `bridge.json` is removed.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let running = {
            let mut stage = self.stage.lock();
            match std::mem::replace(&mut *stage, Stage::Stopped) {
                Stage::Running(running) => Some(running),
                other => {
                    *stage = other;
                    None
                }
            }
        };
        if let Some(mut running) = running {
            // Nothing pumps after this: queued calls are answered now (SPEC/1.0 gabp.md §7).
            self.main_thread.close();
            if let Some(serve) = running.serve.take() {
                wait(py, async move {
                    let _ = tokio::time::timeout(Duration::from_secs(5), serve.shutdown()).await;
                })?;
            }
        }
        Ok(())
    }
}
