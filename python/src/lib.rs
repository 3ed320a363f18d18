//! `ctxcompact._native`: the Rust side of the Python package.
//!
//! Each function takes the conversation and the settings as JSON text, releases the GIL for the
//! whole run (parse, count, compact, render), and returns JSON text; the Python layer
//! (`ctxcompact/__init__.py`) turns text into Python data and failures into its exception
//! classes. Calls share nothing mutable but the library's tokenizer singletons, which are built
//! once and thread-safe, so calls from several Python threads at once are safe.
//! Every call into the library sits in [`engine`].

mod engine;

use engine::{Failure, Settings};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

create_exception!(
    _native,
    NativeError,
    PyException,
    "A failure: args are (kind, message, message_index, field, report_json)."
);

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Input {
                message,
                message_index,
                field,
            } => NativeError::new_err(("input", message, message_index, field, None::<String>)),
            Failure::CannotFit { message, report } => NativeError::new_err((
                "cannot_fit",
                message,
                None::<usize>,
                None::<String>,
                Some(report),
            )),
            Failure::Options { message } => NativeError::new_err((
                "options",
                message,
                None::<usize>,
                None::<String>,
                None::<String>,
            )),
        }
    }
}

/// Runs `work` on the settings with the GIL released.
fn detached<T: Send>(
    py: Python<'_>,
    settings: &str,
    work: impl FnOnce(&Settings) -> Result<T, Failure> + Send,
) -> PyResult<T> {
    let settings = engine::settings(settings)?;
    Ok(py.detach(move || work(&settings))?)
}

/// Compacts a conversation (JSON text) to its budget: `(output_json, report_json)`.
#[pyfunction]
fn compact(
    py: Python<'_>,
    conversation: PyBackedStr,
    settings: &str,
) -> PyResult<(String, String)> {
    detached(py, settings, move |s| engine::compact(&conversation, s))
}

/// Trims old tool rounds alone: `(output_json, report_json)`.
#[pyfunction]
fn trim_tools(
    py: Python<'_>,
    conversation: PyBackedStr,
    settings: &str,
) -> PyResult<(String, String)> {
    detached(py, settings, move |s| engine::trim_tools(&conversation, s))
}

/// What `compact` would do: the report's JSON text.
#[pyfunction]
fn analyze(py: Python<'_>, conversation: PyBackedStr, settings: &str) -> PyResult<String> {
    detached(py, settings, move |s| engine::analyze(&conversation, s))
}

/// Each message's tokens and the total, as `count --json` prints them.
#[pyfunction]
fn count(py: Python<'_>, conversation: PyBackedStr, settings: &str) -> PyResult<String> {
    detached(py, settings, move |s| engine::count(&conversation, s))
}

/// Every pairing and placement problem, as a JSON array.
#[pyfunction]
fn validate(py: Python<'_>, conversation: PyBackedStr, settings: &str) -> PyResult<String> {
    detached(py, settings, move |s| engine::validate(&conversation, s))
}

/// The extension module `ctxcompact._native`.
#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add_function(wrap_pyfunction!(compact, m)?)?;
    m.add_function(wrap_pyfunction!(trim_tools, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(count, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    Ok(())
}
