//! OpenAI Chat Completions messages ⇄ the neutral model.
//!
//! Roles `system`, `developer`, `user`, `assistant` and `tool`; content as a string, null or an
//! array of parts; `tool_calls` on assistant messages; one result per `tool` message, linked by
//! `tool_call_id`. The legacy `function_call` / `role: "function"` API is rejected with an error
//! that says so, since its calls carry no id to pair results by.

use serde_json::{Map, Value};

use super::Placement;
use super::{
    Clues, Envelope, FieldChange, Format, ReadOptions, Reader, Record, Sink, Wire, content_absent,
    fields_of, has_value, key, kind, list, nested, object, parse_content, read_body, required_str,
    role_of, write_arguments_string, write_content, write_system_content,
};
use crate::conversation::{Conversation, Message, Part, Role};
use crate::error::{Error, Result};

/// OpenAI Chat Completions.
pub(super) struct OpenAi;

/// The roles of messages, as named on the wire.
const ROLES: &[(&str, Role)] = &[
    ("system", Role::System),
    ("developer", Role::System),
    ("user", Role::User),
    ("assistant", Role::Assistant),
    ("tool", Role::Tool),
];

impl Reader for OpenAi {
    fn wire(&self) -> &'static dyn Wire {
        &OpenAi
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        let Some((_, messages)) = list(records, "messages") else {
            return clues;
        };
        for (index, message) in messages.iter().enumerate() {
            let Some(object) = message.as_object() else {
                continue;
            };
            if object.contains_key("type") {
                continue;
            }
            let at = |what: &str| format!("message {index} ({what})");
            match object.get("role").and_then(Value::as_str) {
                // An AI SDK `tool` message holds its results as parts, with no `tool_call_id`.
                Some(role @ ("tool" | "function"))
                    if has_value(object, "tool_call_id")
                        || !object.get("content").is_some_and(Value::is_array) =>
                {
                    clues.add(true, || at(&format!("role `{role}`")));
                }
                Some(role @ ("system" | "developer")) => {
                    clues.add(false, || at(&format!("role `{role}`")));
                }
                _ => {}
            }
            for field in ["tool_calls", "tool_call_id", "function_call"] {
                if has_value(object, field) {
                    clues.add(true, || at(&format!("`{field}`")));
                }
            }
            for part in object
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // OpenAI's `file` parts hold a `file` object; the AI SDK's have a `mediaType`.
                let kind = part
                    .get("type")
                    .and_then(Value::as_str)
                    .filter(|kind| *kind != "file" || part.get("file").is_some());
                if let Some(kind @ ("image_url" | "input_audio" | "file" | "refusal")) = kind {
                    clues.add(true, || at(&format!("a `{kind}` part")));
                }
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, _: &ReadOptions) -> Result<Conversation> {
        read_body(records, Format::OpenAi, parse)
    }
}

impl Wire for OpenAi {
    fn write_system(&self, system: &Message, out: &mut dyn Sink) {
        // System messages sit in `messages`; a prompt held outside them is written as text.
        write_system_content(system, out);
    }

    fn write_message(&self, message: &Message, out: &mut dyn Sink) {
        write_message(message, out);
    }

    /// The run of tool messages right after the calling message.
    fn results(&self) -> Placement {
        Placement::ToolMessages
    }

    fn call_field(&self, message: &Message, part: usize) -> String {
        let c = message.parts[..part]
            .iter()
            .filter(|p| matches!(p, Part::ToolCall { .. }))
            .count();
        format!("tool_calls[{c}].id")
    }

    fn result_field(&self, _: &Message, _: usize) -> String {
        "tool_call_id".into()
    }
}

/// Reads the messages; system messages sit among them.
fn parse(
    _: &mut Option<Envelope>,
    messages: Vec<Value>,
) -> Result<(Option<Message>, Vec<Message>)> {
    Ok((None, super::parse_messages(messages, parse_message)?))
}

fn parse_message(index: usize, value: Value) -> Result<Message> {
    let mut extra = fields_of(index, "message", value)?;
    if extra.get("role").and_then(Value::as_str) == Some("function") {
        return Err(Error::field(
            index,
            "role",
            "legacy role `function` is not supported; use `tool` messages with `tool_call_id`",
        ));
    }
    let role = role_of(&extra, index, ROLES)?;
    if extra.contains_key("function_call") {
        return Err(Error::field(
            index,
            "function_call",
            "legacy `function_call` is not supported; use `tool_calls`",
        ));
    }
    if let Some(name) = extra.get("name") {
        if !name.is_string() {
            return Err(Error::field(
                index,
                "name",
                format!("expected a string, found {}", kind(name)),
            ));
        }
    }
    let (mut parts, layout) =
        parse_content(extra.get_mut("content"), index, "content", |_, _| Ok(None))?;
    match role {
        Role::Tool => {
            let call_id = required_str(&extra, "tool_call_id", index, "tool_call_id")?;
            let result = Part::ToolResult {
                call_id,
                content: parts,
                layout,
                is_error: false,
                extra: Map::new(),
            };
            parts = vec![result];
        }
        _ if extra.contains_key("tool_call_id") => {
            return Err(Error::field(
                index,
                "tool_call_id",
                "only `tool` messages carry a `tool_call_id`",
            ));
        }
        _ => {}
    }
    match extra.get_mut("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) if role == Role::Assistant => {
            for (c, call) in calls.iter_mut().enumerate() {
                parts.push(parse_call(index, c, call)?);
            }
        }
        Some(Value::Array(_)) => {
            return Err(Error::field(
                index,
                "tool_calls",
                "only assistant messages make tool calls",
            ));
        }
        Some(other) => {
            return Err(Error::field(
                index,
                "tool_calls",
                format!("expected an array, found {}", kind(other)),
            ));
        }
    }
    Ok(Message {
        role,
        parts,
        layout,
        extra,
        harness: None,
    })
}

/// Reads one call, taking its arguments out of the wire object (a `null` stays in their place).
fn parse_call(index: usize, c: usize, call: &mut Value) -> Result<Part> {
    let Value::Object(extra) = call else {
        return Err(Error::field(
            index,
            format!("tool_calls[{c}]"),
            format!("expected an object, found {}", kind(call)),
        ));
    };
    let id = required_str(extra, "id", index, &format!("tool_calls[{c}].id"))?;
    let function = match extra.get_mut("function") {
        Some(Value::Object(function)) => function,
        Some(other) => {
            return Err(Error::field(
                index,
                format!("tool_calls[{c}].function"),
                format!("expected an object, found {}", kind(other)),
            ));
        }
        None => {
            return Err(Error::field(
                index,
                format!("tool_calls[{c}].function"),
                "missing",
            ));
        }
    };
    let name = required_str(
        &*function,
        "name",
        index,
        &format!("tool_calls[{c}].function.name"),
    )?;
    let arguments = match function.get_mut("arguments").map(Value::take) {
        Some(arguments @ Value::String(_)) => arguments,
        Some(other) => {
            return Err(Error::field(
                index,
                format!("tool_calls[{c}].function.arguments"),
                format!("expected a JSON-encoded string, found {}", kind(&other)),
            ));
        }
        None => {
            return Err(Error::field(
                index,
                format!("tool_calls[{c}].function.arguments"),
                "missing",
            ));
        }
    };
    Ok(Part::ToolCall {
        id,
        name,
        arguments,
        extra: extra.clone(),
    })
}

fn write_message(message: &Message, out: &mut dyn Sink) {
    let result = message.parts.iter().rev().find_map(|part| match part {
        Part::ToolResult {
            call_id,
            content,
            layout,
            ..
        } => Some((call_id, content, *layout)),
        _ => None,
    });
    let text = || {
        message
            .parts
            .iter()
            .filter(|part| !matches!(part, Part::ToolCall { .. } | Part::ToolResult { .. }))
    };
    let content = match result {
        _ if message.role != Role::Tool => {
            FieldChange::set_or_remove(!content_absent(text(), message.layout))
        }
        Some((_, content, layout)) => {
            FieldChange::set_or_remove(!content_absent(content.iter(), layout))
        }
        None => FieldChange::Keep,
    };
    let has_calls = message
        .parts
        .iter()
        .any(|part| matches!(part, Part::ToolCall { .. }));
    let tool_calls = if has_calls {
        FieldChange::Set
    } else if matches!(message.extra.get("tool_calls"), Some(Value::Array(calls)) if !calls.is_empty())
    {
        // Its calls were dropped with their round: the message keeps only its text.
        FieldChange::Remove
    } else {
        FieldChange::Keep
    };
    let tool_call_id = FieldChange::set_if(result.is_some());
    object(
        out,
        Some(&message.extra),
        &[
            (key!("tool_call_id"), tool_call_id),
            (key!("content"), content),
            (key!("tool_calls"), tool_calls),
        ],
        |out, key| match (key, result) {
            ("tool_call_id", Some((call_id, _, _))) => out.str(call_id),
            ("content", Some((_, content, layout))) if message.role == Role::Tool => {
                write_content(
                    out,
                    content.iter(),
                    layout,
                    |out, _| out.null(),
                    |out| out.null(),
                );
            }
            ("content", _) => {
                write_content(
                    out,
                    text(),
                    message.layout,
                    |out, _| out.null(),
                    |out| out.null(),
                );
            }
            _ => {
                out.begin_array();
                for part in &message.parts {
                    if let Part::ToolCall {
                        id,
                        name,
                        arguments,
                        extra,
                    } = part
                    {
                        write_call(out, id, name, arguments, extra);
                    }
                }
                out.end_array();
            }
        },
    );
}

fn write_call(
    out: &mut dyn Sink,
    id: &str,
    name: &str,
    arguments: &Value,
    extra: &Map<String, Value>,
) {
    object(
        out,
        Some(extra),
        &[
            (key!("type"), FieldChange::Default),
            (key!("id"), FieldChange::Set),
            (key!("function"), FieldChange::Set),
        ],
        |out, key| match key {
            "type" => out.str("function"),
            "id" => out.str(id),
            _ => object(
                out,
                nested(extra, "function"),
                &[
                    (key!("name"), FieldChange::Set),
                    (key!("arguments"), FieldChange::Set),
                ],
                |out, key| match key {
                    "name" => out.str(name),
                    _ => write_arguments_string(out, arguments),
                },
            ),
        },
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse_value, render};
    use super::*;

    fn round_trip(value: &Value) {
        let conversation = parse_value(value.clone(), Some(Format::OpenAi)).unwrap();
        assert_eq!(&render(&conversation), value);
    }

    #[test]
    fn every_shape_round_trips() {
        round_trip(&json!({"model": "gpt-4o", "temperature": 0, "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "name": "ann", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "cat", "arguments": "{\"p\":1}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"tool_call_id": "b", "role": "tool", "content": [{"type": "text", "text": "y"}]},
            {"role": "assistant", "refusal": null, "content": "done", "tool_calls": []},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "x", "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c"}
        ]}));
        round_trip(&json!([{"role": "user", "content": ""}]));
    }

    #[test]
    fn legacy_function_call_is_rejected() {
        let value =
            json!([{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}]);
        let err = parse_value(value, Some(Format::OpenAi))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "message 0: function_call: legacy `function_call` is not supported; use `tool_calls`"
        );
    }

    #[test]
    fn non_string_arguments_name_the_field() {
        let value = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {}}}]}]);
        let err = parse_value(value, Some(Format::OpenAi))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "message 1: tool_calls[0].function.arguments: expected a JSON-encoded string, found an object"
        );
    }
}
