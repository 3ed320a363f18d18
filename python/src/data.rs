//! Python data ⇄ JSON values, with no JSON text in between.
//!
//! [`from_python`] reads what `json.dumps(obj, allow_nan=False)` accepts — dicts (string, int,
//! float, bool or `None` keys, turned into text as `json.dumps` does), lists, tuples, strings,
//! ints, finite floats, bools, `None`, and subclasses of these — into a [`Value`], refusing
//! anything else with `json.dumps`'s own wording. Nesting is limited as `serde_json` limits JSON
//! text, so data the CLI could not read from a file is refused here too.
//!
//! [`to_python`] builds Python data from a value as `json.loads` would. [`rebuild`] builds a
//! call's output the same way, except that every message the library kept as it was read is
//! the input's own Python object (the library names its input index; parse → render is the
//! identity for such a message, so the output still equals the rendered value as JSON data),
//! and each other field of a body is the input's own object when it reads as exactly the
//! output's value.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use ctxcompact::binding::SplitOutput;

/// Deepest nesting of lists and dicts read: `serde_json`'s recursion limit for JSON text (128),
/// which the CLI meets when it reads the same data from a file.
const MAX_DEPTH: usize = 128;

/// Why Python data is not JSON data, worded as `json.dumps` words it.
#[derive(Debug)]
pub(crate) struct NotJson(pub(crate) String);

/// Reads Python data into a JSON value; see the module docs for what is accepted.
pub(crate) fn from_python(object: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    read(object, MAX_DEPTH, &mut true)
}

/// Elements of a conversation's lists — the top level's, or those under each key of a
/// top-level dict — that JSON gives back differently (they hold a tuple, or a key that is not a
/// string), by the list's key (`None` for the top level), in increasing order.
#[derive(Debug, Default)]
pub(crate) struct Inexact(Vec<(Option<String>, Vec<usize>)>);

impl Inexact {
    /// Whether element `index` of the list under `key` is one of them.
    fn contains(&self, key: Option<&str>, index: usize) -> bool {
        self.0
            .iter()
            .find(|(k, _)| k.as_deref() == key)
            .is_some_and(|(_, indices)| indices.binary_search(&index).is_ok())
    }
}

/// [`from_python`] for a whole conversation, also noting its [`Inexact`] elements.
pub(crate) fn read_conversation(object: &Bound<'_, PyAny>) -> Result<(Value, Inexact), NotJson> {
    let mut inexact = Inexact::default();
    let depth = deeper(MAX_DEPTH)?;
    let value = if let Some(items) = elements(object) {
        let (values, odd) = read_elements(&items, depth)?;
        inexact.0.push((None, odd));
        Value::Array(values)
    } else if let Ok(dict) = object.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let key = key_text(&key)?;
            let value = match elements(&value) {
                Some(items) => {
                    let (values, odd) = read_elements(&items, deeper(depth)?)?;
                    inexact.0.push((Some(key.clone()), odd));
                    Value::Array(values)
                }
                None => read(&value, depth, &mut true)?,
            };
            map.insert(key, value);
        }
        Value::Object(map)
    } else {
        from_python(object)?
    };
    Ok((value, inexact))
}

/// Reads the elements of a list, with the indices of those JSON gives back differently.
fn read_elements(
    items: &[Bound<'_, PyAny>],
    depth: usize,
) -> Result<(Vec<Value>, Vec<usize>), NotJson> {
    let mut odd = Vec::new();
    let mut values = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let mut exact = true;
        values.push(read(item, depth, &mut exact)?);
        if !exact {
            odd.push(index);
        }
    }
    Ok((values, odd))
}

/// Reads `object`; `exact` turns false when JSON would give it back differently (a tuple, or a
/// dict key that is not a string).
fn read(object: &Bound<'_, PyAny>, depth: usize, exact: &mut bool) -> Result<Value, NotJson> {
    // The common types first: most of a conversation is strings, dicts and lists.
    if let Ok(text) = object.cast::<PyString>() {
        return Ok(Value::String(text_of(text)?));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        let depth = deeper(depth)?;
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            *exact &= key.cast::<PyString>().is_ok();
            map.insert(key_text(&key)?, read(&value, depth, exact)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = object.cast::<PyList>() {
        let depth = deeper(depth)?;
        return list
            .iter()
            .map(|item| read(&item, depth, exact))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = object.cast::<PyTuple>() {
        *exact = false;
        let depth = deeper(depth)?;
        return tuple
            .iter()
            .map(|item| read(&item, depth, exact))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if object.is_none() {
        return Ok(Value::Null);
    }
    // Before ints: a bool is an int in Python.
    if let Ok(flag) = object.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if object.cast::<PyInt>().is_ok() {
        return int_text(object).and_then(|text| number(&text));
    }
    if object.cast::<PyFloat>().is_ok() {
        return float_text(object).and_then(|text| number(&text));
    }
    Err(NotJson(format!(
        "Object of type {} is not JSON serializable",
        type_name(object)
    )))
}

/// The depth left below one more list or dict, or an error past [`MAX_DEPTH`].
fn deeper(depth: usize) -> Result<usize, NotJson> {
    depth
        .checked_sub(1)
        .filter(|&left| left > 0)
        .ok_or_else(|| NotJson(format!("nested deeper than {MAX_DEPTH} lists and dicts")))
}

/// A number from the text `json.dumps` writes for it, kept digit for digit as the library
/// keeps numbers (`serde_json`'s `arbitrary_precision`, which the library turns on).
fn number(text: &str) -> Result<Value, NotJson> {
    text.parse::<Number>()
        .map(Value::Number)
        .map_err(|err| NotJson(format!("{text} is not a JSON number: {err}")))
}

/// An int's text as `json.dumps` writes it: `int.__repr__`, whatever a subclass's repr says.
fn int_text(object: &Bound<'_, PyAny>) -> Result<String, NotJson> {
    if let Ok(value) = object.extract::<i64>() {
        return Ok(value.to_string());
    }
    base_repr::<PyInt>(object)
}

/// A float's text as `json.dumps` writes it: `float.__repr__`; infinities and NaN are refused,
/// as `allow_nan=False` refuses them.
fn float_text(object: &Bound<'_, PyAny>) -> Result<String, NotJson> {
    let value: f64 = object.extract().map_err(|err| python_error(object, &err))?;
    if !value.is_finite() {
        return Err(NotJson(format!(
            "Out of range float values are not JSON compliant: {value}"
        )));
    }
    base_repr::<PyFloat>(object)
}

/// `T.__repr__(object)`: the base type's repr of an instance of a subclass of it.
fn base_repr<T: pyo3::PyTypeInfo>(object: &Bound<'_, PyAny>) -> Result<String, NotJson> {
    let text = object
        .py()
        .get_type::<T>()
        .getattr("__repr__")
        .and_then(|repr| repr.call1((object,)))
        .map_err(|err| python_error(object, &err))?;
    let text = text
        .cast::<PyString>()
        .map_err(|_| NotJson("a base type's __repr__ did not return a string".into()))?;
    text_of(text)
}

/// A dict key as `json.dumps` writes it.
fn key_text(key: &Bound<'_, PyAny>) -> Result<String, NotJson> {
    if let Ok(text) = key.cast::<PyString>() {
        return text_of(text);
    }
    if key.is_none() {
        return Ok("null".into());
    }
    if let Ok(flag) = key.cast::<PyBool>() {
        return Ok(if flag.is_true() { "true" } else { "false" }.into());
    }
    if key.cast::<PyInt>().is_ok() {
        return int_text(key);
    }
    if key.cast::<PyFloat>().is_ok() {
        return float_text(key);
    }
    Err(NotJson(format!(
        "keys must be str, int, float, bool or None, not {}",
        type_name(key)
    )))
}

fn text_of(text: &Bound<'_, PyString>) -> Result<String, NotJson> {
    text.to_cow()
        .map(std::borrow::Cow::into_owned)
        .map_err(|err| python_error(text.as_any(), &err))
}

fn python_error(object: &Bound<'_, PyAny>, err: &PyErr) -> NotJson {
    NotJson(format!(
        "a value of type {} cannot be read: {err}",
        type_name(object)
    ))
}

fn type_name(object: &Bound<'_, PyAny>) -> String {
    object
        .get_type()
        .name()
        .map_or_else(|_| "?".into(), |name| name.to_string())
}

/// Builds Python data from a JSON value, as `json.loads` would.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => {
            if let Some(value) = number.as_i64() {
                value.into_pyobject(py)?.into_any()
            } else if let Some(value) = number.as_u64() {
                value.into_pyobject(py)?.into_any()
            } else if number.is_f64() {
                number
                    .as_f64()
                    .unwrap_or(f64::NAN)
                    .into_pyobject(py)?
                    .into_any()
            } else {
                // An integer beyond 64 bits or a float beyond f64, kept digit for digit: what
                // `json.loads` makes of its text.
                let text = number.as_str();
                if text.contains(['.', 'e', 'E']) {
                    py.get_type::<PyFloat>().call1((text,))?
                } else {
                    py.get_type::<PyInt>().call1((text,))?
                }
            }
        }
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Builds a call's output as Python data: `split.shell` with the output's messages in place,
/// each one `unchanged` names being element `i` of `input`'s list of messages (unless
/// `inexact` names it: it is then built as JSON gives it back), each other message the next of
/// `split.changed`, each other field of a body the input's own object when equal. The top
/// level and the list are always new.
///
/// # Errors
/// A Python error building the data, or when `input`'s list lost elements during the call.
pub(crate) fn rebuild<'py>(
    input: &Bound<'py, PyAny>,
    inexact: &Inexact,
    split: &SplitOutput,
    unchanged: &[Option<usize>],
) -> PyResult<Bound<'py, PyAny>> {
    let py = input.py();
    let source = match split.list_key {
        None => Some(input.clone()),
        Some(key) => input
            .cast::<PyDict>()
            .ok()
            .and_then(|body| body.get_item(key).ok().flatten()),
    };
    let objects = source.and_then(|list| elements(&list)).unwrap_or_default();
    let list = PyList::empty(py);
    let mut changed = split.changed.iter();
    for source in unchanged {
        let Some(index) = *source else {
            let value = changed
                .next()
                .expect("the split output holds a changed message for each not unchanged");
            list.append(to_python(py, value)?)?;
            continue;
        };
        let object = objects.get(index).ok_or_else(|| {
            PyRuntimeError::new_err("the conversation's list of messages changed during the call")
        })?;
        if inexact.contains(split.list_key, index) {
            // Built as JSON data would give it back: its value as read.
            let value = from_python(object).map_err(|NotJson(why)| {
                PyRuntimeError::new_err(format!("a message changed during the call: {why}"))
            })?;
            list.append(to_python(py, &value)?)?;
        } else {
            list.append(object)?;
        }
    }
    let (Some(key), Value::Object(shell)) = (split.list_key, &split.shell) else {
        return Ok(list.into_any());
    };
    let body = input.cast::<PyDict>().ok();
    let dict = PyDict::new(py);
    let mut keys = Keys::new(py);
    for (name, value) in shell {
        if name == key {
            dict.set_item(name, &list)?;
            continue;
        }
        let own = body.and_then(|body| body.get_item(name).ok().flatten());
        match own {
            Some(object) if equals(value, &object, &mut keys) => dict.set_item(name, object)?,
            _ => dict.set_item(name, to_python(py, value)?)?,
        }
    }
    Ok(dict.into_any())
}

/// The elements of a list or tuple; `None` for anything else.
fn elements<'py>(object: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = object.cast::<PyList>() {
        Some(list.iter().collect())
    } else if let Ok(tuple) = object.cast::<PyTuple>() {
        Some(tuple.iter().collect())
    } else {
        None
    }
}

/// Whether `object` reads (by [`from_python`]) as exactly `value`; `false` whenever that is not
/// certain (a dict with a key that is not a string, a string that cannot be encoded).
fn equals<'py>(value: &Value, object: &Bound<'py, PyAny>, keys: &mut Keys<'py>) -> bool {
    match value {
        Value::String(text) => object.cast::<PyString>().is_ok_and(|string| {
            string
                .encode_utf8()
                .is_ok_and(|bytes| bytes.as_bytes() == text.as_bytes())
        }),
        Value::Object(map) => object.cast::<PyDict>().is_ok_and(|dict| {
            // As many keys, and each of the value's keys maps to an equal item: the dict's
            // keys are then exactly the value's, all strings.
            dict.len() == map.len()
                && map.iter().all(|(key, item)| {
                    dict.get_item(keys.get(key))
                        .ok()
                        .flatten()
                        .is_some_and(|object| equals(item, &object, keys))
                })
        }),
        Value::Array(items) => {
            let Some(objects) = elements(object) else {
                return false;
            };
            objects.len() == items.len()
                && items
                    .iter()
                    .zip(&objects)
                    .all(|(item, object)| equals(item, object, keys))
        }
        Value::Null => object.is_none(),
        Value::Bool(flag) => object
            .cast::<PyBool>()
            .is_ok_and(|object| object.is_true() == *flag),
        Value::Number(number) => {
            let text = if object.cast::<PyBool>().is_ok() {
                return false;
            } else if object.cast::<PyInt>().is_ok() {
                int_text(object)
            } else if object.cast::<PyFloat>().is_ok() {
                float_text(object)
            } else {
                return false;
            };
            text.is_ok_and(|text| text == number.as_str())
        }
    }
}

/// Python strings for the dict keys [`equals`] looks up, made once per call: messages repeat a
/// handful of keys (`role`, `content`, ...) thousands of times.
struct Keys<'py> {
    py: Python<'py>,
    known: Vec<(String, Bound<'py, PyString>)>,
}

impl<'py> Keys<'py> {
    /// Distinct keys kept; past them a key's string is made for each lookup.
    const KEPT: usize = 64;

    fn new(py: Python<'py>) -> Self {
        Self {
            py,
            known: Vec::new(),
        }
    }

    fn get(&mut self, key: &str) -> Bound<'py, PyString> {
        if let Some((_, string)) = self.known.iter().find(|(known, _)| known == key) {
            return string.clone();
        }
        let string = PyString::new(self.py, key);
        if self.known.len() < Self::KEPT {
            self.known.push((key.to_owned(), string.clone()));
        }
        string
    }
}
