//! Every call into the `ctxcompact` library, and nothing about Python.
//!
//! The conversation comes in as the JSON value the CLI would read from a file (`data.rs` builds
//! it from Python data) and results go out as JSON values; the settings come as a JSON object of
//! the Python keyword arguments, which `ctxcompact::Settings` turns into library `Options` as it
//! does the CLI's flags, so a Python call and the CLI give the same output and report for the
//! same input and options; counts and problems are the library's own JSON shapes.

use ctxcompact::format::{self, Format};
use ctxcompact::request::{Agent, Compactor};
use ctxcompact::{Conversation, Error, Options, Problem};
use serde::Deserialize;
use serde_json::{Value, json};

/// A call's settings, as the Python layer sent them after type-checking its keyword arguments:
/// the input's format, and the library's settings by their names (`ctxcompact::Settings`, the
/// one conversion of settings into options, shared with the CLI and the proxy).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Settings {
    /// `format=`: `auto` or a format's CLI name (`Format::from_str`).
    format: Option<String>,
    /// Every other keyword argument.
    #[serde(default)]
    run: ctxcompact::Settings,
}

/// A request compaction's settings: the body's API format, the model its path names, the
/// window for every model, and the library's settings by their names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestSettings {
    /// `format=`: the API format's CLI name (`Format::from_str`).
    format: String,
    /// `path_model=`: the model the request's path names (Gemini).
    path_model: Option<String>,
    /// `window=`: the context window for every model, instead of the catalog's.
    window: Option<usize>,
    /// `client=`: the agent that sent the request, as the proxy tells it from the headers.
    client: Option<Agent>,
    /// Every other keyword argument.
    #[serde(default)]
    run: ctxcompact::Settings,
}

/// Why a call failed, sorted into the Python exception classes.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad input: `ctxcompact.InputError`.
    Input {
        /// The library's message.
        message: String,
        /// The message index, when the problem is inside one message.
        message_index: Option<usize>,
        /// The field path, when one field is at fault.
        field: Option<String>,
    },
    /// The budget cannot be met: `ctxcompact.CannotFit`, with the report as JSON.
    CannotFit {
        /// The library's message.
        message: String,
        /// The `cannot_fit` report, as JSON text.
        report: String,
    },
    /// Unusable options: `ctxcompact.OptionError`.
    Options {
        /// What is wrong, naming the Python keyword.
        message: String,
    },
    /// A handle that cannot be given back: `ctxcompact.RecallError`.
    Recall {
        /// Why, naming the handle.
        message: String,
    },
}

impl Failure {
    fn options(message: impl Into<String>) -> Self {
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

/// Parses the settings object the Python layer sent.
pub(crate) fn settings(json: &str) -> Result<Settings, Failure> {
    serde_json::from_str(json).map_err(|err| Failure::options(format!("bad options: {err}")))
}

/// Parses the settings object of a request compaction.
pub(crate) fn request_settings(json: &str) -> Result<RequestSettings, Failure> {
    serde_json::from_str(json).map_err(|err| Failure::options(format!("bad options: {err}")))
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
        "tokens_received": forward.verdict.tokens_received,
        "tokens_forwarded": forward.verdict.tokens_forwarded,
        "compactions": forward.verdict.compactions,
        "archive_error": forward.compaction.archive_error,
        "instruction_files": forward.compaction.instruction_files,
        "facts": forward.facts,
    });
    Ok((forward.body, decision))
}

/// What `handle` names in the history of a provider request body compacted with `settings`
/// (`Compactor::recall`): the removed messages, one JSON message a line; a handle it cannot
/// give back is a `Failure::Recall` naming it.
pub(crate) fn recall_request(
    body: &[u8],
    settings: &RequestSettings,
    handle: &str,
) -> Result<String, Failure> {
    let format: Format = settings.format.parse().map_err(Failure::options)?;
    let compactor =
        Compactor::new(&settings.run, settings.window, 0).map_err(Failure::from_library)?;
    compactor
        .recall(body, format, settings.path_model.as_deref(), handle)
        .map_err(|err| Failure::Recall {
            message: err.to_string(),
        })
}

/// What [`compact`] gives when it runs to the end.
pub(crate) enum Compaction {
    /// The output conversation and the report, as a JSON value.
    Done(Output, Value),
    /// The budget cannot be met: the library's message. The input was consumed: the caller
    /// reads it again for [`cannot_fit`], on this rare path only.
    CannotFit(String),
}

/// A call's output conversation, rendered but for the messages it kept as they were.
pub(crate) struct Output {
    /// The output without its messages: an empty list where they go.
    pub(crate) shell: Value,
    /// Where the messages go: `None` for the top-level list, else this key of the body.
    pub(crate) list_key: Option<&'static str>,
    /// The output's messages, in order.
    pub(crate) messages: Vec<Item>,
}

/// Reused messages from which the library's copies are freed on a thread of their own, which
/// the call does not wait for: freeing 7,000 messages takes 20–30 ms (about a sixth of the
/// call), and nothing else waits for that memory. Fewer are freed at once.
const BACKGROUND_FREE_MESSAGES: usize = 1_000;

/// One message of an [`Output`].
pub(crate) enum Item {
    /// Element `i` of the input's list of messages, unchanged: the input's own object is reused.
    Input(usize),
    /// A message that is new or was changed, rendered.
    Rendered(Value),
}

/// The lengths of the lists in an input value, taken before the library consumes it, to tell
/// whether message `i` of the parsed conversation is element `i` of the input's list.
struct Lists {
    /// The length of the top level, when it is a list.
    top: Option<usize>,
    /// The length of each list under a key of a top-level object.
    keys: Vec<(String, usize)>,
}

impl Lists {
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

/// Renders a compacted conversation as an [`Output`]: each message the library kept unchanged
/// is named by its input index when the input's list is aligned with the messages (so it is
/// neither rendered nor built again in Python), every other message is rendered.
fn output(compacted: ctxcompact::Compacted, aligned: bool) -> Output {
    let mut conversation = compacted.conversation;
    let messages = std::mem::take(&mut conversation.messages);
    let list_key = conversation
        .envelope
        .is_some()
        .then(|| conversation.format.list_key());
    let shell = format::render(&conversation);
    let format = conversation.format;
    let mut items = Vec::with_capacity(messages.len());
    let (mut reused, mut changed) = (Vec::new(), Vec::new());
    for (message, unchanged) in messages.into_iter().zip(compacted.unchanged) {
        match unchanged {
            Some(index) if aligned => {
                reused.push(message);
                items.push(Item::Input(index));
            }
            _ => {
                changed.push((items.len(), message));
                items.push(Item::Rendered(Value::Null));
            }
        }
    }
    if reused.len() >= BACKGROUND_FREE_MESSAGES {
        // A thread that cannot be started drops its closure: the copies are then freed here.
        let _ = std::thread::Builder::new().spawn(move || drop(reused));
    }
    for (at, message) in changed {
        items[at] = Item::Rendered(render_message(format, message));
    }
    Output {
        shell,
        list_key,
        messages: items,
    }
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

/// Compacts `input` to its budget.
pub(crate) fn compact(input: Value, settings: &Settings) -> Result<Compaction, Failure> {
    let lists = Lists::of(&input);
    let conversation = parse(input, settings)?;
    let options = options(settings, &conversation)?;
    let aligned = lists.aligned(&conversation);
    match ctxcompact::compact(conversation, &options) {
        Ok(compacted) => {
            // As the CLI: a changed output reads back as it was read, and the archive files
            // are written before the output that names them is returned.
            compacted
                .check_reads_back(forced_format(settings)?)
                .map_err(Failure::from_library)?;
            compacted.write_archive().map_err(|err| {
                Failure::options(format!("archive: cannot write the archive: {err}"))
            })?;
            let report = to_value(&compacted.report);
            Ok(Compaction::Done(output(compacted, aligned), report))
        }
        Err(err) if err.is_cannot_fit() => Ok(Compaction::CannotFit(err.to_string())),
        Err(err) => Err(Failure::from_library(err)),
    }
}

/// The failure of a [`compact`] that could not meet its budget (`message`), with the report of
/// what it tried.
pub(crate) fn cannot_fit(input: Value, settings: &Settings, message: String) -> Failure {
    let report = parse(input, settings).and_then(|conversation| {
        let options = options(settings, &conversation)?;
        ctxcompact::analyze(&conversation, &options).map_err(Failure::from_library)
    });
    match report {
        Ok(report) => Failure::CannotFit {
            message,
            report: to_value(&report).to_string(),
        },
        Err(failure) => failure,
    }
}

/// Trims old tool rounds alone: the output conversation and the report.
pub(crate) fn trim_tools(input: Value, settings: &Settings) -> Result<(Output, Value), Failure> {
    let lists = Lists::of(&input);
    let conversation = parse(input, settings)?;
    let options = unbudgeted(settings, &conversation)?;
    let aligned = lists.aligned(&conversation);
    let trimmed = ctxcompact::trim_tools(conversation, &options).map_err(Failure::from_library)?;
    trimmed
        .check_reads_back(forced_format(settings)?)
        .map_err(Failure::from_library)?;
    let report = to_value(&trimmed.report);
    Ok((output(trimmed, aligned), report))
}

/// What `compact` would do, as the report's JSON value; a budget too small is reported in it.
pub(crate) fn analyze(input: Value, settings: &Settings) -> Result<Value, Failure> {
    let conversation = parse(input, settings)?;
    let options = options(settings, &conversation)?;
    let report = ctxcompact::analyze(&conversation, &options).map_err(Failure::from_library)?;
    Ok(to_value(&report))
}

/// Each message's tokens and the total, as the CLI's `count --json` prints them.
pub(crate) fn count(input: Value, settings: &Settings) -> Result<Value, Failure> {
    let conversation = parse(input, settings)?;
    let options = unbudgeted(settings, &conversation)?;
    Ok(options.count_json(&conversation))
}

/// Every pairing and placement problem, as a JSON array of objects with the message index, the
/// field, the kind, the call id and the text.
pub(crate) fn validate(input: Value, settings: &Settings) -> Result<Value, Failure> {
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
        "message_index": problem.at.message,
        "field": problem.at.field,
        "kind": problem.kind.name(),
        "call_id": problem.kind.call_id(),
        "text": text,
    })
}

fn parse(input: Value, settings: &Settings) -> Result<Conversation, Failure> {
    format::parse_value(input, forced_format(settings)?).map_err(Failure::from_library)
}

/// The format `format=` forces, `None` for detection.
fn forced_format(settings: &Settings) -> Result<Option<Format>, Failure> {
    match settings.format.as_deref() {
        None | Some("auto") => Ok(None),
        Some(name) => name.parse::<Format>().map(Some).map_err(Failure::options),
    }
}

fn to_value(report: &ctxcompact::Report) -> Value {
    serde_json::to_value(report).expect("a report holds only numbers, strings and enums")
}

/// Full options, for `conversation` (the model its body names, unless `model=` names one).
fn options(settings: &Settings, conversation: &Conversation) -> Result<Options, Failure> {
    settings
        .run
        .options_for_body(conversation, None)
        .map_err(Failure::from_library)
}

/// Options for a call that uses no budget (tool trimming, counting), for `conversation`.
fn unbudgeted(settings: &Settings, conversation: &Conversation) -> Result<Options, Failure> {
    settings
        .run
        .without_budget()
        .options_for_body(conversation, None)
        .map_err(Failure::from_library)
}
