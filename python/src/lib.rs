//! `ctxcompact._native`: the Rust side of the Python package.
//!
//! Each function takes the conversation as Python data and the settings as JSON text. It reads
//! the data into a JSON value with the GIL held (`data.rs`, no JSON text in between), releases
//! the GIL for the library's work (read the format, count, compact, render), and takes the GIL
//! again to build the result as Python data, in which every message that came out unchanged is
//! the input's own object. The Python layer (`ctxcompact/__init__.py`) checks the options and
//! turns failures into its exception classes. Calls share nothing mutable but the library's
//! tokenizer singletons, which are built once and thread-safe, so calls from several Python
//! threads at once are safe. Every call into the library goes through `ctxcompact::binding`,
//! the core the Node package shares: this crate holds only Python's conversions.

mod data;

use ctxcompact::binding::{self, CallFailure, CallSettings, Compaction, Input, Output};
use data::NotJson;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

create_exception!(
    _native,
    NativeError,
    PyException,
    "A failure: args are (kind, message, message_index, field, report_json)."
);

/// A failure as the Python layer receives it: `NativeError` with its kind.
fn raised(failure: CallFailure) -> PyErr {
    let parts = failure.into_parts();
    let report = parts.report.map(|report| report.to_string());
    NativeError::new_err((
        parts.kind,
        parts.message,
        parts.message_index,
        parts.field,
        report,
    ))
}

/// Python data that is not JSON data: bad input.
fn not_json(NotJson(why): NotJson) -> PyErr {
    raised(CallFailure::input(format!(
        "the conversation is not JSON data: {why}"
    )))
}

/// Reads the conversation and the settings, then runs `work` on them with the GIL released.
fn detached<T: Send>(
    conversation: &Bound<'_, PyAny>,
    settings: &str,
    work: impl FnOnce(Input<'_>, &CallSettings) -> Result<T, CallFailure> + Send,
) -> PyResult<T> {
    let settings = binding::settings(settings).map_err(raised)?;
    let input = data::from_python(conversation).map_err(not_json)?;
    let py = conversation.py();
    py.detach(|| work(Input::Data(input), &settings))
        .map_err(raised)
}

/// Runs `work`, which consumes the conversation's value, and builds its `(conversation,
/// report)` result, reusing the input's objects for what came out unchanged.
fn compacted<'py>(
    conversation: &Bound<'py, PyAny>,
    settings: &str,
    work: impl FnOnce(Input<'_>, &CallSettings) -> Result<Compaction, CallFailure> + Send,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let py = conversation.py();
    let settings = binding::settings(settings).map_err(raised)?;
    let (input, inexact) = data::read_conversation(conversation).map_err(not_json)?;
    let compaction = py
        .detach(|| work(Input::Data(input), &settings))
        .map_err(raised)?;
    let Output::Split(split) = &compaction.output else {
        unreachable!("data is handed back split")
    };
    let result = (
        data::rebuild(conversation, &inexact, split, &compaction.unchanged)?,
        data::to_python(py, &compaction.report)?,
    );
    py.detach(move || drop(compaction));
    Ok(result)
}

/// Compacts a conversation to its budget: `(conversation, report)`.
#[pyfunction]
fn compact<'py>(
    conversation: &Bound<'py, PyAny>,
    settings: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    compacted(conversation, settings, binding::compact)
}

/// Trims old tool rounds alone: `(conversation, report)`.
#[pyfunction]
fn trim_tools<'py>(
    conversation: &Bound<'py, PyAny>,
    settings: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    compacted(conversation, settings, binding::trim_tools)
}

/// What `compact` would do: the report.
#[pyfunction]
fn analyze<'py>(conversation: &Bound<'py, PyAny>, settings: &str) -> PyResult<Bound<'py, PyAny>> {
    let report = detached(conversation, settings, binding::analyze)?;
    data::to_python(conversation.py(), &report)
}

/// Each message's tokens and the total, as `count --json` prints them.
#[pyfunction]
fn count<'py>(conversation: &Bound<'py, PyAny>, settings: &str) -> PyResult<Bound<'py, PyAny>> {
    let counts = detached(conversation, settings, binding::count)?;
    data::to_python(conversation.py(), &counts)
}

/// Every pairing and placement problem, as a list of dicts.
#[pyfunction]
fn validate<'py>(conversation: &Bound<'py, PyAny>, settings: &str) -> PyResult<Bound<'py, PyAny>> {
    let problems = detached(conversation, settings, binding::validate)?;
    data::to_python(conversation.py(), &problems)
}

/// A request compactor kept across calls (`ctxcompact::binding::RequestCompactor`): the
/// catalog read once, each history resumed from its cache.
#[pyclass(frozen)]
struct RequestCompactor {
    inner: binding::RequestCompactor,
}

#[pymethods]
impl RequestCompactor {
    /// A compactor for `settings` (JSON text), caching at most `conversations` histories.
    #[new]
    fn new(py: Python<'_>, settings: &str, conversations: usize) -> PyResult<Self> {
        let settings = binding::request_settings(settings).map_err(raised)?;
        let inner = py
            .detach(|| binding::RequestCompactor::new(&settings, conversations))
            .map_err(raised)?;
        Ok(Self { inner })
    }

    /// What to forward for a provider request body, as the proxy decides it: `(body, record)`,
    /// `body` the bytes to send (the received ones when nothing changed), `record` the proxy
    /// ledger's record of the request.
    fn compact<'py>(
        &self,
        py: Python<'py>,
        body: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyAny>)> {
        let (forwarded, record) = py.detach(|| self.inner.compact(body));
        let bytes = PyBytes::new(py, forwarded.as_deref().unwrap_or(body));
        Ok((bytes, data::to_python(py, &record)?))
    }

    /// What `handle` names in the history of a provider request body, given back from it as
    /// the compactions of it removed it: one JSON message a line.
    fn recall(&self, py: Python<'_>, body: &[u8], handle: &str) -> PyResult<String> {
        py.detach(|| self.inner.recall(body, handle))
            .map_err(raised)
    }
}

/// The pipeline's runs on this thread so far (for the tests: a call runs it once).
#[pyfunction]
fn pipeline_runs() -> usize {
    binding::pipeline_runs()
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
    m.add_class::<RequestCompactor>()?;
    m.add_function(wrap_pyfunction!(pipeline_runs, m)?)?;
    Ok(())
}
