//! The library's one error type.
//!
//! Every failure names where it happened: the message index and the field for bad input, the
//! budget and the pinned minimum when a conversation cannot fit. The CLI prefixes the file name.

use std::fmt;

use crate::account::Report;
use crate::conversation::Format;

/// Where in the input a problem sits: a message index (into the wire `messages` array) and a
/// field path inside it, or a top-level field when `message` is `None`; for a session log, the
/// JSONL line (or session-file entry line) too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// For a session log, the 1-based line of the record the problem comes from.
    pub line: Option<usize>,
    /// Index into the input's `messages` array, or `None` for a top-level field.
    pub message: Option<usize>,
    /// The field path, e.g. `tool_calls[0].function.arguments`.
    pub field: String,
}

impl Location {
    /// A field of message `index`.
    pub fn message(index: usize, field: impl Into<String>) -> Self {
        Self {
            line: None,
            message: Some(index),
            field: field.into(),
        }
    }

    /// A top-level field of the request body.
    pub fn top(field: impl Into<String>) -> Self {
        Self {
            line: None,
            message: None,
            field: field.into(),
        }
    }

    /// A field of the record on `line` of a session log.
    pub fn line(line: usize, field: impl Into<String>) -> Self {
        Self {
            line: Some(line),
            message: None,
            field: field.into(),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.message) {
            (Some(line), Some(index)) => write!(f, "line {line} (message {index}): {}", self.field),
            (Some(line), None) => write!(f, "line {line}: {}", self.field),
            (None, Some(index)) => write!(f, "message {index}: {}", self.field),
            (None, None) => write!(f, "{}", self.field),
        }
    }
}

/// One breach of the pairing rules, found by [`validate`](crate::validate()).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where it is.
    pub at: Location,
    /// What is wrong.
    pub kind: ProblemKind,
}

/// The kinds of pairing breach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// The conversation opens with a tool result.
    ToolFirst,
    /// The format requires the first message to be a user message, and it is not.
    FirstNotUser,
    /// A call that no result answers where the format requires.
    Unanswered {
        /// The call id.
        call_id: String,
    },
    /// A result whose id no earlier call made.
    Orphan {
        /// The call id it claims to answer.
        call_id: String,
    },
    /// A result for a call made earlier, but not where the format requires it.
    Misplaced {
        /// The call id.
        call_id: String,
        /// The message that made the call.
        call_message: usize,
    },
    /// A second result for the same call.
    AnsweredTwice {
        /// The call id.
        call_id: String,
        /// The message holding the first result.
        first: usize,
    },
    /// A call id already used by an earlier call.
    DuplicateCallId {
        /// The call id.
        call_id: String,
        /// The message that used it first.
        first: usize,
    },
    /// A call no result answers yet, at the very end: a session read while the call runs, which
    /// ctxcompact reads as state but a provider refuses as a request
    /// ([`Conversation::request_problems`](crate::Conversation::request_problems)).
    InProgress {
        /// The call id.
        call_id: String,
    },
}

impl ProblemKind {
    /// The kind's name, as the Python package and JSON output spell it (`orphan`,
    /// `answered_twice`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::ToolFirst => "tool_first",
            Self::FirstNotUser => "first_not_user",
            Self::Unanswered { .. } => "unanswered",
            Self::Orphan { .. } => "orphan",
            Self::Misplaced { .. } => "misplaced",
            Self::AnsweredTwice { .. } => "answered_twice",
            Self::DuplicateCallId { .. } => "duplicate_call_id",
            Self::InProgress { .. } => "call_in_progress",
        }
    }

    /// The call id the breach is about, if it is about one.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Self::ToolFirst | Self::FirstNotUser => None,
            Self::Unanswered { call_id }
            | Self::Orphan { call_id }
            | Self::Misplaced { call_id, .. }
            | Self::AnsweredTwice { call_id, .. }
            | Self::DuplicateCallId { call_id, .. }
            | Self::InProgress { call_id } => Some(call_id),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        match &self.kind {
            ProblemKind::ToolFirst => write!(f, "the conversation opens with a tool result"),
            ProblemKind::FirstNotUser => {
                write!(f, "the first message must be a user message in this format")
            }
            ProblemKind::Unanswered { call_id } => {
                write!(
                    f,
                    "tool call `{call_id}` is never answered where the format requires"
                )
            }
            ProblemKind::Orphan { call_id } => {
                write!(f, "tool result refers to unknown call id `{call_id}`")
            }
            ProblemKind::Misplaced {
                call_id,
                call_message,
            } => write!(
                f,
                "tool result for call `{call_id}` is not placed right after its call in message {call_message}"
            ),
            ProblemKind::AnsweredTwice { call_id, first } => {
                write!(
                    f,
                    "tool call `{call_id}` is answered again (first answered in message {first})"
                )
            }
            ProblemKind::DuplicateCallId { call_id, first } => {
                write!(f, "call id `{call_id}` is already used by message {first}")
            }
            ProblemKind::InProgress { call_id } => write!(
                f,
                "tool call `{call_id}` is still in progress: no result follows it, and a provider refuses a request that ends so"
            ),
        }
    }
}

/// Everything that can go wrong in the library.
///
/// Input errors name where they are ([`Location`]); budget errors name the [`Budget`] field
/// and its value; an engine fault ([`Error::Engine`]) is a bug in ctxcompact, never the
/// input's fault.
///
/// [`Budget`]: crate::Budget
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not JSON at all; `source` says what the parser found, and where.
    #[error("malformed JSON")]
    Json {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The input could not be read.
    #[error("cannot read the input")]
    Read {
        /// The reader's error.
        #[source]
        source: std::io::Error,
    },
    /// The input is JSON but a field has the wrong shape or value.
    #[error("{at}: {problem}")]
    Malformed {
        /// Where the bad field is.
        at: Location,
        /// What is wrong with it.
        problem: String,
    },
    /// Format detection could not tell which format the input is in.
    #[error("cannot tell the format: {reason}; name the format explicitly")]
    UnknownFormat {
        /// Why detection was unsure.
        reason: String,
    },
    /// `--format` named one format but the input is clearly in another.
    #[error(
        "the input is not {forced}: {reason} shows it is {found}; name {found} as its format, or let the format be detected"
    )]
    WrongFormat {
        /// The format asked for.
        forced: Format,
        /// The format the input shows.
        found: Format,
        /// The evidence.
        reason: String,
    },
    /// `--format` named a session-log format but no record of the input shows it.
    #[error("the input is not {forced}: {missing}; name its format, or let the format be detected")]
    NotTheFormat {
        /// The format asked for.
        forced: Format,
        /// What the input lacks of it.
        missing: String,
    },
    /// The output, written, would not read back in its format the way the input was read.
    #[error("the output would not read back as {format}: {reason}")]
    Unreadable {
        /// The output's format.
        format: Format,
        /// How it would be read instead.
        reason: String,
    },
    /// The conversation breaks tool-call pairing or placement; the first problem is shown.
    #[error("{first}{}", more_suffix(*.count))]
    Invalid {
        /// The first problem found.
        first: Problem,
        /// How many problems there are in total.
        count: usize,
    },
    /// Even the pinned units exceed the budget.
    #[error(
        "cannot fit: the pinned minimum (system messages, the task, the current request and the last unit) is {pinned} tokens, above the budget of {budget}{}",
        unlogged_suffix(*.unlogged, *.budget)
    )]
    BudgetTooSmall {
        /// Tokens of the pinned units, marker and reply priming.
        pinned: usize,
        /// The budget asked for.
        budget: usize,
        /// Of the pinned tokens, those the provider's reported usage counts that the log does
        /// not hold (an agent's system prompt and tool definitions); 0 when not anchored.
        unlogged: usize,
        /// The report of the run that could not fit (`cannot_fit`: what `analyze` gives for
        /// the same input and options), carried so that no caller runs the pipeline again to
        /// explain the failure.
        report: Box<Report>,
    },
    /// A budget has a value that cannot be used.
    #[error("budget {field} = {value}: {problem}")]
    BadBudget {
        /// The budget's field: `tokens`, `ratio`, `trigger`, `target` or `context_window`.
        field: &'static str,
        /// The value given, as text.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Settings that cannot be used as given ([`crate::Settings`]): two that exclude each other,
    /// no budget at all, or one that needs another.
    #[error("{problem}")]
    BadSetting {
        /// What is wrong, naming the settings.
        problem: String,
    },
    /// The model name is not in the catalog.
    #[error("unknown model `{name}`; nearest: {}", .nearest.join(", "))]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The closest catalog names.
        nearest: Vec<String>,
    },
    /// A model of the catalog that no family of the price list covers.
    #[error(
        "model `{model}` is in the catalog but has no price: no family of the price list ({}) covers it",
        .families.join(", ")
    )]
    Unpriced {
        /// The model's catalog name.
        model: String,
        /// The price list's families.
        families: Vec<String>,
    },
    /// A model catalog cannot be read or is malformed.
    #[error("{}model catalog: {problem}", in_file(file.as_deref()))]
    Catalog {
        /// The file it was read from, when it was.
        file: Option<std::path::PathBuf>,
        /// What is wrong with it.
        problem: String,
        /// The JSON error behind it, when the catalog is not valid JSON of the right shape.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// A calibration (the output of `ctxcompact calibrate --json`) cannot be read or is
    /// malformed.
    #[error("{}calibration: {problem}", in_file(file.as_deref()))]
    Calibration {
        /// The file it was read from, when it was.
        file: Option<std::path::PathBuf>,
        /// What is wrong with it.
        problem: String,
        /// The JSON error behind it, when it is not valid JSON of the right shape.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// The proxy could not start: its ledger, its runtime or its listening socket.
    #[cfg(feature = "proxy")]
    #[error("{what}")]
    Proxy {
        /// What could not be done, and with what (the ledger's path, the address).
        what: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bug in ctxcompact: the engine produced something its own checks reject. The input is
    /// not at fault.
    #[error(
        "internal error, a bug in ctxcompact: {what}; please report it with the input that caused it"
    )]
    Engine {
        /// What the check found.
        what: String,
    },
}

/// What a "cannot fit" error says of the part of the count that is not in the log.
fn unlogged_suffix(unlogged: usize, budget: usize) -> String {
    match unlogged {
        0 => String::new(),
        n if n > budget => format!(
            "; {n} of them are not in the log (the system prompt and tool definitions the reported usage counts), alone above the budget"
        ),
        n => format!(
            "; {n} of them are not in the log (the system prompt and tool definitions the reported usage counts)"
        ),
    }
}

/// The file an error is in, as the start of its message (empty when it is in no file).
fn in_file(file: Option<&std::path::Path>) -> String {
    file.map(|file| format!("{}: ", file.display()))
        .unwrap_or_default()
}

fn more_suffix(count: usize) -> String {
    match count {
        0 | 1 => String::new(),
        2 => " (and 1 more problem)".into(),
        _ => format!(" (and {} more problems)", count - 1),
    }
}

/// A settings file (a model catalog, a calibration) parsed by `parse`; `unreadable` makes the
/// error of a file that cannot be read. Every error names the file.
pub(crate) fn read_settings_file<T>(
    path: &std::path::Path,
    unreadable: impl FnOnce(String) -> Error,
    parse: impl FnOnce(&str) -> Result<T>,
) -> Result<T> {
    std::fs::read_to_string(path)
        .map_err(|err| unreadable(format!("cannot read: {err}")))
        .and_then(|text| parse(&text))
        .map_err(|err| err.in_file(path))
}

impl Error {
    /// This error as found in `path`, when it is a catalog's or a calibration's.
    pub(crate) fn in_file(mut self, path: &std::path::Path) -> Self {
        if let Self::Catalog { file, .. } | Self::Calibration { file, .. } = &mut self {
            *file = Some(path.to_path_buf());
        }
        self
    }

    /// The [`Error::Invalid`] of a conversation with `problems` ([`crate::validate()`]'s, in
    /// order); `Ok` when there are none.
    pub(crate) fn unless_valid(problems: &[Problem]) -> Result<()> {
        match problems.first() {
            None => Ok(()),
            Some(first) => Err(Self::Invalid {
                first: first.clone(),
                count: problems.len(),
            }),
        }
    }

    /// Builds a [`Error::Malformed`] for a field of a message.
    pub(crate) fn field(
        index: usize,
        field: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        Self::Malformed {
            at: Location::message(index, field),
            problem: problem.into(),
        }
    }

    /// Builds a [`Error::Malformed`] for a field of the record on `line` of a session log.
    pub(crate) fn line(line: usize, field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Malformed {
            at: Location::line(line, field),
            problem: problem.into(),
        }
    }

    /// Builds a [`Error::Malformed`] for a top-level field.
    pub(crate) fn top(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Malformed {
            at: Location::top(field),
            problem: problem.into(),
        }
    }

    /// The error for input with nothing but whitespace.
    pub(crate) fn empty() -> Self {
        Self::top(
            "top level",
            "the input is empty: expected a JSON object or array",
        )
    }

    /// Converts a `serde_json` error: a read failure becomes [`Error::Read`], anything else
    /// [`Error::Json`] with its line and column.
    pub(crate) fn from_json(err: serde_json::Error) -> Self {
        if err.is_io() {
            return Self::Read {
                source: std::io::Error::from(err),
            };
        }
        Self::Json {
            line: err.line(),
            column: err.column(),
            source: err,
        }
    }

    /// Settings that cannot be used as given.
    pub(crate) fn bad_setting(problem: impl Into<String>) -> Self {
        Self::BadSetting {
            problem: problem.into(),
        }
    }

    /// A bad budget value.
    pub(crate) fn bad_budget(
        field: &'static str,
        value: impl fmt::Display,
        problem: impl Into<String>,
    ) -> Self {
        Self::BadBudget {
            field,
            value: value.to_string(),
            problem: problem.into(),
        }
    }

    /// Whether this error means the budget cannot be met (CLI exit code 3).
    pub fn is_cannot_fit(&self) -> bool {
        matches!(self, Self::BudgetTooSmall { .. })
    }

    /// Whether this error is a bug in ctxcompact rather than a problem with the input.
    pub fn is_engine_fault(&self) -> bool {
        matches!(self, Self::Engine { .. })
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
