//! What the format files share: reading a list of messages (on two threads when long), an
//! envelope around it, content parts, tool-call arguments, and the fields errors name.

use serde_json::{Map, Value};

use super::{FieldChange, Format, Record, Sink, key, object, single};
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};
use crate::parallel;

/// Messages from which a list is read on two threads: reading a message costs about a
/// microsecond, and reading is otherwise single-threaded.
pub(super) const PARALLEL_PARSE_MESSAGES: usize = 2_000;

/// Reads each value of a list into a message with `parse(index, value)`, in order; the first
/// error in list order is the error. A large list is read on two threads, each taking half:
/// each message is read on its own.
pub(crate) fn parse_messages(
    values: Vec<Value>,
    parse: impl Fn(usize, Value) -> Result<Message> + Sync,
) -> Result<Vec<Message>> {
    let read = |values: Vec<Value>, offset: usize| {
        values
            .into_iter()
            .enumerate()
            .map(|(index, value)| parse(offset + index, value))
            .collect::<Result<Vec<_>>>()
    };
    if values.len() < PARALLEL_PARSE_MESSAGES || parallel::cores() < 2 {
        return read(values, 0);
    }
    let mut first = values;
    let second = first.split_off(first.len() / 2);
    let offset = first.len();
    let (first, second) = std::thread::scope(|scope| {
        let later = scope.spawn(|| read(second, offset));
        let first = read(first, 0);
        (
            first,
            later.join().expect("reading messages does not panic"),
        )
    });
    let mut messages = first?;
    messages.extend(second?);
    Ok(messages)
}

/// A request body's top-level object.
pub(crate) type Envelope = Map<String, Value>;

/// Splits a request body into its envelope and its list under `key`; a bare array has no
/// envelope.
pub(crate) fn split_envelope(value: Value, key: &str) -> Result<(Option<Envelope>, Vec<Value>)> {
    match value {
        Value::Array(messages) => Ok((None, messages)),
        Value::Object(mut envelope) => {
            let messages = match envelope.get_mut(key) {
                Some(Value::Array(messages)) => std::mem::take(messages),
                Some(other) => {
                    return Err(Error::top(
                        key,
                        format!("expected an array, found {}", kind(other)),
                    ));
                }
                None => {
                    return Err(Error::top(
                        key,
                        format!("missing: the object has no `{key}`"),
                    ));
                }
            };
            Ok((Some(envelope), messages))
        }
        other => {
            let noun = match key {
                "input" => "items",
                "contents" => "contents",
                _ => "messages",
            };
            Err(Error::top(
                "top level",
                format!(
                    "expected an object with `{key}` or an array of {noun}, found {}",
                    kind(&other)
                ),
            ))
        }
    }
}

/// An API format's reading of a request body's list, its envelope split off: the system prompt
/// (taken out of the envelope, in formats that hold it there) and the messages.
pub(crate) type ReadList =
    fn(&mut Option<Envelope>, Vec<Value>) -> Result<(Option<Message>, Vec<Message>)>;

/// Reads an API request body, the one JSON document of `records`, in `format`.
pub(crate) fn read_body(
    records: Vec<Record>,
    format: Format,
    read: ReadList,
) -> Result<Conversation> {
    let (envelope, list) = split_envelope(single(records, format)?, format.list_key())?;
    read_list(format, envelope, list, read)
}

/// Reads the list split off a request body in `format` with `read`, the rest of the body kept
/// verbatim as the envelope; a session log's reader adds its lines and repairs.
pub(crate) fn read_list(
    format: Format,
    mut envelope: Option<Envelope>,
    list: Vec<Value>,
    read: ReadList,
) -> Result<Conversation> {
    let (system, messages) = read(&mut envelope, list)?;
    Ok(Conversation {
        format,
        system,
        messages,
        envelope,
        lines: Vec::new(),
        repairs: Vec::new(),
    })
}

/// The fields of `value`, message `index` of a list (`noun` names it in the error: a message,
/// an item, a content), refused when it is not an object.
pub(crate) fn fields_of(index: usize, noun: &str, value: Value) -> Result<Map<String, Value>> {
    match value {
        Value::Object(fields) => Ok(fields),
        other => Err(Error::field(
            index,
            noun,
            format!("expected an object, found {}", kind(&other)),
        )),
    }
}

/// The role named `name` of message `index`: one of `roles` (each wire name with the role it
/// reads as), or refused naming them in order.
pub(crate) fn known_role(index: usize, name: &str, roles: &[(&str, Role)]) -> Result<Role> {
    if let Some(&(_, role)) = roles.iter().find(|(known, _)| *known == name) {
        return Ok(role);
    }
    let names: Vec<&str> = roles.iter().map(|(known, _)| *known).collect();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    };
    Err(Error::field(
        index,
        "role",
        format!("unknown role `{name}` (expected {expected})"),
    ))
}

/// The required `role` of message `index`, one of `roles` (see [`known_role`]).
pub(crate) fn role_of(
    fields: &Map<String, Value>,
    index: usize,
    roles: &[(&str, Role)],
) -> Result<Role> {
    known_role(index, &required_str(fields, "role", index, "role")?, roles)
}

/// The required `content` of message `index`, read with [`parse_content`]: absent or null is
/// refused, `what` naming what its array holds (parts, blocks).
pub(crate) fn required_content(
    fields: &mut Map<String, Value>,
    index: usize,
    what: &str,
    special: impl FnMut(usize, &mut Map<String, Value>) -> Result<Option<Part>>,
) -> Result<(Vec<Part>, Layout)> {
    let (parts, layout) = parse_content(fields.get_mut("content"), index, "content", special)?;
    if matches!(layout, Layout::Absent | Layout::Null) {
        return Err(Error::field(
            index,
            "content",
            format!("missing: expected a string or an array of {what}"),
        ));
    }
    Ok((parts, layout))
}

/// The list under `key` of a single JSON document (the envelope's or a bare array), for
/// clues; `None` when the input is not one document.
pub(crate) fn list<'a>(
    records: &'a [Record],
    key: &str,
) -> Option<(Option<&'a Envelope>, &'a [Value])> {
    let [record] = records else { return None };
    match &record.value {
        Value::Array(items) => Some((None, items)),
        Value::Object(envelope) => match envelope.get(key) {
            Some(Value::Array(items)) => Some((Some(envelope), items)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a field is present with a value that says something (not null, not empty).
pub(crate) fn has_value(object: &Map<String, Value>, key: &str) -> bool {
    match object.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::String(text)) => !text.is_empty(),
        Some(_) => true,
    }
}

/// For a conversation read from records: names the record's line in a location that names a
/// message of the conversation built from them.
pub(crate) fn at_lines(err: Error, lines: &[usize]) -> Error {
    match err {
        Error::Malformed { mut at, problem } => {
            if at.line.is_none() {
                at.line = at.message.and_then(|m| lines.get(m).copied());
            }
            Error::Malformed { at, problem }
        }
        other => other,
    }
}

/// A message built from a session log's records, with the line of the record it starts at.
pub(crate) struct Built {
    pub(crate) value: Value,
    pub(crate) line: usize,
}

/// Reads messages built from a session log with `read`, the reader of the API format they are
/// in, as the list of a new request body in `format`; names the log line in errors.
pub(crate) fn from_log(built: Vec<Built>, format: Format, read: ReadList) -> Result<Conversation> {
    let lines: Vec<usize> = built.iter().map(|b| b.line).collect();
    let messages: Vec<Value> = built.into_iter().map(|b| b.value).collect();
    let mut envelope = Envelope::new();
    envelope.insert(format.list_key().into(), Value::Array(Vec::new()));
    let mut conversation =
        read_list(format, Some(envelope), messages, read).map_err(|err| at_lines(err, &lines))?;
    conversation.lines = lines;
    Ok(conversation)
}

/// The value of `key` in a record, as a string.
pub(crate) fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A short name for a JSON value's type, for error messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads a content field that is a string, null, absent or an array of blocks, taking its text
/// out of the wire value (a `null` stays in its place, so rendering writes the field back where
/// it was) so that no text is held twice. Text blocks (`{"type": "text", "text": …}`) become
/// [`Part::Text`]; `special` may claim other block types; anything else is kept as
/// [`Part::Opaque`].
pub(crate) fn parse_content(
    content: Option<&mut Value>,
    index: usize,
    field: &str,
    mut special: impl FnMut(usize, &mut Map<String, Value>) -> Result<Option<Part>>,
) -> Result<(Vec<Part>, Layout)> {
    let content = match content {
        None => return Ok((Vec::new(), Layout::Absent)),
        Some(content) => content.take(),
    };
    let blocks = match content {
        Value::Null => return Ok((Vec::new(), Layout::Null)),
        Value::String(text) => return Ok((vec![Part::text(text)], Layout::Text)),
        Value::Array(blocks) => blocks,
        other => {
            return Err(Error::field(
                index,
                field,
                format!(
                    "expected a string, null or an array of blocks, found {}",
                    kind(&other)
                ),
            ));
        }
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for (b, block) in blocks.into_iter().enumerate() {
        let Value::Object(mut map) = block else {
            return Err(Error::field(
                index,
                format!("{field}[{b}]"),
                format!("expected a content block object, found {}", kind(&block)),
            ));
        };
        let part = match map.get("type") {
            Some(Value::String(t)) if t == "text" => match map.get_mut("text").map(Value::take) {
                Some(Value::String(text)) => Part::Text { text, extra: map },
                other => {
                    return Err(Error::field(
                        index,
                        format!("{field}[{b}].text"),
                        format!(
                            "expected a string, found {}",
                            other.as_ref().map_or("nothing", kind)
                        ),
                    ));
                }
            },
            Some(Value::String(_)) => match special(b, &mut map)? {
                Some(part) => part,
                None => Part::Opaque(Value::Object(map)),
            },
            other => {
                return Err(Error::field(
                    index,
                    format!("{field}[{b}].type"),
                    format!(
                        "expected a block type string, found {}",
                        other.map_or("nothing", kind)
                    ),
                ));
            }
        };
        parts.push(part);
    }
    Ok((parts, Layout::Blocks))
}

/// Whether content parts are left out: the field was absent and stays empty.
pub(crate) fn content_absent<'a>(
    mut parts: impl Iterator<Item = &'a Part>,
    layout: Layout,
) -> bool {
    layout == Layout::Absent && parts.next().is_none()
}

/// Writes content parts back in `layout`, as a string when they are plain text and the layout
/// allows it, else as blocks; `absent` writes what stands for them when [`content_absent`].
/// Text and opaque parts are written here; `write_other` writes the format's own blocks (calls,
/// results). The parts are walked rather than collected.
pub(crate) fn write_content<'a>(
    out: &mut dyn Sink,
    parts: impl Iterator<Item = &'a Part> + Clone,
    layout: Layout,
    write_other: impl Fn(&mut dyn Sink, &'a Part),
    absent: impl FnOnce(&mut dyn Sink),
) {
    let empty = parts.clone().next().is_none();
    match layout {
        Layout::Absent if empty => absent(out),
        Layout::Null if empty => out.null(),
        Layout::Text | Layout::Absent | Layout::Null if is_plain_text(parts.clone()) => {
            // One text is written from the conversation; several are joined.
            let mut first = parts.clone();
            if let (Some(Part::Text { text, .. }), None) = (first.next(), first.next()) {
                return out.str(text);
            }
            let mut text = String::new();
            for part in parts {
                if let Part::Text { text: t, .. } = part {
                    text.push_str(t);
                }
            }
            out.str(&text);
        }
        _ => {
            out.begin_array();
            for part in parts {
                match part {
                    Part::Text { text, extra } => object(
                        out,
                        Some(extra),
                        &[
                            (key!("type"), FieldChange::Default),
                            (key!("text"), FieldChange::Set),
                        ],
                        |out, key| match key {
                            "type" => out.str("text"),
                            _ => out.str(text),
                        },
                    ),
                    Part::Opaque(value) => out.value(value),
                    other => write_other(out, other),
                }
            }
            out.end_array();
        }
    }
}

/// Writes a text part as a block whose one field set is `text` (Bedrock's and Gemini's text
/// blocks have no type).
pub(crate) fn write_text_block(out: &mut dyn Sink, text: &str, extra: &Map<String, Value>) {
    object(
        out,
        Some(extra),
        &[(key!("text"), FieldChange::Set)],
        |out, _| out.str(text),
    );
}

/// Writes a system prompt held outside the list as its content, `null` when it has none.
pub(crate) fn write_system_content(system: &Message, out: &mut dyn Sink) {
    let none = |out: &mut dyn Sink| out.null();
    write_content(
        out,
        system.parts.iter(),
        system.layout,
        |out, _| none(out),
        none,
    );
}

/// Writes a message as its wire fields with its parts in `content` (`[]` when the field was
/// absent); `write_other` writes the format's own blocks, as in [`write_content`].
pub(crate) fn write_content_field(
    message: &Message,
    out: &mut dyn Sink,
    write_other: impl Fn(&mut dyn Sink, &Part),
) {
    object(
        out,
        Some(&message.extra),
        &[(key!("content"), FieldChange::Set)],
        |out, _| {
            let empty = |out: &mut dyn Sink| {
                out.begin_array();
                out.end_array();
            };
            write_content(
                out,
                message.parts.iter(),
                message.layout,
                &write_other,
                empty,
            );
        },
    );
}

/// Whether parts can be written as a bare string: text parts only, with no wire block fields.
fn is_plain_text<'a>(mut parts: impl Iterator<Item = &'a Part>) -> bool {
    parts.all(|part| matches!(part, Part::Text { extra, .. } if extra.is_empty()))
}

/// Writes tool-call arguments as formats with string arguments write them: a string is kept,
/// anything else is encoded as JSON text.
pub(crate) fn write_arguments_string(out: &mut dyn Sink, arguments: &Value) {
    match arguments {
        Value::String(_) => out.value(arguments),
        other => out.str(&other.to_string()),
    }
}

/// Reads a required string field of a wire object.
pub(crate) fn required_str(
    map: &Map<String, Value>,
    key: &str,
    index: usize,
    path: &str,
) -> Result<String> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Error::field(
            index,
            path,
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err(Error::field(index, path, "missing")),
    }
}
