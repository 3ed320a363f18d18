//! pi session logs (JSONL) → Anthropic Messages.
//!
//! A `session` header, then entries (in version 3 a tree of `id` / `parentId`: the branch that
//! leads to the last entry is read); `message` entries hold `user`, `assistant` and
//! `toolResult` messages (other entries — model and thinking-level changes, labels — are
//! skipped). An assistant's `text`, `thinking` and `toolCall {id, name, arguments}` blocks
//! become `text`, `thinking` and `tool_use` blocks; a `toolResult {toolCallId, isError}`
//! message becomes a `tool_result` block, and results in a row join one user message. Empty
//! (aborted) assistant messages are skipped. A `compaction` entry
//! `{summary, firstKeptEntryIndex | firstKeptEntryId}` is honoured as for Claude Code: by default
//! the conversation is its summary followed by the entries from the first kept one; with
//! [`ReadOptions::whole_history`] the summary sits where the compaction happened.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{
    Built, Clues, Format, ReadOptions, Reader, Record, Wire, anthropic, from_log, repair, str_of,
};
use crate::conversation::Conversation;
use crate::error::{Error, Result};
use crate::hash::FxBuild;

/// pi session JSONL.
pub(super) struct Pi;

impl Reader for Pi {
    fn wire(&self) -> &'static dyn Wire {
        &anthropic::Anthropic
    }

    fn needs(&self) -> Option<&'static str> {
        Some("no line is a pi `session` header or a `message` entry with a `role`")
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        for record in records.iter().take(200) {
            let value = &record.value;
            if value.get("payload").is_some() || value.get("uuid").is_some() {
                continue;
            }
            match str_of(value, "type") {
                Some("session") => {
                    clues.add(true, || {
                        format!("line {} (a `session` header)", record.line)
                    });
                }
                Some("message")
                    if value
                        .get("message")
                        .and_then(|m| str_of(m, "role"))
                        .is_some() =>
                {
                    clues.add(true, || format!("line {} (a `message` entry)", record.line));
                }
                _ => {}
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, options: &ReadOptions) -> Result<Conversation> {
        let on_branch = branch(&records);
        // Where the conversation starts: after the last compaction, its summary first.
        let mut start = 0;
        let mut summary_at = None;
        if !options.whole_history {
            if let Some(c) = (0..records.len()).rposition(|r| {
                on_branch[r] && str_of(&records[r].value, "type") == Some("compaction")
            }) {
                let value = &records[c].value;
                let kept = match (
                    value.get("firstKeptEntryIndex"),
                    str_of(value, "firstKeptEntryId"),
                ) {
                    (Some(Value::Number(n)), _) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
                    (_, Some(id)) => records
                        .iter()
                        .position(|r| str_of(&r.value, "id") == Some(id)),
                    _ => None,
                };
                let Some(kept) = kept else {
                    return Err(Error::line(
                        records[c].line,
                        "firstKeptEntryIndex",
                        "missing: a compaction names the first entry it keeps",
                    ));
                };
                start = kept.min(c);
                summary_at = Some(c);
            }
        }
        let mut built: Vec<Built> = Vec::new();
        if let Some(c) = summary_at {
            push_summary(&mut built, &records[c]);
        }
        for (r, record) in records.iter().enumerate() {
            if !on_branch[r] || (r < start && Some(r) != summary_at) {
                continue;
            }
            let value = &record.value;
            match str_of(value, "type") {
                Some("compaction") if options.whole_history => push_summary(&mut built, record),
                Some("message") => {
                    if let Some(message) = value.get("message") {
                        push_message(&mut built, message, record.line)?;
                    }
                }
                _ => {}
            }
        }
        // pi answers a call it aborted with an error result of its own.
        let mut repairs = Vec::new();
        let aborted = json!([{"type": "text", "text": "aborted"}]);
        repair::anthropic(
            &mut built,
            &repair::ANTHROPIC,
            Some(&aborted),
            &mut repairs,
            &mut [],
        );
        repairs.sort_by_key(|r| r.line);
        let mut conversation = from_log(built, Format::Anthropic, anthropic::parse)?;
        conversation.repairs = repairs;
        Ok(conversation)
    }
}

/// Which entries are on the current branch: in a tree session (entries with `id` and
/// `parentId`, version 3) the path back from the last entry; in older, linear sessions, all.
fn branch(records: &[Record]) -> Vec<bool> {
    let Some(leaf) = records
        .iter()
        .rposition(|r| r.value.get("parentId").is_some())
    else {
        return vec![true; records.len()];
    };
    let by_id: HashMap<&str, usize, FxBuild> = records
        .iter()
        .enumerate()
        .filter_map(|(r, record)| str_of(&record.value, "id").map(|id| (id, r)))
        .collect();
    // Entries outside the tree (the session header) stay.
    let mut on: Vec<bool> = records
        .iter()
        .map(|r| r.value.get("parentId").is_none())
        .collect();
    let mut at = Some(leaf);
    while let Some(r) = at {
        if on[r] {
            break;
        }
        on[r] = true;
        at = str_of(&records[r].value, "parentId").and_then(|p| by_id.get(p).copied());
    }
    on
}

fn push_summary(built: &mut Vec<Built>, record: &Record) {
    if let Some(summary) = str_of(&record.value, "summary") {
        built.push(Built {
            value: json!({"role": "user", "content": [{"type": "text", "text": summary}]}),
            line: record.line,
        });
    }
}

/// pi content blocks as Anthropic blocks.
fn blocks(content: Option<&Value>) -> Vec<Value> {
    let Some(content) = content else {
        return Vec::new();
    };
    let Some(items) = content.as_array() else {
        return match content.as_str() {
            Some(text) if !text.is_empty() => vec![json!({"type": "text", "text": text})],
            _ => Vec::new(),
        };
    };
    items
        .iter()
        .filter_map(|block| match str_of(block, "type") {
            Some("text") => Some(json!({"type": "text", "text": str_of(block, "text").unwrap_or_default()})),
            Some("thinking") => {
                let signature = str_of(block, "thinkingSignature")?;
                Some(json!({"type": "thinking", "thinking": str_of(block, "thinking").unwrap_or_default(), "signature": signature}))
            }
            Some("toolCall") => Some(json!({
                "type": "tool_use",
                "id": block.get("id").cloned().unwrap_or(Value::Null),
                "name": block.get("name").cloned().unwrap_or(Value::Null),
                "input": block.get("arguments").cloned().unwrap_or_else(|| json!({})),
            })),
            Some("image") => Some(json!({"type": "image", "source": {
                "type": "base64",
                "media_type": block.get("mimeType").cloned().unwrap_or(Value::Null),
                "data": block.get("data").cloned().unwrap_or(Value::Null),
            }})),
            _ => None,
        })
        .collect()
}

fn push_message(built: &mut Vec<Built>, message: &Value, line: usize) -> Result<()> {
    match str_of(message, "role") {
        Some("user") => {
            let content = blocks(message.get("content"));
            if !content.is_empty() {
                built.push(Built {
                    value: json!({"role": "user", "content": content}),
                    line,
                });
            }
        }
        Some("assistant") => {
            let content = blocks(message.get("content"));
            if !content.is_empty() {
                built.push(Built {
                    value: json!({"role": "assistant", "content": content}),
                    line,
                });
            }
        }
        Some("toolResult") => {
            let Some(id) = str_of(message, "toolCallId") else {
                return Err(Error::line(line, "message.toolCallId", "missing"));
            };
            let result = json!({
                "type": "tool_result",
                "tool_use_id": id,
                "content": blocks(message.get("content")),
                "is_error": message.get("isError").and_then(Value::as_bool).unwrap_or(false),
            });
            if let Some(previous) = built.last_mut() {
                let joins = str_of(&previous.value, "role") == Some("user")
                    && previous.value["content"].as_array().is_some_and(|c| {
                        c.iter().all(|b| str_of(b, "type") == Some("tool_result"))
                    });
                if joins {
                    if let Some(Value::Array(content)) = previous.value.get_mut("content") {
                        content.push(result);
                        return Ok(());
                    }
                }
            }
            built.push(Built {
                value: json!({"role": "user", "content": [result]}),
                line,
            });
        }
        _ => {}
    }
    Ok(())
}
