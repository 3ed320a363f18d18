//! Codex rollout logs (JSONL) → OpenAI Responses input.
//!
//! Lines are `{timestamp, type, payload}`. `response_item` payloads are the conversation, in
//! order (`ghost_snapshot` items, Codex's own undo records that it never sends, are skipped).
//! A `compacted` line replaces the history before it with its `replacement_history`, or, in
//! older logs, with a user message holding its summary `message`; with
//! [`ReadOptions::whole_history`] the earlier items stay and the summary follows them.
//! `session_meta`, `turn_context` and `event_msg` lines (which repeat the items) are skipped.

use serde_json::{Value, json};

use super::{Built, Evidence, ReadOptions, Reader, Record, Wire, from_log, responses, str_of};
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

    fn evidence(&self, records: &[Record]) -> Evidence {
        let mut evidence = Evidence::default();
        for record in records.iter().take(200) {
            if let Some(kind) = str_of(&record.value, "type") {
                if TYPES.contains(&kind) && record.value.get("payload").is_some() {
                    evidence.add(true, || format!("line {} (a `{kind}` record)", record.line));
                }
            }
        }
        evidence
    }

    fn read(&self, records: Vec<Record>, options: &ReadOptions) -> crate::Result<Conversation> {
        let mut built: Vec<Built> = Vec::new();
        for record in records {
            let line = record.line;
            let Value::Object(mut object) = record.value else {
                continue;
            };
            let payload = object.get_mut("payload").map_or(Value::Null, Value::take);
            match object.get("type").and_then(Value::as_str) {
                Some("response_item") if str_of(&payload, "type") != Some("ghost_snapshot") => {
                    built.push(Built {
                        value: payload,
                        line,
                    });
                }
                Some("compacted") => {
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
        from_log(built, "input", responses::parse)
    }
}
