//! The native part of the Python package `gabp` (module `gabp._gabp`): bridges, subscriptions and mods over
//! gabp-session. The package's Python modules wrap it; see `python/gabp`.

mod bridge;
mod completions;
mod errors;
mod events;
mod json;
mod mod_server;
mod runtime;

use pyo3::prelude::*;

#[pymodule]
fn _gabp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<bridge::PyBridge>()?;
    m.add_class::<completions::Completions>()?;
    m.add_class::<events::Subscription>()?;
    m.add_class::<events::Event>()?;
    m.add_class::<mod_server::PyMod>()?;
    m.add_class::<mod_server::ToolCall>()?;
    Ok(())
}
