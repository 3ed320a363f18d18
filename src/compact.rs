//! The pipeline: count → check → budget → measure → trim tools → group → select → apply →
//! check, each stage a call into its module: [`CountedInput::checked`] (pairing, requests, harness
//! text, instruction files), [`crate::Budget`], [`Selector::new`] (the input's features, and the
//! selector's layers that read only them), [`degrade::fit`] (tool outputs trimmed, then units
//! grouped, a strategy selected and planned with its markers, in the degrade order),
//! [`strategy::apply`], then [`Finishing::finish_pinned`]'s checks and the report of the finished run.
//!
//! Guards: a conversation already within budget comes back unchanged; the output never has more
//! tokens than the input; the output is validated before it is returned; when even the pinned
//! units exceed the budget, nothing is returned but [`Error::BudgetTooSmall`].

use crate::account::{Action, RunDepth};
use crate::archive::{self, Archive};
use crate::conversation::Conversation;
use crate::degrade::{self, RunRecord};
use crate::error::{Error, Result};
use crate::format::Format;
use crate::options::Options;
use crate::parallel;
use crate::planner::Planner;
use crate::report::{Outcome, Report, RunEnd};
use crate::select::Selector;
use crate::state::{Applied, CountedInput, Discarded, PARALLEL_CHECK_MESSAGES, Source};
use crate::strategy;
use crate::strategy::tools;
use crate::tokens;
use crate::validate;

/// A compacted conversation and the account of how.
#[derive(Debug, Clone)]
pub struct Compacted {
    /// The output conversation (the input, unchanged, when within budget).
    pub conversation: Conversation,
    /// What was done and why.
    pub report: Report,
    /// For each output message, the index of the input message it is, exactly as read; `None`
    /// for a marker or a message that was changed. A caller holding the input's own data can
    /// reuse it for these messages instead of rendering them again.
    pub unchanged: Vec<Option<usize>>,
    /// With [`Options::archive`]: the files to archive the removed history in, as path and
    /// content (one JSON message a line), which [`Compacted::write_archive`] writes. Replacing
    /// each marker or placeholder's message with the lines of the file it names gives back
    /// the input, message for message.
    pub archive: Vec<(String, String)>,
    /// What compaction took out of the input: held only to be freed with this result.
    _discarded: Discarded,
}

impl Compacted {
    /// Writes the [`Compacted::archive`] files: each new one whole through a temporary file
    /// beside it, and one already there with the same content left as it is. Returns the files
    /// it created.
    ///
    /// # Errors
    /// A file already there with other content (never overwritten), or a failure to create
    /// a folder or write a file; no file this call created is then left behind.
    pub fn write_archive(&self) -> std::io::Result<Vec<std::path::PathBuf>> {
        archive::write(&self.archive)
    }

    /// Checks that the output, once written, reads back as its input was read: by detection
    /// when `forced` is `None`, else as the format the input was read as
    /// ([`Conversation::check_reads_back`]). An unchanged output always does. Every caller that
    /// writes an output checks it here: the CLI, the Python and Node packages, and a request
    /// compactor before it forwards a body.
    ///
    /// # Errors
    /// [`Error::Unreadable`] saying why the output would be read otherwise.
    pub fn check_reads_back(&self, forced: Option<Format>) -> Result<()> {
        if self.report.action == Action::WithinBudget {
            return Ok(());
        }
        self.conversation.check_reads_back(forced)
    }
}

/// Compacts a conversation to its budget. The conversation is taken by value: the pipeline
/// edits it in place rather than copy it.
///
/// # Errors
/// [`Error::Invalid`] when the input breaks tool pairing, [`Error::BadBudget`] for an unusable
/// budget, [`Error::BudgetTooSmall`] when even the pinned units exceed it.
pub fn compact(conversation: Conversation, options: &Options) -> Result<Compacted> {
    run(conversation, None, options, None)?.compacted()
}

/// Reports what [`compact`] would do, including `cannot_fit`, without producing output. The
/// conversation is taken by value, as [`compact`] takes it: the run edits it in place.
///
/// # Errors
/// As [`compact`], except that a budget too small is reported, not an error.
pub fn analyze(conversation: Conversation, options: &Options) -> Result<Report> {
    run(conversation, None, options, None).map(|run| match run {
        Run::Done(compacted) => compacted.report,
        Run::CannotFit(report) => *report,
    })
}

/// Trims tool rounds alone, with no budget (for use on every turn).
///
/// # Errors
/// [`Error::Invalid`] when the input breaks tool pairing.
pub fn trim_tools(conversation: Conversation, options: &Options) -> Result<Compacted> {
    trim_tools_counted(conversation, None, options, None)
}

/// [`trim_tools`] for a conversation whose counts are already known, and a session's depth,
/// as [`run`].
pub(crate) fn trim_tools_counted(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
    depth: Option<RunDepth>,
) -> Result<Compacted> {
    let (finishing, start) = Finishing::start(conversation, counts, options, depth)?;
    let budget = finishing.input.tokens;
    let features = start.measure(budget, &options.thresholds);
    let selector = Selector::new(&options.profile, None, &features, &options.selector);
    let (trimmed, tool_trim) = tools::trim(
        start,
        &options.tools,
        tools::Stop::ALL,
        options.tokenizer,
        finishing.archive.as_ref(),
    );
    let record = if tool_trim.trimmed_outputs() {
        let steps = degrade::trimming_steps(&tool_trim, options.tools.keep);
        RunRecord::trimmed(tool_trim, steps)
    } else {
        RunRecord::within_budget(tool_trim)
    };
    finishing.finish(trimmed, record.outcome(budget, &selector))
}

/// How a run of the pipeline ended.
pub(crate) enum Run {
    /// Within budget, or compacted to it.
    Done(Box<Compacted>),
    /// Even the pinned units exceed the budget: the report of what was tried.
    CannotFit(Box<Report>),
}

impl Run {
    /// The compacted conversation, or [`Error::BudgetTooSmall`] carrying the report of what
    /// was tried.
    pub(crate) fn compacted(self) -> Result<Compacted> {
        match self {
            Run::Done(compacted) => Ok(*compacted),
            Run::CannotFit(report) => Err(Error::BudgetTooSmall {
                pinned: report.pinned_tokens,
                budget: report.budget,
                unlogged: report.unlogged_tokens.unwrap_or(0),
                report,
            }),
        }
    }
}

#[cfg(feature = "binding")]
thread_local! {
    /// The runs of the pipeline on this thread: the Python and Node packages' tests read it
    /// to show that one call runs it once.
    pub(crate) static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The shared run of [`compact`], [`analyze`] and a [`crate::Session`]'s compactions (whose
/// counts, and with a depth following the traffic that depth, are already known): the
/// output, or the report when it cannot fit. Each stage is a
/// call into its module; over the budget, [`degrade::fit`] trims and plans in the degrade
/// order, and its plan is applied here.
pub(crate) fn run(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
    depth: Option<RunDepth>,
) -> Result<Run> {
    #[cfg(feature = "binding")]
    RUNS.with(|runs| runs.set(runs.get() + 1));
    // Count, check.
    let (finishing, start) = Finishing::start(conversation, counts, options, depth)?;
    let input = &finishing.input;
    // Budget.
    let resolved = options
        .budget
        .resolve(input.tokens, options.profile.context_window)?;
    let budget = resolved.tokens;
    // Measure: the input's features, once, and the selector's layers that read only them.
    let features = start.measure(budget, &options.thresholds);
    let selector = Selector::new(
        &options.profile,
        options.strategy,
        &features,
        &options.selector,
    );
    let done = |compacted| Ok(Run::Done(Box::new(compacted)));
    // Nothing can be removed from an empty conversation: it is within any budget.
    if !resolved.compact || input.messages == 0 {
        let rounds = tools::count_rounds(&start.conversation, &options.tools);
        let outcome = RunRecord::within_budget(rounds).outcome(budget, &selector);
        return done(finishing.finish(start, outcome)?);
    }
    // Trim tools, then group, select, plan with markers, in the degrade order.
    let planner = Planner::new(
        options,
        budget,
        finishing.archive.as_ref(),
        input,
        &selector,
    );
    let (state, record) = degrade::fit(&planner, start);
    if let Some(least) = record.cannot_fit() {
        let ending = RunEnd {
            pinned_tokens: least,
            archive: Vec::new(),
            depth,
        };
        let outcome = record.outcome(budget, &selector);
        let report = outcome.report(input, &state, options, ending);
        return Ok(Run::CannotFit(Box::new(report)));
    }
    // Apply, check.
    let Some(attempt) = record.plan() else {
        return done(finishing.finish(state, record.outcome(budget, &selector))?);
    };
    let pinned = state.pinned_inputs(&attempt.units);
    let (units, drop) = (&attempt.units, &attempt.plan.drop);
    let applied = strategy::apply(state, units, drop, &attempt.markers, &planner.counter);
    let outcome = record.outcome(budget, &selector);
    done(finishing.finish_pinned(applied, &pinned, outcome)?)
}

/// What a run reads at its first and last steps: the input, counted and checked, the options,
/// where removed history is archived (when [`Options::archive`] names a folder, or, with
/// [`Options::handles`], by handle alone), and a session's depth for it.
struct Finishing<'a> {
    input: CountedInput,
    archive: Option<Archive>,
    options: &'a Options,
    depth: Option<RunDepth>,
}

impl<'a> Finishing<'a> {
    /// Counts the input, then checks its pairing and classifies its messages
    /// ([`CountedInput::checked`]): what every run reads, and its first state.
    fn start(
        conversation: Conversation,
        counts: Option<tokens::Counts>,
        options: &'a Options,
        depth: Option<RunDepth>,
    ) -> Result<(Self, Applied)> {
        let (counts, unlogged) = match counts {
            Some(counts) => (counts, options.overhead),
            None => options.add_unlogged(options.tokenizer.count(&conversation)),
        };
        let anchored = options.anchored_unlogged(&conversation, &counts);
        let input = CountedInput::checked(&conversation, (&counts, unlogged), anchored)?;
        let archive = (options.archive.is_some() || options.handles)
            .then(|| Archive::new(options.archive.as_deref(), &conversation, input.task));
        let finishing = Finishing {
            input,
            archive,
            options,
            depth,
        };
        Ok((finishing, Applied::unchanged(conversation, counts)))
    }

    /// [`Finishing::finish_pinned`] for an output whose pinned messages are found by grouping
    /// it: one no plan was applied into.
    fn finish(&self, output: Applied, outcome: Outcome) -> Result<Compacted> {
        let pinned = output.pinned_inputs(&output.units(&self.input));
        self.finish_pinned(output, &pinned, outcome)
    }

    /// The last checks before output — valid pairing, never more tokens than the input nor, when
    /// compacted, than the budget — then the report of `outcome`; `pinned` are the input indices
    /// of the pinned messages the output holds ([`Applied::pinned_inputs`]).
    fn finish_pinned(
        &self,
        output: Applied,
        pinned: &[usize],
        outcome: Outcome,
    ) -> Result<Compacted> {
        let (input, options) = (&self.input, self.options);
        // The input was valid and the budget was planned for: a failure here is the engine's. The
        // report and the archive files are made meanwhile: they read the output alone.
        let apart = output.conversation.messages.len() >= PARALLEL_CHECK_MESSAGES;
        let (problems, (report, archive)) = parallel::beside(
            apart,
            || validate::check(&output.conversation),
            || {
                let archive: Vec<(String, String)> = (self.archive.as_ref())
                    .map(|archive| archive::files(archive, &outcome.archive, &output))
                    .unwrap_or_default();
                let ending = RunEnd {
                    pinned_tokens: output.pinned_tokens(pinned),
                    archive: archive.iter().map(|(path, _)| path.clone()).collect(),
                    depth: self.depth,
                };
                (outcome.report(input, &output, options, ending), archive)
            },
        );
        if let Some(first) = problems.first() {
            return Err(Error::Engine {
                what: format!(
                    "the output fails validation ({} problems; first, in output indices: {first})",
                    problems.len()
                ),
            });
        }
        let after = output.counts.total();
        if after > input.tokens {
            return Err(Error::Engine {
                what: format!(
                    "the output has {after} tokens, more than the input's {}",
                    input.tokens
                ),
            });
        }
        if report.action == Action::Compacted && after > report.budget {
            return Err(Error::Engine {
                what: format!(
                    "the output has {after} tokens, above the planned budget of {}",
                    report.budget
                ),
            });
        }
        let unchanged = output
            .origin
            .iter()
            .map(|source| match source {
                Source::Input(index) => Some(*index),
                Source::Edited(_) | Source::Marker => None,
            })
            .collect();
        Ok(Compacted {
            conversation: output.conversation,
            report,
            unchanged,
            archive,
            _discarded: output.discarded,
        })
    }
}
