//! The one core the Python and Node packages share (feature `binding`): settings in as JSON,
//! results, reports and failures out as JSON values, with no language in it.
//!
//! A conversation comes in as data already read into a JSON value (Python) or as the text a
//! file would hold (Node); settings come as `ctxcompact::Settings` by its names (the one
//! conversion of settings into options the CLI and the proxy share), so a call from either
//! language and the CLI give the same output and report for the same input and options. Each
//! call runs the pipeline once: a budget that cannot be met fails with the report the run
//! made ([`Error::BudgetTooSmall`]'s). A binding only turns its language's values into these
//! and back.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::compact::{self, Compacted};
use crate::conversation::{Conversation, Message};
use crate::error::{Error, Problem};
use crate::format::{self, Format, ReadOptions};
use crate::options::Options;
use crate::report::Report;
use crate::request::{Agent, CompactionFacts, Compactor, Facts, Forward, Verdict};

/// A call's settings: the input's format, how to read it, and the library's settings by their
/// names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSettings {
    /// `auto` or a format's CLI name (`Format::from_str`).
    format: Option<String>,
    /// The context window of the model, instead of the catalog's (the proxy's `--window`);
    /// with no budget given, the budget is the window's trigger and target.
    window: Option<usize>,
    /// Repair an API body as a session log's reader does (`--repair`); text input only.
    #[serde(default)]
    repair: bool,
    /// Refuse a session log that needs a repair (`--strict`); text input only.
    #[serde(default)]
    strict: bool,
    /// For text that is data serialized (Node): the lengths of its lists, to tell whether
    /// message `i` read is element `i` of its list, so that the output's unchanged messages
    /// need not be rendered.
    lists: Option<Lists>,
    /// Every other setting, by the library's names.
    #[serde(default)]
    library: crate::Settings,
}

/// A request compaction's settings: the body's API format, the model its path names, the
/// window for every model, the agent that sent it, and the library's settings by their names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSettings {
    /// The API format's CLI name (`Format::from_str`).
    format: String,
    /// The model the request's path names (Gemini).
    path_model: Option<String>,
    /// The context window for every model, instead of the catalog's.
    window: Option<usize>,
    /// The agent that sent the request, as the proxy tells it from the headers.
    client: Option<Agent>,
    /// Every other setting.
    #[serde(default)]
    library: crate::Settings,
}

/// The lengths of the lists in the input data.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lists {
    /// The length of the top level, when it is a list.
    top: Option<usize>,
    /// The length of each list under a key of a top-level object.
    #[serde(default)]
    keys: Vec<(String, usize)>,
}

impl Lists {
    /// The lengths of the lists in `input`, taken before the library consumes it.
    fn of(input: &Value) -> Self {
        Self {
            top: input.as_array().map(Vec::len),
            keys: input.as_object().map_or_else(Vec::new, |body| {
                body.iter()
                    .filter_map(|(key, value)| {
                        value.as_array().map(|list| (key.clone(), list.len()))
                    })
                    .collect()
            }),
        }
    }

    /// Whether `conversation`'s messages are, one for one, the elements of the list they were
    /// read from (not so for a session log, whose records are not messages).
    fn aligned(&self, conversation: &Conversation) -> bool {
        let length = if conversation.envelope.is_none() {
            self.top
        } else {
            let key = conversation.format.list_key();
            self.keys.iter().find(|(k, _)| k == key).map(|(_, n)| *n)
        };
        conversation.lines.is_empty() && length == Some(conversation.messages.len())
    }
}

/// Why a call failed, sorted as the CLI sorts its exit codes.
#[derive(Debug)]
pub enum CallFailure {
    /// Bad input (the CLI's exit 2).
    Input {
        /// The library's message.
        message: String,
        /// The message index, when the problem is inside one message.
        message_index: Option<usize>,
        /// The field path, when one field is at fault.
        field: Option<String>,
    },
    /// The budget cannot be met (the CLI's exit 3), with the report of the attempt.
    CannotFit {
        /// The library's message.
        message: String,
        /// The `cannot_fit` report (`ctxcompact analyze --json`'s), when one run made it.
        report: Option<Box<Report>>,
    },
    /// Unusable options (the CLI's exit 2).
    Options {
        /// What is wrong.
        message: String,
    },
    /// A handle that cannot be given back.
    Recall {
        /// Why, naming the handle.
        message: String,
    },
}

impl CallFailure {
    /// Unusable options, saying what is wrong.
    pub fn options(message: impl Into<String>) -> Self {
        Self::Options {
            message: message.into(),
        }
    }

    /// Bad input with no place in it, saying what is wrong.
    pub fn input(message: impl Into<String>) -> Self {
        Self::Input {
            message: message.into(),
            message_index: None,
            field: None,
        }
    }

    /// The failure as a package hands it to its language: its kind's name and what it
    /// carries.
    pub fn into_parts(self) -> Parts {
        let (kind, message, message_index, field, report) = match self {
            Self::Input {
                message,
                message_index,
                field,
            } => ("input", message, message_index, field, None),
            Self::CannotFit { message, report } => (
                "cannot_fit",
                message,
                None,
                None,
                report.map(|report| to_value(&report)),
            ),
            Self::Options { message } => ("options", message, None, None, None),
            Self::Recall { message } => ("recall", message, None, None, None),
        };
        Parts {
            kind,
            message,
            message_index,
            field,
            report,
        }
    }

    /// Sorts a library error; a budget too small carries the report of its run.
    fn from_library(err: Error) -> Self {
        let message = err.to_string();
        match err {
            Error::Malformed { at, .. } => Self::Input {
                message,
                message_index: at.message,
                field: Some(at.field),
            },
            Error::Invalid { first, .. } => Self::Input {
                message,
                message_index: first.at.message,
                field: Some(first.at.field),
            },
            Error::BudgetTooSmall { report, .. } => Self::CannotFit {
                message,
                report: Some(report),
            },
            Error::BadBudget { .. }
            | Error::BadSetting { .. }
            | Error::UnknownModel { .. }
            | Error::Unpriced { .. }
            | Error::Catalog { .. }
            | Error::Calibration { .. } => Self::Options { message },
            _ => Self::input(message),
        }
    }
}

/// A [`CallFailure`] taken apart, for a package to build its language's error from.
#[derive(Debug)]
pub struct Parts {
    /// `input`, `cannot_fit`, `options` or `recall`.
    pub kind: &'static str,
    /// What went wrong.
    pub message: String,
    /// An input failure's message index, when the problem is inside one message.
    pub message_index: Option<usize>,
    /// An input failure's field path, when one field is at fault.
    pub field: Option<String>,
    /// A `cannot_fit` failure's report, when it has one.
    pub report: Option<Value>,
}

/// A conversation as a package hands it over.
pub enum Input<'a> {
    /// Data already read into a JSON value (Python): read as that value; the output comes
    /// back in [`SplitOutput`], its unchanged messages named when the value's list is read one
    /// message for one element.
    Data(Value),
    /// The text a file would hold (Node), read as the CLI reads a file, with the usage a
    /// session log recorded as the anchor; the output comes back in [`SplitOutput`] when
    /// [`CallSettings`] gives the lists of the data it was serialized from and they line up with
    /// the messages, else as bytes.
    Text(&'a [u8]),
}

/// A compaction's result: the output, the report, the input message each output message is
/// unchanged from, and what its handles stand for.
pub struct Compaction {
    /// The output.
    pub output: Output,
    /// The report, as `--report` writes it.
    pub report: Value,
    /// Per output message, the input message it is unchanged from; for [`Output::Bytes`],
    /// empty when the input's messages are not its records one for one (a session log).
    pub unchanged: Vec<Option<usize>>,
    /// With `handles` and no archive folder: what each handle the notes name stands for (one
    /// JSON message a line), kept by the caller instead of written, as a JSON object.
    pub recallable: Value,
}

/// A compaction's output conversation.
pub enum Output {
    /// The bytes `ctxcompact compact -o FILE` writes.
    Bytes(Vec<u8>),
    /// The output without its messages, and its messages that are not unchanged input
    /// messages.
    Split(SplitOutput),
}

/// An output conversation without the messages the caller holds: the caller puts its own
/// input objects where [`Compaction::unchanged`] names them, and the changed messages, in
/// order, everywhere else.
pub struct SplitOutput {
    /// The output without its messages: an empty list where they go.
    pub shell: Value,
    /// Where the messages go: `None` for the top-level list, else this key of the body.
    pub list_key: Option<&'static str>,
    /// The new or changed messages, rendered, in order.
    pub changed: Vec<Value>,
}

/// Reused messages from which the library's copies are freed on a thread of their own, which
/// the call does not wait for: freeing 7,000 messages takes 20–30 ms (about a sixth of a
/// Python call), and nothing else waits for that memory. Fewer are freed at once.
const BACKGROUND_FREE_MESSAGES: usize = 1_000;

/// Parses a call's settings object.
///
/// # Errors
/// [`CallFailure::Options`] naming what is wrong.
pub fn settings(json: &str) -> Result<CallSettings, CallFailure> {
    serde_json::from_str(json).map_err(|err| CallFailure::options(format!("bad options: {err}")))
}

/// Parses a request compaction's settings object.
///
/// # Errors
/// [`CallFailure::Options`] naming what is wrong.
pub fn request_settings(json: &str) -> Result<RequestSettings, CallFailure> {
    serde_json::from_str(json).map_err(|err| CallFailure::options(format!("bad options: {err}")))
}

/// Compacts `input` to its budget, as `ctxcompact compact` does: the output is checked to read
/// back as the input was read, and the archive files are written before the output that names
/// them is returned; nothing is written on error.
///
/// # Errors
/// A [`CallFailure`] of each kind; [`CallFailure::CannotFit`] with the report of the one run.
pub fn compact(input: Input<'_>, settings: &CallSettings) -> Result<Compaction, CallFailure> {
    let read = read(input, settings, false)?;
    let compacted =
        crate::compact(read.conversation, &read.options).map_err(CallFailure::from_library)?;
    compacted
        .check_reads_back(forced_format(settings)?)
        .map_err(CallFailure::from_library)?;
    compacted
        .write_archive()
        .map_err(|err| CallFailure::options(format!("archive: cannot write the archive: {err}")))?;
    Ok(compaction(compacted, read.shape))
}

/// Trims old tool rounds alone, as `ctxcompact trim-tools` does.
///
/// # Errors
/// [`CallFailure::Input`] or [`CallFailure::Options`].
pub fn trim_tools(input: Input<'_>, settings: &CallSettings) -> Result<Compaction, CallFailure> {
    let read = read(input, settings, true)?;
    let trimmed =
        crate::trim_tools(read.conversation, &read.options).map_err(CallFailure::from_library)?;
    trimmed
        .check_reads_back(forced_format(settings)?)
        .map_err(CallFailure::from_library)?;
    Ok(compaction(trimmed, read.shape))
}

/// What `compact` would do, as the report `ctxcompact analyze --json` prints (a budget too
/// small is reported in it).
///
/// # Errors
/// [`CallFailure::Input`] or [`CallFailure::Options`].
pub fn analyze(input: Input<'_>, settings: &CallSettings) -> Result<Value, CallFailure> {
    let read = read(input, settings, false)?;
    let report =
        crate::analyze(read.conversation, &read.options).map_err(CallFailure::from_library)?;
    Ok(to_value(&report))
}

/// Each message's tokens and the total, as `ctxcompact count --json` prints them.
///
/// # Errors
/// [`CallFailure::Input`] or [`CallFailure::Options`].
pub fn count(input: Input<'_>, settings: &CallSettings) -> Result<Value, CallFailure> {
    let read = read(input, settings, true)?;
    Ok(read.options.count_json(&read.conversation))
}

/// Every problem a provider refuses the conversation for as a request, as `ctxcompact
/// validate` finds them: objects with the message index, the field, the kind, the call id and
/// the text.
///
/// # Errors
/// [`CallFailure::Input`] when the input cannot be read.
pub fn validate(input: Input<'_>, settings: &CallSettings) -> Result<Value, CallFailure> {
    let conversation = parse(input, settings)?.0;
    Ok(conversation
        .request_problems()
        .iter()
        .map(problem_json)
        .collect())
}

/// A request compactor for one set of settings, the packages' one way to compact a request
/// body: kept across calls (by an adapter, or a caller of the packages' kept compactor), it
/// reads the catalog and calibration once, and its [`Compactor`]'s cache resumes each history
/// from the last call it replayed instead of replaying every earlier compaction (never
/// changing a byte); made for one call (0 conversations cached), it is the packages'
/// `compact_request`.
pub struct RequestCompactor {
    compactor: Compactor,
    format: Format,
    path_model: Option<String>,
    client: Option<Agent>,
}

impl RequestCompactor {
    /// A compactor for `settings`, caching at most `conversations` replayed histories (0: each
    /// call is its own).
    ///
    /// # Errors
    /// [`CallFailure::Options`] for settings a request compactor refuses.
    pub fn new(settings: &RequestSettings, conversations: usize) -> Result<Self, CallFailure> {
        let format: Format = settings.format.parse().map_err(CallFailure::options)?;
        let compactor = Compactor::new(&settings.library, settings.window, conversations)
            .map_err(CallFailure::from_library)?;
        Ok(Self {
            compactor,
            format,
            path_model: settings.path_model.clone(),
            client: settings.client,
        })
    }

    /// What to forward for `body`, as the proxy decides it: the compacted body (`None` to
    /// forward the received bytes) and the rest of the request's record as a JSON object, as
    /// the proxy ledger's line holds it.
    pub fn compact(&self, body: &[u8]) -> (Option<Vec<u8>>, Value) {
        let client = self.client.map(|agent| (agent, "the caller"));
        let mut forward =
            self.compactor
                .compact(body, self.format, self.path_model.as_deref(), client);
        (forward.body.take(), Returned::of(&forward))
    }

    /// What `handle` names in the history of `body` (`Compactor::recall`): the removed
    /// messages, one JSON message a line.
    ///
    /// # Errors
    /// [`CallFailure::Recall`] naming a handle that cannot be given back.
    pub fn recall(&self, body: &[u8], handle: &str) -> Result<String, CallFailure> {
        self.compactor
            .recall(body, self.format, self.path_model.as_deref(), handle)
            .map_err(|err| CallFailure::Recall {
                message: err.to_string(),
            })
    }
}

/// The pipeline's runs on this thread so far, for the packages' tests to show that a call runs
/// it once.
pub fn pipeline_runs() -> usize {
    compact::RUNS.with(std::cell::Cell::get)
}

/// A conversation kept across an agent's calls: a [`crate::Session`] and the format of the
/// messages pushed to it.
pub struct WireSession {
    inner: crate::Session,
    format: Format,
}

impl WireSession {
    /// Starts a session from `input` (a body or a list of messages, possibly empty).
    ///
    /// # Errors
    /// [`CallFailure::Input`] or [`CallFailure::Options`].
    pub fn new(input: Input<'_>, settings: &CallSettings) -> Result<Self, CallFailure> {
        let read = read(input, settings, false)?;
        let format = read.conversation.format;
        let inner = crate::Session::new(read.conversation, read.options)
            .map_err(CallFailure::from_library)?;
        Ok(Self { inner, format })
    }

    /// Appends the messages of `list` (a JSON list of messages in the session's format).
    ///
    /// # Errors
    /// [`CallFailure::Input`] when they cannot be read.
    pub fn push(&mut self, list: &[u8]) -> Result<(), CallFailure> {
        let value: Value = serde_json::from_slice(list)
            .map_err(|err| CallFailure::input(format!("the messages are not JSON: {err}")))?;
        let conversation =
            format::parse_value(value, Some(self.format)).map_err(CallFailure::from_library)?;
        self.inner.extend(conversation.messages);
        Ok(())
    }

    /// Compacts past the trigger: the report, or `None` when nothing changed.
    ///
    /// # Errors
    /// [`CallFailure::CannotFit`] (with no report: the session's fallbacks ran several budgets),
    /// or [`CallFailure::Options`] for an archive that cannot be written.
    pub fn compact_if_needed(&mut self) -> Result<Option<Value>, CallFailure> {
        let report = self.inner.compact_if_needed().map_err(|err| match err {
            err if err.is_cannot_fit() => CallFailure::CannotFit {
                message: err.to_string(),
                report: None,
            },
            err => CallFailure::from_library(err),
        })?;
        if report.is_some() {
            self.inner.write_archive().map_err(|err| {
                CallFailure::options(format!("archive: cannot write the archive: {err}"))
            })?;
        }
        Ok(report.as_ref().map(to_value))
    }

    /// The conversation as it would be sent now, as the CLI writes it.
    ///
    /// # Panics
    /// Never: a `Vec` takes every write.
    pub fn render(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        format::write(self.inner.conversation(), &mut bytes).expect("a Vec takes every write");
        bytes
    }

    /// `[tokens, trigger, compactions, messages]` of the session now.
    pub fn figures(&self) -> [usize; 4] {
        [
            self.inner.tokens(),
            self.inner.trigger(),
            self.inner.compactions(),
            self.inner.conversation().messages.len(),
        ]
    }

    /// Records the input size the provider reported for the conversation as it is now.
    pub fn observe_usage(&mut self, input_tokens: usize) {
        self.inner.observe_usage(input_tokens);
    }
}

/// A request's record as the packages return it: what the proxy ledger's line holds of it
/// (the model, then the facts, the verdict and the compactions' facts, each group
/// serialized by its own type and flattened as the line flattens it), and the model no rule
/// reads when that is why it failed open. `facts` holds the facts again as one object, as the
/// packages returned them before the ledger's groups were flattened in.
#[derive(Serialize)]
struct Returned<'a> {
    model: &'a Option<String>,
    #[serde(flatten)]
    known: &'a Facts,
    #[serde(flatten)]
    verdict: &'a Verdict,
    #[serde(flatten)]
    compaction: &'a CompactionFacts,
    unknown_model: &'a Option<String>,
    facts: &'a Facts,
}

impl<'a> Returned<'a> {
    /// `forward`'s record as a JSON object; `archive_error` (null) and `instruction_files`
    /// (empty), which the ledger's line leaves out when there is nothing to say, are always
    /// there, as the packages returned them before.
    fn of(forward: &'a Forward) -> Value {
        let returned = Self {
            model: &forward.model,
            known: &forward.facts,
            verdict: &forward.verdict,
            compaction: &forward.compaction,
            unknown_model: &forward.unknown_model,
            facts: &forward.facts,
        };
        let mut record = serde_json::to_value(returned).expect("a record serializes");
        if let Value::Object(fields) = &mut record {
            fields.entry("archive_error").or_insert(Value::Null);
            fields
                .entry("instruction_files")
                .or_insert_with(|| Value::Array(Vec::new()));
        }
        record
    }
}

/// An input read, with its options and how its output is handed back.
struct Read {
    conversation: Conversation,
    options: Options,
    shape: Shape,
}

/// How a compaction's output is handed back, decided from its input before the run.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Whether the input is data: its output is then always handed back in pieces.
    data: bool,
    /// Whether the input's lists are its messages one for one: then the output is handed back
    /// in pieces, naming the input messages it kept unchanged.
    reused: bool,
    /// Whether the conversation's messages are the input's (not a session log's records).
    aligned: bool,
}

/// Reads the input and the options (`unbudgeted` for a call that removes nothing for a
/// budget), for the model the body names unless the settings name one, with the window given
/// for every model (and, when no budget is given, the window's budget).
fn read(input: Input<'_>, settings: &CallSettings, unbudgeted: bool) -> Result<Read, CallFailure> {
    let data = matches!(input, Input::Data(_));
    let lists = match &input {
        Input::Data(value) => Some(Lists::of(value)),
        Input::Text(_) => None,
    };
    let (conversation, anchor) = parse(input, settings)?;
    let mut library = if unbudgeted {
        settings.library.without_budget()
    } else {
        settings.library.clone()
    };
    library.anchor = anchor;
    let options = library
        .options_for_body(&conversation, settings.window)
        .map_err(CallFailure::from_library)?;
    let lists = lists.as_ref().or(settings.lists.as_ref());
    let shape = Shape {
        data,
        reused: lists.is_some_and(|lists| lists.aligned(&conversation)),
        aligned: conversation.lines.is_empty(),
    };
    Ok(Read {
        conversation,
        options,
        shape,
    })
}

/// Reads the input alone, and the anchor of its counts: the usage a session log recorded
/// last, for text; the settings' own, for data (no log was read).
fn parse(
    input: Input<'_>,
    settings: &CallSettings,
) -> Result<(Conversation, Option<format::RecordedUsage>), CallFailure> {
    let format = forced_format(settings)?;
    match input {
        Input::Data(value) => format::parse_value(value, format)
            .map(|conversation| (conversation, settings.library.anchor.clone()))
            .map_err(CallFailure::from_library),
        Input::Text(bytes) => {
            let read = ReadOptions {
                format,
                whole_history: false,
                strict: settings.strict,
                repair: settings.repair,
            };
            let (conversation, mut usages) =
                format::parse_with_usage(bytes, &read).map_err(CallFailure::from_library)?;
            Ok((conversation, usages.pop()))
        }
    }
}

/// The format `format` forces, `None` for detection.
fn forced_format(settings: &CallSettings) -> Result<Option<Format>, CallFailure> {
    match settings.format.as_deref() {
        None | Some("auto") => Ok(None),
        Some(name) => name
            .parse::<Format>()
            .map(Some)
            .map_err(CallFailure::options),
    }
}

/// A run's result handed back as its `shape` says.
fn compaction(compacted: Compacted, shape: Shape) -> Compaction {
    let report = to_value(&compacted.report);
    let recallable = recallable(&compacted.archive);
    let (output, unchanged) = output(compacted, shape);
    Compaction {
        output,
        report,
        unchanged,
        recallable,
    }
}

/// The archive files named by their handles alone (`handles` without a folder), as a JSON
/// object of handle to content: the caller's to keep, never written.
fn recallable(archive: &[(String, String)]) -> Value {
    let kept: serde_json::Map<String, Value> = archive
        .iter()
        .filter(|(path, _)| std::path::Path::new(path).extension().is_none())
        .map(|(handle, content)| (handle.clone(), Value::String(content.clone())))
        .collect();
    Value::Object(kept)
}

/// A compaction's output as its `shape` says, and per output message the input message it is
/// unchanged from.
fn output(compacted: Compacted, shape: Shape) -> (Output, Vec<Option<usize>>) {
    let mut conversation = compacted.conversation;
    let unchanged = if shape.reused {
        compacted.unchanged
    } else if shape.data {
        vec![None; conversation.messages.len()]
    } else {
        let mut bytes = Vec::new();
        format::write(&conversation, &mut bytes).expect("a Vec takes every write");
        let unchanged = if shape.aligned {
            compacted.unchanged
        } else {
            Vec::new()
        };
        return (Output::Bytes(bytes), unchanged);
    };
    let messages = std::mem::take(&mut conversation.messages);
    let list_key = conversation
        .envelope
        .is_some()
        .then(|| conversation.format.list_key());
    let shell = format::render(&conversation);
    let format = conversation.format;
    let (mut reused, mut changed) = (Vec::new(), Vec::new());
    for (message, source) in messages.into_iter().zip(&unchanged) {
        match source {
            Some(_) => reused.push(message),
            None => changed.push(message),
        }
    }
    if reused.len() >= BACKGROUND_FREE_MESSAGES {
        // A thread that cannot be started drops its closure: the copies are then freed here.
        let _ = std::thread::Builder::new().spawn(move || drop(reused));
    }
    let changed = changed
        .into_iter()
        .map(|message| render_message(format, message))
        .collect();
    let pieces = SplitOutput {
        shell,
        list_key,
        changed,
    };
    (Output::Split(pieces), unchanged)
}

/// One message as its format writes it.
fn render_message(format: Format, message: Message) -> Value {
    let alone = Conversation {
        format,
        system: None,
        messages: vec![message],
        envelope: None,
        lines: Vec::new(),
        repairs: Vec::new(),
    };
    match format::render(&alone) {
        Value::Array(mut items) if items.len() == 1 => items.remove(0),
        other => unreachable!("a conversation without an envelope renders as its list: {other}"),
    }
}

fn problem_json(problem: &Problem) -> Value {
    let full = problem.to_string();
    let place = format!("{}: ", problem.at);
    let text = full.strip_prefix(&place).unwrap_or(&full);
    json!({
        "message_index": problem.at.message,
        "field": problem.at.field,
        "kind": problem.kind.name(),
        "call_id": problem.kind.call_id(),
        "text": text,
    })
}

fn to_value(report: &Report) -> Value {
    serde_json::to_value(report).expect("a report holds only numbers, strings and enums")
}
