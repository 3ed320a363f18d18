//! The record of one request: what was done with the body, why, and what was known
//! of its model and agent. The same groups of fields are what [`Compactor::compact`]
//! returns, what the proxy's ledger writes in its line (each group where the line puts it),
//! and what the Python and Node packages return, so a new fact is added in one place.
//!
//! [`Compactor::compact`]: super::Compactor::compact

use serde::Serialize;

use super::agent::Agent;
use crate::catalog::WindowSource;
use crate::report::{InstructionFile, LoopDepth, Report};

/// What was done with a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Handling {
    /// Read, and forwarded byte for byte (under the trigger).
    Forwarded,
    /// Read, and its history compacted before forwarding.
    Compacted,
    /// Not read (another path, a body over the caller's size cap): forwarded unchanged.
    #[default]
    Passthrough,
    /// Read but not usable (not JSON, invalid, no window known, cannot fit, a compaction that
    /// would not read back as the body was read): forwarded unchanged.
    FailedOpen,
}

impl Handling {
    /// Every handling, in the order above.
    pub const ALL: [Handling; 4] = [
        Self::Forwarded,
        Self::Compacted,
        Self::Passthrough,
        Self::FailedOpen,
    ];

    /// Its name as the ledger spells it (`failed_open`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forwarded => "forwarded",
            Self::Compacted => "compacted",
            Self::Passthrough => "passthrough",
            Self::FailedOpen => "failed_open",
        }
    }
}

impl Serialize for Handling {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Why a body failed open, as a kind a dashboard can count by (the reason's text says the
/// rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOpen {
    /// Not JSON, or not a JSON object.
    NotJson,
    /// JSON its format's reader cannot read: no message list, or a message it cannot parse.
    Unreadable,
    /// No model named, and no window given.
    NoModel,
    /// A model no catalog name or family naming rule reads, and no window given.
    UnknownModel,
    /// The settings give no options for the model.
    Options,
    /// Past the trigger, a body that breaks a pairing or placement rule.
    Invalid,
    /// The history cannot be compacted within the window.
    CannotFit,
    /// The compacted body would not read back as the body was read.
    ReadBack,
    /// The compaction panicked (a caller's guard: the proxy's).
    Panicked,
}

impl FailOpen {
    /// Every kind, in the order above.
    pub const ALL: [FailOpen; 9] = [
        Self::NotJson,
        Self::Unreadable,
        Self::NoModel,
        Self::UnknownModel,
        Self::Options,
        Self::Invalid,
        Self::CannotFit,
        Self::ReadBack,
        Self::Panicked,
    ];

    /// Its name as the ledger spells it (`cannot_fit`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotJson => "not_json",
            Self::Unreadable => "unreadable",
            Self::NoModel => "no_model",
            Self::UnknownModel => "unknown_model",
            Self::Options => "options",
            Self::Invalid => "invalid",
            Self::CannotFit => "cannot_fit",
            Self::ReadBack => "read_back",
            Self::Panicked => "panicked",
        }
    }
}

impl Serialize for FailOpen {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// What to forward for one request body, and why: the body, and the request's record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Forward {
    /// The body to send, or `None` to send the received bytes.
    pub body: Option<Vec<u8>>,
    /// The model the body (or the path) names.
    pub model: Option<String>,
    /// What was known of the model and agent.
    pub facts: Facts,
    /// What was done, why, and the tokens and compactions it took.
    pub verdict: Verdict,
    /// What the conversation's compactions left to account for.
    pub compaction: CompactionFacts,
    /// The model no catalog name or family naming rule reads, when that is why it failed open
    /// (a caller may name it once, with the remedy: a window for every model).
    pub unknown_model: Option<String>,
}

/// What was known of a request's model and agent once its model was read: the window used and
/// where it came from, the agent recognised and by what, the trigger and why. Serialized as
/// the ledger's line spells them, the agent absent when none was recognised.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Facts {
    /// The context window the budget was taken from, once the model is known.
    pub window: Option<usize>,
    /// Where that window came from: `flag` (the compactor's window), `catalog` or `family`.
    pub window_source: Option<WindowSource>,
    /// The agent recognised, by the caller (its headers: [`Agent::from_headers`]) or by its
    /// body's shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<Agent>,
    /// What told the agent: a header, a body field, or whatever the caller said it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_by: Option<&'static str>,
    /// The trigger, in tokens, once the history was replayed.
    pub trigger: Option<usize>,
    /// Why that trigger: the shares given, or the agent's own compaction point below them.
    pub trigger_reason: Option<String>,
    /// The model's price family (`data/prices.json`), for the cost of the usage reported.
    #[serde(skip)]
    pub price: Option<String>,
}

/// What was done with a request body and why, with its tokens and the compactions: serialized
/// as the ledger's line spells them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Verdict {
    /// The body's tokens as received (the messages and what lies outside them), as
    /// `ctxcompact count` counts them.
    pub tokens_received: Option<usize>,
    /// The tokens of what is forwarded.
    pub tokens_forwarded: Option<usize>,
    /// What was done.
    pub action: Handling,
    /// Why, when the body went through unchanged past the trigger or failed open.
    pub reason: Option<String>,
    /// When it failed open: the reason's kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_open: Option<FailOpen>,
    /// Compactions so far in the conversation (its replay's).
    pub compactions: Option<usize>,
    /// Compactions this body's replay ran: those before the point the cache resumed it from
    /// were run for earlier bodies.
    pub compactions_run: usize,
}

/// What a request's compactions left to account for: serialized as the ledger's line spells
/// them, each absent when there is nothing to say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompactionFacts {
    /// Why the archive files of this request's compactions could not be written (the request
    /// goes on without them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_error: Option<String>,
    /// When compacted: what the conversation's last compaction reported.
    #[serde(flatten)]
    pub last: Option<LastCompaction>,
}

/// What a conversation's compaction reports that a request's record carries: taken from its
/// [`Report`] here alone, kept with the replayed conversation and carried into
/// [`CompactionFacts`], so a new fact is added in one place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct LastCompaction {
    /// The project instruction files it pinned (`message` is the index in the history that
    /// compaction read).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instruction_files: Vec<InstructionFile>,
    /// The budget it compacted to: the target or, when the pinned part exceeds it, the
    /// fallback it used ([`crate::Session`]).
    pub budget: usize,
    /// How deep it went, from the conversation's traffic, and the room it left
    /// ([`crate::Report::depth`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<LoopDepth>,
}

impl LastCompaction {
    /// What `report`, a compaction's, says of it.
    pub(super) fn of(report: Report) -> Self {
        Self {
            instruction_files: report.instruction_files,
            budget: report.budget,
            depth: report.depth,
        }
    }
}

impl Forward {
    /// Nothing done yet: the received body, `handling`, no reason, nothing known.
    pub(super) fn new(handling: Handling, model: Option<String>) -> Self {
        Self {
            body: None,
            model,
            facts: Facts::default(),
            verdict: Verdict {
                action: handling,
                ..Verdict::default()
            },
            compaction: CompactionFacts::default(),
            unknown_model: None,
        }
    }

    /// The received body sent as it is, with `handling` and the reason.
    pub fn unchanged(handling: Handling, model: Option<String>, reason: String) -> Self {
        let mut forward = Self::new(handling, model);
        forward.verdict.reason = Some(reason);
        forward
    }

    /// With what was known of the model and agent.
    pub(super) fn with_facts(self, facts: Facts) -> Self {
        Self { facts, ..self }
    }

    /// The received body sent as it is, failed open for `why`, with the reason.
    pub fn failed_open(model: Option<String>, why: FailOpen, reason: String) -> Self {
        let mut forward = Self::unchanged(Handling::FailedOpen, model, reason);
        forward.verdict.fail_open = Some(why);
        forward
    }

    /// Fails open for `why`: the received body is sent.
    pub(super) fn fail(&mut self, why: FailOpen, reason: String) {
        self.verdict.action = Handling::FailedOpen;
        self.verdict.fail_open = Some(why);
        self.verdict.reason = Some(reason);
    }

    /// Failed open, with what was known of the model and agent.
    pub(super) fn failed_with(
        model: Option<String>,
        why: FailOpen,
        reason: String,
        facts: &Facts,
    ) -> Self {
        Self::failed_open(model, why, reason).with_facts(facts.clone())
    }
}
