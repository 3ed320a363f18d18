//! Formats: reading bytes into a [`Conversation`] and writing it back.
//!
//! Each format is one file behind one interface. A `Reader` detects its format (with the
//! clues it found) and reads records into a conversation; a `Wire` — one per API request
//! format — writes a conversation back, names where a call's results go (`results`), where a
//! removal marker goes and how it merges, and names the wire field of a call or a result in
//! problems. Nothing outside this module matches on a format: the engine asks the interface.
//!
//! The API formats (OpenAI Chat, Anthropic Messages, OpenAI Responses, Gemini, Bedrock Converse)
//! are read and written losslessly: every field the engine does not interpret passes through
//! unchanged, in its original key order, numbers byte for byte. Session logs (Claude Code,
//! Codex, Gemini CLI, pi) are read into the API format they hold and written in it.
//!
//! Input is one JSON document or a stream of JSON values (JSONL); every value keeps the line it
//! started on, so errors in a log name their line. A UTF-8 byte-order mark is skipped.
//!
//! **Adding a format**: write `src/format/<name>.rs` with a unit struct implementing `Reader`
//! (and `Wire` if it is an API request format), then add one line to the `formats!` list in
//! `conversation.rs` and one to `reader` here.

mod ai_sdk;
mod anthropic;
mod bedrock;
mod claude_code;
mod codex;
mod detect;
mod gemini;
mod gemini_cli;
mod input;
mod openai;
mod output;
mod parts;
mod pi;
mod pretty;
mod repair;
mod responses;
mod results;
mod sink;
mod spelling;

use std::io::Read;
use std::ops::Range;

use serde_json::Value;

pub use crate::account::RecordedUsage;
use crate::conversation::{Conversation, Message, Role};
pub use crate::conversation::{Format, Layout};
use crate::error::Result;
use detect::choose;
pub(crate) use input::single;
use input::{read_records, records_of_slice};
pub use output::{render, write};
pub(crate) use parts::*;
use pretty::Pretty;
use results::Placement;
pub(crate) use sink::{FieldChange, Key, Sink, has, key, nested, object, to_value};

/// The reader of each format. Adding a format is one line here (and its file).
pub(crate) fn reader(format: Format) -> &'static dyn Reader {
    match format {
        Format::OpenAi => &openai::OpenAi,
        Format::Anthropic => &anthropic::Anthropic,
        Format::Responses => &responses::Responses,
        Format::Gemini => &gemini::Gemini,
        Format::Bedrock => &bedrock::Bedrock,
        Format::AiSdk => &ai_sdk::AiSdk,
        Format::ClaudeCode => &claude_code::ClaudeCode,
        Format::Codex => &codex::Codex,
        Format::GeminiCli => &gemini_cli::GeminiCli,
        Format::Pi => &pi::Pi,
    }
}

/// The writer and rules of the API format a conversation is in.
pub(crate) fn wire(format: Format) -> &'static dyn Wire {
    reader(format).wire()
}

/// One JSON value of the input and the 1-based line it starts on.
#[derive(Debug)]
pub(crate) struct Record {
    /// The line the value starts on.
    pub(crate) line: usize,
    /// The value.
    pub(crate) value: Value,
}

/// What a format's reader found in the input that shows it is in that format.
#[derive(Debug, Default)]
pub(crate) struct Clues {
    /// Clues no other format shows.
    pub(crate) strong: usize,
    /// Clues another format may show too.
    pub(crate) weak: usize,
    /// The first clue, described with where it is (e.g. "message 3 (a `tool_use` block)").
    pub(crate) first: Option<String>,
}

impl Clues {
    /// Adds a clue.
    pub(crate) fn add(&mut self, strong: bool, what: impl FnOnce() -> String) {
        if strong {
            self.strong += 1;
        } else {
            self.weak += 1;
        }
        if self.first.is_none() {
            self.first = Some(what());
        }
    }

    fn is_empty(&self) -> bool {
        self.strong + self.weak == 0
    }
}

/// Reading one format: detection and parsing.
pub(crate) trait Reader: Sync {
    /// The API format conversations read in this format are written in.
    fn wire(&self) -> &'static dyn Wire;
    /// What the input shows of this format.
    fn clues(&self, records: &[Record]) -> Clues;
    /// For a session log, the records a forced read needs to find, described for the error
    /// when it finds none (a log's reader skips records it does not know, so without them it
    /// would read an empty conversation). `None` for an API body, whose plain messages look
    /// the same in several formats and read by their shape.
    fn needs(&self) -> Option<&'static str> {
        None
    }
    /// Reads the input into a conversation.
    fn read(&self, records: Vec<Record>, options: &ReadOptions) -> Result<Conversation>;
    /// Reads the input into a conversation, with the input sizes the provider reported for
    /// the calls the log recorded (none for formats that record none).
    fn read_usage(
        &self,
        records: Vec<Record>,
        options: &ReadOptions,
    ) -> Result<(Conversation, Vec<RecordedUsage>)> {
        Ok((self.read(records, options)?, Vec::new()))
    }
}

/// Writing one API format, and the rules the engine must follow in it.
pub(crate) trait Wire: Sync {
    /// The request body's key for a system prompt held outside the list.
    fn system_key(&self) -> &'static str {
        "system"
    }
    /// Writes a system prompt held outside the list.
    fn write_system(&self, system: &Message, out: &mut dyn Sink);
    /// Writes one message.
    fn write_message(&self, message: &Message, out: &mut dyn Sink);
    /// Where the format puts the results of a message's calls.
    fn results(&self) -> Placement;
    /// Merges a removal marker into `message` when the format wants it there rather than as a
    /// message of its own (formats that require turns to alternate); returns whether it did.
    fn merge_marker(&self, message: &mut Message, text: &str) -> bool {
        let _ = (message, text);
        false
    }
    /// Whether the format requires the first message to be a user message.
    fn first_must_be_user(&self) -> bool {
        false
    }
    /// The wire field of the call in part `part` of `message`.
    fn call_field(&self, message: &Message, part: usize) -> String;
    /// The wire field of the result in part `part` of `message`.
    fn result_field(&self, message: &Message, part: usize) -> String;
}

impl Conversation {
    /// The messages that carry the results of the calls made by message `index` (and by the
    /// call-side messages right after it, in formats with one item per call), as the format
    /// places them. Empty when message `index` makes no calls.
    pub fn result_window(&self, index: usize) -> Range<usize> {
        results::window(wire(self.format).results(), &self.messages, index)
    }

    /// Checks that the conversation, once written, reads back in its own format the way its
    /// input was read: by detection when `forced` is `None`, else as the forced format (a
    /// session log's output, an API body, as the API format it holds). Compaction removes
    /// messages, and with them the clues of the format: an OpenAI body whose tool rounds
    /// are gone, beside a stray top-level `system` or `contents`, no longer shows OpenAI over
    /// the format the stray field suggests. Such an output is refused rather than written
    /// unreadable.
    ///
    /// # Errors
    /// [`Error::Unreadable`](crate::Error::Unreadable) saying why the output would be read
    /// otherwise.
    pub fn check_reads_back(&self, forced: Option<Format>) -> Result<()> {
        detect::reads_back(self, forced)
    }

    /// The calls in progress, as message index and call id: the calls of the run of calling
    /// and result messages the conversation ends on (OpenAI's `tool` messages, Responses' call
    /// and output items; in formats answering in the next user message, the calling message
    /// when it is the last) that no result in that run answers yet. A log or a body read while
    /// a call runs ends so; every format reads it alike (named
    /// [`crate::report::Repair::IN_PROGRESS`], no problem to [`crate::validate()`]), so that
    /// what ctxcompact writes from such a log it reads back.
    pub(crate) fn calls_in_progress(&self) -> Vec<(usize, &str)> {
        let messages = &self.messages;
        let in_run =
            |m: &Message| m.role == Role::Tool || (m.role == Role::Assistant && m.has_calls());
        let start = messages
            .iter()
            .rposition(|m| !in_run(m))
            .map_or(0, |at| at + 1);
        let run = &messages[start..];
        let answered: Vec<&str> = run.iter().flat_map(Message::result_ids).collect();
        run.iter()
            .enumerate()
            .flat_map(|(i, m)| m.call_ids().map(move |id| (start + i, id)))
            .filter(|(_, id)| !answered.contains(id))
            .collect()
    }

    /// Whether the conversation's format requires its first message to be a user message
    /// (Anthropic, Bedrock, Gemini): there the first user turn is pinned, so no compaction
    /// opens with anything else.
    pub fn must_open_with_user(&self) -> bool {
        wire(self.format).first_must_be_user()
    }
}

/// How to read input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The input's format; `None` detects it.
    pub format: Option<Format>,
    /// For session logs with compactions (Claude Code, pi): read the whole history, every
    /// compaction's summary where it happened, instead of the conversation after the last
    /// compaction as the agent saw it.
    pub whole_history: bool,
    /// For session logs: refuse a log that needs a repair to read as the agent sent it (an
    /// interrupted call, a duplicated result, a result whose call is outside the file, `null`
    /// arguments) instead of repairing it. A call in progress at the end is no repair.
    pub strict: bool,
    /// For API bodies (OpenAI, Anthropic, Responses, Gemini, Bedrock): make the repairs a
    /// session log's reader makes (an interrupted call answered as an agent answers it, a
    /// result sent again dropped, leading results without their call dropped), each named in
    /// [`Conversation::repairs`] with its message index as `line`, instead of leaving the
    /// broken pairing for [`crate::validate()`] to refuse.
    pub repair: bool,
}

/// Reads a conversation from JSON or JSONL bytes; `format` of `None` detects it.
///
/// # Errors
/// [`Error::Json`](crate::Error::Json) when the bytes are not JSON, [`Error::UnknownFormat`](crate::Error::UnknownFormat) when detection is
/// unsure, [`Error::WrongFormat`](crate::Error::WrongFormat) when a forced format is clearly not the input's,
/// [`Error::Malformed`](crate::Error::Malformed) naming the message (or line) and field when a field has the wrong shape.
pub fn parse(bytes: &[u8], format: Option<Format>) -> Result<Conversation> {
    parse_with(
        bytes,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Reads a conversation from bytes with [`ReadOptions`]; see [`parse`].
fn parse_with(bytes: &[u8], options: &ReadOptions) -> Result<Conversation> {
    read(records_of_slice(bytes)?, options)
}

/// Reads a conversation from a session log with the input size the provider reported for each
/// recorded call (Claude Code `message.usage`, Codex `token_count` events, Gemini CLI `tokens`);
/// other formats give no usage.
///
/// # Errors
/// As [`parse`].
pub fn parse_with_usage(
    bytes: &[u8],
    options: &ReadOptions,
) -> Result<(Conversation, Vec<RecordedUsage>)> {
    let records = records_of_slice(bytes)?;
    read_with_usage(records, options)
}

/// [`parse_with_usage`] from a reader, value by value.
///
/// # Errors
/// As [`parse`]; a read error is reported as [`Error::Read`](crate::Error::Read).
pub fn parse_reader_with_usage(
    reader: impl Read,
    options: &ReadOptions,
) -> Result<(Conversation, Vec<RecordedUsage>)> {
    read_with_usage(read_records(reader)?, options)
}

/// Detects (or checks) the format, then reads with the recorded usage.
fn read_with_usage(
    mut records: Vec<Record>,
    options: &ReadOptions,
) -> Result<(Conversation, Vec<RecordedUsage>)> {
    let format = choose(&records, options.format)?;
    let repairs = repair_body(format, &mut records, options);
    let (conversation, mut usages) = reader_of(format).read_usage(records, options)?;
    let conversation = noted(format, conversation, repairs, &mut usages);
    strictly((conversation, usages), options)
}

/// With [`ReadOptions::strict`], refuses a read that needed a repair, naming its line.
fn strictly<T>(read: (Conversation, T), options: &ReadOptions) -> Result<(Conversation, T)> {
    if options.strict {
        if let Some(repair) = read.0.repairs.iter().find(|r| r.changed()) {
            return Err(crate::error::Error::Malformed {
                at: crate::error::Location::line(repair.line, repair.kind),
                problem: match &repair.call_id {
                    Some(id) => format!("tool call `{id}` needs a repair, refused as strict"),
                    None => "needs a repair, refused as strict".into(),
                },
            });
        }
    }
    Ok(read)
}

/// Reads a conversation from one JSON value; see [`parse`].
///
/// # Errors
/// As [`parse`], less the JSON syntax errors.
pub fn parse_value(value: Value, format: Option<Format>) -> Result<Conversation> {
    let records = vec![Record { line: 1, value }];
    read(
        records,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// The reader of a format (a name that does not clash with a `reader` argument).
fn reader_of(format: Format) -> &'static dyn Reader {
    reader(format)
}

/// Detects (or checks) the format, then reads.
fn read(mut records: Vec<Record>, options: &ReadOptions) -> Result<Conversation> {
    let format = choose(&records, options.format)?;
    let repairs = repair_body(format, &mut records, options);
    let conversation = reader(format).read(records, options)?;
    let conversation = noted(format, conversation, repairs, &mut []);
    strictly((conversation, ()), options).map(|(conversation, ())| conversation)
}

/// A conversation read: an API body with the repairs [`repair_body`] made, or, without them,
/// with its calls in progress named as a session log's reader names them (a log's reader names
/// its own); a session log opening with the model's message with the request the agent sends
/// in its place ([`repair::opening`]), `usages` moved with the messages.
fn noted(
    format: Format,
    mut conversation: Conversation,
    repairs: Option<Vec<crate::conversation::Repair>>,
    usages: &mut [RecordedUsage],
) -> Conversation {
    if let Some(repairs) = repairs {
        return repair::attach(conversation, repairs);
    }
    if is_api(format) {
        let notes: Vec<_> = conversation
            .calls_in_progress()
            .into_iter()
            .map(|(message, id)| {
                repair::named(message, crate::conversation::Repair::IN_PROGRESS, id)
            })
            .collect();
        conversation.repairs.extend(notes);
        return conversation;
    }
    repair::opening(format, &mut conversation, usages);
    conversation
}

/// Whether `format` is an API body's (not a session log's).
fn is_api(format: Format) -> bool {
    matches!(
        format,
        Format::OpenAi
            | Format::Anthropic
            | Format::Responses
            | Format::Gemini
            | Format::Bedrock
            | Format::AiSdk
    )
}

/// With [`ReadOptions::repair`], repairs the message list of an API body in place (see
/// [`ReadOptions::repair`]); the repairs made, or `None` for a session log or without it.
fn repair_body(
    format: Format,
    records: &mut [Record],
    options: &ReadOptions,
) -> Option<Vec<crate::conversation::Repair>> {
    // The AI SDK's lists come from the SDK itself, never from a log that needs mending.
    if !options.repair || !is_api(format) || format == Format::AiSdk {
        return None;
    }
    let [record] = records else {
        return None;
    };
    let list = match &mut record.value {
        Value::Array(list) => list,
        Value::Object(body) => match body.get_mut(format.list_key()) {
            Some(Value::Array(list)) => list,
            _ => return Some(Vec::new()),
        },
        _ => return None,
    };
    let mut built: Vec<Built> = std::mem::take(list)
        .into_iter()
        .enumerate()
        .map(|(index, value)| Built { value, line: index })
        .collect();
    let mut repairs = Vec::new();
    match format {
        Format::Anthropic => {
            repair::anthropic(&mut built, &repair::ANTHROPIC, None, &mut repairs, &mut []);
        }
        Format::Bedrock => {
            repair::anthropic(&mut built, &repair::BEDROCK, None, &mut repairs, &mut []);
        }
        Format::OpenAi => repair::responses(&mut built, &repair::OPENAI, &mut repairs, &mut []),
        Format::Responses => {
            repair::responses(&mut built, &repair::RESPONSES, &mut repairs, &mut []);
        }
        _ => repairs = repair::gemini(&mut built, &mut []),
    }
    *list = built.into_iter().map(|b| b.value).collect();
    Some(repairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_list_read_on_two_threads_names_its_first_bad_message() {
        let mut messages: Vec<Value> = (0..PARALLEL_PARSE_MESSAGES + 500)
            .map(|i| serde_json::json!({"role": "user", "content": format!("message {i}")}))
            .collect();
        let late = PARALLEL_PARSE_MESSAGES + 100;
        messages[late] = serde_json::json!({"role": "nobody"});
        let err = parse_value(Value::Array(messages.clone()), Some(Format::OpenAi)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("message {late}: role")),
            "{err}"
        );
        messages[7] = serde_json::json!({"role": "user", "content": 3});
        let err = parse_value(Value::Array(messages.clone()), Some(Format::OpenAi)).unwrap_err();
        assert!(err.to_string().starts_with("message 7: content"), "{err}");
        messages[7] = serde_json::json!({"role": "user", "content": "fixed"});
        messages[late] = serde_json::json!({"role": "user", "content": "fixed"});
        let read = parse_value(Value::Array(messages), Some(Format::OpenAi)).unwrap();
        assert_eq!(read.messages.len(), PARALLEL_PARSE_MESSAGES + 500);
        assert_eq!(read.messages[late].text(), "fixed");
        assert_eq!(read.messages[8].text(), "message 8");
    }

    #[test]
    fn an_output_reads_back_unless_its_clues_are_gone_beside_another_formats() {
        // Plain text shows no format: it reads back as any API format alike.
        let plain = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
        let conversation = parse_value(plain, Some(Format::Anthropic)).unwrap();
        assert!(conversation.check_reads_back(None).is_ok());
        // A top-level system string settles Anthropic whatever the messages.
        let anthropic =
            serde_json::json!({"system": "s", "messages": [{"role": "user", "content": "hi"}]});
        let conversation = parse_value(anthropic, None).unwrap();
        assert!(conversation.check_reads_back(None).is_ok());
        // An OpenAI system message beside a stray `system` field is ambiguous once no tool
        // round shows OpenAI.
        let stray = serde_json::json!({"system": {}, "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]});
        let conversation = parse_value(stray, Some(Format::OpenAi)).unwrap();
        let err = conversation.check_reads_back(None).unwrap_err().to_string();
        assert!(
            err.starts_with("the output would not read back as openai: cannot tell"),
            "{err}"
        );
        assert!(conversation.check_reads_back(Some(Format::OpenAi)).is_ok());
    }

    #[test]
    fn plain_text_defaults_to_openai() {
        let value = serde_json::json!([{"role": "user", "content": "hi"}]);
        assert_eq!(parse_value(value, None).unwrap().format, Format::OpenAi);
    }

    #[test]
    fn top_level_system_means_anthropic() {
        let value = serde_json::json!({"system": "be brief", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(parse_value(value, None).unwrap().format, Format::Anthropic);
    }

    #[test]
    fn conflicting_clues_explain_themselves() {
        let value = serde_json::json!([
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}
        ]);
        let err = parse_value(value, None).unwrap_err().to_string();
        assert!(err.contains("message 0 (role `tool`)"), "{err}");
        assert!(err.contains("message 1 (a `tool_result` block)"), "{err}");
    }
}
