//! The report: what was done, why, and how much. Its JSON is the contract other tools read.
//! It is built from the finished run (an `Outcome`, the input and the last state) and
//! re-derives nothing: the rules' verdicts are the selector's, the pinned tokens the run's.
//!
//! Every type a [`Report`] field holds is named here, with the problems [`crate::validate()`]
//! lists. Those a run computes are defined in one private module below every module that
//! fills them (so the JSON's shape lives in one file); those the report shares with the options
//! (format, tokenizer, profile, marker mode) are the options' own.

use std::fmt::Write as _;

use serde::Serialize;

use crate::account::{RunDepth, is_zero};
use crate::archive::SpanFile;
use crate::catalog::Profile;
use crate::digest::MarkerMode;
use crate::format::Format;
use crate::options::Options;
use crate::state::{Applied, CountedInput};
use crate::tokens::Tokenizer;

pub use crate::account::{
    Action, Candidate, CutOutput, Decision, Features, HarnessMessage, InstructionFile, KeptFor,
    Layer, LoopDepth, MarkerNote, Protection, Repair, RuleCheck, Severity, Shortened, Step,
    ToolTrim,
};
pub use crate::error::{Location, ProblemKind};

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
    pub window_source: Option<crate::catalog::WindowSource>,
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
    pub anchor: Option<crate::format::RecordedUsage>,
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
        if self.tool_trim.cleared + self.tool_trim.dropped + self.tool_trim.truncated > 0 {
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

/// What a run decided, made once from the record its steps kept, before it becomes a [`Report`].
pub(crate) struct Outcome {
    pub(crate) action: Action,
    pub(crate) budget: usize,
    pub(crate) tool_trim: ToolTrim,
    pub(crate) features: Features,
    /// Every rule's verdict over the features, as the selector found them.
    pub(crate) rules: Vec<RuleCheck>,
    /// Tokens of the smallest unit at either end of a span the plan removed, when it removed
    /// any.
    pub(crate) smallest_span_end: Option<usize>,
    pub(crate) decision: Option<Decision>,
    pub(crate) relaxed: Vec<Protection>,
    pub(crate) marker: bool,
    pub(crate) marker_mode: MarkerMode,
    pub(crate) markers: Vec<MarkerNote>,
    pub(crate) steps: Vec<Step>,
    pub(crate) shortened: Option<Shortened>,
    pub(crate) outputs_cut: Vec<CutOutput>,
    /// The archive file of each removed span, when archived.
    pub(crate) archive: Vec<SpanFile>,
}

/// What only the end of a run knows, for its report.
pub(crate) struct RunEnd {
    /// Tokens of what can never be removed: the least the pinned units take when the plan
    /// could not fit; else the output's pinned messages, the system prompt and the reply
    /// priming.
    pub(crate) pinned_tokens: usize,
    /// The archive files (paths, or handles) the removed spans were written to.
    pub(crate) archive: Vec<String>,
    /// The depth the session chose for the run, when it follows the traffic: reported with
    /// the room the output leaves, once the run finished.
    pub(crate) depth: Option<RunDepth>,
}

impl Outcome {
    /// The report of this outcome for `output`, the pipeline's last state; its spans' archive
    /// files are `ending`'s, made from [`Outcome::archive`].
    pub(crate) fn report(
        self,
        input: &CountedInput,
        output: &Applied,
        options: &Options,
        ending: RunEnd,
    ) -> Report {
        let finished = self.action != Action::CannotFit;
        let tokens_after = if finished {
            output.counts.total()
        } else {
            input.tokens
        };
        Report {
            action: self.action,
            format: input.format,
            model: options.model.clone(),
            model_match: options.model_match.clone(),
            window: options.profile.context_window,
            window_source: options.window_source,
            tokenizer: options.tokenizer,
            estimator: options.tokenizer.describe(),
            overhead: input.unlogged,
            anchor: options.used_anchor().cloned(),
            budget: self.budget,
            tokens_before: input.tokens,
            tokens_after,
            utilization: if self.budget == 0 {
                0.0
            } else {
                tokens_after as f64 / self.budget as f64
            },
            messages_before: input.messages,
            messages_after: if finished {
                output.conversation.messages.len()
            } else {
                input.messages
            },
            removed: if finished {
                output.removed(input.messages)
            } else {
                Vec::new()
            },
            pinned_tokens: ending.pinned_tokens,
            smallest_span_end: self.smallest_span_end.filter(|_| finished),
            rules: self.rules,
            features: self.features,
            profile: options.profile.clone(),
            decision: self.decision,
            relaxed: self.relaxed,
            marker: self.marker,
            marker_mode: self.marker_mode,
            markers: self.markers,
            steps: self.steps,
            task_shortened: self.shortened,
            outputs_cut: self.outputs_cut,
            task: input.task,
            current: input.current,
            harness: input.harness.clone(),
            instruction_files: input.instructions.clone(),
            tool_trim: self.tool_trim,
            repairs: input.repairs.clone(),
            unlogged_tokens: input.anchored_unlogged,
            archive: ending.archive,
            depth: (ending.depth)
                .filter(|_| finished)
                .map(|at| at.depth.with_room(tokens_after, at.trigger)),
        }
    }
}
