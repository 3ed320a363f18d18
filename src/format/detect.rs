//! Format detection: every reader looks at the records for its format's clues, and the
//! format with strong clues, or the only one with any, is chosen; a forced format is checked
//! against the clues.

use serde_json::{Map, Value};

use super::{Clues, Format, Record, reader, render};
use crate::conversation::{Conversation, Message, Part};
use crate::error::{Error, Result};
use crate::parallel;

/// Values (records, or the messages of one document) from which [`choose`] gathers the formats'
/// clues on two threads: each reader looks at every message, which costs about 1 ms per
/// 1,000 messages, and reading is otherwise single-threaded.
pub(super) const PARALLEL_CLUES_VALUES: usize = 2_000;

/// Every format's clues, in [`Format::ALL`] order. Large inputs share the formats between two
/// threads, each taking the next format not taken yet (the formats' costs differ).
pub(super) fn gather_clues(records: &[Record]) -> Vec<(Format, Clues)> {
    let values = match records {
        [record] => match &record.value {
            Value::Array(items) => items.len(),
            Value::Object(body) => body
                .values()
                .filter_map(Value::as_array)
                .map(Vec::len)
                .max()
                .unwrap_or(0),
            _ => 0,
        },
        _ => records.len(),
    };
    let threads = if values < PARALLEL_CLUES_VALUES {
        1
    } else {
        parallel::cores().min(2)
    };
    parallel::in_turn(Format::ALL.len(), threads, |at| {
        let format = Format::ALL[at];
        (format, reader(format).clues(records))
    })
}

/// Picks the format: the forced one (unless the input clearly is another), or the only one
/// with strong clues, or the only one with any.
pub(super) fn choose(records: &[Record], forced: Option<Format>) -> Result<Format> {
    let found: Vec<(Format, Clues)> = gather_clues(records)
        .into_iter()
        .filter(|(_, clues)| !clues.is_empty())
        .collect();
    let describe = |(format, clues): &(Format, Clues)| {
        format!(
            "{} looks like {}",
            clues.first.as_deref().unwrap_or("the input"),
            format.title()
        )
    };
    // A forced format reads input that shows it; input that shows none is read as forced
    // only when nothing shows another format and the format reads bodies by their shape.
    if let Some(forced) = forced {
        let has = |format| found.iter().any(|(f, _)| *f == format);
        if !has(forced) {
            let strongest = found
                .iter()
                .filter(|(_, clues)| clues.strong > 0)
                .max_by_key(|(_, clues)| clues.strong);
            if let Some((found, clues)) = strongest {
                return Err(Error::WrongFormat {
                    forced,
                    found: *found,
                    reason: clues.first.clone().unwrap_or_default(),
                });
            }
            if let Some(needs) = reader(forced).needs() {
                return Err(Error::NotTheFormat {
                    forced,
                    missing: needs.to_string(),
                });
            }
        }
        return Ok(forced);
    }
    let strong: Vec<&(Format, Clues)> = found.iter().filter(|(_, e)| e.strong > 0).collect();
    let candidates: Vec<&(Format, Clues)> = if strong.is_empty() {
        found.iter().collect()
    } else {
        strong
    };
    match candidates.as_slice() {
        [(format, _)] => Ok(*format),
        [] if records.len() == 1 => {
            // Plain user/assistant text reads the same in several formats: OpenAI is the default.
            Ok(Format::OpenAi)
        }
        [] => Err(Error::UnknownFormat {
            reason: format!(
                "{} JSON values (JSONL) that no session-log format recognises",
                records.len()
            ),
        }),
        [first, second, ..] => Err(Error::UnknownFormat {
            reason: format!("{} but {}", describe(first), describe(second)),
        }),
    }
}

/// [`super::Conversation::check_reads_back`]: the output's top level first, then, only when
/// that does not settle it, the shape of its messages (their texts emptied), through detection.
pub(super) fn reads_back(conversation: &Conversation, forced: Option<Format>) -> Result<()> {
    let forced = forced.map(|format| {
        if reader(format).needs().is_some() {
            conversation.format
        } else {
            format
        }
    });
    if top_level_settles(conversation, forced) {
        return Ok(());
    }
    // A format's clues lie in the shape of the request, never in its texts: the
    // output is rendered with its texts and arguments emptied.
    let skeleton = conversation.with_messages(conversation.messages.iter().map(skeleton).collect());
    let records = [Record {
        line: 1,
        value: render(&skeleton),
    }];
    let shows_any = || {
        gather_clues(&records)
            .iter()
            .any(|(_, clues)| !clues.is_empty())
    };
    match choose(&records, forced) {
        Ok(format) if format == conversation.format => Ok(()),
        // Plain text that shows no format reads as any API format alike.
        Ok(_) if forced.is_none() && !shows_any() => Ok(()),
        Ok(other) => Err(Error::Unreadable {
            format: conversation.format,
            reason: format!("it would read as {}", other.title()),
        }),
        Err(err) => Err(Error::Unreadable {
            format: conversation.format,
            reason: err.to_string(),
        }),
    }
}

/// Whether the request's top level (what compaction never changes) settles how the output
/// reads, so that its messages need no look. Forced, it does when it shows the format. By
/// detection, it does when it shows no other format and the messages cannot tip it: an
/// input read by detection showed no other format strongly (it would have been ambiguous),
/// and the only clue a message gives weakly is OpenAI's (a `system` role), so an OpenAI body,
/// or a body whose top level shows its own format strongly, reads back as it was read.
fn top_level_settles(conversation: &Conversation, forced: Option<Format>) -> bool {
    let top = Conversation {
        format: conversation.format,
        system: conversation.system.clone(),
        messages: Vec::new(),
        envelope: conversation.envelope.clone(),
        lines: Vec::new(),
        repairs: Vec::new(),
    };
    let records = [Record {
        line: 1,
        value: render(&top),
    }];
    let found = gather_clues(&records);
    let own = found
        .iter()
        .find(|(format, _)| *format == conversation.format)
        .map(|(_, clues)| (clues.strong, clues.weak));
    let (strong, weak) = own.unwrap_or((0, 0));
    if forced.is_some() {
        return strong + weak > 0;
    }
    let others = found
        .iter()
        .any(|(format, clues)| *format != conversation.format && !clues.is_empty());
    !others && (conversation.format == Format::OpenAi || strong > 0)
}

/// A message with the same wire shape and no text: texts, results' texts and call arguments
/// emptied (keeping their JSON type), every other field as it is.
fn skeleton(message: &Message) -> Message {
    let empty = |part: &Part| match part {
        Part::Text { extra, .. } => Part::Text {
            text: String::new(),
            extra: extra.clone(),
        },
        other => other.clone(),
    };
    let parts = message
        .parts
        .iter()
        .map(|part| match part {
            Part::ToolCall {
                id,
                name,
                arguments,
                extra,
            } => Part::ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: match arguments {
                    Value::String(_) => Value::String(String::new()),
                    Value::Object(_) => Value::Object(Map::new()),
                    other => other.clone(),
                },
                extra: extra.clone(),
            },
            Part::ToolResult {
                call_id,
                content,
                layout,
                is_error,
                extra,
            } => Part::ToolResult {
                call_id: call_id.clone(),
                content: content.iter().map(empty).collect(),
                layout: *layout,
                is_error: *is_error,
                extra: extra.clone(),
            },
            other => empty(other),
        })
        .collect();
    Message {
        role: message.role,
        parts,
        layout: message.layout,
        extra: message.extra.clone(),
        harness: message.harness,
    }
}
