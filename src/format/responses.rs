//! OpenAI Responses API input items ⇄ the neutral model.
//!
//! A request body with `input` (an item array, or a string: one user message) and
//! `instructions`, or a bare item array. Each item is one message: `message` items (roles user,
//! assistant, system, developer; `input_text` / `output_text` parts are text, images and files
//! stay opaque), `function_call` and `custom_tool_call` items are assistant messages with one
//! [`Part::ToolCall`], `function_call_output` and `custom_tool_call_output` items are
//! [`Role::Tool`] messages with one [`Part::ToolResult`], paired by `call_id`. Items that
//! configure the model rather than converse — Codex's `additional_tools` (the tool definitions
//! of its code mode: namespaces of functions and freeform `custom` tools, sent as an input item
//! instead of top-level `tools`) and `configuration_update` (a reasoning effort that holds from
//! where it stands until the next one) — are [`Role::System`] messages holding the item whole as
//! [`Part::Opaque`]: counted like the rest, pinned like a system prompt. Every other item
//! (`reasoning`, web and file search, computer calls, `compaction`, `item_reference`, …) is an
//! assistant message holding the item whole as [`Part::Opaque`] (a tool message for the
//! `*_call_output` items); a `*_call` item with a `call_id` stays in one unit with its output. A run of reasoning and call
//! items and the outputs of those calls form one result window (outputs may come after notes
//! in between, as Codex writes them), so a `reasoning` item stays in the unit of the call that
//! follows it; a reasoning item followed by an assistant message stays with that message.

use std::collections::BTreeSet;
use std::ops::Range;

use serde_json::{Map, Value};

use super::Placement;
use super::{
    Clues, Envelope, FieldChange, Format, ReadOptions, Reader, Record, Sink, Wire, fields_of, key,
    kind, list, object, parse_content, read_list, required_str, role_of, single, split_envelope,
    write_arguments_string, write_content,
};
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};

/// OpenAI Responses input.
pub(super) struct Responses;

/// Item types that only the Responses API has.
const ITEM_TYPES: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "reasoning",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "item_reference",
    "compaction",
    "additional_tools",
    "configuration_update",
];

/// The roles of `message` items, as named on the wire.
const ROLES: &[(&str, Role)] = &[
    ("user", Role::User),
    ("assistant", Role::Assistant),
    ("system", Role::System),
    ("developer", Role::System),
];

/// Item types that configure the model (its tools, its reasoning effort) rather than converse:
/// read as system messages, so that no compaction removes them.
const SETTING_ITEMS: &[&str] = &["additional_tools", "configuration_update"];

/// Content part types that only the Responses API has.
const PART_TYPES: &[&str] = &[
    "input_text",
    "output_text",
    "input_image",
    "input_file",
    "input_audio",
];

impl Reader for Responses {
    fn wire(&self) -> &'static dyn Wire {
        &Responses
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        if let [record] = records {
            if let Some(Value::String(_)) = record.value.get("input") {
                clues.add(true, || "a top-level `input` string".into());
            }
        }
        let Some((envelope, items)) = list(records, "input") else {
            return clues;
        };
        if envelope.is_some() {
            clues.add(true, || "a top-level `input` array".into());
        }
        for (index, item) in items.iter().enumerate() {
            if let Some(kind) = item.get("type").and_then(Value::as_str) {
                if ITEM_TYPES.contains(&kind) {
                    clues.add(true, || format!("item {index} (type `{kind}`)"));
                }
            }
            for part in item
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(kind) = part.get("type").and_then(Value::as_str) {
                    if PART_TYPES.contains(&kind) {
                        clues.add(true, || format!("item {index} (an `{kind}` part)"));
                    }
                }
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, _: &ReadOptions) -> Result<Conversation> {
        let mut value = single(records, Format::Responses)?;
        let mut text_input = None;
        if let Some(input @ Value::String(_)) = value.get_mut("input") {
            let text = input.take();
            text_input = Some(text.clone());
            *input = Value::Array(vec![serde_json::json!({"role": "user", "content": text})]);
        }
        let (envelope, items) = split_envelope(value, "input")?;
        let mut conversation = read_list(Format::Responses, envelope, items, parse)?;
        // The string stays in the envelope: written back as read while it is the whole
        // conversation (see `format::write`).
        if let (Some(text), Some(envelope)) = (text_input, conversation.envelope.as_mut()) {
            envelope.insert("input".into(), text);
        }
        Ok(conversation)
    }
}

impl Wire for Responses {
    fn system_key(&self) -> &'static str {
        "instructions"
    }

    fn write_system(&self, system: &Message, out: &mut dyn Sink) {
        out.str(&system.text());
    }

    fn write_message(&self, message: &Message, out: &mut dyn Sink) {
        write_item(message, out);
    }

    fn results(&self) -> Placement {
        Placement::OutputItems
    }

    fn call_field(&self, _: &Message, _: usize) -> String {
        "call_id".into()
    }

    fn result_field(&self, _: &Message, _: usize) -> String {
        "call_id".into()
    }
}

/// The run of reasoning and call items from `index` (when it makes a call) and the outputs of
/// those calls; a reasoning item followed by an assistant message goes with it.
pub(super) fn output_items_window(messages: &[Message], index: usize) -> Range<usize> {
    let start = index + 1;
    let side = messages[index.min(messages.len())..]
        .iter()
        .take_while(|m| m.role == Role::Assistant && m.extra.is_empty())
        .count();
    let calls_end = index + side;
    let mut pending: BTreeSet<&str> = messages[index..calls_end]
        .iter()
        .flat_map(|m| m.call_ids().chain(opaque_id(m, "_call")))
        .collect();
    if pending.is_empty() {
        // A reasoning item goes with the output item that follows it.
        let follows = side > 0
            && messages
                .get(calls_end)
                .is_some_and(|m| m.role == Role::Assistant && !m.extra.is_empty());
        return if follows {
            start..calls_end + 1
        } else {
            start..start
        };
    }
    // The outputs may come later than right after the calls (Codex puts approval notes
    // between them): the window runs to the last output of these calls, up to the next
    // user turn or the next call.
    let mut end = calls_end;
    for (k, message) in messages.iter().enumerate().skip(calls_end) {
        let user_turn = message.role == Role::User && !message.has_results();
        if pending.is_empty() || user_turn || message.has_calls() {
            break;
        }
        for id in message
            .result_ids()
            .chain(opaque_id(message, "_call_output"))
        {
            if pending.remove(id) {
                end = k + 1;
            }
        }
    }
    start..end
}

/// The `call_id` of an item kept whole whose type ends in `suffix` (`computer_call`,
/// `local_shell_call_output`, …): such calls and outputs stay in one unit like function calls.
fn opaque_id<'a>(message: &'a Message, suffix: &str) -> Option<&'a str> {
    let [Part::Opaque(item)] = message.parts.as_slice() else {
        return None;
    };
    let kind = item.get("type").and_then(Value::as_str)?;
    if !kind.ends_with(suffix) {
        return None;
    }
    item.get("call_id").and_then(Value::as_str)
}

/// Reads `instructions` (when a string) and the items.
pub(super) fn parse(
    envelope: &mut Option<Envelope>,
    items: Vec<Value>,
) -> Result<(Option<Message>, Vec<Message>)> {
    let system = match envelope.as_mut().and_then(|e| e.get_mut("instructions")) {
        Some(Value::String(text)) => Some(Message {
            role: Role::System,
            parts: vec![Part::text(std::mem::take(text))],
            layout: Layout::Text,
            extra: Map::new(),
            harness: None,
        }),
        _ => None,
    };
    // A request that continues a stored response (`previous_response_id`, `conversation`) may
    // open with outputs of calls that live on the server: such outputs are kept whole, as the
    // user's input they are.
    let continues = envelope.as_ref().is_some_and(|e| {
        super::has_value(e, "previous_response_id") || super::has_value(e, "conversation")
    });
    let calls: BTreeSet<String> = if continues {
        items
            .iter()
            .filter(|item| {
                item.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with("_call"))
            })
            .filter_map(|item| {
                item.get("call_id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect()
    } else {
        BTreeSet::new()
    };
    let messages = items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let server_side = continues
                && item
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with("_call_output"))
                && item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| !calls.contains(id));
            if server_side {
                Ok(Message {
                    role: Role::User,
                    parts: vec![Part::Opaque(item)],
                    layout: Layout::Absent,
                    extra: Map::new(),
                    harness: None,
                })
            } else {
                parse_item(index, item)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((system, messages))
}

/// Claims the Responses text part types as text.
fn text_part(
    index: usize,
    field: &str,
    b: usize,
    block: &mut Map<String, Value>,
) -> Result<Option<Part>> {
    match block.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text") => match block.get_mut("text").map(Value::take) {
            Some(Value::String(text)) => Ok(Some(Part::Text {
                text,
                extra: block.clone(),
            })),
            other => Err(Error::field(
                index,
                format!("{field}[{b}].text"),
                format!(
                    "expected a string, found {}",
                    other.as_ref().map_or("nothing", kind)
                ),
            )),
        },
        _ => Ok(None),
    }
}

fn parse_item(index: usize, item: Value) -> Result<Message> {
    let mut item = fields_of(index, "item", item)?;
    let one = |role, part| Message {
        role,
        parts: vec![part],
        layout: Layout::Absent,
        extra: Map::new(),
        harness: None,
    };
    let kind_of = item.get("type").and_then(Value::as_str).map(str::to_string);
    match kind_of.as_deref() {
        None | Some("message") if item.contains_key("role") => {
            let role = role_of(&item, index, ROLES)?;
            let (parts, layout) =
                parse_content(item.get_mut("content"), index, "content", |b, block| {
                    text_part(index, "content", b, block)
                })?;
            Ok(Message {
                role,
                parts,
                layout,
                extra: item,
                harness: None,
            })
        }
        Some(call @ ("function_call" | "custom_tool_call")) => {
            let id = required_str(&item, "call_id", index, "call_id")?;
            let name = required_str(&item, "name", index, "name")?;
            let field = if call == "function_call" {
                "arguments"
            } else {
                "input"
            };
            let arguments = match item.get_mut(field).map(Value::take) {
                Some(arguments @ Value::String(_)) => arguments,
                other => {
                    return Err(Error::field(
                        index,
                        field,
                        format!(
                            "expected a string, found {}",
                            other.as_ref().map_or("nothing", kind)
                        ),
                    ));
                }
            };
            Ok(one(
                Role::Assistant,
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                    extra: item,
                },
            ))
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let call_id = required_str(&item, "call_id", index, "call_id")?;
            if !item.contains_key("output") {
                return Err(Error::field(index, "output", "missing"));
            }
            let (content, layout) =
                parse_content(item.get_mut("output"), index, "output", |b, block| {
                    text_part(index, "output", b, block)
                })?;
            Ok(one(
                Role::Tool,
                Part::ToolResult {
                    call_id,
                    content,
                    layout,
                    is_error: false,
                    extra: item,
                },
            ))
        }
        None => Err(Error::field(
            index,
            "type",
            "missing: an item needs a `type` (or a `role`, for a message)",
        )),
        Some(setting) if SETTING_ITEMS.contains(&setting) => {
            Ok(one(Role::System, Part::Opaque(Value::Object(item))))
        }
        // Outputs of other calls (computer, local shell, …) are kept whole, on the tool side.
        Some(other) if other.ends_with("_call_output") => {
            Ok(one(Role::Tool, Part::Opaque(Value::Object(item))))
        }
        Some(_) => Ok(one(Role::Assistant, Part::Opaque(Value::Object(item)))),
    }
}

fn write_item(message: &Message, out: &mut dyn Sink) {
    let empty_text = |out: &mut dyn Sink| out.str("");
    if message.extra.is_empty() {
        if let [part] = message.parts.as_slice() {
            match part {
                Part::ToolCall {
                    id,
                    name,
                    arguments,
                    extra,
                } => {
                    let custom =
                        extra.get("type").and_then(Value::as_str) == Some("custom_tool_call");
                    let arguments_key = if custom {
                        key!("input")
                    } else {
                        key!("arguments")
                    };
                    return object(
                        out,
                        Some(extra),
                        &[
                            (key!("type"), FieldChange::Default),
                            (key!("call_id"), FieldChange::Set),
                            (key!("name"), FieldChange::Set),
                            (arguments_key, FieldChange::Set),
                        ],
                        |out, key| match key {
                            "type" => out.str("function_call"),
                            "call_id" => out.str(id),
                            "name" => out.str(name),
                            _ => write_arguments_string(out, arguments),
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
                    return object(
                        out,
                        Some(extra),
                        &[
                            (key!("type"), FieldChange::Default),
                            (key!("call_id"), FieldChange::Set),
                            (key!("output"), FieldChange::Set),
                        ],
                        |out, key| match key {
                            "type" => out.str("function_call_output"),
                            "call_id" => out.str(call_id),
                            _ => write_content(
                                out,
                                content.iter(),
                                *layout,
                                |out, _| out.null(),
                                empty_text,
                            ),
                        },
                    );
                }
                Part::Opaque(item) => return out.value(item),
                Part::Text { .. } => {}
            }
        }
    }
    object(
        out,
        Some(&message.extra),
        &[
            (key!("role"), FieldChange::Default),
            (key!("content"), FieldChange::Set),
        ],
        |out, key| match key {
            "role" => out.str(message.role.as_str()),
            _ => write_content(
                out,
                message.parts.iter(),
                message.layout,
                |out, _| out.null(),
                empty_text,
            ),
        },
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse_value, render};
    use super::*;

    #[test]
    fn every_item_type_round_trips() {
        let value = json!({"model": "gpt-5", "instructions": "be brief", "input": [
            {"role": "user", "content": "hi"},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xx"},
            {"type": "message", "role": "assistant", "id": "m1", "status": "completed", "content": [{"type": "output_text", "text": "looking", "annotations": []}]},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}", "id": "fc_1"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "patch", "input": "*** Begin"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.rs"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "ok"}]},
            {"type": "web_search_call", "status": "completed"},
            {"type": "item_reference", "id": "x"},
            {"role": "user", "content": [{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "data:"}]}
        ]});
        let conversation = parse_value(value.clone(), None).unwrap();
        assert_eq!(conversation.format, Format::Responses);
        assert_eq!(render(&conversation), value);
        // The reasoning goes with the text after it; both calls are one round with both
        // outputs.
        assert_eq!(conversation.result_window(2), 3..4);
        assert_eq!(conversation.result_window(4), 5..8);
    }

    #[test]
    fn other_calls_stay_with_their_outputs() {
        let value = json!({"input": [
            {"role": "user", "content": "go"},
            {"type": "computer_call", "call_id": "k1", "action": {"type": "click"}},
            {"type": "computer_call_output", "call_id": "k1", "output": {"type": "computer_screenshot"}},
            {"role": "user", "content": "next"}
        ]});
        let conversation = parse_value(value.clone(), None).unwrap();
        assert_eq!(render(&conversation), value);
        assert_eq!(conversation.result_window(1), 2..3);
    }
}
