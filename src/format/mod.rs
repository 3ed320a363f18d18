//! Formats: reading bytes into a [`Conversation`] and writing it back.
//!
//! Each format is one file behind one interface. A `Reader` detects its format (with the
//! evidence it found) and reads records into a conversation; a `Wire` — one per API request
//! format — writes a conversation back, says which messages may carry a call's results, where a
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

mod anthropic;
mod bedrock;
mod claude_code;
mod codex;
mod gemini;
mod gemini_cli;
mod openai;
mod pi;
mod pretty;
mod rendered;
mod responses;
mod spelling;

use std::cell::{Cell, RefCell};
use std::io::{BufRead, Read};
use std::ops::Range;
use std::rc::Rc;

use serde_json::{Map, Value};

pub use crate::conversation::Format;
use crate::conversation::{Conversation, Layout, Message, Part, Warmth};
use crate::error::{Error, Location, Result};
use crate::parallel;
use pretty::Pretty;
pub(crate) use rendered::{Object, Rendered};
use spelling::Spellings;

/// The reader of each format. Adding a format is one line here (and its file).
pub(crate) fn reader(format: Format) -> &'static dyn Reader {
    match format {
        Format::OpenAi => &openai::OpenAi,
        Format::Anthropic => &anthropic::Anthropic,
        Format::Responses => &responses::Responses,
        Format::Gemini => &gemini::Gemini,
        Format::Bedrock => &bedrock::Bedrock,
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
pub(crate) struct Evidence {
    /// Clues no other format shows.
    pub(crate) strong: usize,
    /// Clues another format may show too.
    pub(crate) weak: usize,
    /// The first clue, described with where it is (e.g. "message 3 (a `tool_use` block)").
    pub(crate) first: Option<String>,
}

impl Evidence {
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
    fn evidence(&self, records: &[Record]) -> Evidence;
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

/// One model call's input size as the provider reported it, recorded in a session log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RecordedUsage {
    /// Index of the first message the call produced: the request held the messages before it.
    pub message: usize,
    /// The request's input tokens as reported, cached and uncached together.
    pub input_tokens: usize,
    /// The model that served the call, as recorded.
    pub model: String,
    /// The log line that recorded it.
    pub line: usize,
}

/// Writing one API format, and the rules the engine must follow in it.
pub(crate) trait Wire: Sync {
    /// The request body's key for the message list (`messages`, `input`, `contents`).
    fn list_key(&self) -> &'static str;
    /// The request body's key for a system prompt held outside the list.
    fn system_key(&self) -> &'static str {
        "system"
    }
    /// Writes a system prompt held outside the list.
    fn render_system<'a>(&self, system: &'a Message) -> Rendered<'a>;
    /// Writes one message.
    fn render_message<'a>(&self, message: &'a Message) -> Rendered<'a>;
    /// The messages after `index` that belong with it: those that may carry the results of the
    /// calls it (and the call-side messages right after it) makes. Empty when it makes none.
    fn result_window(&self, messages: &[Message], index: usize) -> Range<usize>;
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
        wire(self.format).result_window(&self.messages, index)
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
}

/// Reads a conversation from JSON or JSONL bytes; `format` of `None` detects it.
///
/// # Errors
/// [`Error::Json`] when the bytes are not JSON, [`Error::UnknownFormat`] when detection is
/// unsure, [`Error::WrongFormat`] when a forced format is clearly not the input's,
/// [`Error::Malformed`] naming the message (or line) and field when a field has the wrong shape.
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
///
/// # Errors
/// As [`parse`].
pub fn parse_with(bytes: &[u8], options: &ReadOptions) -> Result<Conversation> {
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
    let format = choose(&records, options.format)?;
    reader_of(format).read_usage(records, options)
}

/// [`parse_with_usage`] from a reader, value by value.
///
/// # Errors
/// As [`parse`]; a read error is reported as [`Error::Read`].
pub fn parse_reader_with_usage(
    reader: impl Read,
    options: &ReadOptions,
) -> Result<(Conversation, Vec<RecordedUsage>)> {
    let records = read_records(reader)?;
    let format = choose(&records, options.format)?;
    reader_of(format).read_usage(records, options)
}

/// Reads a conversation from a reader, value by value, without holding its bytes and the parsed
/// JSON at once; see [`parse`].
///
/// # Errors
/// As [`parse`]; a read error is reported as [`Error::Read`].
pub fn parse_reader(reader: impl Read, format: Option<Format>) -> Result<Conversation> {
    parse_reader_with(
        reader,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Reads a conversation from a reader with [`ReadOptions`]; see [`parse`].
///
/// # Errors
/// As [`parse`].
pub fn parse_reader_with(reader: impl Read, options: &ReadOptions) -> Result<Conversation> {
    let records = read_records(reader)?;
    read(records, options)
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
fn read(records: Vec<Record>, options: &ReadOptions) -> Result<Conversation> {
    let format = choose(&records, options.format)?;
    reader(format).read(records, options)
}

/// The byte-order mark some editors put at the start of UTF-8 files.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Splits bytes into their JSON values, each with the line it starts on (the fast path of
/// [`read_records`] for input already in memory).
// Counting newlines between two values is not worth the `bytecount` crate.
#[allow(clippy::naive_bytecount)]
fn records_of_slice(bytes: &[u8]) -> Result<Vec<Record>> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    let mut records: Vec<Record> = Vec::new();
    let (mut counted, mut line) = (0, 1);
    loop {
        let offset = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Err(err)) => return Err(json_error(err, records.last())),
            Some(Ok(value)) => {
                let skipped = bytes[offset..]
                    .iter()
                    .take_while(|b| b.is_ascii_whitespace());
                let begin = offset + skipped.count();
                line += bytes[counted..begin]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                counted = begin;
                records.push(Record { line, value });
            }
        }
    }
    if records.is_empty() {
        return Err(Error::empty());
    }
    if Spellings::may_differ(bytes) {
        let mut spellings = Spellings::default();
        spellings.feed(bytes);
        spellings
            .finish()
            .restore(records.iter_mut().map(|r| &mut r.value));
    }
    Ok(records)
}

/// A JSON syntax error; garbage after a value on its own line is trailing text, not a broken
/// JSONL line.
fn json_error(err: serde_json::Error, last: Option<&Record>) -> Error {
    match last {
        Some(last) if err.line() == last.line && !err.is_io() => Error::Malformed {
            at: Location::line(last.line, "top level"),
            problem: format!(
                "trailing characters after the JSON value, at column {}",
                err.column()
            ),
        },
        _ => Error::from_json(err),
    }
}

/// Splits the input into its JSON values, each with the line it starts on.
fn read_records(reader: impl Read) -> Result<Vec<Record>> {
    let mut reader = std::io::BufReader::new(reader);
    let buffer = reader.fill_buf().map_err(|source| Error::Read { source })?;
    if buffer.starts_with(BOM) {
        reader.consume(BOM.len());
    }
    let start = Rc::new(Cell::new(None));
    let spellings = Rc::new(RefCell::new(Spellings::default()));
    let counting = Counting {
        inner: reader,
        newlines: 0,
        start: Rc::clone(&start),
        spellings: Rc::clone(&spellings),
    };
    let mut records: Vec<Record> = Vec::new();
    for value in serde_json::Deserializer::from_reader(counting).into_iter::<Value>() {
        let value = value.map_err(|err| json_error(err, records.last()))?;
        let line = start.take().unwrap_or(1);
        records.push(Record { line, value });
    }
    if records.is_empty() {
        return Err(Error::empty());
    }
    let spellings = spellings.take().finish();
    if !spellings.is_empty() {
        spellings.restore(records.iter_mut().map(|r| &mut r.value));
    }
    Ok(records)
}

/// A reader that notes the line where each JSON value starts (its first non-blank byte after
/// the previous value; `start` is taken after each value) and the numbers the input spells
/// otherwise than the parse keeps them.
struct Counting<R> {
    inner: R,
    newlines: usize,
    start: Rc<Cell<Option<usize>>>,
    spellings: Rc<RefCell<Spellings>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.spellings.borrow_mut().feed(&buf[..n]);
        for &byte in &buf[..n] {
            if self.start.get().is_none() && !byte.is_ascii_whitespace() {
                self.start.set(Some(self.newlines + 1));
            }
            if byte == b'\n' {
                self.newlines += 1;
            }
        }
        Ok(n)
    }
}

/// Values (records, or the messages of one document) from which [`choose`] gathers the formats'
/// evidence on two threads: each reader looks at every message, which costs about 1 ms per
/// 1,000 messages, and reading is otherwise single-threaded.
const PARALLEL_EVIDENCE_VALUES: usize = 2_000;

/// Every format's evidence, in [`Format::ALL`] order. Large inputs share the formats between two
/// threads, each taking the next format not taken yet (the formats' costs differ).
fn gather_evidence(records: &[Record]) -> Vec<(Format, Evidence)> {
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
    let threads = if values < PARALLEL_EVIDENCE_VALUES {
        1
    } else {
        parallel::cores().min(2)
    };
    parallel::in_turn(Format::ALL.len(), threads, |at| {
        let format = Format::ALL[at];
        (format, reader(format).evidence(records))
    })
}

/// Picks the format: the forced one (unless the input clearly is another), or the only one
/// with strong evidence, or the only one with any.
fn choose(records: &[Record], forced: Option<Format>) -> Result<Format> {
    let found: Vec<(Format, Evidence)> = gather_evidence(records)
        .into_iter()
        .filter(|(_, evidence)| !evidence.is_empty())
        .collect();
    let describe = |(format, evidence): &(Format, Evidence)| {
        format!(
            "{} looks like {}",
            evidence.first.as_deref().unwrap_or("the input"),
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
                .filter(|(_, evidence)| evidence.strong > 0)
                .max_by_key(|(_, evidence)| evidence.strong);
            if let Some((found, evidence)) = strongest {
                return Err(Error::WrongFormat {
                    forced,
                    found: *found,
                    reason: evidence.first.clone().unwrap_or_default(),
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
    let strong: Vec<&(Format, Evidence)> = found.iter().filter(|(_, e)| e.strong > 0).collect();
    let candidates: Vec<&(Format, Evidence)> = if strong.is_empty() {
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

/// Checks that a conversation, once written, reads back in its own format the way its input
/// was read: by detection when `forced` is `None`, else as the forced format (a session log's
/// output, an API body, as the API format it holds). Compaction removes messages, and with
/// them the evidence of the format: an OpenAI body whose tool rounds are gone, beside a stray
/// top-level `system` or `contents`, no longer shows OpenAI over the format the stray field
/// suggests. Such an output is refused rather than written unreadable.
///
/// # Errors
/// [`Error::Unreadable`] saying why the output would be read otherwise.
pub fn check_reads_back(conversation: &Conversation, forced: Option<Format>) -> Result<()> {
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
    // The evidence of a format lies in the shape of the request, never in its texts: the
    // output is rendered with its texts and arguments emptied.
    let skeleton = Conversation {
        format: conversation.format,
        system: conversation.system.clone(),
        messages: conversation.messages.iter().map(skeleton).collect(),
        envelope: conversation.envelope.clone(),
        lines: Vec::new(),
    };
    let records = [Record {
        line: 1,
        value: render(&skeleton),
    }];
    let shows_any = || {
        gather_evidence(&records)
            .iter()
            .any(|(_, evidence)| !evidence.is_empty())
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
    };
    let records = [Record {
        line: 1,
        value: render(&top),
    }];
    let found = gather_evidence(&records);
    let own = found
        .iter()
        .find(|(format, _)| *format == conversation.format)
        .map(|(_, evidence)| (evidence.strong, evidence.weak));
    let (strong, weak) = own.unwrap_or((0, 0));
    if forced.is_some() {
        return strong + weak > 0;
    }
    let others = found
        .iter()
        .any(|(format, evidence)| *format != conversation.format && !evidence.is_empty());
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
    }
}

/// Reads the one JSON document an API request format needs.
pub(crate) fn single(records: Vec<Record>, format: Format) -> Result<Value> {
    if let Some(second) = records.get(1) {
        return Err(Error::line(
            second.line,
            "top level",
            format!(
                "a second JSON value: {} input is one JSON document",
                format.as_str()
            ),
        ));
    }
    records
        .into_iter()
        .next()
        .map(|record| record.value)
        .ok_or_else(Error::empty)
}

/// Writes a conversation back as a JSON value in its own format.
pub fn render(conversation: &Conversation) -> Value {
    let wire = wire(conversation.format);
    let messages: Vec<Value> = conversation
        .messages
        .iter()
        .map(|m| wire.render_message(m).into_value())
        .collect();
    let Some(envelope) = &conversation.envelope else {
        return Value::Array(messages);
    };
    let mut envelope = envelope.clone();
    if !is_text_input(conversation, envelope.get(wire.list_key())) {
        envelope.insert(wire.list_key().into(), Value::Array(messages));
    }
    if let Some(system) = &conversation.system {
        envelope.insert(
            wire.system_key().into(),
            wire.render_system(system).into_value(),
        );
    }
    Value::Object(envelope)
}

/// Writes a conversation back as pretty-printed JSON bytes, ending in a newline.
///
/// # Panics
/// Never: writing to a `Vec` cannot fail.
pub fn render_bytes(conversation: &Conversation) -> Vec<u8> {
    let mut bytes = Vec::new();
    write(conversation, &mut bytes).expect("writing to a Vec cannot fail");
    bytes
}

/// Writes a conversation as pretty-printed JSON, ending in a newline, to `writer`: the bytes of
/// `serde_json::to_writer_pretty` of [`render`]'s value, produced without building that value
/// whole. Runs of messages are rendered on every core when there are enough of them, and
/// written in order as each is done; every message's bytes depend on that message alone, so
/// the output does not depend on the thread count.
///
/// # Errors
/// Whatever `writer` returns.
pub fn write(conversation: &Conversation, mut writer: impl std::io::Write) -> std::io::Result<()> {
    let mut out = Pretty::default();
    let Some(envelope) = &conversation.envelope else {
        write_messages(conversation, 0, &mut out, &mut writer)?;
        out.bytes.push(b'\n');
        return writer.write_all(&out.bytes);
    };
    let wire = wire(conversation.format);
    let (list_key, system_key) = (wire.list_key(), wire.system_key());
    let system = conversation.system.as_ref();
    // The envelope's fields in order, the messages and the system prompt at their places, and
    // appended when the envelope lacks them.
    let mut fields: Vec<(&str, Field)> = envelope
        .iter()
        .map(|(key, value)| match system {
            _ if key == list_key && is_text_input(conversation, Some(value)) => {
                (key.as_str(), Field::Value(value))
            }
            _ if key == list_key => (key.as_str(), Field::Messages),
            Some(system) if key == system_key => (key.as_str(), Field::System(system)),
            _ => (key.as_str(), Field::Value(value)),
        })
        .collect();
    if !envelope.contains_key(list_key) {
        fields.push((list_key, Field::Messages));
    }
    if let Some(system) = system.filter(|_| !envelope.contains_key(system_key)) {
        fields.push((system_key, Field::System(system)));
    }
    if fields.is_empty() {
        out.bytes.extend_from_slice(b"{}\n");
        return writer.write_all(&out.bytes);
    }
    out.bytes.push(b'{');
    for (i, (key, field)) in fields.into_iter().enumerate() {
        out.bytes
            .extend_from_slice(if i == 0 { b"\n  " } else { b",\n  " });
        out.string(key);
        out.bytes.extend_from_slice(b": ");
        match field {
            Field::Messages => write_messages(conversation, 1, &mut out, &mut writer)?,
            Field::System(system) => out.value(&wire.render_system(system), 1),
            Field::Value(value) => out.value(value, 1),
        }
    }
    out.bytes.extend_from_slice(b"\n}\n");
    writer.write_all(&out.bytes)
}

/// Whether the request's list field, as read, is a string (a Responses `input` of text) that
/// the conversation still is, whole: one user message of that text. It is then written back
/// as the string.
fn is_text_input(conversation: &Conversation, list: Option<&Value>) -> bool {
    let Some(Value::String(text)) = list else {
        return false;
    };
    match conversation.messages.as_slice() {
        [message] => {
            message.role == crate::conversation::Role::User
                && message.layout == Layout::Text
                && matches!(message.parts.as_slice(), [Part::Text { text: t, .. }] if t == text)
        }
        _ => false,
    }
}

/// A field of the request object as [`write`] writes it.
enum Field<'a> {
    /// The message list, rendered message by message.
    Messages,
    /// The top-level system prompt, rendered.
    System(&'a Message),
    /// A field passed through as read.
    Value(&'a Value),
}

/// What rendering a message costs beyond its text, in bytes of text that cost as much (about
/// 2 µs: its wire object is built and dropped). A message's render weight is its text plus
/// this, so that a run of many short messages (cleared tool rounds) is cut like long ones.
const RENDER_MESSAGE_BYTES: usize = 1 << 10;
/// Render weight of one rendering job: large enough that handing it out costs little, small
/// enough that the threads finish together.
const RENDER_JOB_BYTES: usize = 64 << 10;
/// Rendered jobs that may wait to be written: they bound the output held in memory at once (a
/// few megabytes, against the whole output).
const RENDER_JOBS_AHEAD: usize = 32;
/// Messages from which rendering is shared between threads whatever their text: fewer are
/// weighed first, and shared when they weigh more than a few jobs.
const PARALLEL_RENDER_MESSAGES: usize = 256;
/// Most threads rendering uses.
const RENDER_THREADS: usize = 8;

/// Writes the message list as it appears at nesting `depth`. Runs of messages of about
/// [`RENDER_JOB_BYTES`] are rendered on every core and written in order as they are done.
fn write_messages(
    conversation: &Conversation,
    depth: usize,
    out: &mut Pretty,
    writer: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let messages = &conversation.messages;
    if messages.is_empty() {
        out.bytes.extend_from_slice(b"[]");
        return Ok(());
    }
    out.bytes.push(b'[');
    writer.write_all(&out.bytes)?;
    out.bytes.clear();
    let weight = |message: &Message| crate::tokens::text_bytes(message) + RENDER_MESSAGE_BYTES;
    let shared = messages.len() >= PARALLEL_RENDER_MESSAGES
        || messages.iter().map(weight).sum::<usize>() >= 4 * RENDER_JOB_BYTES;
    let threads = if shared {
        parallel::cores().min(RENDER_THREADS)
    } else {
        1
    };
    // Each job is a run of messages and its render weight, weighed as it is taken.
    let mut next = 0;
    let take = || {
        let start = next;
        let mut bytes = 0;
        while next < messages.len() && (next == start || bytes < RENDER_JOB_BYTES) {
            bytes += weight(&messages[next]);
            next += 1;
        }
        (next > start).then_some((start..next, bytes))
    };
    let format = conversation.format;
    let render = |(range, bytes): (Range<usize>, usize)| {
        let wire = wire(format);
        // The render weight is about the rendered bytes or more: the part seldom grows.
        let mut part = Pretty {
            bytes: Vec::with_capacity(bytes),
        };
        crate::conversation::warm(&messages[range.clone()], Warmth::Whole);
        for index in range {
            part.line(index == 0, depth + 1);
            part.value(&wire.render_message(&messages[index]), depth + 1);
        }
        part.bytes
    };
    parallel::in_order(threads, RENDER_JOBS_AHEAD, take, render, |part| {
        writer.write_all(&part)
    })?;
    out.bytes.push(b'\n');
    out.indent(depth);
    out.bytes.push(b']');
    Ok(())
}

/// Messages from which a list is read on two threads: reading a message costs about a
/// microsecond, and reading is otherwise single-threaded.
const PARALLEL_PARSE_MESSAGES: usize = 2_000;

/// Reads each value of a list into a message with `parse(index, value)`, in order; the first
/// error in list order is the error. A large list is read on two threads, each taking half:
/// each message is read on its own.
pub(crate) fn parse_messages(
    values: Vec<Value>,
    parse: impl Fn(usize, Value) -> Result<Message> + Sync,
) -> Result<Vec<Message>> {
    let read = |values: Vec<Value>, offset: usize| {
        values
            .into_iter()
            .enumerate()
            .map(|(index, value)| parse(offset + index, value))
            .collect::<Result<Vec<_>>>()
    };
    if values.len() < PARALLEL_PARSE_MESSAGES || parallel::cores() < 2 {
        return read(values, 0);
    }
    let mut first = values;
    let second = first.split_off(first.len() / 2);
    let offset = first.len();
    let (first, second) = std::thread::scope(|scope| {
        let later = scope.spawn(|| read(second, offset));
        let first = read(first, 0);
        (
            first,
            later.join().expect("reading messages does not panic"),
        )
    });
    let mut messages = first?;
    messages.extend(second?);
    Ok(messages)
}

/// A request body's top-level object.
pub(crate) type Envelope = Map<String, Value>;

/// Splits a request body into its envelope and its list under `key`; a bare array has no
/// envelope.
pub(crate) fn split_envelope(value: Value, key: &str) -> Result<(Option<Envelope>, Vec<Value>)> {
    match value {
        Value::Array(messages) => Ok((None, messages)),
        Value::Object(mut envelope) => {
            let messages = match envelope.get_mut(key) {
                Some(Value::Array(messages)) => std::mem::take(messages),
                Some(other) => {
                    return Err(Error::top(
                        key,
                        format!("expected an array, found {}", kind(other)),
                    ));
                }
                None => {
                    return Err(Error::top(
                        key,
                        format!("missing: the object has no `{key}`"),
                    ));
                }
            };
            Ok((Some(envelope), messages))
        }
        other => {
            let noun = match key {
                "input" => "items",
                "contents" => "contents",
                _ => "messages",
            };
            Err(Error::top(
                "top level",
                format!(
                    "expected an object with `{key}` or an array of {noun}, found {}",
                    kind(&other)
                ),
            ))
        }
    }
}

/// The list under `key` of a single JSON document (the envelope's or a bare array), for
/// evidence; `None` when the input is not one document.
pub(crate) fn list<'a>(
    records: &'a [Record],
    key: &str,
) -> Option<(Option<&'a Envelope>, &'a [Value])> {
    let [record] = records else { return None };
    match &record.value {
        Value::Array(items) => Some((None, items)),
        Value::Object(envelope) => match envelope.get(key) {
            Some(Value::Array(items)) => Some((Some(envelope), items)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a field is present with a value that says something (not null, not empty).
pub(crate) fn has_value(object: &Map<String, Value>, key: &str) -> bool {
    match object.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::String(text)) => !text.is_empty(),
        Some(_) => true,
    }
}

/// For a conversation read from records: names the record's line in a location that names a
/// message of the conversation built from them.
pub(crate) fn at_lines(err: Error, lines: &[usize]) -> Error {
    match err {
        Error::Malformed { mut at, problem } => {
            if at.line.is_none() {
                at.line = at.message.and_then(|m| lines.get(m).copied());
            }
            Error::Malformed { at, problem }
        }
        other => other,
    }
}

/// A message built from a session log's records, with the line of the record it starts at.
pub(crate) struct Built {
    pub(crate) value: Value,
    pub(crate) line: usize,
}

/// Reads messages built from a session log with `parse`, the reader of the API format they
/// are in, under `list_key` of a new request body; names the log line in errors.
pub(crate) fn from_log(
    built: Vec<Built>,
    list_key: &str,
    parse: impl FnOnce(Option<Envelope>, Vec<Value>) -> Result<Conversation>,
) -> Result<Conversation> {
    let lines: Vec<usize> = built.iter().map(|b| b.line).collect();
    let messages: Vec<Value> = built.into_iter().map(|b| b.value).collect();
    let mut envelope = Envelope::new();
    envelope.insert(list_key.into(), Value::Array(Vec::new()));
    let mut conversation = parse(Some(envelope), messages).map_err(|err| at_lines(err, &lines))?;
    conversation.lines = lines;
    Ok(conversation)
}

/// The value of `key` in a record, as a string.
pub(crate) fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A short name for a JSON value's type, for error messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads a content field that is a string, null, absent or an array of blocks, taking its text
/// out of the wire value (a `null` stays in its place, so rendering writes the field back where
/// it was) so that no text is held twice. Text blocks (`{"type": "text", "text": …}`) become
/// [`Part::Text`]; `special` may claim other block types; anything else is kept as
/// [`Part::Opaque`].
pub(crate) fn parse_content(
    content: Option<&mut Value>,
    index: usize,
    field: &str,
    mut special: impl FnMut(usize, &mut Map<String, Value>) -> Result<Option<Part>>,
) -> Result<(Vec<Part>, Layout)> {
    let content = match content {
        None => return Ok((Vec::new(), Layout::Absent)),
        Some(content) => content.take(),
    };
    let blocks = match content {
        Value::Null => return Ok((Vec::new(), Layout::Null)),
        Value::String(text) => return Ok((vec![Part::text(text)], Layout::Text)),
        Value::Array(blocks) => blocks,
        other => {
            return Err(Error::field(
                index,
                field,
                format!(
                    "expected a string, null or an array of blocks, found {}",
                    kind(&other)
                ),
            ));
        }
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for (b, block) in blocks.into_iter().enumerate() {
        let Value::Object(mut map) = block else {
            return Err(Error::field(
                index,
                format!("{field}[{b}]"),
                format!("expected a content block object, found {}", kind(&block)),
            ));
        };
        let part = match map.get("type") {
            Some(Value::String(t)) if t == "text" => match map.get_mut("text").map(Value::take) {
                Some(Value::String(text)) => Part::Text { text, extra: map },
                other => {
                    return Err(Error::field(
                        index,
                        format!("{field}[{b}].text"),
                        format!(
                            "expected a string, found {}",
                            other.as_ref().map_or("nothing", kind)
                        ),
                    ));
                }
            },
            Some(Value::String(_)) => match special(b, &mut map)? {
                Some(part) => part,
                None => Part::Opaque(Value::Object(map)),
            },
            other => {
                return Err(Error::field(
                    index,
                    format!("{field}[{b}].type"),
                    format!(
                        "expected a block type string, found {}",
                        other.map_or("nothing", kind)
                    ),
                ));
            }
        };
        parts.push(part);
    }
    Ok((parts, Layout::Blocks))
}

/// Writes content parts back in `layout`, as a string when they are plain text and the layout
/// allows it, else as blocks. Text and opaque parts are written here; `render_other` writes
/// the format's own blocks (calls, results).
pub(crate) fn render_content<'a>(
    parts: &[&'a Part],
    layout: Layout,
    render_other: impl Fn(&'a Part) -> Rendered<'a>,
) -> Option<Rendered<'a>> {
    match layout {
        Layout::Absent if parts.is_empty() => None,
        Layout::Null if parts.is_empty() => Some(Rendered::Null),
        Layout::Text | Layout::Absent | Layout::Null if is_plain_text(parts) => {
            // One text is written from the conversation; several are joined.
            if let &[Part::Text { text, .. }] = parts {
                return Some(Rendered::Str(text));
            }
            let mut text = String::new();
            for part in parts {
                if let Part::Text { text: t, .. } = *part {
                    text.push_str(t);
                }
            }
            Some(Rendered::String(text))
        }
        _ => Some(Rendered::Array(
            parts
                .iter()
                .map(|&part| match part {
                    Part::Text { text, extra } => {
                        let mut block = Object::from_map(extra);
                        if !block.contains_key("type") {
                            block.insert("type", Rendered::Str("text"));
                        }
                        block.insert("text", Rendered::Str(text));
                        Rendered::Object(block)
                    }
                    Part::Opaque(value) => Rendered::Value(value),
                    other => render_other(other),
                })
                .collect(),
        )),
    }
}

/// Whether parts can be written as a bare string: text parts only, with no wire block fields.
fn is_plain_text(parts: &[&Part]) -> bool {
    parts
        .iter()
        .all(|part| matches!(part, Part::Text { extra, .. } if extra.is_empty()))
}

/// Tool-call arguments as the formats with structured input write them: as read, a string
/// where the object belongs included (the output is always in the input's format, so the
/// arguments are never another format's JSON-encoded string to decode).
pub(crate) fn arguments_object(arguments: &Value) -> Rendered<'_> {
    Rendered::Value(arguments)
}

/// Tool-call arguments as formats with string arguments write them: a string is kept, anything
/// else is encoded as JSON text.
pub(crate) fn arguments_string(arguments: &Value) -> Rendered<'_> {
    match arguments {
        Value::String(_) => Rendered::Value(arguments),
        other => Rendered::String(other.to_string()),
    }
}

/// The fields of the object under `key` of a wire block (none when absent or not an object), to
/// write a call or result back into.
pub(crate) fn nested_object<'a>(block: &'a Map<String, Value>, key: &str) -> Object<'a> {
    match block.get(key) {
        Some(Value::Object(inner)) => Object::from_map(inner),
        _ => Object::default(),
    }
}

/// Reads a required string field of a wire object.
pub(crate) fn required_str(
    map: &Map<String, Value>,
    key: &str,
    index: usize,
    path: &str,
) -> Result<String> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Error::field(
            index,
            path,
            format!("expected a string, found {}", kind(other)),
        )),
        None => Err(Error::field(index, path, "missing")),
    }
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
        assert!(check_reads_back(&conversation, None).is_ok());
        // A top-level system string settles Anthropic whatever the messages.
        let anthropic =
            serde_json::json!({"system": "s", "messages": [{"role": "user", "content": "hi"}]});
        let conversation = parse_value(anthropic, None).unwrap();
        assert!(check_reads_back(&conversation, None).is_ok());
        // An OpenAI system message beside a stray `system` field is ambiguous once no tool
        // round shows OpenAI.
        let stray = serde_json::json!({"system": {}, "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]});
        let conversation = parse_value(stray, Some(Format::OpenAi)).unwrap();
        let err = check_reads_back(&conversation, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the output would not read back as openai: cannot tell"),
            "{err}"
        );
        assert!(check_reads_back(&conversation, Some(Format::OpenAi)).is_ok());
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
