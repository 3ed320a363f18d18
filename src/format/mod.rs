//! Wire formats: reading bytes into a [`Conversation`] and writing it back.
//!
//! Two formats are supported, OpenAI Chat Completions and Anthropic Messages. Output is always
//! written in the input's format, and every field the engine does not interpret passes through
//! unchanged, in its original key order.

mod anthropic;
mod openai;

use serde_json::{Map, Value};

use crate::conversation::{Conversation, Layout, Part};
use crate::error::{Error, Result};

/// A wire format of chat messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// OpenAI Chat Completions (`messages` with `tool_calls` and `role: "tool"`).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages (top-level `system`, `tool_use` and `tool_result` blocks).
    Anthropic,
}

impl Format {
    /// The format's name as the CLI spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// Reads a conversation from JSON bytes; `format` of `None` detects it from the shape.
///
/// # Errors
/// [`Error::Json`] when the bytes are not JSON, [`Error::UnknownFormat`] when detection is
/// unsure, [`Error::Malformed`] naming the message and field when a field has the wrong shape.
pub fn parse(bytes: &[u8], format: Option<Format>) -> Result<Conversation> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::empty());
    }
    let value: Value = serde_json::from_slice(bytes).map_err(Error::from_json)?;
    parse_value(value, format)
}

/// Reads a conversation from a reader, without holding its bytes and the parsed JSON at once;
/// see [`parse`].
///
/// # Errors
/// As [`parse`]; a read error is reported as [`Error::Json`] at the position reached.
pub fn parse_reader(reader: impl std::io::Read, format: Option<Format>) -> Result<Conversation> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(reader);
    loop {
        let buffer = reader.fill_buf().map_err(|source| Error::Read { source })?;
        if buffer.is_empty() {
            return Err(Error::empty());
        }
        let blank = buffer
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        if blank < buffer.len() {
            break;
        }
        reader.consume(blank);
    }
    let value: Value = serde_json::from_reader(reader).map_err(Error::from_json)?;
    parse_value(value, format)
}

/// Reads a conversation from a JSON value; see [`parse`].
///
/// # Errors
/// As [`parse`], less the JSON syntax errors.
pub fn parse_value(value: Value, format: Option<Format>) -> Result<Conversation> {
    let (envelope, messages) = split_envelope(value)?;
    let format = match format {
        Some(format) => format,
        None => detect(envelope.as_ref(), &messages)?,
    };
    match format {
        Format::OpenAi => openai::parse(envelope, messages),
        Format::Anthropic => anthropic::parse(envelope, messages),
    }
}

/// Writes a conversation back as a JSON value in its own format.
pub fn render(conversation: &Conversation) -> Value {
    let messages: Vec<Value> = conversation
        .messages
        .iter()
        .map(|m| render_message(conversation.format, m))
        .collect();
    let Some(envelope) = &conversation.envelope else {
        return Value::Array(messages);
    };
    let mut envelope = envelope.clone();
    envelope.insert("messages".into(), Value::Array(messages));
    if let Some(system) = &conversation.system {
        envelope.insert("system".into(), anthropic::render_system(system));
    }
    Value::Object(envelope)
}

/// Writes a conversation back as pretty-printed JSON bytes, ending in a newline.
///
/// # Panics
/// Never: writing to a `Vec` cannot fail.
pub fn render_bytes(conversation: &Conversation) -> Vec<u8> {
    let mut bytes = Vec::new();
    write(conversation, &mut bytes).expect("writing to a Vec cannot fail");
    bytes
}

/// Writes a conversation as pretty-printed JSON, ending in a newline, to `writer`, rendering
/// one message at a time so that no second copy of the whole conversation is built.
///
/// # Errors
/// Whatever `writer` returns.
pub fn write(conversation: &Conversation, mut writer: impl std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut writer, &Rendered(conversation))?;
    writer.write_all(b"\n")
}

/// A conversation that serializes as its wire JSON, message by message.
struct Rendered<'a>(&'a Conversation);

/// The messages of a conversation, serialized one rendered message at a time.
struct RenderedMessages<'a>(&'a Conversation);

impl serde::Serialize for Rendered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let conversation = self.0;
        let Some(envelope) = &conversation.envelope else {
            return RenderedMessages(conversation).serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(envelope.len()))?;
        for (key, value) in envelope {
            match (key.as_str(), &conversation.system) {
                ("messages", _) => map.serialize_entry(key, &RenderedMessages(conversation))?,
                ("system", Some(system)) => {
                    map.serialize_entry(key, &anthropic::render_system(system))?;
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        if conversation.system.is_some() && !envelope.contains_key("system") {
            let system = conversation.system.as_ref().map(anthropic::render_system);
            map.serialize_entry("system", &system)?;
        }
        map.end()
    }
}

impl serde::Serialize for RenderedMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let conversation = self.0;
        let mut seq = serializer.serialize_seq(Some(conversation.messages.len()))?;
        for message in &conversation.messages {
            seq.serialize_element(&render_message(conversation.format, message))?;
        }
        seq.end()
    }
}

/// Writes one message back in `format`.
fn render_message(format: Format, message: &crate::conversation::Message) -> Value {
    match format {
        Format::OpenAi => openai::render_message(message),
        Format::Anthropic => anthropic::render_message(message),
    }
}

/// A request body's top-level object.
type Envelope = Map<String, Value>;

/// Splits a request body into its envelope and its messages; a bare array has no envelope.
fn split_envelope(value: Value) -> Result<(Option<Envelope>, Vec<Value>)> {
    match value {
        Value::Array(messages) => Ok((None, messages)),
        Value::Object(mut envelope) => {
            let messages = match envelope.get_mut("messages") {
                Some(Value::Array(messages)) => std::mem::take(messages),
                Some(other) => {
                    return Err(Error::top(
                        "messages",
                        format!("expected an array, found {}", kind(other)),
                    ));
                }
                None => {
                    return Err(Error::top(
                        "messages",
                        "missing: the object has no `messages`",
                    ));
                }
            };
            Ok((Some(envelope), messages))
        }
        other => Err(Error::top(
            "top level",
            format!(
                "expected an object with `messages` or an array of messages, found {}",
                kind(&other)
            ),
        )),
    }
}

/// One piece of evidence for a format: which message and what it shows.
struct Clue {
    format: Format,
    what: String,
}

/// Detects the format from the shape, explaining itself when the evidence conflicts.
fn detect(envelope: Option<&Map<String, Value>>, messages: &[Value]) -> Result<Format> {
    let mut clues = Vec::new();
    if envelope.is_some_and(|e| e.contains_key("system")) {
        clues.push(Clue {
            format: Format::Anthropic,
            what: "a top-level `system` field".into(),
        });
    }
    for (index, message) in messages.iter().enumerate() {
        if let Some(clue) = message_clue(index, message) {
            clues.push(clue);
        }
    }
    let openai = clues.iter().find(|c| c.format == Format::OpenAi);
    let anthropic = clues.iter().find(|c| c.format == Format::Anthropic);
    match (openai, anthropic) {
        (Some(o), Some(a)) => Err(Error::UnknownFormat {
            reason: format!(
                "{} looks like OpenAI but {} looks like Anthropic",
                o.what, a.what
            ),
        }),
        (None, Some(_)) => Ok(Format::Anthropic),
        // Plain user/assistant text reads the same in both formats: OpenAI is the default.
        _ => Ok(Format::OpenAi),
    }
}

/// What a single message shows about its format, if anything.
fn message_clue(index: usize, message: &Value) -> Option<Clue> {
    let object = message.as_object()?;
    let clue = |format, what: &str| {
        Some(Clue {
            format,
            what: format!("message {index} ({what})"),
        })
    };
    if let Some(role @ ("tool" | "system" | "developer" | "function")) =
        object.get("role").and_then(Value::as_str)
    {
        return clue(Format::OpenAi, &format!("role `{role}`"));
    }
    for field in ["tool_calls", "tool_call_id", "function_call"] {
        if object.contains_key(field) {
            return clue(Format::OpenAi, &format!("`{field}`"));
        }
    }
    for block in object
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some(
                kind @ ("tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "document"),
            ) => return clue(Format::Anthropic, &format!("a `{kind}` block")),
            Some("image") => return clue(Format::Anthropic, "an `image` block"),
            Some(kind @ ("image_url" | "input_audio" | "file" | "refusal")) => {
                return clue(Format::OpenAi, &format!("a `{kind}` part"));
            }
            _ => {}
        }
    }
    None
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

/// Writes content parts back in `layout`, as a string when they are plain text and the layout
/// allows it, else as blocks. Text and opaque parts are written here; `render_other` writes
/// the format's own blocks (calls, results).
pub(crate) fn render_content(
    parts: &[&Part],
    layout: Layout,
    render_other: impl Fn(&Part) -> Value,
) -> Option<Value> {
    match layout {
        Layout::Absent if parts.is_empty() => None,
        Layout::Null if parts.is_empty() => Some(Value::Null),
        Layout::Text | Layout::Absent | Layout::Null if is_plain_text(parts) => {
            let mut text = String::new();
            for part in parts {
                if let Part::Text { text: t, .. } = *part {
                    text.push_str(t);
                }
            }
            Some(Value::String(text))
        }
        _ => Some(Value::Array(
            parts
                .iter()
                .map(|part| match part {
                    Part::Text { text, extra } => {
                        let mut block = extra.clone();
                        if !block.contains_key("type") {
                            block.insert("type".into(), Value::String("text".into()));
                        }
                        block.insert("text".into(), Value::String(text.clone()));
                        Value::Object(block)
                    }
                    Part::Opaque(value) => value.clone(),
                    other => render_other(other),
                })
                .collect(),
        )),
    }
}

/// Whether parts can be written as a bare string: text parts only, with no wire block fields.
fn is_plain_text(parts: &[&Part]) -> bool {
    parts
        .iter()
        .all(|part| matches!(part, Part::Text { extra, .. } if extra.is_empty()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_defaults_to_openai() {
        let value = serde_json::json!([{"role": "user", "content": "hi"}]);
        assert_eq!(parse_value(value, None).unwrap().format, Format::OpenAi);
    }

    #[test]
    fn top_level_system_means_anthropic() {
        let value = serde_json::json!({"system": "be brief", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(parse_value(value, None).unwrap().format, Format::Anthropic);
    }

    #[test]
    fn conflicting_clues_explain_themselves() {
        let value = serde_json::json!([
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}
        ]);
        let err = parse_value(value, None).unwrap_err().to_string();
        assert!(err.contains("message 0 (role `tool`)"), "{err}");
        assert!(err.contains("message 1 (a `tool_result` block)"), "{err}");
    }
}
