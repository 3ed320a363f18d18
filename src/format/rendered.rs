//! A message as a format writes it, borrowing from the conversation.
//!
//! Rendering writes the interpreted fields of a message back into its wire object. Building that
//! object as an owned `Value` would copy every field the message kept (keys and values) and every
//! text, only to serialize the copy and drop it. A [`Rendered`] tree instead points into the
//! message and owns only what rendering makes (joined text, encoded arguments), and is written
//! as the very bytes the owned value would be ([`super::pretty`]): an [`Object`] keeps its
//! fields in order with the insert and remove semantics of `serde_json::Map` (with
//! `preserve_order`), so the key order is the one the owned value would have had.

use serde_json::{Map, Value};

/// A JSON value as a format writes it: parts of the conversation by reference, what rendering
/// makes by value.
#[derive(Debug)]
pub(crate) enum Rendered<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A value of the conversation, written as it was read.
    Value(&'a Value),
    /// A string of the conversation (a text, an id, a name) or a constant.
    Str(&'a str),
    /// A string rendering made (joined text, arguments encoded as a string).
    String(String),
    /// A value rendering made (arguments or a result parsed from their text).
    Parsed(Box<Value>),
    /// An array.
    Array(Vec<Rendered<'a>>),
    /// An object.
    Object(Object<'a>),
}

/// A JSON object being rendered: its fields in order, keys and values borrowed where they can be.
#[derive(Debug, Default)]
pub(crate) struct Object<'a> {
    fields: Vec<(&'a str, Rendered<'a>)>,
}

/// Room for the fields rendering adds to a wire object (content, type, id, …) without growing.
const ADDED_FIELDS: usize = 3;

impl<'a> Object<'a> {
    /// The fields of a wire object as read, in order, each written as it was read.
    pub(crate) fn from_map(map: &'a Map<String, Value>) -> Self {
        let mut fields = Vec::with_capacity(map.len() + ADDED_FIELDS);
        fields.extend(
            map.iter()
                .map(|(key, value)| (key.as_str(), Rendered::Value(value))),
        );
        Self { fields }
    }

    /// Whether the object has a field `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.field(key).is_some()
    }

    /// The value of field `key`, if the object has it (a look along its few fields, no hashing).
    pub(crate) fn field(&self, key: &str) -> Option<&Rendered<'a>> {
        self.fields
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, value)| value)
    }

    /// Sets field `key`: in its place when the object has it, else at the end (as
    /// `Map::insert` does).
    pub(crate) fn insert(&mut self, key: &'a str, value: Rendered<'a>) {
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => *slot = value,
            None => self.fields.push((key, value)),
        }
    }

    /// The fields in order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&'a str, &Rendered<'a>)> {
        self.fields.iter().map(|(key, value)| (*key, value))
    }

    /// Removes field `key` if present, keeping the order of the others (as `Map::shift_remove`
    /// does).
    pub(crate) fn shift_remove(&mut self, key: &str) {
        if let Some(at) = self.fields.iter().position(|(k, _)| *k == key) {
            self.fields.remove(at);
        }
    }
}

impl Rendered<'_> {
    /// The owned JSON value this writes.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Rendered::Null => Value::Null,
            Rendered::Bool(value) => Value::Bool(value),
            Rendered::Value(value) => value.clone(),
            Rendered::Str(text) => Value::String(text.to_owned()),
            Rendered::String(text) => Value::String(text),
            Rendered::Parsed(value) => *value,
            Rendered::Array(items) => {
                Value::Array(items.into_iter().map(Rendered::into_value).collect())
            }
            Rendered::Object(object) => Value::Object(
                object
                    .fields
                    .into_iter()
                    .map(|(key, value)| (key.to_owned(), value.into_value()))
                    .collect(),
            ),
        }
    }
}
