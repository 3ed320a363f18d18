//! Codex rollout logs (JSONL) → OpenAI Responses input.
//!
//! Lines are `{timestamp, type, payload}`. `response_item` payloads are the conversation, in
//! order (`ghost_snapshot` items, Codex's own undo records that it never sends, are skipped).
//! A `compacted` line replaces the history before it with its `replacement_history`, or, in
//! older logs, with a user message holding its summary `message`; with
//! [`ReadOptions::whole_history`] the earlier items stay and the summary follows them.
//! `session_meta`, `turn_context` and `event_msg` lines (which repeat the items) are skipped.

use serde_json::{Value, json};

use super::{
    Built, Clues, Format, ReadOptions, Reader, Record, RecordedUsage, Wire, from_log, repair,
    responses, str_of,
};
use crate::conversation::Conversation;

/// Codex rollout JSONL.
pub(super) struct Codex;

/// The record types of a rollout.
const TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

impl Reader for Codex {
    fn wire(&self) -> &'static dyn Wire {
        &responses::Responses
    }

    fn needs(&self) -> Option<&'static str> {
        Some("no line is a Codex record (`type` and `payload`)")
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        for record in records.iter().take(200) {
            if let Some(kind) = str_of(&record.value, "type") {
                if TYPES.contains(&kind) && record.value.get("payload").is_some() {
                    clues.add(true, || format!("line {} (a `{kind}` record)", record.line));
                }
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, options: &ReadOptions) -> crate::Result<Conversation> {
        self.read_usage(records, options)
            .map(|(conversation, _)| conversation)
    }

    /// A `token_count` event's `info.last_token_usage.input_tokens` (cached tokens included)
    /// is the size of the request just answered, which held the items up to the last one the
    /// client sent (a message from the user or developer, a tool output); the model's items
    /// after it are the response. A compaction starts the indices again, so usage recorded
    /// before it is dropped.
    fn read_usage(
        &self,
        records: Vec<Record>,
        options: &ReadOptions,
    ) -> crate::Result<(Conversation, Vec<RecordedUsage>)> {
        let mut built: Vec<Built> = Vec::new();
        let mut usages: Vec<RecordedUsage> = Vec::new();
        let mut model = String::new();
        for record in records {
            let line = record.line;
            let Value::Object(mut object) = record.value else {
                continue;
            };
            let payload = object.get_mut("payload").map_or(Value::Null, Value::take);
            match object.get("type").and_then(Value::as_str) {
                Some("turn_context") => {
                    if let Some(name) = str_of(&payload, "model") {
                        model = name.to_string();
                    }
                }
                Some("event_msg") if str_of(&payload, "type") == Some("token_count") => {
                    let input = payload
                        .pointer("/info/last_token_usage/input_tokens")
                        .and_then(Value::as_u64)
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|&n| n > 0);
                    let request = built.iter().rposition(|b| is_from_client(&b.value));
                    if let (Some(input_tokens), Some(last)) = (input, request) {
                        // Codex repeats the event; the first one of a request is kept.
                        if usages.last().is_none_or(|u| u.message != last + 1) {
                            usages.push(RecordedUsage {
                                message: last + 1,
                                input_tokens,
                                model: model.clone(),
                                line,
                                from: 0,
                            });
                        }
                    }
                }
                Some("response_item") if str_of(&payload, "type") != Some("ghost_snapshot") => {
                    built.push(Built {
                        value: payload,
                        line,
                    });
                }
                Some("compacted") => {
                    if !options.whole_history {
                        usages.clear();
                    }
                    let summary = str_of(&payload, "message").unwrap_or_default().to_string();
                    match payload.get("replacement_history") {
                        Some(Value::Array(history)) if !options.whole_history => {
                            built = history
                                .iter()
                                .filter(|item| str_of(item, "type") != Some("ghost_snapshot"))
                                .map(|item| Built {
                                    value: item.clone(),
                                    line,
                                })
                                .collect();
                        }
                        _ => {
                            if !options.whole_history {
                                built.clear();
                            }
                            if !summary.is_empty() {
                                built.push(Built {
                                    value: json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]}),
                                    line,
                                });
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let mut repairs = Vec::new();
        // An interrupted call (or one cut off when the session stopped) has no output in the
        // rollout; Codex answers it with `aborted` when it next sends the history.
        repair::responses(&mut built, &repair::RESPONSES, &mut repairs, &mut usages);
        repairs.sort_by_key(|r| r.line);
        let mut conversation = from_log(built, Format::Responses, responses::parse)?;
        conversation.repairs = repairs;
        Ok((conversation, usages))
    }
}

/// Whether a Responses item is one the client sends (rather than one the model produced).
fn is_from_client(item: &Value) -> bool {
    match str_of(item, "type") {
        Some("message") => str_of(item, "role") != Some("assistant"),
        Some(kind) => kind.ends_with("_output"),
        None => false,
    }
}
