//! The account a run gives of itself: the [`Report`] and every type its fields hold that the
//! run computes or names — the action, the steps, the features, the selector's verdicts, the
//! protections given up, the trimming figures, the messages classified, the marker mode, the
//! usage a log recorded — defined here and nowhere else, because their JSON is the contract
//! other tools read (the CLI's `--report`, the proxy's ledger, Python and Node).
//!
//! The modules that compute these values import them from here, so the JSON's shape changes
//! only in this file; `tests/snapshots/report.json` holds a full report's JSON so that a change
//! to it fails a test. The types the report shares with the conversation (its format, the
//! log's repairs) and with the model's profile (its tokenizer, where its window came from) are
//! theirs. This module sits in the lowest layer, below the error type, so that the error of a
//! run that cannot fit carries its report.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::conversation::{Format, Repair};
use crate::profile::{Profile, Tokenizer, WindowSource};

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
    /// Whether the old rounds' outputs were trimmed: some cleared, dropped or capped.
    pub(crate) fn trimmed_outputs(&self) -> bool {
        self.cleared + self.dropped + self.truncated > 0
    }

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

/// What a removed span leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MarkerMode {
    /// A one-line note and an extractive digest of the span.
    #[default]
    Digest,
    /// The one-line note alone.
    Brief,
    /// Nothing.
    None,
}

/// One model call's input size as the provider reported it, recorded in a session log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordedUsage {
    /// Index of the first message the call produced: the request held the messages before it.
    pub message: usize,
    /// The request's input tokens as reported, cached and uncached together.
    pub input_tokens: usize,
    /// The model that served the call, as recorded.
    pub model: String,
    /// The log line that recorded it.
    pub line: usize,
    /// Index of the first message the request held: 0, or, in a log read with
    /// [`ReadOptions::whole_history`](crate::format::ReadOptions::whole_history), the first
    /// message after the last compaction before the call (its summary), since the request held
    /// the history as it was then.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from: usize,
}

/// The full account of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// What was done.
    pub action: Action,
    /// The wire format read and written.
    pub format: Format,
    /// The model name asked for, if any.
    pub model: Option<String>,
    /// How that name matched its catalog profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_match: Option<String>,
    /// The context window the budget was taken from (0: none, no model named).
    #[serde(skip_serializing_if = "is_zero")]
    pub window: usize,
    /// Where that window came from: `flag`, `catalog` or `family` (a naming rule's guess).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_source: Option<WindowSource>,
    /// The tokenizer that counted.
    pub tokenizer: Tokenizer,
    /// What that tokenizer is and how far its counts are known to be from the provider's.
    pub estimator: String,
    /// Tokens added to every count for what the request carries and the input does not hold:
    /// `Options::overhead`, or what the anchor measured. Counting the output with this
    /// overhead gives `tokens_after`.
    #[serde(skip_serializing_if = "is_zero")]
    pub overhead: usize,
    /// The reported usage counts were anchored on (`Options::anchor`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<RecordedUsage>,
    /// The token budget.
    pub budget: usize,
    /// Tokens of the input.
    pub tokens_before: usize,
    /// Tokens of the output (of the input when nothing changed).
    pub tokens_after: usize,
    /// `tokens_after ÷ budget`: how much of the budget the output uses (0 for a zero budget).
    pub utilization: f64,
    /// Messages of the input.
    pub messages_before: usize,
    /// Messages of the output.
    pub messages_after: usize,
    /// The input message ranges `[start, end)` that were removed.
    pub removed: Vec<[usize; 2]>,
    /// Tokens of what can never be removed: pinned units, system prompt, reply priming.
    pub pinned_tokens: usize,
    /// Tokens of the smallest unit at either end of a removed span, as it stood when removed
    /// (absent when none was): where the output leaves room under the budget, what explains
    /// it — a unit stays or goes whole, and keeping this one (the cheapest that would not split
    /// a span into two markers) does not fit in that room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smallest_span_end: Option<usize>,
    /// The measured features.
    pub features: Features,
    /// The model profile the selector consulted.
    pub profile: Profile,
    /// Every selector rule's verdict over the measured features, whether or not removal was
    /// needed.
    pub rules: Vec<RuleCheck>,
    /// How the removal strategy was chosen; absent when no removal was needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Protections given up to fit the budget, in order.
    pub relaxed: Vec<Protection>,
    /// Whether a marker stands where history was removed (it is left out when asked, or when
    /// only its own tokens stood between the units and the budget).
    pub marker: bool,
    /// The kind of marker left (a lesser one than asked when the asked one cannot fit).
    pub marker_mode: MarkerMode,
    /// One entry per marker, in order: one marker per removed span.
    pub markers: Vec<MarkerNote>,
    /// The degradation steps taken, in order.
    pub steps: Vec<Step>,
    /// How the task was shortened, when it had to be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_shortened: Option<Shortened>,
    /// The outputs of the round in progress cut to fit, when they had to be.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outputs_cut: Vec<CutOutput>,
    /// The input index of the task (the first request), if any.
    pub task: Option<usize>,
    /// The input index of the current request (the last request), if any.
    pub current: Option<usize>,
    /// The user messages classified as harness text.
    pub harness: Vec<HarnessMessage>,
    /// The user messages holding an instruction file, pinned (harness text too, when nothing
    /// else is in them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instruction_files: Vec<InstructionFile>,
    /// What tool-round trimming did (or would do, in `analyze`).
    pub tool_trim: ToolTrim,
    /// What the session-log reader repaired (and the call it left in progress), in log order;
    /// for an API body read with `--repair`, what was repaired, `line` being the message index.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
    /// When counts are anchored on reported usage: the tokens it counts that the log does not
    /// hold (an agent's system prompt and tool definitions), which no compaction can remove.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unlogged_tokens: Option<usize>,
    /// With an archive folder: the files the removed history and the cleared outputs are
    /// archived in, which the markers and placeholders name (`Compacted::archive` holds their
    /// content).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub archive: Vec<String>,
    /// In an agent loop whose depth follows its traffic ([`crate::Session`]): how deep the
    /// compaction went and the room it left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<LoopDepth>,
}

impl Report {
    /// A one-line human summary, for standard error.
    pub fn summary(&self) -> String {
        let action = match self.action {
            Action::WithinBudget => "within budget",
            Action::Compacted => "compacted",
            Action::CannotFit => "cannot fit",
        };
        let mut line = format!(
            "{action}: {} → {} tokens (budget {}, {:.0}% used), {} → {} messages",
            self.tokens_before,
            self.tokens_after,
            self.budget,
            self.utilization * 100.0,
            self.messages_before,
            self.messages_after
        );
        if self.tool_trim.trimmed_outputs() {
            let t = &self.tool_trim;
            let _ = write!(
                line,
                "; tool trimming freed {} tokens ({} cleared, {} dropped, {} truncated)",
                t.tokens_freed, t.cleared, t.dropped, t.truncated
            );
        }
        if let Some(decision) = &self.decision {
            let why = match (decision.layer, decision.rule) {
                (_, Some(rule)) => format!("chosen by rule {rule}"),
                (Layer::Forced, None) => "forced".into(),
                (Layer::Profile, None) => "the model profile's preference".into(),
                (Layer::Scored, None) => "chosen by scoring both".into(),
                (Layer::Cost, None) => "chosen by pricing both".into(),
                (Layer::Rule, None) => "chosen by a rule".into(),
            };
            let _ = write!(line, "; {} removal ({why})", decision.strategy.as_str());
        }
        if !self.relaxed.is_empty() {
            let relaxed: Vec<&str> = self
                .relaxed
                .iter()
                .map(|p| match p {
                    Protection::Head => "head",
                    Protection::Tail => "tail",
                })
                .collect();
            let _ = write!(line, "; relaxed {}", relaxed.join(", "));
        }
        if !self.markers.is_empty() {
            let noun = if self.markers.len() == 1 {
                "marker"
            } else {
                "markers"
            };
            let _ = write!(line, "; {} {noun}", self.markers.len());
        }
        let repaired = self.repairs.iter().filter(|r| r.changed()).count();
        if repaired > 0 {
            let noun = if repaired == 1 { "repair" } else { "repairs" };
            let _ = write!(line, "; {repaired} {noun} on reading");
        }
        if let Some(unlogged) = self.unlogged_tokens {
            let _ = write!(line, "; {unlogged} tokens not in the log");
        }
        if !self.outputs_cut.is_empty() {
            let before: usize = self.outputs_cut.iter().map(|c| c.tokens_before).sum();
            let after: usize = self.outputs_cut.iter().map(|c| c.tokens_after).sum();
            let _ = write!(
                line,
                "; {} current outputs cut {before} → {after} tokens",
                self.outputs_cut.len()
            );
        }
        if let Some(short) = &self.task_shortened {
            let _ = write!(
                line,
                "; task shortened {} → {} characters",
                short.chars_before, short.chars_after
            );
        }
        line
    }
}
