//! Gemini CLI session files → Gemini API contents.
//!
//! A session is one JSON document (`{sessionId, projectHash, messages: […]}`, even when named
//! `.jsonl`) or, in newer versions, JSONL: a header line, one line per message, and
//! `{"$set": …}` update lines (skipped; a message line repeated with the same `id` replaces the
//! earlier one). `user` messages become user contents (content a string or `[{text}]` parts);
//! a `gemini` message becomes a model content with its text and one `functionCall` per entry
//! of `toolCalls`, followed by a user content with those calls' recorded `result` parts (the
//! `functionResponse`s). `info`, `warning` and `error` messages and the model's `thoughts` are
//! not part of what the model is sent, and are skipped.

use serde_json::{Map, Value, json};

use super::{
    Built, Clues, Format, ReadOptions, Reader, Record, RecordedUsage, Wire, from_log, gemini,
    repair, str_of,
};
use crate::conversation::Conversation;
use crate::error::{Error, Result};

/// Gemini CLI session files.
pub(super) struct GeminiCli;

impl Reader for GeminiCli {
    fn wire(&self) -> &'static dyn Wire {
        &gemini::Gemini
    }

    fn needs(&self) -> Option<&'static str> {
        Some("no value has `sessionId` and `projectHash`, nor is a `gemini` message with an `id`")
    }

    fn clues(&self, records: &[Record]) -> Clues {
        let mut clues = Clues::default();
        for record in records.iter().take(200) {
            let value = &record.value;
            if value.get("projectHash").is_some() && value.get("sessionId").is_some() {
                clues.add(true, || {
                    format!("line {} (`sessionId` and `projectHash`)", record.line)
                });
            } else if str_of(value, "type") == Some("gemini") && value.get("id").is_some() {
                clues.add(true, || {
                    format!("line {} (a `gemini` message)", record.line)
                });
            }
        }
        clues
    }

    fn read(&self, records: Vec<Record>, options: &ReadOptions) -> Result<Conversation> {
        self.read_usage(records, options)
            .map(|(conversation, _)| conversation)
    }

    /// A `gemini` message's `tokens.input` (the API's `promptTokenCount`, cached tokens
    /// included) is the size of the request that produced it.
    fn read_usage(
        &self,
        records: Vec<Record>,
        _: &ReadOptions,
    ) -> Result<(Conversation, Vec<RecordedUsage>)> {
        let mut usages = Vec::new();
        // (line, message) in order; a repeated id replaces the earlier message.
        let mut messages: Vec<(usize, Value)> = Vec::new();
        for mut record in records {
            let is_message = record.value.get("type").is_some();
            match record.value.get_mut("messages") {
                Some(Value::Array(list)) => {
                    for message in list.drain(..) {
                        messages.push((record.line, message));
                    }
                }
                Some(other) => {
                    return Err(Error::line(
                        record.line,
                        "messages",
                        format!("expected an array, found {}", super::kind(other)),
                    ));
                }
                None if is_message => {
                    let id = str_of(&record.value, "id").map(str::to_string);
                    let earlier = id.as_deref().and_then(|id| {
                        messages
                            .iter()
                            .position(|(_, m)| str_of(m, "id") == Some(id))
                    });
                    match earlier {
                        Some(at) => messages[at] = (record.line, record.value),
                        None => messages.push((record.line, record.value)),
                    }
                }
                None => {}
            }
        }
        let mut built = Vec::new();
        for (line, message) in messages {
            match str_of(&message, "type") {
                Some("user") => {
                    let parts = text_parts(message.get("content"));
                    built.push(Built {
                        value: json!({"role": "user", "parts": parts}),
                        line,
                    });
                }
                Some("gemini") => {
                    let mut parts = text_parts(message.get("content"));
                    let mut results = Vec::new();
                    let calls = message.get("toolCalls").and_then(Value::as_array);
                    for (c, call) in calls.into_iter().flatten().enumerate() {
                        let Some(name) = str_of(call, "name") else {
                            return Err(Error::line(
                                line,
                                format!("toolCalls[{c}].name"),
                                "missing",
                            ));
                        };
                        let mut function = Map::new();
                        if let Some(id) = call.get("id") {
                            function.insert("id".into(), id.clone());
                        }
                        function.insert("name".into(), Value::String(name.into()));
                        function.insert(
                            "args".into(),
                            call.get("args").cloned().unwrap_or_else(|| json!({})),
                        );
                        parts.push(json!({"functionCall": function}));
                        if let Some(Value::Array(result)) = call.get("result") {
                            results.extend(result.iter().cloned());
                        }
                    }
                    if parts.is_empty() {
                        continue;
                    }
                    let input = message.pointer("/tokens/input").and_then(Value::as_u64);
                    let input = input.and_then(|n| usize::try_from(n).ok());
                    if let Some(input_tokens) = input.filter(|&n| n > 0) {
                        usages.push(RecordedUsage {
                            message: built.len(),
                            input_tokens,
                            model: str_of(&message, "model").unwrap_or_default().to_string(),
                            line,
                            from: 0,
                        });
                    }
                    built.push(Built {
                        value: json!({"role": "model", "parts": parts}),
                        line,
                    });
                    if !results.is_empty() {
                        built.push(Built {
                            value: json!({"role": "user", "parts": results}),
                            line,
                        });
                    }
                }
                _ => {}
            }
        }
        let repairs = repair::gemini(&mut built, &mut usages);
        let conversation = from_log(built, Format::Gemini, gemini::parse)?;
        Ok((repair::attach(conversation, repairs), usages))
    }
}

/// A message's content as Gemini parts: a string becomes one text part (none when empty).
fn text_parts(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(text)) if !text.is_empty() => vec![json!({"text": text})],
        Some(Value::Array(parts)) => parts.clone(),
        _ => Vec::new(),
    }
}
