//! JSON values to Python objects and back, with pythonize (serde's data model on both sides).

use std::fmt::Display;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{Map, Value};

use crate::errors::config_error;

/// A JSON value handed to Python as `dict`, `list`, `str`, `int`, `float`, `bool` or `None`.
pub(crate) struct Json(pub(crate) Value);

impl<'py> IntoPyObject<'py> for Json {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.0)
    }
}

/// `value` as a Python object.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// A Python object as JSON; `what` names it in the error (`the arguments of world/get_block`), written only
/// then.
pub(crate) fn from_python(object: &Bound<'_, PyAny>, what: &dyn Display) -> PyResult<Value> {
    pythonize::depythonize::<Value>(object)
        .map_err(|e| config_error(object.py(), format!("{what} are not JSON: {e}")))
}

/// A tool's arguments: the positional dict (or `None`) merged with the keyword arguments, as one object.
pub(crate) fn arguments(
    args: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
    what: &dyn Display,
) -> PyResult<Value> {
    let mut object = match args {
        None => Map::new(),
        Some(args) if args.is_none() => Map::new(),
        Some(args) => match from_python(args, what)? {
            Value::Object(object) => object,
            _ => {
                return Err(config_error(
                    args.py(),
                    format!("{what} must be a dict, not {}", type_name(args)),
                ))
            }
        },
    };
    if let Some(kwargs) = kwargs {
        if let Value::Object(named) = from_python(kwargs.as_any(), what)? {
            object.extend(named);
        }
    }
    Ok(Value::Object(object))
}

/// The type name of `object`, for messages.
pub(crate) fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}
