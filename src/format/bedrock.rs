//! AWS Bedrock Converse ⇄ the neutral model.
//!
//! A request body with `messages` and `system` (blocks, which become [`Conversation::system`]),
//! or a bare array of messages; roles `user` and `assistant`; content is an array of blocks
//! keyed by their kind: `text` blocks are text, `toolUse` becomes [`Part::ToolCall`] and
//! `toolResult` a [`Part::ToolResult`] (its `text` blocks are text, `json`, `image` and
//! `document` blocks stay opaque; `status: "error"` is an error), paired by `toolUseId`;
//! `image`, `document`, `reasoningContent`, `cachePoint` and unknown blocks stay
//! [`Part::Opaque`]. A server-side tool's result may sit in the assistant message beside its
//! call.

use serde_json::{Map, Value};

use super::Placement;
use super::anthropic::merge_text_in_front;
use super::{
    Clues, Envelope, FieldChange, Format, ReadOptions, Reader, Record, Sink, Wire, fields_of, has,
    key, kind, known_role, list, nested, object, read_body, write_text_block,
};
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};

/// Bedrock Converse.
pub(super) struct Bedrock;

/// The roles of messages, as named on the wire.
const ROLES: &[(&str, Role)] = &[("user", Role::User), ("assistant", Role::Assistant)];

/// Block kinds only Bedrock has.
const BLOCKS: &[&str] = &[
    "toolUse",
    "toolResult",
    "reasoningContent",
    "cachePoint",
    "guardContent",
];

impl Reader for Bedrock {
    fn wire(&self) -> &'static dyn Wire {
        &Bedrock
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        let Some((envelope, messages)) = list(records, "messages") else {
            return clues;
        };
        if let Some(envelope) = envelope {
            for key in [
                "inferenceConfig",
                "toolConfig",
                "additionalModelRequestFields",
            ] {
                if envelope.contains_key(key) {
                    clues.add(true, || format!("a top-level `{key}`"));
                }
            }
            if let Some(Value::Array(blocks)) = envelope.get("system") {
                if blocks
                    .iter()
                    .any(|b| b.get("type").is_none() && b.get("text").is_some())
                {
                    clues.add(true, || "top-level `system` blocks without a `type`".into());
                }
            }
        }
        for (index, message) in messages.iter().enumerate() {
            if message.get("role").is_none() || message.get("type").is_some() {
                continue;
            }
            for block in message
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(block) = block.as_object() else {
                    continue;
                };
                if block.contains_key("type") {
                    continue;
                }
                if let Some(key) = BLOCKS.iter().find(|k| block.contains_key(**k)) {
                    clues.add(true, || format!("message {index} (a `{key}` block)"));
                } else if block.contains_key("text") {
                    clues.add(true, || {
                        format!("message {index} (a `text` block without a `type`)")
                    });
                }
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, _: &ReadOptions) -> Result<Conversation> {
        read_body(records, Format::Bedrock, parse)
    }
}

impl Wire for Bedrock {
    fn write_system(&self, system: &Message, out: &mut dyn Sink) {
        write_blocks(out, &system.parts);
    }

    fn write_message(&self, message: &Message, out: &mut dyn Sink) {
        object(
            out,
            Some(&message.extra),
            &[(key!("content"), FieldChange::Set)],
            |out, _| write_blocks(out, &message.parts),
        );
    }

    fn results(&self) -> Placement {
        Placement::NextUserTurn
    }

    fn merge_marker(&self, message: &mut Message, text: &str) -> bool {
        let merged = merge_text_in_front(message, text, |t| Part::text(t));
        message.layout = Layout::Blocks;
        merged
    }

    fn first_must_be_user(&self) -> bool {
        true
    }

    fn call_field(&self, _: &Message, part: usize) -> String {
        format!("content[{part}].toolUse.toolUseId")
    }

    fn result_field(&self, _: &Message, part: usize) -> String {
        format!("content[{part}].toolResult.toolUseId")
    }
}

/// Reads the top-level system blocks and the messages.
fn parse(
    envelope: &mut Option<Envelope>,
    messages: Vec<Value>,
) -> Result<(Option<Message>, Vec<Message>)> {
    let system = match envelope.as_mut().and_then(|e| e.get_mut("system")) {
        None => None,
        Some(system) => {
            let parts = parse_blocks(0, "system", system.take()).map_err(|err| match err {
                Error::Malformed { at, problem } => Error::top(at.field, problem),
                other => other,
            })?;
            Some(Message {
                role: Role::System,
                parts,
                layout: Layout::Blocks,
                extra: Map::new(),
                harness: None,
            })
        }
    };
    let messages = super::parse_messages(messages, parse_message)?;
    Ok((system, messages))
}

fn parse_message(index: usize, value: Value) -> Result<Message> {
    let mut extra = fields_of(index, "message", value)?;
    let role = match extra.get("role").and_then(Value::as_str) {
        Some(name) => known_role(index, name, ROLES)?,
        None => return Err(Error::field(index, "role", "missing")),
    };
    let content = extra.get_mut("content").map_or(Value::Null, Value::take);
    let parts = parse_blocks(index, "content", content)?;
    for (p, part) in parts.iter().enumerate() {
        if role == Role::User && matches!(part, Part::ToolCall { .. }) {
            return Err(Error::field(
                index,
                format!("content[{p}].toolUse"),
                "`toolUse` blocks belong in assistant messages",
            ));
        }
    }
    Ok(Message {
        role,
        parts,
        layout: Layout::Blocks,
        extra,
        harness: None,
    })
}

fn parse_blocks(index: usize, field: &str, value: Value) -> Result<Vec<Part>> {
    let Value::Array(blocks) = value else {
        return Err(Error::field(
            index,
            field,
            format!("expected an array of blocks, found {}", kind(&value)),
        ));
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for (b, block) in blocks.into_iter().enumerate() {
        let Value::Object(mut block) = block else {
            return Err(Error::field(
                index,
                format!("{field}[{b}]"),
                format!("expected a block object, found {}", kind(&block)),
            ));
        };
        let part = if let Some(Value::String(_)) = block.get("text") {
            let text = match block.get_mut("text").map(Value::take) {
                Some(Value::String(text)) => text,
                _ => String::new(),
            };
            Part::Text { text, extra: block }
        } else if block.contains_key("toolUse") {
            let path = format!("{field}[{b}].toolUse");
            let Some(Value::Object(call)) = block.get_mut("toolUse") else {
                return Err(Error::field(index, path, "expected an object"));
            };
            let id = string(call, "toolUseId", index, &path)?;
            let name = string(call, "name", index, &path)?;
            let arguments = call.get_mut("input").map_or(Value::Null, Value::take);
            Part::ToolCall {
                id,
                name,
                arguments,
                extra: block,
            }
        } else if block.contains_key("toolResult") {
            let path = format!("{field}[{b}].toolResult");
            let Some(Value::Object(result)) = block.get_mut("toolResult") else {
                return Err(Error::field(index, path, "expected an object"));
            };
            let call_id = string(result, "toolUseId", index, &path)?;
            let is_error = result.get("status").and_then(Value::as_str) == Some("error");
            let content = match result.get_mut("content").map(Value::take) {
                None | Some(Value::Null) => Vec::new(),
                Some(content) => parse_blocks(index, &format!("{path}.content"), content)?,
            };
            Part::ToolResult {
                call_id,
                content,
                layout: Layout::Blocks,
                is_error,
                extra: block,
            }
        } else {
            Part::Opaque(Value::Object(block))
        };
        parts.push(part);
    }
    Ok(parts)
}

fn string(object: &Map<String, Value>, key: &str, index: usize, path: &str) -> Result<String> {
    match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Error::field(
            index,
            format!("{path}.{key}"),
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err(Error::field(index, format!("{path}.{key}"), "missing")),
    }
}

fn write_blocks(out: &mut dyn Sink, parts: &[Part]) {
    out.begin_array();
    for part in parts {
        write_block(out, part);
    }
    out.end_array();
}

fn write_block(out: &mut dyn Sink, part: &Part) {
    match part {
        Part::Text { text, extra } => write_text_block(out, text, extra),
        Part::ToolCall {
            id,
            name,
            arguments,
            extra,
        } => {
            let call = nested(extra, "toolUse");
            // An absent `input` (read as `null`) stays absent.
            let input = FieldChange::set_if(has(call, "input") || !arguments.is_null());
            object(
                out,
                Some(extra),
                &[(key!("toolUse"), FieldChange::Set)],
                |out, _| {
                    object(
                        out,
                        call,
                        &[
                            (key!("toolUseId"), FieldChange::Set),
                            (key!("name"), FieldChange::Set),
                            (key!("input"), input),
                        ],
                        |out, key| match key {
                            "toolUseId" => out.str(id),
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
            extra,
            ..
        } => {
            let result = nested(extra, "toolResult");
            let content_change = FieldChange::set_if(has(result, "content") || !content.is_empty());
            object(
                out,
                Some(extra),
                &[(key!("toolResult"), FieldChange::Set)],
                |out, _| {
                    object(
                        out,
                        result,
                        &[
                            (key!("toolUseId"), FieldChange::Set),
                            (key!("content"), content_change),
                        ],
                        |out, key| match key {
                            "toolUseId" => out.str(call_id),
                            _ => write_blocks(out, content),
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
    fn every_block_type_round_trips_and_pairs() {
        let value = json!({"messages": [
            {"role": "user", "content": [{"text": "hi"}, {"image": {"format": "png", "source": {"bytes": "AA"}}}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s"}}},
                {"text": "let me look"},
                {"toolUse": {"toolUseId": "t1", "name": "ls", "input": {"n": 1.5}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "a.rs"}, {"json": {"k": 1}}], "status": "success"}},
                {"text": "and?"}]},
            {"role": "assistant", "content": [{"text": "done"}]}
        ], "system": [{"text": "be brief"}, {"cachePoint": {"type": "default"}}], "inferenceConfig": {"maxTokens": 10}});
        let conversation = parse_value(value.clone(), None).unwrap();
        assert_eq!(conversation.format, Format::Bedrock);
        assert_eq!(render(&conversation), value);
        assert!(crate::validate::check(&conversation).is_empty());
    }
}
