//! The account a run gives of itself: every type a [`Report`](crate::Report) field holds that
//! the run computes — the action, the steps, the features, the selector's verdicts, the
//! protections given up, the trimming figures, the messages classified, the log's repairs —
//! defined here and nowhere else, because their JSON is the contract other tools read (the
//! CLI's `--report`, the proxy's ledger, Python and Node).
//!
//! The modules that compute these values import them from here, so the JSON's shape changes
//! only in this file; `tests/snapshots/report.json` holds a full report's JSON so that a change
//! to it fails a test. The types the report shares with the options (the format, tokenizer,
//! profile and marker mode) keep their own modules. This module depends on nothing in the
//! crate: it sits in the lowest layer.

use serde::{Deserialize, Serialize};

/// A message-removal strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Keep the head (system, task) and the tail; remove from the middle.
    Middle,
    /// Keep system units and the tail; remove from the start.
    Oldest,
    /// Keep the units that share the most with the current request, whole; remove the rest.
    Relevant,
}

impl Strategy {
    /// The strategy's name as the CLI and the report spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Middle => "middle",
            Self::Oldest => "oldest",
            Self::Relevant => "relevant",
        }
    }
}

/// A protection a plan gave up to fit the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protection {
    /// Middle removal's kept head.
    Head,
    /// The protected tail of `preserve_end` units.
    Tail,
}

/// What the pipeline did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// The conversation already fits: output equals input.
    WithinBudget,
    /// Tool results were trimmed and/or units removed to fit the budget.
    Compacted,
    /// Even the pinned units exceed the budget: nothing is written.
    CannotFit,
}

/// One step of the degradation order a run took, in the order taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Old tool rounds' outputs were cleared (or dropped, or capped).
    ClearOldOutputs,
    /// Old tool-call inputs were cleared to their path-like arguments, oldest first, because
    /// that keeps more messages than removing their units whole (fixed budgets).
    ClearOldInputs,
    /// Whole units were removed by the chosen strategy.
    RemoveUnits,
    /// Outputs cleared or capped before units were removed were given back in the room the
    /// removal left, newest first, whole or the last capped to fill it (fixed budgets).
    RestoreOutputs,
    /// Tool rounds whose outputs the budget left no gists were removed into a digest, which
    /// names the files and names of their outputs that bare placeholders lose, in the room
    /// their calls and placeholders took (fixed budgets; the budget is used as fully).
    FoldBareRounds,
    /// Outputs inside the protected recent rounds were cleared, oldest first, until the budget
    /// was met, the one that met it capped to fit (never the round in progress).
    ClearRecentOutputs,
    /// Middle removal's kept head was given up.
    RelaxHead,
    /// The protected tail was given up, unit by unit.
    RelaxTail,
    /// The outputs of the round in progress were cut to fit, head and tail kept (or cleared
    /// when no cut was small enough): only the system prompt, the tool definitions, the task
    /// and the current request are never cut.
    CutCurrentOutputs,
    /// The task was shortened, its head and tail kept.
    ShortenTask,
    /// Even the pinned units exceed the budget.
    CannotFit,
}

/// One marker left where a span was removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkerNote {
    /// Messages of the span it replaces, as they were when removed.
    pub removed: usize,
    /// The marker's own tokens, counted as a message.
    pub tokens: usize,
}

/// How the task was shortened to fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shortened {
    /// The input index of the task message.
    pub message: Option<usize>,
    /// Characters of its text before.
    pub chars_before: usize,
    /// Characters of its text after, the note of the cut included.
    pub chars_after: usize,
}

/// How hard the budget squeezes: by the target ratio (budget ÷ current tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Target ratio above 0.8.
    Light,
    /// Target ratio above 0.6, up to 0.8.
    Moderate,
    /// Target ratio 0.6 or less.
    Heavy,
}

/// The measured features of a conversation against a budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Features {
    /// Number of messages.
    pub messages: usize,
    /// Total tokens (the conversation total, with system prompt and reply priming).
    pub tokens: usize,
    /// Mean tokens per message.
    pub average_tokens: f64,
    /// Budget ÷ tokens.
    pub target_ratio: f64,
    /// The severity class of the target ratio.
    pub severity: Severity,
    /// Tokens in the last quarter of the messages ÷ message tokens.
    pub recent_ratio: f64,
    /// Tokens in the last `RECENT_MESSAGES` messages ÷ message tokens.
    pub last_messages_ratio: f64,
    /// Whether some message exceeds `LONG_MESSAGE_TOKENS`.
    pub has_long_messages: bool,
    /// Whether there are tool calls or results.
    pub has_tool_messages: bool,
    /// Whether there are system messages (or an Anthropic system prompt).
    pub has_system_messages: bool,
    /// Tokens of tool rounds' messages ÷ message tokens.
    pub tool_token_share: f64,
    /// How much the current request refers back: the share of the history's relevance to it
    /// that its best-scoring messages hold (`relevance`). Measured where there are no tool
    /// messages (0 elsewhere, and then not written).
    #[serde(skip_serializing_if = "is_nil")]
    pub refers_back: f64,
    /// Exact inputs of the ratios, for integer comparisons: `[budget, tokens]`.
    #[serde(skip)]
    pub budget_over_tokens: [usize; 2],
    /// `[tokens of the last RECENT_MESSAGES messages, message tokens]`.
    #[serde(skip)]
    pub last_over_tokens: [usize; 2],
}

/// Which layer made the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// `--strategy` forced it.
    Forced,
    /// The model profile's preference.
    Profile,
    /// A conversation rule.
    Rule,
    /// Both strategies were run and scored.
    Scored,
    /// Both strategies were run and priced (`--optimize cost`).
    Cost,
}

/// One strategy's figures, as the report shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The strategy.
    pub strategy: Strategy,
    /// Tokens after removal.
    pub tokens_after: usize,
    /// Input messages kept.
    pub messages_after: usize,
    /// `0.6 × token_reduction + 0.4 × message_preservation`.
    pub efficiency: f64,
    /// Whether it fits the budget.
    pub fits: bool,
    /// Expected input cost in dollars over the next calls (`--optimize cost` only).
    pub estimated_cost: Option<f64>,
}

/// Whether a rule matched, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleCheck {
    /// The rule's number.
    pub number: u8,
    /// What it checks.
    pub description: &'static str,
    /// Whether it matched.
    pub matched: bool,
    /// What it would pick.
    pub strategy: Strategy,
    /// How sure it is.
    pub confidence: f64,
}

/// The selector's decision, with everything that led to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The layer that decided.
    pub layer: Layer,
    /// The strategy chosen.
    pub strategy: Strategy,
    /// The number of the rule that decided, if one did.
    pub rule: Option<u8>,
    /// The deciding rule's confidence, if one decided.
    pub confidence: Option<f64>,
    /// The figures of every strategy that was run.
    pub candidates: Vec<Candidate>,
    /// Under relevant removal, the units kept for what they share with the current request:
    /// each one's first input message and the shared terms, weightiest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept_for: Vec<KeptFor>,
}

/// A unit relevant removal kept for the terms it shares with the current request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeptFor {
    /// The input index of its first message (`None` for one the run wrote).
    pub message: Option<usize>,
    /// The shared terms, weightiest first (at most a few).
    pub terms: Vec<String>,
}

/// Whether a figure is zero: such a feature is not written.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_nil(x: &f64) -> bool {
    *x == 0.0
}

/// One output of the round in progress cut to fit the budget (by `cut_in_progress`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutOutput {
    /// The input index of the message holding it.
    pub message: Option<usize>,
    /// The id of the call it answers.
    pub call_id: String,
    /// Tokens of its text before the cut.
    pub tokens_before: usize,
    /// Tokens of its text after: head and tail with the note of the cut, or the placeholder.
    pub tokens_after: usize,
}

/// How deep an agent loop's compaction went when its depth follows the conversation's traffic
/// (`Options::traffic_depth`): the rate the conversation grows at, the target that rate gave,
/// and the room left for the calls after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoopDepth {
    /// Tokens a model call added, at the rate of the recent calls.
    pub growth_per_call: usize,
    /// The recent calls that rate was measured over.
    pub calls_measured: usize,
    /// The target chosen, in tokens: what the conversation takes less its older calls,
    /// between a fifth of the window and the budget's target, a call below the trigger at
    /// least.
    pub target: usize,
    /// The calls that fit between the output and the trigger at that rate: the calls until the
    /// next compaction (absent until the compaction is done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_calls: Option<usize>,
    /// Whether the window is too small for a compaction to keep the recent calls and leave
    /// room for as many again: the trigger holds less than the conversation less its older
    /// calls plus that many calls' growth. Compactions then come every few calls.
    pub window_short: bool,
}

impl LoopDepth {
    /// With the room between `tokens_after`, the compacted size, and `trigger`, in calls.
    #[must_use]
    pub fn with_room(self, tokens_after: usize, trigger: usize) -> Self {
        let room = trigger.saturating_sub(tokens_after);
        Self {
            room_calls: Some(room / self.growth_per_call.max(1)),
            ..self
        }
    }
}

/// The depth a session chose for one compaction, with its trigger: what the run reads to
/// report the depth and the room the output leaves ([`LoopDepth::with_room`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunDepth {
    pub(crate) depth: LoopDepth,
    pub(crate) trigger: usize,
}

/// What tool trimming did, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolTrim {
    /// Tool rounds in the conversation.
    pub rounds: usize,
    /// Rounds kept whole as the latest `keep`.
    pub kept: usize,
    /// Older rounds whose results were cleared.
    pub cleared: usize,
    /// Older rounds dropped.
    pub dropped: usize,
    /// Older rounds left whole or in part because they call an excluded tool.
    pub excluded: usize,
    /// Results capped by `max_output`.
    pub truncated: usize,
    /// Calls whose inputs were cleared to their path-like arguments.
    #[serde(skip_serializing_if = "is_zero")]
    pub inputs_cleared: usize,
    /// Results cleared or capped for the budget and given back, whole or capped, once the
    /// removal of units left room for them (fixed budgets).
    #[serde(skip_serializing_if = "is_zero")]
    pub outputs_restored: usize,
    /// Tokens freed by all of it.
    pub tokens_freed: usize,
    /// The message before which the budget left the cleared outputs no gists (0: none): those
    /// rounds are removed into a digest where it names more of them ([`crate::planner`]).
    #[serde(skip)]
    pub(crate) bare_before: usize,
}

impl ToolTrim {
    /// Adds what a later step trimmed — outputs cleared, dropped or capped, inputs cleared,
    /// outputs given back, tokens freed — to these figures; the census of the rounds (`rounds`,
    /// `kept`, `excluded`, `bare_before`) stays the first trimming's.
    pub(crate) fn add(&mut self, more: &Self) {
        self.cleared += more.cleared;
        self.dropped += more.dropped;
        self.truncated += more.truncated;
        self.inputs_cleared += more.inputs_cleared;
        self.outputs_restored += more.outputs_restored;
        self.tokens_freed += more.tokens_freed;
    }
}

/// Whether a count is 0 (to leave it out of the JSON).
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes fields by reference
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A user message classified as harness text (machine text in a user turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HarnessMessage {
    /// Its input index.
    pub message: usize,
    /// The agent whose harness writes it.
    pub agent: &'static str,
    /// The pattern of `data/harness.json` that matched, or the log's metadata field that
    /// marked it (see `source`).
    pub pattern: &'static str,
    /// What marked it: `metadata` (the log says so) or `pattern` (its text matched).
    pub source: &'static str,
}

/// A user message holding an instruction file: pinned like the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionFile {
    /// Its input index.
    pub message: usize,
    /// The agent whose wrapper it is in.
    pub agent: &'static str,
    /// The file it carries (`AGENTS.md`, `CLAUDE.md`, `GEMINI.md`).
    pub file: &'static str,
    /// The wrapper of `data/instructions.json` that matched (a tag name or a prefix).
    pub pattern: &'static str,
    /// The paths the message names its files by, when it names them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// A change a session-log reader made so that the log reads as the agent would have sent it,
/// or a call it left as it is because it is still in progress (`kind` `call_in_progress`).
///
/// Kinds: `interrupted_call` (a call whose result was never logged gets the agent's own
/// interruption result), `duplicate_result` (a result logged again, identical, read once),
/// `differing_duplicate_result` (a second, different result of a call: the first is kept, this
/// one dropped), `result_without_call` (a leading result whose call is in an earlier file of the
/// session, dropped), `null_arguments` (a call's `null` arguments read as `{}`) and
/// `call_in_progress` (a call unanswered at the very end of the log: it stays, pinned in the
/// last unit; reading it with `strict` is no error) and `missing_first_request` (a log that
/// opens with the model's message, its prompt not logged: read as it is, and, in a format whose
/// first message must be a user message, given the one the agent sends in its place).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repair {
    /// The log line of the record repaired (for an added result, the line of its call).
    pub line: usize,
    /// What was repaired (see above).
    pub kind: &'static str,
    /// The tool call it concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl Repair {
    /// The kind of a call left in progress: named, but no repair of the log.
    pub const IN_PROGRESS: &'static str = "call_in_progress";
    /// The kind of a log that opens with the model's message, its first request missing.
    pub const MISSING_FIRST_REQUEST: &'static str = "missing_first_request";

    /// Whether this changed what was read (every kind but the call in progress).
    pub fn changed(&self) -> bool {
        self.kind != Self::IN_PROGRESS
    }
}
