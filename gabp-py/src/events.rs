//! Subscriptions: the events of a mod's channels, in `seq` order per channel (SPEC/1.0 gabp.md §7), as a
//! Python iterator and, for `gabp.aio`, as awaitables.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gabp_session::bridge::{Subscription as Stream, SubscriptionItem};
use gabp_session::Error;
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use tokio::sync::Mutex;

use crate::bridge::seconds;
use crate::errors::{state_error, to_py};
use crate::json::to_python;
use crate::runtime::{runtime, Driver};

/// One item of a subscription: an event, a notice of `missed` events, or of a reconnection.
#[pyclass(name = "Event", module = "gabp._gabp", frozen, get_all)]
pub(crate) struct Event {
    /// `"event"`, `"missed"` (events of `channel` were lost) or `"reconnected"` (the connection came back;
    /// events published meanwhile are lost and `seq` counts afresh).
    kind: &'static str,
    /// The channel, such as `player/move` (empty for `"reconnected"`).
    channel: String,
    /// The event's sequence number on its channel; 0 for the notices.
    seq: u64,
    /// The payload; `None` for the notices.
    payload: Py<PyAny>,
    /// How many events of `channel` were lost; 0 but for `"missed"`.
    missed: u64,
}

#[pymethods]
impl Event {
    fn __repr__(&self, py: Python<'_>) -> String {
        match self.kind {
            "event" => format!(
                "<gabp.Event {} #{} {}>",
                self.channel,
                self.seq,
                self.payload
                    .bind(py)
                    .repr()
                    .map(|r| r.to_string())
                    .unwrap_or_default()
            ),
            "missed" => format!("<gabp.Event missed {} of {}>", self.missed, self.channel),
            kind => format!("<gabp.Event {kind}>"),
        }
    }
}

fn event(py: Python<'_>, item: SubscriptionItem) -> PyResult<Option<Event>> {
    Ok(Some(match item {
        SubscriptionItem::Event(e) => Event {
            kind: "event",
            payload: to_python(py, &e.payload)?.unbind(),
            channel: e.channel.to_string(),
            seq: e.seq,
            missed: 0,
        },
        SubscriptionItem::Lagged { channel, missed } => Event {
            kind: "missed",
            channel: channel.to_string(),
            seq: 0,
            payload: py.None(),
            missed,
        },
        SubscriptionItem::Reconnected => Event {
            kind: "reconnected",
            channel: String::new(),
            seq: 0,
            payload: py.None(),
            missed: 0,
        },
        _ => return Ok(None),
    }))
}

type Next = Option<Result<SubscriptionItem, Error>>;

/// A subscription; iterate it for its events. It ends when the connection does, or at `close()`.
#[pyclass(name = "Subscription", module = "gabp._gabp", frozen)]
pub(crate) struct Subscription {
    stream: Arc<Mutex<Option<Stream>>>,
    channels: Vec<String>,
    /// The bridge's: where its connection runs.
    driver: Driver,
}

impl Subscription {
    pub(crate) fn new(stream: Stream, driver: Driver) -> Self {
        Subscription {
            channels: stream.channels(),
            stream: Arc::new(Mutex::new(Some(stream))),
            driver,
        }
    }
}

/// The next item of `stream`, or `None` at its end or after `limit`; `Err(())` when the limit passed.
async fn next(stream: Arc<Mutex<Option<Stream>>>, limit: Option<Duration>) -> Result<Next, ()> {
    let mut stream = stream.lock().await;
    let Some(stream) = stream.as_mut() else {
        return Ok(None);
    };
    match limit {
        None => Ok(stream.next().await),
        Some(limit) => tokio::time::timeout(limit, stream.next())
            .await
            .map_err(|_| ()),
    }
}

fn answer(py: Python<'_>, item: Next) -> PyResult<Option<Event>> {
    match item {
        None => Ok(None),
        Some(Ok(item)) => event(py, item),
        Some(Err(e)) => Err(to_py(py, &e)),
    }
}

#[pymethods]
impl Subscription {
    /// The channels subscribed (the names a pattern matched).
    #[getter]
    fn channels(&self) -> Vec<String> {
        self.channels.clone()
    }

    /// The next item, waiting up to `timeout` seconds (`None`: until one comes); `None` when the time
    /// passed or the subscription has ended.
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Event>> {
        let limit = seconds(py, timeout, "timeout")?;
        loop {
            match self.driver.wait(py, next(self.stream.clone(), limit))? {
                Err(()) => return Ok(None),
                Ok(item) => {
                    let ended = item.is_none();
                    if let Some(event) = answer(py, item)? {
                        return Ok(Some(event));
                    }
                    if ended {
                        return Ok(None);
                    }
                }
            }
        }
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Event> {
        self.next(py, None)?
            .ok_or_else(|| PyStopIteration::new_err(()))
    }

    /// The next item as an awaitable; raises `StopAsyncIteration` at the end.
    fn next_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if !self.driver.is_shared() {
            return Err(state_error(
                py,
                "this subscription is of a bridge connected for blocking calls; iterate it with for",
            ));
        }
        runtime()?;
        let stream = self.stream.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            loop {
                let item = next(stream.clone(), None).await.unwrap_or(None);
                let ended = item.is_none();
                let event = Python::attach(|py| answer(py, item))?;
                if let Some(event) = event {
                    return Ok(event);
                }
                if ended {
                    return Err(PyStopAsyncIteration::new_err(()));
                }
            }
        })
    }

    /// Unsubscribes; iteration ends.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let stream = self.stream.clone();
        let taken = self
            .driver
            .wait(py, async move { stream.lock().await.take() })?;
        if let Some(stream) = taken {
            let _ = self.driver.wait(py, stream.unsubscribe())?;
        }
        Ok(())
    }
}
