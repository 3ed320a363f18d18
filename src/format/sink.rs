//! A message as a format writes it: straight into a [`Sink`], pretty-printed bytes
//! ([`super::Pretty`]) or an owned `Value` ([`to_value`]).
//!
//! Rendering writes the interpreted fields of a message back into its wire object. Building that
//! object first, as a `Value` or as a tree borrowing from the message, only to walk it once and
//! drop it, costs more than writing it: the formats write each message as they walk it. A wire
//! object is its fields as read with the fields rendering changes ([`object`]), in the order
//! `serde_json::Map` (with `preserve_order`) would give them after the same inserts and removals.

use serde_json::{Map, Value};

/// Where a format writes JSON, one value at a time: a value in an array, or after a key.
pub(crate) trait Sink {
    /// Writes `null`.
    fn null(&mut self);
    /// Writes `true` or `false`.
    fn bool(&mut self, value: bool);
    /// Writes a string.
    fn str(&mut self, text: &str);
    /// Writes a value of the conversation as it was read.
    fn value(&mut self, value: &Value);
    /// Opens an array; its values follow.
    fn begin_array(&mut self);
    /// Closes the array opened last.
    fn end_array(&mut self);
    /// Opens an object; its keys, each followed by its value, follow.
    fn begin_object(&mut self);
    /// Writes the key of the object's next field.
    fn key(&mut self, key: &str);
    /// Writes a key known when the program is built as the key of the object's next field.
    fn fixed_key(&mut self, key: &Key) {
        self.key(key.name);
    }
    /// Closes the object opened last.
    fn end_object(&mut self);
}

/// Longest key a [`Key`] holds, in bytes as written: quoted, then `: `.
const KEY_BYTES: usize = 24;

/// A key known when the program is built (a field of a wire object that rendering writes), with
/// the bytes pretty-printed JSON writes for it before its value: written with one copy of
/// constant length, cut to its length after.
pub(crate) struct Key {
    pub(crate) name: &'static str,
    /// `"name": `, zeros after.
    pub(crate) written: [u8; KEY_BYTES],
    /// The length of `"name": `.
    pub(crate) len: usize,
}

impl Key {
    /// The key `name`, which has no byte JSON escapes (a build error otherwise).
    pub(crate) const fn new(name: &'static str) -> Self {
        let bytes = name.as_bytes();
        let len = bytes.len() + 4;
        assert!(len <= KEY_BYTES, "a key of at most KEY_BYTES - 4 bytes");
        let mut written = [0; KEY_BYTES];
        written[0] = b'"';
        let mut at = 0;
        while at < bytes.len() {
            let byte = bytes[at];
            assert!(
                byte >= 0x20 && byte != b'"' && byte != b'\\',
                "a key JSON writes as it is"
            );
            written[at + 1] = byte;
            at += 1;
        }
        written[len - 3] = b'"';
        written[len - 2] = b':';
        written[len - 1] = b' ';
        Key { name, written, len }
    }
}

/// The [`Key`] named by a string literal, made when the program is built.
macro_rules! key {
    ($name:literal) => {
        const { &$crate::format::Key::new($name) }
    };
}
pub(crate) use key;

/// What rendering does with a field of a wire object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FieldChange {
    /// Writes it anew: in its place when read, else at the end.
    Set,
    /// Writes it anew at the end when it was not read (as read otherwise).
    Default,
    /// Leaves it out.
    Remove,
    /// Leaves it as read (or absent).
    Keep,
}

impl FieldChange {
    /// [`FieldChange::Set`] when `set`, else [`FieldChange::Keep`].
    pub(crate) fn set_if(set: bool) -> Self {
        if set {
            FieldChange::Set
        } else {
            FieldChange::Keep
        }
    }

    /// [`FieldChange::Set`] when `set`, else [`FieldChange::Remove`].
    pub(crate) fn set_or_remove(set: bool) -> Self {
        if set {
            FieldChange::Set
        } else {
            FieldChange::Remove
        }
    }
}

/// Writes a wire object: the fields `read` in order, those `changes` name changed, then the
/// fields set that were not read, in the order of `changes`. `set` writes the value of the field
/// it is given the key of.
pub(crate) fn object(
    out: &mut dyn Sink,
    read: Option<&Map<String, Value>>,
    changes: &[(&Key, FieldChange)],
    mut set: impl FnMut(&mut dyn Sink, &str),
) {
    out.begin_object();
    // The changes whose field was read, by their place in `changes`.
    let mut found = 0_u32;
    for (key, value) in read.into_iter().flatten() {
        let Some(at) = changes.iter().position(|(k, _)| k.name == key) else {
            out.key(key);
            out.value(value);
            continue;
        };
        found |= 1 << at;
        let (fixed, change) = changes[at];
        match change {
            FieldChange::Set => {
                out.fixed_key(fixed);
                set(out, key);
            }
            FieldChange::Remove => {}
            FieldChange::Default | FieldChange::Keep => {
                out.fixed_key(fixed);
                out.value(value);
            }
        }
    }
    for (at, &(key, change)) in changes.iter().enumerate() {
        if found & 1 << at == 0 && matches!(change, FieldChange::Set | FieldChange::Default) {
            out.fixed_key(key);
            set(out, key.name);
        }
    }
    out.end_object();
}

/// The object under `key` of a wire block, when it is one: read to write a call or result back
/// into.
pub(crate) fn nested<'a>(
    block: &'a Map<String, Value>,
    key: &str,
) -> Option<&'a Map<String, Value>> {
    block.get(key).and_then(Value::as_object)
}

/// Whether `read` has a field `key`. A wire object has a few fields: looking at each costs
/// less than hashing the key.
pub(crate) fn has(read: Option<&Map<String, Value>>, key: &str) -> bool {
    read.is_some_and(|map| map.keys().any(|k| k == key))
}

/// The owned JSON value `write` writes.
pub(crate) fn to_value(write: impl FnOnce(&mut dyn Sink)) -> Value {
    let mut builder = Builder::default();
    write(&mut builder);
    builder.done.expect("a writer writes one value")
}

/// A [`Sink`] building an owned value.
#[derive(Default)]
struct Builder {
    /// The arrays and objects open, innermost last, with an object's key waiting for its value.
    open: Vec<(Value, Option<String>)>,
    /// The value written, once whole.
    done: Option<Value>,
}

impl Builder {
    fn put(&mut self, value: Value) {
        match self.open.last_mut() {
            None => self.done = Some(value),
            Some((Value::Array(items), _)) => items.push(value),
            Some((Value::Object(map), key)) => {
                map.insert(key.take().expect("a key before its value"), value);
            }
            Some(_) => unreachable!("only arrays and objects are open"),
        }
    }

    fn end(&mut self) {
        let (value, _) = self.open.pop().expect("an open array or object");
        self.put(value);
    }
}

impl Sink for Builder {
    fn null(&mut self) {
        self.put(Value::Null);
    }

    fn bool(&mut self, value: bool) {
        self.put(Value::Bool(value));
    }

    fn str(&mut self, text: &str) {
        self.put(Value::String(text.to_owned()));
    }

    fn value(&mut self, value: &Value) {
        self.put(value.clone());
    }

    fn begin_array(&mut self) {
        self.open.push((Value::Array(Vec::new()), None));
    }

    fn end_array(&mut self) {
        self.end();
    }

    fn begin_object(&mut self) {
        self.open.push((Value::Object(Map::new()), None));
    }

    fn key(&mut self, key: &str) {
        if let Some((_, waiting)) = self.open.last_mut() {
            *waiting = Some(key.to_owned());
        }
    }

    fn end_object(&mut self) {
        self.end();
    }
}
