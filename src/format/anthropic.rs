//! Anthropic Messages ⇄ the neutral model.
//!
//! A top-level `system` (a string or text blocks) becomes [`Conversation::system`]; messages are
//! `user` or `assistant` with content as a string or blocks, or `system` messages inside the
//! list (as current Claude Code sends its environment notes), read as [`Role::System`] and kept
//! in place. Top-level fields the engine does not interpret (`context_management`, `thinking`,
//! `output_config`, `metadata`, `tools`, `stream`) and every `cache_control` stay untouched. `tool_use` blocks become
//! [`Part::ToolCall`], `tool_result` blocks [`Part::ToolResult`] (string or block content,
//! `is_error`); `image`, `document`, `thinking`, `redacted_thinking` and unknown types stay
//! [`Part::Opaque`].

use serde_json::{Map, Value};

use super::Placement;
use super::{
    Clues, Envelope, FieldChange, Format, ReadOptions, Reader, Record, Sink, Wire, content_absent,
    fields_of, has, key, kind, list, object, parse_content, read_body, required_content,
    required_str, role_of, write_content, write_content_field, write_system_content,
};
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};

/// Anthropic Messages.
pub(super) struct Anthropic;

/// The roles of messages, as named on the wire. Current Claude Code sends environment notes as
/// `system` messages inside `messages`: read as system messages, pinned like the top-level
/// system prompt.
const ROLES: &[(&str, Role)] = &[
    ("user", Role::User),
    ("assistant", Role::Assistant),
    ("system", Role::System),
];

impl Reader for Anthropic {
    fn wire(&self) -> &'static dyn Wire {
        &Anthropic
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        let Some((envelope, messages)) = list(records, "messages") else {
            return clues;
        };
        match envelope.and_then(|e| e.get("system")) {
            Some(Value::String(_)) => clues.add(true, || "a top-level `system` string".into()),
            Some(Value::Array(blocks)) if blocks.iter().any(|b| b.get("type").is_some()) => {
                clues.add(true, || "top-level `system` blocks".into());
            }
            // Bedrock's system blocks have no `type`; anything else is Anthropic's to refuse.
            None | Some(Value::Null | Value::Array(_)) => {}
            Some(_) => clues.add(false, || "a top-level `system` field".into()),
        }
        for (index, message) in messages.iter().enumerate() {
            for block in message
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // Anthropic's `image` and `document` blocks hold a `source`; the AI SDK's
                // `image` parts an `image`.
                let kind = block.get("type").and_then(Value::as_str).filter(|kind| {
                    !matches!(*kind, "document" | "image") || block.get("source").is_some()
                });
                if let Some(
                    kind @ ("tool_use" | "tool_result" | "thinking" | "redacted_thinking"
                    | "document" | "image"),
                ) = kind
                {
                    clues.add(true, || format!("message {index} (a `{kind}` block)"));
                }
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, _: &ReadOptions) -> Result<Conversation> {
        read_body(records, Format::Anthropic, parse)
    }
}

impl Wire for Anthropic {
    fn write_system(&self, system: &Message, out: &mut dyn Sink) {
        write_system(system, out);
    }

    fn write_message(&self, message: &Message, out: &mut dyn Sink) {
        write_message(message, out);
    }

    /// The very next message, when it is a user message.
    fn results(&self) -> Placement {
        Placement::NextUserTurn
    }

    fn merge_marker(&self, message: &mut Message, text: &str) -> bool {
        merge_text_in_front(message, text, |text| {
            let mut block = Map::new();
            block.insert("type".into(), Value::String("text".into()));
            Part::Text {
                text: text.to_string(),
                extra: block,
            }
        })
    }

    fn first_must_be_user(&self) -> bool {
        true
    }

    fn call_field(&self, _: &Message, part: usize) -> String {
        format!("content[{part}].id")
    }

    fn result_field(&self, _: &Message, part: usize) -> String {
        format!("content[{part}].tool_use_id")
    }
}

/// Puts a marker in front of a user turn without tool results (formats that need user and
/// assistant turns to alternate); `block` makes a new text block in the format's shape.
pub(super) fn merge_text_in_front(
    message: &mut Message,
    text: &str,
    block: impl Fn(&str) -> Part,
) -> bool {
    if message.role != Role::User || message.has_results() {
        return false;
    }
    if let (Layout::Text, [Part::Text { text: existing, .. }]) =
        (message.layout, message.parts.as_mut_slice())
    {
        *existing = format!("{text}\n\n{existing}");
    } else {
        message.parts.insert(0, block(text));
        message.layout = Layout::Blocks;
    }
    true
}

/// Reads the top-level system prompt and the messages.
pub(super) fn parse(
    envelope: &mut Option<Envelope>,
    messages: Vec<Value>,
) -> Result<(Option<Message>, Vec<Message>)> {
    let system = match envelope.as_mut().and_then(|e| e.get_mut("system")) {
        None => None,
        Some(value) => Some(parse_system(value)?),
    };
    let messages = super::parse_messages(messages, parse_message)?;
    Ok((system, messages))
}

/// Reads the top-level system prompt, taking its text out of the envelope.
fn parse_system(value: &mut Value) -> Result<Message> {
    let (parts, layout) = match value {
        Value::String(_) | Value::Array(_) => {
            parse_content(Some(value), 0, "system", |_, _| Ok(None)).map_err(|err| match err {
                Error::Malformed { at, problem } => Error::top(at.field, problem),
                other => other,
            })?
        }
        other => {
            return Err(Error::top(
                "system",
                format!("expected a string or text blocks, found {}", kind(other)),
            ));
        }
    };
    Ok(Message {
        role: Role::System,
        parts,
        layout,
        extra: Map::new(),
        harness: None,
    })
}

fn parse_message(index: usize, value: Value) -> Result<Message> {
    let mut extra = fields_of(index, "message", value)?;
    let role = role_of(&extra, index, ROLES)?;
    let (parts, layout) = required_content(&mut extra, index, "blocks", |b, block| {
        parse_block(index, b, block, role)
    })?;
    Ok(Message {
        role,
        parts,
        layout,
        extra,
        harness: None,
    })
}

fn parse_block(
    index: usize,
    b: usize,
    block: &mut Map<String, Value>,
    role: Role,
) -> Result<Option<Part>> {
    let path = |field: &str| format!("content[{b}].{field}");
    match block.get("type").and_then(Value::as_str) {
        Some("tool_use") => {
            if role != Role::Assistant {
                return Err(Error::field(
                    index,
                    path("type"),
                    "`tool_use` blocks belong in assistant messages",
                ));
            }
            let id = required_str(block, "id", index, &path("id"))?;
            let name = required_str(block, "name", index, &path("name"))?;
            let arguments = match block.get_mut("input").map(Value::take) {
                Some(input @ Value::Object(_)) => input,
                Some(other) => {
                    return Err(Error::field(
                        index,
                        path("input"),
                        format!("expected an object, found {}", kind(&other)),
                    ));
                }
                None => return Err(Error::field(index, path("input"), "missing")),
            };
            Ok(Some(Part::ToolCall {
                id,
                name,
                arguments,
                extra: block.clone(),
            }))
        }
        Some("tool_result") => {
            if role != Role::User {
                return Err(Error::field(
                    index,
                    path("type"),
                    "`tool_result` blocks belong in user messages",
                ));
            }
            let call_id = required_str(block, "tool_use_id", index, &path("tool_use_id"))?;
            let (content, layout) =
                parse_content(block.get_mut("content"), index, &path("content"), |_, _| {
                    Ok(None)
                })?;
            let is_error = match block.get("is_error") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(flag)) => *flag,
                Some(other) => {
                    return Err(Error::field(
                        index,
                        path("is_error"),
                        format!("expected a boolean, found {}", kind(other)),
                    ));
                }
            };
            Ok(Some(Part::ToolResult {
                call_id,
                content,
                layout,
                is_error,
                extra: block.clone(),
            }))
        }
        _ => Ok(None),
    }
}

fn write_system(system: &Message, out: &mut dyn Sink) {
    write_system_content(system, out);
}

fn write_message(message: &Message, out: &mut dyn Sink) {
    write_content_field(message, out, write_block);
}

fn write_block(out: &mut dyn Sink, part: &Part) {
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
                (key!("type"), FieldChange::Default),
                (key!("id"), FieldChange::Set),
                (key!("name"), FieldChange::Set),
                (key!("input"), FieldChange::Set),
            ],
            |out, key| match key {
                "type" => out.str("tool_use"),
                "id" => out.str(id),
                "name" => out.str(name),
                // As read: the output is in the input's format, so never another format's
                // JSON-encoded string to decode.
                _ => out.value(arguments),
            },
        ),
        Part::ToolResult {
            call_id,
            content,
            layout,
            is_error,
            extra,
        } => {
            let content_change =
                FieldChange::set_or_remove(!content_absent(content.iter(), *layout));
            let is_error_change = FieldChange::set_if(*is_error || has(Some(extra), "is_error"));
            object(
                out,
                Some(extra),
                &[
                    (key!("type"), FieldChange::Default),
                    (key!("tool_use_id"), FieldChange::Set),
                    (key!("content"), content_change),
                    (key!("is_error"), is_error_change),
                ],
                |out, key| match key {
                    "type" => out.str("tool_result"),
                    "tool_use_id" => out.str(call_id),
                    "content" => {
                        write_content(
                            out,
                            content.iter(),
                            *layout,
                            |out, _| out.null(),
                            |out| out.null(),
                        );
                    }
                    _ => out.bool(*is_error),
                },
            );
        }
        Part::Text { .. } | Part::Opaque(_) => {
            unreachable!("write_content writes text and opaque parts itself")
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse_value, render};
    use super::*;

    #[test]
    fn every_block_type_round_trips() {
        let value = json!({"model": "claude-sonnet-4", "max_tokens": 100,
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "redacted_thinking", "data": "zz"},
                {"type": "text", "text": "let me look"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.rs", "n": 1.5}},
                {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "fn main() {}"},
                {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": [{"type": "text", "text": "denied"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}]},
                {"type": "text", "text": "also this"},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}}]},
            {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s", "name": "web", "input": {}}, {"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "is_error": false}]}
        ]});
        let conversation = parse_value(value.clone(), Some(Format::Anthropic)).unwrap();
        assert_eq!(render(&conversation), value);
    }

    /// The shape of a body current Claude Code sends (2.1.x): a `system` message inside
    /// `messages`, and top-level fields the engine does not interpret.
    fn claude_code_body() -> Value {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "fix the test"}]},
            {"role": "system", "content": "<env>cwd: /repo</env>"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.rs"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}", "cache_control": {"type": "ephemeral"}}]}
        ],
        "tools": [{"name": "Read", "description": "reads", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": "{\"session_id\":\"5e2b\"}"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "stream": true})
    }

    #[test]
    fn system_messages_and_current_top_level_fields_round_trip_byte_for_byte() {
        let value = claude_code_body();
        let bytes = serde_json::to_vec(&value).unwrap();
        let conversation = super::super::parse(&bytes, Some(Format::Anthropic)).unwrap();
        assert_eq!(conversation.messages[1].role, Role::System);
        assert_eq!(conversation.messages[1].text(), "<env>cwd: /repo</env>");
        assert_eq!(serde_json::to_vec(&render(&conversation)).unwrap(), bytes);
        // Detected without a hint, too.
        let detected = super::super::parse(&bytes, None).unwrap();
        assert_eq!(detected.format, Format::Anthropic);
    }

    #[test]
    fn a_system_message_inside_messages_is_pinned() {
        let conversation = parse_value(claude_code_body(), Some(Format::Anthropic)).unwrap();
        let counts = crate::tokens::count_with(&conversation, &crate::tokens::CharEstimate);
        let units = crate::units::group(
            &conversation,
            &counts,
            &crate::classify::requests(&conversation),
            &[],
        );
        let unit = units
            .iter()
            .find(|u| u.messages.contains(&1))
            .expect("a unit holds message 1");
        assert!(unit.pinned && unit.is_system, "{unit:?}");
    }

    #[test]
    fn tool_use_in_user_message_is_rejected() {
        let value = json!({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]});
        let err = parse_value(value, Some(Format::Anthropic))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "message 0: content[0].type: `tool_use` blocks belong in assistant messages"
        );
    }
}
