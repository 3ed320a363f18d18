//! Gemini API `contents` ⇄ the neutral model.
//!
//! A request body with `contents` and `systemInstruction` (which becomes
//! [`Conversation::system`]), or a bare array of contents. Roles `user` (and the legacy
//! `function`) and `model`. Parts: `text` (a `thought: true` part stays opaque),
//! `functionCall` becomes [`Part::ToolCall`], `functionResponse` a [`Part::ToolResult`] whose
//! content is the text of a `{"output": "…"}` response, or any other response as JSON text
//! (written back as that value, or as `{"output": …}` once it was cleared or capped); `inlineData`, `fileData`, code execution and
//! unknown parts stay [`Part::Opaque`]; `thoughtSignature` and every other field pass through.
//! Calls pair with responses by `id` when they have one, otherwise by name and order within
//! the next user turn: such a call gets the id `<name>#<n>` (`n` counting the calls of that
//! name), which is never written out.

use serde_json::{Map, Value};

use super::Placement;
use super::anthropic::merge_text_in_front;
use super::{
    Clues, Envelope, FieldChange, Format, ReadOptions, Reader, Record, Sink, Wire, fields_of, has,
    key, kind, known_role, list, nested, object, read_body, write_text_block,
};
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};

/// Gemini API contents.
pub(super) struct Gemini;

/// The roles of contents, as named on the wire (and in the error naming those expected).
const ROLES: &[(&str, Role)] = &[("user", Role::User), ("model", Role::Assistant)];

impl Reader for Gemini {
    fn wire(&self) -> &'static dyn Wire {
        &Gemini
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        let Some((envelope, contents)) = list(records, "contents") else {
            return clues;
        };
        if envelope.is_some() {
            clues.add(true, || "a top-level `contents` array".into());
        }
        for (index, content) in contents.iter().enumerate() {
            if content.get("role").and_then(Value::as_str) == Some("model") {
                clues.add(true, || format!("content {index} (role `model`)"));
            }
            if content.get("parts").is_some_and(Value::is_array) {
                clues.add(true, || format!("content {index} (`parts`)"));
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, _: &ReadOptions) -> Result<Conversation> {
        read_body(records, Format::Gemini, parse)
    }
}

impl Wire for Gemini {
    fn system_key(&self) -> &'static str {
        "systemInstruction"
    }

    fn write_system(&self, system: &Message, out: &mut dyn Sink) {
        write_content(system, out);
    }

    fn write_message(&self, message: &Message, out: &mut dyn Sink) {
        write_content(message, out);
    }

    fn results(&self) -> Placement {
        Placement::NextUserTurn
    }

    fn merge_marker(&self, message: &mut Message, text: &str) -> bool {
        merge_text_in_front(message, text, |t| Part::text(t))
    }

    fn first_must_be_user(&self) -> bool {
        true
    }

    fn call_field(&self, message: &Message, part: usize) -> String {
        field(message, part, "functionCall")
    }

    fn result_field(&self, message: &Message, part: usize) -> String {
        field(message, part, "functionResponse")
    }
}

/// `parts[p].functionCall.id`, or `.name` when the wire part has no id.
fn field(message: &Message, part: usize, key: &str) -> String {
    let has_id = match message.parts.get(part) {
        Some(Part::ToolCall { extra, .. } | Part::ToolResult { extra, .. }) => {
            extra.get(key).and_then(|v| v.get("id")).is_some()
        }
        _ => false,
    };
    format!("parts[{part}].{key}.{}", if has_id { "id" } else { "name" })
}

/// Reads `systemInstruction` and the contents.
pub(super) fn parse(
    envelope: &mut Option<Envelope>,
    contents: Vec<Value>,
) -> Result<(Option<Message>, Vec<Message>)> {
    let system = match envelope
        .as_mut()
        .and_then(|e| e.get_mut("systemInstruction"))
    {
        None => None,
        Some(value) => {
            let mut ids = Ids::default();
            let system = match value {
                Value::String(text) => Message {
                    role: Role::System,
                    parts: vec![Part::text(std::mem::take(text))],
                    layout: Layout::Text,
                    extra: Map::new(),
                    harness: None,
                },
                other => parse_content(0, other.take(), &mut ids).map_err(|err| match err {
                    Error::Malformed { at, problem } => {
                        Error::top(format!("systemInstruction.{}", at.field), problem)
                    }
                    other => other,
                })?,
            };
            Some(Message {
                role: Role::System,
                ..system
            })
        }
    };
    let mut ids = Ids::default();
    let messages = contents
        .into_iter()
        .enumerate()
        .map(|(index, value)| parse_content(index, value, &mut ids))
        .collect::<Result<Vec<_>>>()?;
    Ok((system, messages))
}

/// Names calls and responses that carry no id: the n-th call of a name in the conversation is
/// `<name>#<n>` (six digits, so that removing earlier calls never changes an id's length, nor
/// its token count); a response takes the id of the call of its name and rank in the last
/// model turn.
#[derive(Default)]
struct Ids {
    /// Calls made so far, by name.
    made: std::collections::BTreeMap<String, usize>,
    /// The id-less calls of the last model turn: name and id, in order.
    open: Vec<(String, String)>,
}

impl Ids {
    fn call(&mut self, name: &str) -> String {
        let n = self.made.entry(name.to_string()).or_default();
        let id = format!("{name}#{n:06}");
        *n += 1;
        self.open.push((name.to_string(), id.clone()));
        id
    }

    fn response(&self, index: usize, name: &str, rank: usize) -> String {
        self.open
            .iter()
            .filter(|(n, _)| n == name)
            .nth(rank)
            .map_or_else(
                || format!("{name}#unpaired-{index}.{rank}"),
                |(_, id)| id.clone(),
            )
    }
}

fn parse_content(index: usize, value: Value, ids: &mut Ids) -> Result<Message> {
    let mut extra = fields_of(index, "content", value)?;
    let role = match extra.get("role") {
        None | Some(Value::Null) => Role::User,
        // The legacy role of function responses, not named among the roles expected.
        Some(Value::String(role)) if role == "function" => Role::User,
        Some(Value::String(role)) => known_role(index, role, ROLES)?,
        Some(other) => {
            return Err(Error::field(
                index,
                "role",
                format!("expected a string, found {}", kind(other)),
            ));
        }
    };
    let blocks = match extra.get_mut("parts").map(Value::take) {
        Some(Value::Array(blocks)) => blocks,
        Some(other) => {
            return Err(Error::field(
                index,
                "parts",
                format!("expected an array, found {}", kind(&other)),
            ));
        }
        None => return Err(Error::field(index, "parts", "missing")),
    };
    if role == Role::Assistant {
        ids.open.clear();
    }
    let mut parts = Vec::with_capacity(blocks.len());
    for (p, block) in blocks.into_iter().enumerate() {
        let part = parse_part(index, p, block, &parts, ids)?;
        parts.push(part);
    }
    // `parts` is always blocks: the layout records instead whether the content had a `role`
    // (the API defaults it to `user`), so that one without stays without.
    let layout = if extra.contains_key("role") {
        Layout::Blocks
    } else {
        Layout::Absent
    };
    Ok(Message {
        role,
        parts,
        layout,
        extra,
        harness: None,
    })
}

/// Reads part `p` of content `index`; `parts` are the parts read before it.
fn parse_part(index: usize, p: usize, block: Value, parts: &[Part], ids: &mut Ids) -> Result<Part> {
    let Value::Object(mut block) = block else {
        return Err(Error::field(
            index,
            format!("parts[{p}]"),
            format!("expected an object, found {}", kind(&block)),
        ));
    };
    let part = if block.get("thought").and_then(Value::as_bool) == Some(true) {
        Part::Opaque(Value::Object(block))
    } else if let Some(Value::String(_)) = block.get("text") {
        let text = block
            .get_mut("text")
            .map(Value::take)
            .and_then(|t| t.as_str().map(str::to_string))
            .unwrap_or_default();
        Part::Text { text, extra: block }
    } else if block.contains_key("functionCall") {
        let path = format!("parts[{p}].functionCall");
        let Some(Value::Object(call)) = block.get_mut("functionCall") else {
            return Err(Error::field(index, path, "expected an object"));
        };
        let name = match call.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(Error::field(index, format!("{path}.name"), "missing")),
        };
        let arguments = call
            .get_mut("args")
            .map_or_else(|| Value::Object(Map::new()), Value::take);
        let id = match call.get("id") {
            Some(Value::String(id)) => id.clone(),
            _ => ids.call(&name),
        };
        Part::ToolCall {
            id,
            name,
            arguments,
            extra: block,
        }
    } else if block.contains_key("functionResponse") {
        let path = format!("parts[{p}].functionResponse");
        let Some(Value::Object(response)) = block.get_mut("functionResponse") else {
            return Err(Error::field(index, path, "expected an object"));
        };
        let name = match response.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(Error::field(index, format!("{path}.name"), "missing")),
        };
        // `{"output": "…"}` is read as its text (layout `Text`), any other response as its
        // JSON text (layout `Blocks`).
        let (text, layout) = match response.get_mut("response").map(Value::take) {
            Some(Value::Object(mut object))
                if object.len() == 1 && object.get("output").is_some_and(Value::is_string) =>
            {
                let text = object.get_mut("output").map(Value::take);
                let text = text.and_then(|t| t.as_str().map(str::to_string));
                (text.unwrap_or_default(), Layout::Text)
            }
            Some(value) => (value.to_string(), Layout::Blocks),
            None => return Err(Error::field(index, format!("{path}.response"), "missing")),
        };
        let id = match response.get("id") {
            Some(Value::String(id)) => Some(id.clone()),
            _ => None,
        };
        let id = id.unwrap_or_else(|| {
            let rank = parts
                .iter()
                .filter(|part| {
                    matches!(part, Part::ToolResult { extra, .. }
                        if extra.get("functionResponse").and_then(|r| r.get("name")).and_then(Value::as_str) == Some(name.as_str()))
                })
                .count();
            ids.response(index, &name, rank)
        });
        Part::ToolResult {
            call_id: id,
            content: vec![Part::text(text)],
            layout,
            is_error: false,
            extra: block,
        }
    } else {
        Part::Opaque(Value::Object(block))
    };
    Ok(part)
}

fn write_content(message: &Message, out: &mut dyn Sink) {
    let read_without_role = message.layout == Layout::Absent;
    let role = if message.role != Role::System && !read_without_role {
        FieldChange::Default
    } else {
        FieldChange::Keep
    };
    object(
        out,
        Some(&message.extra),
        &[(key!("role"), role), (key!("parts"), FieldChange::Set)],
        |out, key| match key {
            "role" if message.role == Role::Assistant => out.str("model"),
            "role" => out.str("user"),
            _ => {
                out.begin_array();
                for part in &message.parts {
                    write_part(out, part);
                }
                out.end_array();
            }
        },
    );
}

fn write_part(out: &mut dyn Sink, part: &Part) {
    match part {
        Part::Text { text, extra } => write_text_block(out, text, extra),
        Part::ToolCall {
            id,
            name,
            arguments,
            extra,
        } => {
            let call = nested(extra, "functionCall");
            let id_change = FieldChange::set_if(has(call, "id"));
            // Absent `args` (read as `{}`) stay absent.
            let empty = arguments.as_object().is_some_and(Map::is_empty);
            let args = FieldChange::set_if(has(call, "args") || !empty);
            object(
                out,
                Some(extra),
                &[(key!("functionCall"), FieldChange::Set)],
                |out, _| {
                    object(
                        out,
                        call,
                        &[
                            (key!("id"), id_change),
                            (key!("name"), FieldChange::Set),
                            (key!("args"), args),
                        ],
                        |out, key| match key {
                            "id" => out.str(id),
                            "name" => out.str(name),
                            _ => out.value(arguments),
                        },
                    );
                },
            );
        }
        Part::ToolResult {
            call_id,
            content,
            layout,
            extra,
            ..
        } => {
            let response = nested(extra, "functionResponse");
            let id_change = FieldChange::set_if(has(response, "id"));
            let text: String = content
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let parsed = (*layout == Layout::Blocks)
                .then(|| serde_json::from_str::<Value>(&text).ok())
                .flatten();
            object(
                out,
                Some(extra),
                &[(key!("functionResponse"), FieldChange::Set)],
                |out, _| {
                    object(
                        out,
                        response,
                        &[
                            (key!("id"), id_change),
                            (key!("response"), FieldChange::Set),
                        ],
                        |out, key| match (key, &parsed) {
                            ("id", _) => out.str(call_id),
                            (_, Some(value)) => out.value(value),
                            (_, None) => {
                                object(
                                    out,
                                    None,
                                    &[(key!("output"), FieldChange::Set)],
                                    |out, _| {
                                        out.str(&text);
                                    },
                                );
                            }
                        },
                    );
                },
            );
        }
        Part::Opaque(value) => out.value(value),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse_value, render};
    use super::*;

    #[test]
    fn every_part_type_round_trips_and_pairs() {
        let value = json!({"contents": [
            {"role": "user", "parts": [{"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": "AA"}}]},
            {"role": "model", "parts": [
                {"text": "hmm", "thought": true},
                {"functionCall": {"id": "a", "name": "ls", "args": {"n": 1}}, "thoughtSignature": "sig"},
                {"functionCall": {"name": "cat", "args": {}}},
                {"functionCall": {"name": "cat", "args": {"p": 1}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "a", "name": "ls", "response": {"output": "x"}}},
                {"functionResponse": {"name": "cat", "response": {"result": [1, 2]}}},
                {"functionResponse": {"name": "cat", "response": {}}}]},
            {"role": "model", "parts": [{"text": "done"}]}
        ], "systemInstruction": {"role": "user", "parts": [{"text": "be brief"}]}, "generationConfig": {}});
        let conversation = parse_value(value.clone(), None).unwrap();
        assert_eq!(conversation.format, Format::Gemini);
        assert_eq!(render(&conversation), value);
        assert!(crate::validate::check(&conversation).is_empty());
    }
}
