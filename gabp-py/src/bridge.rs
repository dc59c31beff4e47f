//! `gabp.Bridge`: a connection to a mod, for test harnesses and agents. Each blocking method waits without
//! holding the interpreter; `call_async` and `request_async` start the same for `gabp.aio`, answered through
//! `Completions`.

use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::Bridge;
use gabp_session::Error;
use gabp_transport::{Endpoint, ExplicitSettings, ModSettings, Token};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;

use crate::completions::Completions;
use crate::errors::{config_error, state_error, to_py};
use crate::events::Subscription;
use crate::json::{arguments, to_python, Json};
use crate::runtime::{runtime, Driver};

/// A connection to one mod.
#[pyclass(name = "Bridge", module = "gabp._gabp", frozen)]
pub(crate) struct PyBridge {
    bridge: Bridge,
    driver: Driver,
}

/// A time limit in seconds from Python, checked.
pub(crate) fn seconds(
    py: Python<'_>,
    value: Option<f64>,
    what: &str,
) -> PyResult<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(config_error(
            py,
            format!("{what} must be a positive number of seconds, not {s}"),
        )),
    }
}

/// Where to connect and with which token: the arguments, then the GABS environment (`GABP_SERVER_PORT`,
/// `GABP_TOKEN`), then `bridge.json` (SPEC/1.0 transport.md §3, §4).
fn resolve(
    py: Python<'_>,
    endpoint: Option<&str>,
    token: Option<&str>,
    bridge_json: Option<PathBuf>,
) -> PyResult<(Endpoint, Token)> {
    let endpoint = endpoint
        .map(|e| {
            e.parse::<Endpoint>()
                .map_err(|err| config_error(py, format!("the endpoint {e:?}: {err}")))
        })
        .transpose()?;
    let token = token
        .map(|t| Token::new(t).map_err(|err| config_error(py, format!("the token: {err}"))))
        .transpose()?;
    let settings = ModSettings::from_env(ExplicitSettings {
        endpoint,
        token,
        agent_id: None,
        bridge_json,
    })
    .map_err(|e| to_py(py, &Error::Config(e)))?;
    Ok((settings.endpoint, settings.token))
}

impl PyBridge {
    /// Refuses an awaitable on a bridge connected for blocking calls, whose connection only runs while a
    /// thread waits on it.
    fn for_asyncio(&self, py: Python<'_>) -> PyResult<()> {
        if self.driver.is_shared() {
            Ok(())
        } else {
            Err(state_error(
                py,
                "this bridge was connected for blocking calls; gabp.aio.Bridge.connect makes one for asyncio",
            ))
        }
    }

    fn limited(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Bridge> {
        Ok(match seconds(py, timeout, "timeout")? {
            Some(limit) => self.bridge.with_timeout(limit),
            None => self.bridge.clone(),
        })
    }

    /// A request answered as JSON, blocking.
    fn blocking<T: serde::Serialize + Send>(
        &self,
        py: Python<'_>,
        work: impl std::future::Future<Output = Result<T, Error>> + Send,
    ) -> PyResult<Py<PyAny>> {
        match self.driver.wait(py, work)? {
            Ok(value) => Ok(pythonize::pythonize(py, &value)?.unbind()),
            Err(e) => Err(self.failed(py, &e)),
        }
    }

    /// `error` as a Python exception. A call given up on its time limit has queued its cancel (SPEC/1.0
    /// extensions.md §cancel): the connection is settled so that it goes out now, not at the next call.
    fn failed(&self, py: Python<'_>, error: &Error) -> PyErr {
        if matches!(error, Error::Timeout { .. }) {
            self.driver.settle(py);
        }
        to_py(py, error)
    }
}

/// A request answered as JSON, as an asyncio awaitable; cancelling it drops the request (a tool call is
/// then cancelled in the mod, SPEC/1.0 extensions.md §cancel).
pub(crate) fn awaitable<'py>(
    py: Python<'py>,
    work: impl std::future::Future<Output = Result<Value, Error>> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>> {
    runtime()?;
    pyo3_async_runtimes::tokio::future_into_py(py, async move {
        match work.await {
            Ok(value) => Ok(Json(value)),
            Err(e) => Err(Python::attach(|py| to_py(py, &e))),
        }
    })
}

#[pymethods]
impl PyBridge {
    /// Connects to a mod: `endpoint` and `token` when given, else the GABS environment, else `bridge.json`.
    /// `asyncio`: for `gabp.aio`, on the runtime its awaits run on; else the connection runs on the thread
    /// that waits on it.
    #[staticmethod]
    #[pyo3(signature = (endpoint=None, token=None, *, timeout=None, bridge_json=None, asyncio=false))]
    fn connect(
        py: Python<'_>,
        endpoint: Option<&str>,
        token: Option<&str>,
        timeout: Option<f64>,
        bridge_json: Option<PathBuf>,
        asyncio: bool,
    ) -> PyResult<PyBridge> {
        let (endpoint, token) = resolve(py, endpoint, token, bridge_json)?;
        let mut builder = Bridge::builder(token).client_info("gabp-py", env!("CARGO_PKG_VERSION"));
        if let Some(limit) = seconds(py, timeout, "timeout")? {
            builder = builder.request_timeout(limit);
        }
        let driver = if asyncio {
            Driver::Shared
        } else {
            Driver::own()?
        };
        let bridge = driver
            .wait(py, builder.connect(&endpoint))?
            .map_err(|e| to_py(py, &e))?;
        Ok(PyBridge { bridge, driver })
    }

    /// The mod's `session/welcome` result.
    #[getter]
    fn welcome(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let welcome = serde_json::to_value(&*self.bridge.welcome())
            .map_err(|e| config_error(py, e.to_string()))?;
        Ok(to_python(py, &welcome)?.unbind())
    }

    /// Whether the connection is up (after reading what has arrived: the mod may have gone meanwhile).
    #[getter]
    fn connected(&self, py: Python<'_>) -> bool {
        self.driver.settle(py);
        self.bridge.state().is_connected()
    }

    /// The mod's tools (`tools/list`), as dicts.
    fn tools(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let bridge = self.bridge.clone();
        self.blocking(py, async move { bridge.list_tools().await })
    }

    /// Calls tool `name` with `args` (a dict) and keyword arguments; waits up to `timeout` seconds.
    #[pyo3(signature = (name, args=None, /, *, timeout=None, on_progress=None, **kwargs))]
    fn call(
        &self,
        py: Python<'_>,
        name: &str,
        args: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
        on_progress: Option<Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let args = arguments(args, kwargs, &format_args!("the arguments of {name}"))?;
        let bridge = self.limited(py, timeout)?;
        let Some(on_progress) = on_progress else {
            let name = name.to_owned();
            return self.blocking(py, async move { bridge.call_tool(&name, args).await });
        };
        let (mut updates, mut call) = bridge.call_tool_with_progress(name, args);
        let mut updates_open = true;
        let outcome = loop {
            let step = self.driver.wait(py, async {
                tokio::select! {
                    biased;
                    update = updates.next(), if updates_open => Err(update),
                    done = &mut call => Ok(done),
                }
            });
            match step {
                Ok(Ok(done)) => break done.map_err(|e| self.failed(py, &e)),
                Ok(Err(Some(update))) => {
                    let told = on_progress.call1((update.progress, update.total, update.message));
                    if let Err(raised) = told {
                        break Err(raised);
                    }
                }
                Ok(Err(None)) => updates_open = false,
                Err(interrupted) => break Err(interrupted),
            }
        };
        if outcome.is_err() {
            // The call is dropped here, not inside the wait: its cancel is queued now and must go out.
            drop(call);
            drop(updates);
            self.driver.settle(py);
        }
        outcome.and_then(|v| Ok(to_python(py, &v)?.unbind()))
    }

    /// Starts `call` for `gabp.aio`: its answer comes through `completions` under the returned id.
    #[pyo3(signature = (completions, name, args=None, /, *, timeout=None, **kwargs))]
    fn call_async(
        &self,
        py: Python<'_>,
        completions: &Completions,
        name: &str,
        args: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        self.for_asyncio(py)?;
        let args = arguments(args, kwargs, &format_args!("the arguments of {name}"))?;
        let bridge = self.limited(py, timeout)?;
        let name = name.to_owned();
        completions.submit(async move { bridge.call_tool(&name, args).await })
    }

    /// Sends request `method` with `params` (a dict) and returns its result: for methods this class has no
    /// function for.
    #[pyo3(signature = (method, params=None, *, timeout=None))]
    fn request(
        &self,
        py: Python<'_>,
        method: &str,
        params: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        let params = arguments(params, None, &format_args!("the params of {method}"))?;
        let bridge = self.limited(py, timeout)?;
        let method = method.to_owned();
        self.blocking(py, async move { bridge.request(&method, params).await })
    }

    /// Starts `request` for `gabp.aio`: its answer comes through `completions` under the returned id.
    #[pyo3(signature = (completions, method, params=None, *, timeout=None))]
    fn request_async(
        &self,
        py: Python<'_>,
        completions: &Completions,
        method: &str,
        params: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
    ) -> PyResult<u64> {
        self.for_asyncio(py)?;
        let params = arguments(params, None, &format_args!("the params of {method}"))?;
        let bridge = self.limited(py, timeout)?;
        let method = method.to_owned();
        completions.submit(async move { bridge.request(&method, params).await })
    }

    /// Subscribes to `channels` (names, or glob patterns when the mod offers `channel-patterns`): an
    /// iterator of events, for `for event in bridge.subscribe("player/*")`.
    #[pyo3(signature = (*channels))]
    fn subscribe(&self, py: Python<'_>, channels: Vec<String>) -> PyResult<Subscription> {
        if channels.is_empty() {
            return Err(config_error(py, "subscribe needs at least one channel"));
        }
        let bridge = self.bridge.clone();
        let asked = channels.clone();
        let subscription = self
            .driver
            .wait(py, async move { bridge.subscribe(asked).await })?
            .map_err(|e| to_py(py, &e))?;
        if subscription.channels().is_empty() {
            return Err(config_error(
                py,
                format!(
                    "the mod offers no channel matching {} (SPEC/1.0 gabp.md §4.6)",
                    channels.join(", ")
                ),
            ));
        }
        Ok(Subscription::new(subscription, self.driver.clone()))
    }

    /// Says goodbye and closes the connection; calls in progress fail with `gabp.Disconnected`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let bridge = self.bridge.clone();
        self.driver.wait(py, async move {
            let _ = bridge.goodbye(Some("closed")).await;
            bridge.close().await;
        })
    }

    /// `close`, as an awaitable.
    fn close_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.for_asyncio(py)?;
        let bridge = self.bridge.clone();
        awaitable(py, async move {
            let _ = bridge.goodbye(Some("closed")).await;
            bridge.close().await;
            Ok(Value::Null)
        })
    }
}
