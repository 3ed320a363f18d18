//! The report: what was done, why, and how much. Its JSON is the contract other tools read.
//! It is built here from the finished run (an `Outcome`, the input and the last state) and
//! re-derives nothing: the rules' verdicts are the selector's, the pinned tokens the run's.
//!
//! Every type a [`Report`] field holds is named here, with the problems [`crate::validate()`]
//! lists. The report and the types a run computes are defined in one private module in the
//! lowest layer (so the JSON's shape lives in one file, and the error of a run that cannot fit
//! can carry its report); those it shares with the conversation and the model's profile are
//! theirs.

use crate::account::{MarkerMode, RunDepth};
use crate::archive::SpanFile;
use crate::options::Options;
use crate::state::{Applied, CountedInput};

pub use crate::account::{
    Action, Candidate, CutOutput, Decision, Features, HarnessMessage, InstructionFile, KeptFor,
    Layer, LoopDepth, MarkerNote, Protection, Report, RuleCheck, Severity, Shortened, Step,
    ToolTrim,
};
pub use crate::conversation::Repair;
pub use crate::error::{Location, ProblemKind};

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
