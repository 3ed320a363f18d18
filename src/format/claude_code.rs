//! Claude Code session logs (JSONL) → Anthropic Messages.
//!
//! The main chain is rebuilt from `uuid` / `parentUuid`, back from the last message line
//! (through `progress` and other lines that sit in the chain). Sidechain lines are skipped,
//! unless every message line is one (a subagent's own log). Lines that are not messages
//! (`progress`, `file-history-snapshot`, `queue-operation`, `summary`, `system`, …) are skipped.
//! An assistant response split over several lines with the same `message.id` is joined into
//! one message, and tool results that arrived on separate user lines are joined into the user
//! message right after the calls, so every result sits where the API wants it. A compaction is
//! a `compact_boundary` line with no parent: by default the conversation starts after the last
//! one, as the agent saw it (its summary first); with [`ReadOptions::whole_history`] the chain
//! continues through `logicalParentUuid`, the summary sitting where the compaction happened.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

use super::{
    Built, Clues, Format, ReadOptions, Reader, Record, RecordedUsage, Wire, anthropic, from_log,
    repair, str_of,
};
use crate::conversation::{Conversation, Role};
use crate::error::{Error, Result};
use crate::hash::FxBuild;

/// Claude Code session JSONL.
pub(super) struct ClaudeCode;

/// How many records detection looks at.
const SAMPLE: usize = 200;

impl Reader for ClaudeCode {
    fn wire(&self) -> &'static dyn Wire {
        &anthropic::Anthropic
    }

    fn needs(&self) -> Option<&'static str> {
        Some(
            "no line has `sessionId` with `uuid` or `parentUuid`, nor is a `summary` line with `leafUuid`",
        )
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        for record in records.iter().take(SAMPLE) {
            let Some(object) = record.value.as_object() else {
                continue;
            };
            if object.contains_key("sessionId")
                && (object.contains_key("uuid") || object.contains_key("parentUuid"))
            {
                clues.add(true, || {
                    format!("line {} (`uuid` and `sessionId`)", record.line)
                });
            } else if str_of(&record.value, "type") == Some("summary")
                && object.contains_key("leafUuid")
            {
                clues.add(true, || format!("line {} (a `summary` line)", record.line));
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, options: &ReadOptions) -> Result<Conversation> {
        self.read_usage(records, options)
            .map(|(conversation, _)| conversation)
    }

    /// Each response's `message.usage` (every line of a response repeats it; the first is
    /// taken): `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` is the
    /// size of the request, which held the messages before the response's message.
    fn read_usage(
        &self,
        records: Vec<Record>,
        options: &ReadOptions,
    ) -> Result<(Conversation, Vec<RecordedUsage>)> {
        let mut usages = Vec::new();
        // Log line → the metadata field saying the harness wrote the user line.
        let mut harness: BTreeMap<usize, &'static str> = BTreeMap::new();
        let (chain, boundaries) = main_chain(&records, options.whole_history);
        let mut built: Vec<Built> = Vec::new();
        // Where the request of a call started: after the last compaction crossed.
        let mut from = 0;
        let mut crossed = boundaries.iter().peekable();
        // The last assistant message built and its `message.id`.
        let mut last_assistant: Option<(String, usize)> = None;
        for r in chain {
            if crossed.next_if(|&&b| b < r).is_some() {
                while crossed.next_if(|&&b| b < r).is_some() {}
                from = built.len();
            }
            let record = &records[r];
            let Some(message) = record.value.get("message") else {
                continue;
            };
            let role = str_of(message, "role").unwrap_or_default();
            let content = match message.get("content") {
                Some(Value::Array(blocks)) if blocks.is_empty() => continue,
                Some(content) => content.clone(),
                None => {
                    return Err(Error::line(record.line, "message.content", "missing"));
                }
            };
            match role {
                "assistant" => {
                    let id = str_of(message, "id").unwrap_or_default().to_string();
                    if let Some((last_id, at)) = &last_assistant {
                        if !id.is_empty() && *last_id == id {
                            append(&mut built[*at].value, content);
                            continue;
                        }
                    }
                    last_assistant = Some((id, built.len()));
                    if let Some(input_tokens) = input_size(message) {
                        usages.push(RecordedUsage {
                            message: built.len(),
                            input_tokens,
                            model: str_of(message, "model").unwrap_or_default().to_string(),
                            line: record.line,
                            from,
                        });
                    }
                    built.push(message_value("assistant", content, record.line));
                }
                "user" => {
                    if let Some(field) = harness_field(&record.value) {
                        harness.insert(record.line, field);
                    }
                    if carries_results(&record.value) {
                        // Results join the user message right after the calls.
                        if let Some(previous) = built.last_mut() {
                            if str_of(&previous.value, "role") == Some("user") {
                                append(&mut previous.value, content);
                                continue;
                            }
                        }
                    }
                    built.push(message_value("user", content, record.line));
                }
                _ => {}
            }
        }
        let mut repairs = Vec::new();
        repair::anthropic(
            &mut built,
            &repair::ANTHROPIC,
            None,
            &mut repairs,
            &mut usages,
        );
        repairs.sort_by_key(|r| r.line);
        let mut conversation = from_log(built, Format::Anthropic, anthropic::parse)?;
        conversation.repairs = repairs;
        for (message, line) in conversation.messages.iter_mut().zip(&conversation.lines) {
            if message.role == Role::User {
                message.harness = harness.get(line).map(|&field| ("Claude Code", field));
            }
        }
        Ok((conversation, usages))
    }
}

/// The size of the request a response answered, from its `usage`: uncached, cache-read and
/// cache-written input tokens together. `None` when there is no usage or it is all zero (the
/// `<synthetic>` messages Claude Code writes itself).
fn input_size(message: &Value) -> Option<usize> {
    let usage = message.get("usage")?;
    let field = |key: &str| {
        usage
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    };
    let total = field("input_tokens")
        + field("cache_read_input_tokens")
        + field("cache_creation_input_tokens");
    (total > 0).then_some(total)
}

/// A new Anthropic message.
fn message_value(role: &str, content: Value, line: usize) -> Built {
    let mut object = Map::new();
    object.insert("role".into(), Value::String(role.into()));
    object.insert("content".into(), content);
    Built {
        value: Value::Object(object),
        line,
    }
}

/// Appends `content` (a string or blocks) to a message's content, as blocks.
fn append(message: &mut Value, content: Value) {
    let blocks = |content: Value| match content {
        Value::Array(blocks) => blocks,
        Value::String(text) => vec![serde_json::json!({"type": "text", "text": text})],
        other => vec![other],
    };
    if let Some(existing) = message.get_mut("content") {
        let mut merged = blocks(existing.take());
        merged.extend(blocks(content));
        *existing = Value::Array(merged);
    }
}

/// Whether a record is a user or assistant message line.
fn is_message(value: &Value) -> bool {
    matches!(str_of(value, "type"), Some("user" | "assistant")) && value.get("message").is_some()
}

fn is_sidechain(value: &Value) -> bool {
    value.get("isSidechain").and_then(Value::as_bool) == Some(true)
}

/// The message records of the main chain, in file order: back from the last message line
/// through `parentUuid` (and, for the whole history, `logicalParentUuid` at compact
/// boundaries), plus the result lines hanging off it; and the compact boundaries crossed, in
/// file order. Logs without uuids are read in file order.
fn main_chain(records: &[Record], whole_history: bool) -> (Vec<usize>, Vec<usize>) {
    let any_main = records
        .iter()
        .any(|r| is_message(&r.value) && !is_sidechain(&r.value));
    let wanted = |r: &Record| is_message(&r.value) && (!any_main || !is_sidechain(&r.value));
    let Some(leaf) = records.iter().rposition(wanted) else {
        return (Vec::new(), Vec::new());
    };
    if str_of(&records[leaf].value, "uuid").is_none() {
        let lines = (0..records.len())
            .filter(|&r| wanted(&records[r]))
            .collect();
        return (lines, Vec::new());
    }
    let mut by_uuid: HashMap<&str, usize, FxBuild> = HashMap::default();
    for (r, record) in records.iter().enumerate() {
        if let Some(uuid) = str_of(&record.value, "uuid") {
            by_uuid.insert(uuid, r);
        }
    }
    let mut chain = Vec::new();
    let mut boundaries = Vec::new();
    let mut seen = vec![false; records.len()];
    let mut at = Some(leaf);
    while let Some(r) = at {
        if seen[r] {
            break;
        }
        seen[r] = true;
        chain.push(r);
        let value = &records[r].value;
        let parent = str_of(value, "parentUuid").or_else(|| {
            let logical = whole_history
                .then(|| str_of(value, "logicalParentUuid"))
                .flatten();
            if logical.is_some() {
                boundaries.push(r);
            }
            logical
        });
        at = parent.and_then(|p| by_uuid.get(p).copied());
    }
    boundaries.sort_unstable();
    // Parallel calls branch: the lines of one response (one `message.id`) may hang off each
    // other's progress lines, and each result line hangs off the line of its call, so only one
    // branch leads to the leaf. The other lines of the chain's responses, and the result lines
    // hanging off any of them, belong to it too.
    let responses: HashSet<&str, FxBuild> = chain
        .iter()
        .filter_map(|&r| response_id(&records[r].value))
        .collect();
    for (r, record) in records.iter().enumerate() {
        if wanted(record) && response_id(&record.value).is_some_and(|id| responses.contains(id)) {
            seen[r] = true;
        }
    }
    let on_chain: HashSet<&str, FxBuild> = (0..records.len())
        .filter(|&r| seen[r])
        .filter_map(|r| str_of(&records[r].value, "uuid"))
        .collect();
    let mut lines: Vec<usize> = (0..records.len())
        .filter(|&r| {
            let value = &records[r].value;
            seen[r]
                || (wanted(&records[r])
                    && carries_results(value)
                    && str_of(value, "parentUuid").is_some_and(|p| on_chain.contains(p)))
        })
        .collect();
    lines.retain(|&r| wanted(&records[r]));
    (lines, boundaries)
}

/// The API response id (`message.id`) of an assistant line.
fn response_id(value: &Value) -> Option<&str> {
    if str_of(value, "type") != Some("assistant") {
        return None;
    }
    value.get("message").and_then(|m| str_of(m, "id"))
}

/// The metadata field of a user line that says Claude Code wrote it, not a person: `isMeta`
/// (caveats, command output, reminders it adds), `isCompactSummary` (a compaction's summary),
/// or `toolUseResult` beside text only (a rejected or interrupted call's note). `userType` is
/// not one: it is the kind of account (`external`, or `internal` at Anthropic), the same on a
/// person's lines and the harness's.
fn harness_field(value: &Value) -> Option<&'static str> {
    let flag = |key: &str| value.get(key).and_then(Value::as_bool) == Some(true);
    if flag("isMeta") {
        Some("isMeta")
    } else if flag("isCompactSummary") {
        Some("isCompactSummary")
    } else if value.get("toolUseResult").is_some() && !carries_results(value) {
        Some("toolUseResult")
    } else {
        None
    }
}

/// Whether a user line carries tool results.
fn carries_results(value: &Value) -> bool {
    value
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| str_of(b, "type") == Some("tool_result"))
        })
}
