//! The Rust side of the Node package `ctxcompact`: a Node-API addon.
//!
//! Each function takes the conversation as the text a file would hold (the JavaScript layer
//! sends data as its `JSON.stringify` text) and the settings as JSON text, and returns a
//! [`CallResult`]: the output as the CLI writes it (for data, only what changed, beside the
//! indices of the input messages that did not) and the report, or the failure sorted by kind.
//! Failures are returned, not thrown, so that the JavaScript layer (`index.js`) builds its own
//! `Error`s with their codes. Every call into the library goes through `ctxcompact::binding`,
//! the core the Python package shares: this crate holds only JavaScript's conversions (a
//! `CallResult`, and JavaScript's names for the keys of the objects it returns).

use ctxcompact::binding::{
    self, CallFailure, CallSettings, Compaction, Input, Output, SplitOutput,
};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use serde_json::Value;

/// What a call gives: a result, or a failure (`errorKind` set).
#[napi(object)]
#[derive(Default)]
pub struct CallResult {
    /// The output conversation, as the CLI writes it (compact, trim-tools, a session's state);
    /// for data read one message for one element, the output without its messages; a recall's
    /// messages, one JSON message a line.
    pub output: Option<String>,
    /// With the output without its messages: the key of their list (absent: the top level).
    pub list_key: Option<String>,
    /// With the output without its messages: the JSON text of the list of new or changed
    /// messages, in order; the others are the input messages `unchanged` names.
    pub changed: Option<String>,
    /// The result as JSON text: the report, the counts, the problems or a request's record.
    pub value: Option<String>,
    /// Per output message, the index of the input message it is unchanged from (-1: changed
    /// or new); empty when the input's list is not read one message for one element.
    pub unchanged: Option<Vec<i64>>,
    /// `input`, `cannot_fit`, `options` or `recall`, when the call failed.
    pub error_kind: Option<String>,
    /// What went wrong.
    pub error_message: Option<String>,
    /// The message index, when the problem is inside one message.
    pub message_index: Option<u32>,
    /// The field path, when one field is at fault.
    pub field: Option<String>,
    /// The request body to forward, when it differs from the one received.
    pub body: Option<Buffer>,
    /// A compaction's: what each handle its notes name stands for, when no folder holds it
    /// (JSON text of an object of handle to content, one JSON message a line).
    pub recallable: Option<String>,
}

impl From<CallFailure> for CallResult {
    fn from(failure: CallFailure) -> Self {
        let parts = failure.into_parts();
        Self {
            error_kind: Some(parts.kind.into()),
            error_message: Some(parts.message),
            message_index: parts.message_index.and_then(|i| u32::try_from(i).ok()),
            field: parts.field,
            value: parts.report.map(|report| report.to_string()),
            ..Self::default()
        }
    }
}

impl From<Result<Compaction, CallFailure>> for CallResult {
    fn from(result: Result<Compaction, CallFailure>) -> Self {
        match result {
            Ok(compaction) => {
                let (output, list_key, changed) = match compaction.output {
                    Output::Bytes(bytes) => (text(bytes), None, None),
                    Output::Split(SplitOutput {
                        shell,
                        list_key,
                        changed,
                    }) => (
                        shell.to_string(),
                        Some(list_key.unwrap_or_default().to_string()),
                        Some(Value::Array(changed).to_string()),
                    ),
                };
                Self {
                    output: Some(output),
                    list_key,
                    changed,
                    value: Some(compaction.report.to_string()),
                    recallable: Some(compaction.recallable.to_string()),
                    unchanged: Some(
                        compaction
                            .unchanged
                            .into_iter()
                            .map(|index| index.and_then(|i| i64::try_from(i).ok()).unwrap_or(-1))
                            .collect(),
                    ),
                    ..Self::default()
                }
            }
            Err(failure) => failure.into(),
        }
    }
}

impl From<Result<Value, CallFailure>> for CallResult {
    fn from(result: Result<Value, CallFailure>) -> Self {
        match result {
            Ok(value) => Self {
                value: Some(value.to_string()),
                ..Self::default()
            },
            Err(failure) => failure.into(),
        }
    }
}

/// The library writes JSON, which is UTF-8.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("the library writes UTF-8 JSON")
}

/// JavaScript's names for the keys of an object the core names in snake case
/// (`message_index` → `messageIndex`), or of each object of a list; what they hold keeps its
/// names.
fn camel_keys(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .map(|(key, value)| (camel(&key), value))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(camel_keys).collect()),
        other => other,
    }
}

/// `snake_case` as `camelCase`.
fn camel(key: &str) -> String {
    let mut words = key.split('_');
    let mut name = words.next().unwrap_or_default().to_string();
    for word in words {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    name
}

/// Runs `work` on the input with the settings parsed.
fn with_settings<T>(
    settings: &str,
    work: impl FnOnce(&CallSettings) -> Result<T, CallFailure>,
) -> Result<T, CallFailure> {
    work(&binding::settings(settings)?)
}

/// Compacts a conversation to its budget, as `ctxcompact compact` does.
#[napi]
pub fn compact(input: String, settings: String) -> CallResult {
    with_settings(&settings, |s| {
        binding::compact(Input::Text(input.as_bytes()), s)
    })
    .into()
}

/// Trims old tool rounds alone, as `ctxcompact trim-tools` does.
#[napi]
pub fn trim_tools(input: String, settings: String) -> CallResult {
    with_settings(&settings, |s| {
        binding::trim_tools(Input::Text(input.as_bytes()), s)
    })
    .into()
}

/// What `compact` would do: the report of `ctxcompact analyze --json`.
#[napi]
pub fn analyze(input: String, settings: String) -> CallResult {
    with_settings(&settings, |s| {
        binding::analyze(Input::Text(input.as_bytes()), s)
    })
    .into()
}

/// Each message's tokens and the total, as `ctxcompact count --json` prints them.
#[napi]
pub fn count(input: String, settings: String) -> CallResult {
    with_settings(&settings, |s| {
        binding::count(Input::Text(input.as_bytes()), s)
    })
    .into()
}

/// Every problem a provider refuses the conversation for as a request: `{ messageIndex,
/// field, kind, callId, text }` objects.
#[napi]
pub fn validate(input: String, settings: String) -> CallResult {
    with_settings(&settings, |s| {
        binding::validate(Input::Text(input.as_bytes()), s)
    })
    .map(camel_keys)
    .into()
}

/// The pipeline's runs on this thread so far (for the tests: a call runs it once).
#[napi]
pub fn pipeline_runs() -> i64 {
    i64::try_from(binding::pipeline_runs()).unwrap_or(i64::MAX)
}

/// A request compactor kept across calls (`ctxcompact::binding::RequestCompactor`): the
/// catalog read once, each history resumed from its cache.
#[napi]
pub struct NativeRequestCompactor {
    inner: Option<binding::RequestCompactor>,
}

#[napi]
impl NativeRequestCompactor {
    /// A compactor without settings, to be started by [`NativeRequestCompactor::start`].
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self { inner: None }
    }

    /// Starts the compactor with `settings` (JSON text), caching at most `conversations`
    /// replayed histories (0: each call is its own).
    #[napi]
    pub fn start(&mut self, settings: String, conversations: i64) -> CallResult {
        let conversations = usize::try_from(conversations).unwrap_or(0);
        let started = binding::request_settings(&settings)
            .and_then(|settings| binding::RequestCompactor::new(&settings, conversations));
        match started {
            Ok(compactor) => {
                self.inner = Some(compactor);
                CallResult::default()
            }
            Err(failure) => failure.into(),
        }
    }

    /// What to forward for a provider request body, as `ctxcompact proxy` decides it: `body`
    /// when it differs from the received bytes, and the request's record as `value`.
    #[napi]
    pub fn compact(&self, body: Buffer) -> CallResult {
        match self.compactor() {
            Ok(compactor) => {
                let (forwarded, record) = compactor.compact(&body);
                CallResult {
                    body: forwarded.map(Buffer::from),
                    value: Some(camel_keys(record).to_string()),
                    ..CallResult::default()
                }
            }
            Err(failure) => failure.into(),
        }
    }

    /// What `handle` names in the history of a provider request body, given back from it as
    /// the compactions of it removed it: `output`, one JSON message a line.
    #[napi]
    pub fn recall(&self, body: Buffer, handle: String) -> CallResult {
        match self.compactor().and_then(|c| c.recall(&body, &handle)) {
            Ok(lines) => CallResult {
                output: Some(lines),
                ..CallResult::default()
            },
            Err(failure) => failure.into(),
        }
    }

    fn compactor(&self) -> Result<&binding::RequestCompactor, CallFailure> {
        self.inner
            .as_ref()
            .ok_or_else(|| CallFailure::options("the request compactor was not started"))
    }
}

/// A conversation kept across an agent's calls (`ctxcompact::Session`).
#[napi]
pub struct NativeSession {
    inner: Option<binding::WireSession>,
}

#[napi]
impl NativeSession {
    /// An empty session, to be started by [`NativeSession::start`].
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self { inner: None }
    }

    /// Starts the session from `input` (a body or a list of messages, possibly empty).
    #[napi]
    pub fn start(&mut self, input: String, settings: String) -> CallResult {
        let started = with_settings(&settings, |s| {
            binding::WireSession::new(Input::Text(input.as_bytes()), s)
        });
        match started {
            Ok(session) => {
                self.inner = Some(session);
                CallResult::default()
            }
            Err(failure) => failure.into(),
        }
    }

    /// Appends a JSON list of messages in the session's format.
    #[napi]
    pub fn push(&mut self, list: String) -> CallResult {
        match self.session_mut().and_then(|s| s.push(list.as_bytes())) {
            Ok(()) => CallResult::default(),
            Err(failure) => failure.into(),
        }
    }

    /// Compacts past the trigger: the report as `value`, absent when nothing changed.
    #[napi]
    pub fn compact_if_needed(&mut self) -> CallResult {
        match self
            .session_mut()
            .and_then(binding::WireSession::compact_if_needed)
        {
            Ok(report) => CallResult {
                value: report.map(|report| report.to_string()),
                ..CallResult::default()
            },
            Err(failure) => failure.into(),
        }
    }

    /// The conversation as it would be sent now, as the CLI writes it.
    #[napi]
    pub fn render(&self) -> String {
        self.inner
            .as_ref()
            .map_or_else(String::new, |session| text(session.render()))
    }

    /// `[tokens, trigger, compactions, messages]` of the session now.
    #[napi]
    pub fn figures(&self) -> Vec<i64> {
        let Some(session) = &self.inner else {
            return Vec::new();
        };
        session
            .figures()
            .into_iter()
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX))
            .collect()
    }

    /// Records the input size the provider reported for the conversation as it is now.
    #[napi]
    pub fn observe_usage(&mut self, input_tokens: i64) {
        if let (Some(session), Ok(tokens)) = (&mut self.inner, usize::try_from(input_tokens)) {
            session.observe_usage(tokens);
        }
    }

    fn session_mut(&mut self) -> Result<&mut binding::WireSession, CallFailure> {
        self.inner
            .as_mut()
            .ok_or_else(|| CallFailure::options("the session was not started"))
    }
}
