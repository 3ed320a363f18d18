//! Every call into the `ctxcompact` library, and nothing about Node.
//!
//! The conversation comes in as the text the CLI would read from a file (JavaScript data is
//! sent as its `JSON.stringify` text) and is read as the CLI reads it, with the usage a session
//! log recorded as the anchor; results go out as the bytes the CLI writes and as JSON values.
//! The settings come as a JSON object whose `run` member is `ctxcompact::Settings` (the one
//! conversion of settings into options, shared with the CLI, the proxy and Python), so a call
//! from JavaScript and the CLI give the same output and report for the same input and options.

use ctxcompact::format::{self, Format, ReadOptions};
use ctxcompact::request::{Agent, Compactor};
use ctxcompact::{Conversation, Error, Options, Problem, Report};
use serde::Deserialize;
use serde_json::{Value, json};

/// A call's settings, as the JavaScript layer sent them after checking its options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Settings {
    /// `format`: `auto` or a format's CLI name (`Format::from_str`).
    format: Option<String>,
    /// `window`: the context window of the model, instead of the catalog's (the proxy's
    /// `--window`); with no budget given, the budget is the window's trigger and target.
    window: Option<usize>,
    /// `repair`: repair an API body as a session log's reader does (`--repair`).
    #[serde(default)]
    repair: bool,
    /// `strict`: refuse a session log that needs a repair (`--strict`).
    #[serde(default)]
    strict: bool,
    /// For JavaScript data: the lengths of its lists, to tell whether message `i` read is
    /// element `i` of its list, so that the output's unchanged messages need not be rendered.
    lists: Option<Lists>,
    /// Every other option, by the library's names.
    #[serde(default)]
    run: ctxcompact::Settings,
}

/// The lengths of the lists in the input data.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Lists {
    /// The length of the top level, when it is a list.
    top: Option<usize>,
    /// The length of each list under a key of a top-level object.
    #[serde(default)]
    keys: Vec<(String, usize)>,
}

impl Lists {
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

/// A request compaction's settings: the body's API format, the model its path names, the
/// window for every model, the agent that sent it, and the library's settings by their names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestSettings {
    /// The API format's CLI name (`Format::from_str`).
    format: String,
    /// `pathModel`: the model the request's path names (Gemini).
    path_model: Option<String>,
    /// `window`: the context window for every model, instead of the catalog's.
    window: Option<usize>,
    /// `client`: the agent that sent the request, as the proxy tells it from the headers.
    client: Option<Agent>,
    /// Every other option.
    #[serde(default)]
    run: ctxcompact::Settings,
}

/// Why a call failed, sorted into the error codes of the JavaScript layer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad input (the CLI's exit 2): `ERR_CTXCOMPACT_INPUT`.
    Input {
        /// The library's message.
        message: String,
        /// The message index, when the problem is inside one message.
        message_index: Option<usize>,
        /// The field path, when one field is at fault.
        field: Option<String>,
    },
    /// The budget cannot be met (the CLI's exit 3): `ERR_CTXCOMPACT_CANNOT_FIT`, with the
    /// report of the attempt.
    CannotFit {
        /// The library's message.
        message: String,
        /// The `cannot_fit` report.
        report: Value,
    },
    /// Unusable options (the CLI's exit 2): `ERR_CTXCOMPACT_OPTIONS`.
    Options {
        /// What is wrong.
        message: String,
    },
}

impl Failure {
    pub(crate) fn options(message: impl Into<String>) -> Self {
        Self::Options {
            message: message.into(),
        }
    }

    /// Sorts a library error; a budget too small is handled by the caller, which has the input.
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
            Error::BadBudget { .. }
            | Error::BadSetting { .. }
            | Error::UnknownModel { .. }
            | Error::Unpriced { .. }
            | Error::Catalog { .. }
            | Error::Calibration { .. } => Self::Options { message },
            _ => Self::Input {
                message,
                message_index: None,
                field: None,
            },
        }
    }
}

/// A compaction's result: the output, the report, and for each output message the index of the
/// input message it is unchanged from, when the input is a list of messages read one for one.
pub(crate) struct Compaction {
    /// The output.
    pub(crate) output: Output,
    /// The report, as `--report` writes it.
    pub(crate) report: Value,
    /// Per output message, the input message it is unchanged from.
    pub(crate) unchanged: Vec<Option<usize>>,
    /// With `handles` and no archive folder: what each handle the notes name stands for (one
    /// JSON message a line), kept by the caller instead of written.
    pub(crate) recallable: Value,
}

/// A compaction's output conversation.
pub(crate) enum Output {
    /// The bytes `ctxcompact compact -o FILE` writes.
    Bytes(Vec<u8>),
    /// For data whose messages are its list's elements one for one: the output without its
    /// messages (an empty list where they go, under `list_key` or at the top), and the
    /// messages that are not unchanged input messages, rendered, in order. The JavaScript
    /// layer puts the input's own objects where `unchanged` names them: the same data the
    /// bytes hold, without rendering and parsing again what did not change.
    Pieces {
        /// The output without its messages.
        shell: Value,
        /// The key of the list of messages; `None` for a top-level list.
        list_key: Option<&'static str>,
        /// The new or changed messages, rendered.
        changed: Vec<Value>,
    },
}

/// Parses the settings object the JavaScript layer sent.
pub(crate) fn settings(json: &str) -> Result<Settings, Failure> {
    serde_json::from_str(json).map_err(|err| Failure::options(format!("bad options: {err}")))
}

/// Parses the settings object of a request compaction.
pub(crate) fn request_settings(json: &str) -> Result<RequestSettings, Failure> {
    serde_json::from_str(json).map_err(|err| Failure::options(format!("bad options: {err}")))
}

/// Compacts `input` to its budget, as `ctxcompact compact` does: the archive files are written
/// once the output is known to be good, and nothing is written on error.
pub(crate) fn compact(input: &[u8], settings: &Settings) -> Result<Compaction, Failure> {
    let (conversation, options) = read(input, settings, false)?;
    let shape = Shape::of(&conversation, settings);
    match ctxcompact::compact(conversation, &options) {
        Ok(compacted) => {
            compacted
                .check_reads_back(forced_format(settings)?)
                .map_err(Failure::from_library)?;
            compacted.write_archive().map_err(|err| {
                Failure::options(format!("archive: cannot write the archive: {err}"))
            })?;
            let report = to_value(&compacted.report);
            let recallable = recallable(&compacted.archive);
            let (output, unchanged) = output(compacted, shape);
            Ok(Compaction {
                output,
                report,
                unchanged,
                recallable,
            })
        }
        Err(err) if err.is_cannot_fit() => Err(cannot_fit(input, settings, err.to_string())),
        Err(err) => Err(Failure::from_library(err)),
    }
}

/// The failure of a compaction that could not meet its budget (`message`), with the report of
/// what it tried, as `ctxcompact analyze` gives it.
fn cannot_fit(input: &[u8], settings: &Settings, message: String) -> Failure {
    let report = read(input, settings, false).and_then(|(conversation, options)| {
        ctxcompact::analyze(&conversation, &options).map_err(Failure::from_library)
    });
    match report {
        Ok(report) => Failure::CannotFit {
            message,
            report: to_value(&report),
        },
        Err(failure) => failure,
    }
}

/// Trims old tool rounds alone, as `ctxcompact trim-tools` does.
pub(crate) fn trim_tools(input: &[u8], settings: &Settings) -> Result<Compaction, Failure> {
    let (conversation, options) = read(input, settings, true)?;
    let shape = Shape::of(&conversation, settings);
    let trimmed = ctxcompact::trim_tools(conversation, &options).map_err(Failure::from_library)?;
    trimmed
        .check_reads_back(forced_format(settings)?)
        .map_err(Failure::from_library)?;
    let report = to_value(&trimmed.report);
    let recallable = recallable(&trimmed.archive);
    let (output, unchanged) = output(trimmed, shape);
    Ok(Compaction {
        output,
        report,
        unchanged,
        recallable,
    })
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

/// What `compact` would do, as the report `ctxcompact analyze --json` prints.
pub(crate) fn analyze(input: &[u8], settings: &Settings) -> Result<Value, Failure> {
    let (conversation, options) = read(input, settings, false)?;
    let report = ctxcompact::analyze(&conversation, &options).map_err(Failure::from_library)?;
    Ok(to_value(&report))
}

/// Each message's tokens and the total, as `ctxcompact count --json` prints them.
pub(crate) fn count(input: &[u8], settings: &Settings) -> Result<Value, Failure> {
    let (conversation, options) = read(input, settings, true)?;
    Ok(options.count_json(&conversation))
}

/// Every problem a provider refuses the conversation for as a request, as `ctxcompact
/// validate` finds them: objects with the message index, the field, the kind, the call id and
/// the text.
pub(crate) fn validate(input: &[u8], settings: &Settings) -> Result<Value, Failure> {
    let conversation = parse(input, settings)?;
    Ok(conversation
        .request_problems()
        .iter()
        .map(problem_json)
        .collect())
}

fn problem_json(problem: &Problem) -> Value {
    let full = problem.to_string();
    let place = format!("{}: ", problem.at);
    let text = full.strip_prefix(&place).unwrap_or(&full);
    json!({
        "messageIndex": problem.at.message,
        "field": problem.at.field,
        "kind": problem.kind.name(),
        "callId": problem.kind.call_id(),
        "text": text,
    })
}

/// What to forward for a provider request body, as the proxy decides it: the compacted body
/// (`None` to forward the received bytes) and the rest of the decision as a JSON object.
pub(crate) fn compact_request(
    body: &[u8],
    settings: &RequestSettings,
) -> Result<(Option<Vec<u8>>, Value), Failure> {
    let format: Format = settings.format.parse().map_err(Failure::options)?;
    let compactor =
        Compactor::new(&settings.run, settings.window, 0).map_err(Failure::from_library)?;
    let client = settings.client.map(|agent| (agent, "the caller"));
    let forward = compactor.compact(body, format, settings.path_model.as_deref(), client);
    let decision = json!({
        "action": forward.verdict.action,
        "reason": forward.verdict.reason,
        "model": forward.model,
        "tokensReceived": forward.verdict.tokens_received,
        "tokensForwarded": forward.verdict.tokens_forwarded,
        "compactions": forward.verdict.compactions,
        "archiveError": forward.compaction.archive_error,
        "instructionFiles": forward.compaction.instruction_files,
        "facts": forward.facts,
    });
    Ok((forward.body, decision))
}

/// A conversation kept across an agent's calls: a [`ctxcompact::Session`] and the format of
/// the messages pushed to it.
pub(crate) struct Session {
    inner: ctxcompact::Session,
    format: Format,
}

impl Session {
    /// Starts a session from `input` (a body or a list of messages, possibly empty).
    pub(crate) fn new(input: &[u8], settings: &Settings) -> Result<Self, Failure> {
        let (conversation, options) = read(input, settings, false)?;
        let format = conversation.format;
        let inner =
            ctxcompact::Session::new(conversation, options).map_err(Failure::from_library)?;
        Ok(Self { inner, format })
    }

    /// Appends the messages of `list` (a JSON list of messages in the session's format).
    pub(crate) fn push(&mut self, list: &[u8]) -> Result<(), Failure> {
        let value: Value = serde_json::from_slice(list).map_err(|err| Failure::Input {
            message: format!("the messages are not JSON: {err}"),
            message_index: None,
            field: None,
        })?;
        let conversation =
            format::parse_value(value, Some(self.format)).map_err(Failure::from_library)?;
        self.inner.extend(conversation.messages);
        Ok(())
    }

    /// Compacts past the trigger: the report, or `None` when nothing changed.
    pub(crate) fn compact_if_needed(&mut self) -> Result<Option<Value>, Failure> {
        let report = self.inner.compact_if_needed().map_err(|err| match err {
            err if err.is_cannot_fit() => Failure::CannotFit {
                message: err.to_string(),
                report: Value::Null,
            },
            err => Failure::from_library(err),
        })?;
        if report.is_some() {
            self.inner.write_archive().map_err(|err| {
                Failure::options(format!("archive: cannot write the archive: {err}"))
            })?;
        }
        Ok(report.as_ref().map(to_value))
    }

    /// The conversation as it would be sent now, as the CLI writes it.
    pub(crate) fn render(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        format::write(self.inner.conversation(), &mut bytes).expect("a Vec takes every write");
        bytes
    }

    /// The session's library state.
    pub(crate) fn inner(&self) -> &ctxcompact::Session {
        &self.inner
    }

    /// Records the input size the provider reported for the conversation as it is now.
    pub(crate) fn observe_usage(&mut self, input_tokens: usize) {
        self.inner.observe_usage(input_tokens);
    }
}

/// How a compaction's output is handed back, decided from its input before the run.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Whether the conversation's messages are the input's (not a session log's records): then
    /// each output message names the input index it is unchanged from.
    aligned: bool,
    /// Whether the input's lists are its messages one for one: then the output is handed back
    /// in pieces.
    pieces: bool,
}

impl Shape {
    /// The shape of the output of `conversation`, read with `settings`.
    fn of(conversation: &Conversation, settings: &Settings) -> Self {
        Self {
            aligned: conversation.lines.is_empty(),
            pieces: settings
                .lists
                .as_ref()
                .is_some_and(|lists| lists.aligned(conversation)),
        }
    }
}

/// A compaction's output (in pieces when its `shape` says so) and, when aligned, the input
/// index each output message is unchanged from.
fn output(compacted: ctxcompact::Compacted, shape: Shape) -> (Output, Vec<Option<usize>>) {
    let unchanged = if shape.aligned {
        compacted.unchanged
    } else {
        Vec::new()
    };
    let mut conversation = compacted.conversation;
    if !shape.pieces {
        let mut bytes = Vec::new();
        format::write(&conversation, &mut bytes).expect("a Vec takes every write");
        return (Output::Bytes(bytes), unchanged);
    }
    let messages = std::mem::take(&mut conversation.messages);
    let list_key = conversation
        .envelope
        .is_some()
        .then(|| conversation.format.list_key());
    let shell = format::render(&conversation);
    let format = conversation.format;
    let changed = messages
        .into_iter()
        .zip(&unchanged)
        .filter(|(_, source)| source.is_none())
        .map(|(message, _)| render_message(format, message))
        .collect();
    let output = Output::Pieces {
        shell,
        list_key,
        changed,
    };
    (output, unchanged)
}

/// One message as its format writes it.
fn render_message(format: Format, message: ctxcompact::Message) -> Value {
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

/// Reads the input as the CLI reads a file, and the options, anchored on the usage a session
/// log recorded last (`unbudgeted` for a call that removes nothing for a budget).
fn read(
    input: &[u8],
    settings: &Settings,
    unbudgeted: bool,
) -> Result<(Conversation, Options), Failure> {
    let read = ReadOptions {
        format: forced_format(settings)?,
        whole_history: false,
        strict: settings.strict,
        repair: settings.repair,
    };
    let (conversation, mut usages) =
        format::parse_with_usage(input, &read).map_err(Failure::from_library)?;
    let mut run = if unbudgeted {
        settings.run.without_budget()
    } else {
        settings.run.clone()
    };
    run.anchor = usages.pop();
    // The library's one resolution, with the window given for every model (and, when no budget
    // is given, the window's budget), for the model the body names unless the settings name one.
    let options = run
        .options_for_body(&conversation, settings.window)
        .map_err(Failure::from_library)?;
    Ok((conversation, options))
}

/// Reads the input alone, for what needs no options.
fn parse(input: &[u8], settings: &Settings) -> Result<Conversation, Failure> {
    let read = ReadOptions {
        format: forced_format(settings)?,
        whole_history: false,
        strict: settings.strict,
        repair: settings.repair,
    };
    format::parse_with_usage(input, &read)
        .map(|(conversation, _)| conversation)
        .map_err(Failure::from_library)
}

fn forced_format(settings: &Settings) -> Result<Option<Format>, Failure> {
    match settings.format.as_deref() {
        None | Some("auto") => Ok(None),
        Some(name) => name.parse::<Format>().map(Some).map_err(Failure::options),
    }
}

fn to_value(report: &Report) -> Value {
    serde_json::to_value(report).expect("a report holds only numbers, strings and enums")
}
