//! Python data ⇄ JSON values, with no JSON text in between.
//!
//! [`from_python`] reads what `json.dumps(obj, allow_nan=False)` accepts — dicts (string, int,
//! float, bool or `None` keys, turned into text as `json.dumps` does), lists, tuples, strings,
//! ints, finite floats, bools, `None`, and subclasses of these — into a [`Value`], refusing
//! anything else with `json.dumps`'s own wording. Nesting is limited as `serde_json` limits JSON
//! text, so data the CLI could not read from a file is refused here too.
//!
//! [`to_python`] builds Python data from a value as `json.loads` would. [`rebuild`] builds a
//! call's output from its rendered value the same way, except that every message the call left
//! as it was is the input's own Python object, found by value: an element of the output's lists
//! of messages is the first input element after the previous match that has its [`Prints`]
//! fingerprint and reads as exactly that element. Reuse is decided by that full comparison,
//! never by position or fingerprint alone, so the output always equals the rendered value as
//! JSON data.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deepest nesting of lists and dicts read: `serde_json`'s recursion limit for JSON text (128),
/// which the CLI meets when it reads the same data from a file.
const MAX_DEPTH: usize = 128;

/// Bytes of a string's head and of its tail that a fingerprint reads: enough to tell messages
/// apart in practice, while a fingerprint costs the same for any length (equality is checked
/// in full afterwards).
const SAMPLE: usize = 32;

/// Why Python data is not JSON data, worded as `json.dumps` words it.
#[derive(Debug)]
pub(crate) struct NotJson(pub(crate) String);

/// Reads Python data into a JSON value; see the module docs for what is accepted.
pub(crate) fn from_python(object: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    read(object, MAX_DEPTH)
}

fn read(object: &Bound<'_, PyAny>, depth: usize) -> Result<Value, NotJson> {
    // The common types first: most of a conversation is strings, dicts and lists.
    if let Ok(text) = object.cast::<PyString>() {
        return Ok(Value::String(text_of(text)?));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        let depth = deeper(depth)?;
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            map.insert(key_text(&key)?, read(&value, depth)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = object.cast::<PyList>() {
        let depth = deeper(depth)?;
        return list
            .iter()
            .map(|item| read(&item, depth))
            .collect::<Result<_, _>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = object.cast::<PyTuple>() {
        let depth = deeper(depth)?;
        return tuple
            .iter()
            .map(|item| read(&item, depth))
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

/// Fingerprints of the elements of the input's lists of messages: its own elements when it is a
/// list, those of each list under a key when it is a dict. Taken before the value is handed to
/// the library, which consumes it.
pub(crate) struct Prints {
    /// The top level's elements, when it is a list.
    top: Option<Vec<u64>>,
    /// Each list under a key of a top-level dict, by key, in the dict's order.
    keys: Vec<(String, Vec<u64>)>,
}

impl Prints {
    /// The fingerprints of `input`'s lists.
    pub(crate) fn of(input: &Value) -> Self {
        let prints = |items: &[Value]| items.iter().map(fingerprint).collect();
        match input {
            Value::Array(items) => Self {
                top: Some(prints(items)),
                keys: Vec::new(),
            },
            Value::Object(map) => Self {
                top: None,
                keys: map
                    .iter()
                    .filter_map(|(key, value)| match value {
                        Value::Array(items) => Some((key.clone(), prints(items))),
                        _ => None,
                    })
                    .collect(),
            },
            _ => Self {
                top: None,
                keys: Vec::new(),
            },
        }
    }

    fn key(&self, key: &str) -> Option<&[u64]> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, prints)| prints.as_slice())
    }
}

/// Builds a call's output from its rendered value `after`, reusing the objects of `input`
/// (fingerprinted in `prints` when it was read) where they are equal to what they stand for.
/// The top level is always a new list or dict; under a dict, each key's value is reused when
/// equal, and each list (of messages) is a new list whose elements are reused when equal.
pub(crate) fn rebuild<'py>(
    input: &Bound<'py, PyAny>,
    prints: &Prints,
    after: &Value,
) -> PyResult<Bound<'py, PyAny>> {
    let py = input.py();
    match after {
        Value::Array(items) => match &prints.top {
            Some(prints) => elements(input, prints, items),
            None => to_python(py, after),
        },
        Value::Object(map) => {
            let Ok(input) = input.cast::<PyDict>() else {
                return to_python(py, after);
            };
            let dict = PyDict::new(py);
            let mut keys = Keys::new(py);
            for (key, value) in map {
                let item = match (input.get_item(key)?, value, prints.key(key)) {
                    (Some(object), Value::Array(items), Some(prints)) => {
                        elements(&object, prints, items)?
                    }
                    (Some(object), value, _) if equals(value, &object, &mut keys) => object,
                    _ => to_python(py, value)?,
                };
                dict.set_item(key, item)?;
            }
            Ok(dict.into_any())
        }
        _ => to_python(py, after),
    }
}

/// A new list of `after`: each element the first element of `input` after the previous match
/// that has its fingerprint and equals it, else built anew. `prints` are `input`'s elements'
/// fingerprints as read; when `input` no longer has that many elements, all are built anew.
fn elements<'py>(
    input: &Bound<'py, PyAny>,
    prints: &[u64],
    after: &[Value],
) -> PyResult<Bound<'py, PyAny>> {
    let py = input.py();
    let objects: Vec<Bound<'py, PyAny>> = if let Ok(list) = input.cast::<PyList>() {
        list.iter().collect()
    } else if let Ok(tuple) = input.cast::<PyTuple>() {
        tuple.iter().collect()
    } else {
        Vec::new()
    };
    let usable = objects.len() == prints.len();
    // Looked up by fingerprint only, never iterated: its order cannot reach the output.
    let mut by_print: HashMap<u64, Vec<usize>> = HashMap::new();
    if usable {
        by_print.reserve(prints.len());
        for (index, &print) in prints.iter().enumerate() {
            by_print.entry(print).or_default().push(index);
        }
    }
    let list = PyList::empty(py);
    let mut keys = Keys::new(py);
    let mut next = 0;
    for value in after {
        let found = by_print.get(&fingerprint(value)).and_then(|candidates| {
            let from = candidates.partition_point(|&index| index < next);
            candidates[from..]
                .iter()
                .copied()
                .find(|&index| equals(value, &objects[index], &mut keys))
        });
        match found {
            Some(index) => {
                list.append(&objects[index])?;
                next = index + 1;
            }
            None => list.append(to_python(py, value)?)?,
        }
    }
    Ok(list.into_any())
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
            let objects: Vec<Bound<'py, PyAny>> = if let Ok(list) = object.cast::<PyList>() {
                list.iter().collect()
            } else if let Ok(tuple) = object.cast::<PyTuple>() {
                tuple.iter().collect()
            } else {
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

/// A hash of a message's top level — its keys, the length, head and tail of each string, each
/// scalar, the length of each list and dict — that costs the same whatever the message holds.
/// Equal values with their keys in the same order have equal fingerprints, and unequal
/// messages seldom do (equality is checked in full before any reuse; a value whose keys were
/// reordered is built anew, in its new order).
fn fingerprint(value: &Value) -> u64 {
    let mut hasher = Fold::default();
    match value {
        Value::Object(map) => {
            (5u8, map.len()).hash(&mut hasher);
            for (key, item) in map {
                sample(key, &mut hasher);
                feed(item, &mut hasher);
            }
        }
        Value::Array(items) => {
            (4u8, items.len()).hash(&mut hasher);
            for item in items {
                feed(item, &mut hasher);
            }
        }
        scalar => feed(scalar, &mut hasher),
    }
    hasher.finish()
}

/// Feeds one value into a fingerprint: a scalar, a string's sample, or a container's length.
fn feed(value: &Value, hasher: &mut Fold) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(flag) => (1u8, flag).hash(hasher),
        Value::Number(number) => (2u8, number).hash(hasher),
        Value::String(text) => {
            3u8.hash(hasher);
            sample(text, hasher);
        }
        Value::Array(items) => (4u8, items.len()).hash(hasher),
        Value::Object(map) => (5u8, map.len()).hash(hasher),
    }
}

fn sample(text: &str, hasher: &mut Fold) {
    let bytes = text.as_bytes();
    bytes.len().hash(hasher);
    if bytes.len() <= 2 * SAMPLE {
        bytes.hash(hasher);
    } else {
        bytes[..SAMPLE].hash(hasher);
        bytes[bytes.len() - SAMPLE..].hash(hasher);
    }
}

/// A fast, fixed hasher for fingerprints: each 8-byte word is folded in with a rotate, a xor
/// and a multiply by a large odd constant (the golden-ratio constant of Fibonacci hashing).
/// Its quality only decides how often two messages share a fingerprint, never what is reused.
#[derive(Default)]
struct Fold(u64);

impl Fold {
    const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::MULTIPLIER);
    }
}

impl Hasher for Fold {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buffer = [0; 8];
            buffer.copy_from_slice(word);
            self.add(u64::from_le_bytes(buffer));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut buffer = [0; 8];
            buffer[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buffer));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.add(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
