//! The Vercel AI SDK's `ModelMessage` list ⇄ the neutral model.
//!
//! A list of messages, or a body holding one under `messages` (as `generateText`'s options do),
//! with roles `system`, `user`, `assistant` and `tool`, and content as a string or an array of
//! parts. `text` parts become [`Part::Text`]; `tool-call` parts (`toolCallId`, `toolName`,
//! `input` as any JSON value) become [`Part::ToolCall`]; `tool-result` parts of `tool` messages
//! become [`Part::ToolResult`] whose content is the text of their `output`: the value of a
//! `text` or `error-text` output, the JSON text of a `json` or `error-json` one, the text parts
//! of a `content` one, the reason of an `execution-denied` one; `error-*` outputs are errors.
//! A result whose text was changed (cleared, cut) is written as a `text` (or `error-text`)
//! output; an unchanged one is written as it was read. Every other part (`image`, `file`,
//! `reasoning`, `reasoning-file`, `custom`, tool approval requests and responses) and a
//! provider-executed call with its result (both inside the assistant message, so no `tool`
//! message answers it) stay [`Part::Opaque`].

use serde_json::{Map, Value};

use super::Placement;
use super::{
    Clues, FieldChange, Format, ReadOptions, Reader, Record, Sink, Wire, fields_of, key, kind,
    list, object, read_body, required_content, required_str, role_of, write_content_field,
    write_system_content,
};
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};

/// The AI SDK's `ModelMessage` list.
pub(super) struct AiSdk;

/// Part types only the AI SDK writes inside a message's content.
const OWN_PARTS: [&str; 6] = [
    "tool-call",
    "tool-result",
    "reasoning",
    "reasoning-file",
    "tool-approval-request",
    "tool-approval-response",
];

/// The roles of messages, as named on the wire.
const ROLES: &[(&str, Role)] = &[
    ("system", Role::System),
    ("user", Role::User),
    ("assistant", Role::Assistant),
    ("tool", Role::Tool),
];

impl Reader for AiSdk {
    fn wire(&self) -> &'static dyn Wire {
        &AiSdk
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        let Some((_, messages)) = list(records, "messages") else {
            return clues;
        };
        for (index, message) in messages.iter().enumerate() {
            for part in message
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(kind) = part.get("type").and_then(Value::as_str) else {
                    continue;
                };
                let own = OWN_PARTS.contains(&kind)
                    || (kind == "image" && part.get("image").is_some())
                    || (kind == "file" && part.get("mediaType").is_some());
                if own {
                    clues.add(true, || format!("message {index} (a `{kind}` part)"));
                }
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, _: &ReadOptions) -> Result<Conversation> {
        read_body(records, Format::AiSdk, |_, messages| {
            Ok((None, super::parse_messages(messages, parse_message)?))
        })
    }
}

impl Wire for AiSdk {
    fn write_system(&self, system: &Message, out: &mut dyn Sink) {
        // System messages sit in the list; a prompt held outside it is written as text.
        write_system_content(system, out);
    }

    fn write_message(&self, message: &Message, out: &mut dyn Sink) {
        write_content_field(message, out, write_part);
    }

    /// The run of `tool` messages right after the calling message (approval responses and
    /// results).
    fn results(&self) -> Placement {
        Placement::ToolMessages
    }

    fn call_field(&self, _: &Message, part: usize) -> String {
        format!("content[{part}].toolCallId")
    }

    fn result_field(&self, _: &Message, part: usize) -> String {
        format!("content[{part}].toolCallId")
    }
}

fn parse_message(index: usize, value: Value) -> Result<Message> {
    let mut extra = fields_of(index, "message", value)?;
    let role = role_of(&extra, index, ROLES)?;
    let (parts, layout) = required_content(&mut extra, index, "parts", |p, part| {
        parse_part(index, p, part, role)
    })?;
    Ok(Message {
        role,
        parts,
        layout,
        extra,
        harness: None,
    })
}

fn parse_part(
    index: usize,
    p: usize,
    part: &mut Map<String, Value>,
    role: Role,
) -> Result<Option<Part>> {
    let path = |field: &str| format!("content[{p}].{field}");
    let provider_executed = part.get("providerExecuted") == Some(&Value::Bool(true));
    match part.get("type").and_then(Value::as_str) {
        Some("tool-call") if !provider_executed => {
            if role != Role::Assistant {
                return Err(Error::field(
                    index,
                    path("type"),
                    "`tool-call` parts belong in assistant messages",
                ));
            }
            let id = required_str(part, "toolCallId", index, &path("toolCallId"))?;
            let name = required_str(part, "toolName", index, &path("toolName"))?;
            let arguments = part.get_mut("input").map_or(Value::Null, Value::take);
            Ok(Some(Part::ToolCall {
                id,
                name,
                arguments,
                extra: part.clone(),
            }))
        }
        Some("tool-result") if role == Role::Tool => {
            let call_id = required_str(part, "toolCallId", index, &path("toolCallId"))?;
            let output = match part.get_mut("output") {
                Some(Value::Object(output)) => output,
                Some(other) => {
                    return Err(Error::field(
                        index,
                        path("output"),
                        format!("expected an object, found {}", kind(other)),
                    ));
                }
                None => return Err(Error::field(index, path("output"), "missing")),
            };
            let output_kind = required_str(output, "type", index, &path("output.type"))?;
            let is_error = output_kind.starts_with("error-");
            let text = match output_kind.as_str() {
                // The text itself moves into the part; a `null` holds its place.
                "text" | "error-text" => match output.get_mut("value").map(Value::take) {
                    Some(Value::String(text)) => text,
                    other => {
                        return Err(Error::field(
                            index,
                            path("output.value"),
                            format!(
                                "expected a string, found {}",
                                other.as_ref().map_or("nothing", kind)
                            ),
                        ));
                    }
                },
                _ => output_text(output),
            };
            Ok(Some(Part::ToolResult {
                call_id,
                content: vec![Part::text(text)],
                layout: Layout::Text,
                is_error,
                extra: part.clone(),
            }))
        }
        Some("tool-result") if role != Role::Assistant => Err(Error::field(
            index,
            path("type"),
            "`tool-result` parts belong in tool messages",
        )),
        _ => Ok(None),
    }
}

/// The text a structured output is sent as: JSON values as JSON text, a `content` output's text
/// parts, an `execution-denied` output's reason.
fn output_text(output: &Map<String, Value>) -> String {
    let value = output.get("value");
    match output.get("type").and_then(Value::as_str) {
        Some("content") => value
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some("execution-denied") => output
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("execution denied")
            .to_string(),
        _ => value.map(Value::to_string).unwrap_or_default(),
    }
}

fn write_part(out: &mut dyn Sink, part: &Part) {
    match part {
        Part::ToolCall {
            id,
            name,
            arguments,
            extra,
        } => object(
            out,
            Some(extra),
            &[
                (key!("toolCallId"), FieldChange::Set),
                (key!("toolName"), FieldChange::Set),
                (key!("input"), FieldChange::Set),
            ],
            |out, key| match key {
                "toolCallId" => out.str(id),
                "toolName" => out.str(name),
                _ => out.value(arguments),
            },
        ),
        Part::ToolResult {
            call_id,
            content,
            is_error,
            extra,
            ..
        } => object(
            out,
            Some(extra),
            &[
                (key!("toolCallId"), FieldChange::Set),
                (key!("output"), FieldChange::Set),
            ],
            |out, key| match key {
                "toolCallId" => out.str(call_id),
                _ => write_output(out, extra, content, *is_error),
            },
        ),
        Part::Text { .. } | Part::Opaque(_) => {
            unreachable!("write_content writes text and opaque parts itself")
        }
    }
}

/// Writes a result's `output`: as read when its text is unchanged, else a `text` (or
/// `error-text`) output holding the new text.
fn write_output(out: &mut dyn Sink, extra: &Map<String, Value>, content: &[Part], is_error: bool) {
    let read = extra.get("output").and_then(Value::as_object);
    let read_kind = read
        .and_then(|output| output.get("type"))
        .and_then(Value::as_str);
    let text: Vec<&str> = content
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let joined = |out: &mut dyn Sink| match text.as_slice() {
        [one] => out.str(one),
        more => out.str(&more.concat()),
    };
    let text_kind = if is_error { "error-text" } else { "text" };
    match (read, read_kind) {
        (Some(output), Some(kind @ ("text" | "error-text"))) if kind == text_kind => {
            object(
                out,
                Some(output),
                &[(key!("value"), FieldChange::Set)],
                |out, _| {
                    joined(out);
                },
            );
        }
        (Some(output), Some(_)) if text == [output_text(output).as_str()] => {
            object(out, Some(output), &[], |_, _| {});
        }
        _ => object(
            out,
            None,
            &[
                (key!("type"), FieldChange::Set),
                (key!("value"), FieldChange::Set),
            ],
            |out, key| match key {
                "type" => out.str(text_kind),
                _ => joined(out),
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse_value, render};
    use super::*;

    /// A conversation with every kind of part `ModelMessage`s have.
    fn every_part() -> Value {
        json!([
            {"role": "system", "content": "You are careful.", "providerOptions": {"openai": {"x": 1}}},
            {"role": "user", "content": [
                {"type": "text", "text": "Fix the build."},
                {"type": "file", "data": "aGVsbG8=", "mediaType": "text/plain", "filename": "n.txt"},
                {"type": "image", "image": "https://example.test/a.png"}]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "Look first.", "providerOptions": {"anthropic": {"signature": "s"}}},
                {"type": "text", "text": "Reading."},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "read", "input": {"path": "b.log", "n": 1.50}},
                {"type": "tool-call", "toolCallId": "c2", "toolName": "run", "input": {"cmd": "cargo build"}},
                {"type": "tool-call", "toolCallId": "c3", "toolName": "rm", "input": {"path": "/"}},
                {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c3"},
                {"type": "tool-call", "toolCallId": "s1", "toolName": "web", "input": {}, "providerExecuted": true},
                {"type": "tool-result", "toolCallId": "s1", "toolName": "web", "output": {"type": "json", "value": {"hits": 2}}}]},
            {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "a1", "approved": false}]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "read", "output": {"type": "text", "value": "error[E0425]", "providerOptions": {"x": {}}}},
                {"type": "tool-result", "toolCallId": "c2", "toolName": "run", "output": {"type": "error-json", "value": {"code": 101}}},
                {"type": "tool-result", "toolCallId": "c3", "toolName": "rm", "output": {"type": "execution-denied", "reason": "no"}}]},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c4", "toolName": "view", "input": {}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c4", "toolName": "view",
                "output": {"type": "content", "value": [{"type": "text", "text": "screen"}, {"type": "file-data", "data": "AA==", "mediaType": "image/png"}]}}]},
            {"role": "assistant", "content": "Fixed."},
            {"role": "user", "content": "Thanks."}
        ])
    }

    #[test]
    fn every_part_round_trips_and_is_detected() {
        let value = every_part();
        let conversation = parse_value(value.clone(), None).unwrap();
        assert_eq!(conversation.format, Format::AiSdk);
        assert_eq!(render(&conversation), value);
        assert_eq!(crate::validate::check(&conversation), Vec::new());
        let body = json!({"model": "m", "messages": value});
        let conversation = parse_value(body.clone(), None).unwrap();
        assert_eq!(render(&conversation), body);
    }

    fn text_of(parts: &[Part]) -> String {
        parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn results_read_as_text_and_pair_with_their_calls() {
        let conversation = parse_value(every_part(), Some(Format::AiSdk)).unwrap();
        let texts: Vec<(String, bool)> = conversation
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|part| match part {
                Part::ToolResult {
                    content, is_error, ..
                } => Some((text_of(content), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(
            texts,
            [
                ("error[E0425]".to_string(), false),
                (r#"{"code":101}"#.to_string(), true),
                ("no".to_string(), false),
                ("screen".to_string(), false),
            ]
        );
        assert_eq!(conversation.result_window(2), 3..5);
    }

    #[test]
    fn a_changed_result_is_written_as_text() {
        let mut conversation = parse_value(every_part(), Some(Format::AiSdk)).unwrap();
        for part in &mut conversation.messages[4].parts {
            if let Part::ToolResult { content, .. } = part {
                *content = vec![Part::text("[cleared]")];
            }
        }
        let rendered = render(&conversation);
        let outputs: Vec<&Value> = rendered[4]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| &part["output"])
            .collect();
        assert_eq!(
            outputs,
            [
                &json!({"type": "text", "value": "[cleared]", "providerOptions": {"x": {}}}),
                &json!({"type": "error-text", "value": "[cleared]"}),
                &json!({"type": "text", "value": "[cleared]"}),
            ]
        );
    }

    #[test]
    fn a_tool_call_in_a_user_message_is_refused() {
        let value = json!([{"role": "user", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {}}]}]);
        let err = parse_value(value, Some(Format::AiSdk))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "message 0: content[0].type: `tool-call` parts belong in assistant messages"
        );
    }
}
