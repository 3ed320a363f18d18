//! The pipeline: count → check → budget → trim tools → group → measure → select → apply → check.
//!
//! Guards: a conversation already within budget comes back unchanged; the output never has more
//! tokens than the input; the output is validated before it is returned; when even the pinned
//! units exceed the budget, nothing is returned but [`Error::BudgetTooSmall`].

use crate::archive::{self, Archive};
use crate::budget::Budget;
use crate::classify;
use crate::conversation::Conversation;
use crate::error::{Error, Result};
use crate::instructions;
use crate::options::Options;
use crate::parallel;
use crate::planner::{self, Planner};
use crate::report::{Action, Outcome, Report, Step};
use crate::select::{self, Selector};
use crate::state::{Applied, Discarded, HarnessMessage, Input, InstructionFile, Source};
use crate::strategy;
use crate::strategy::fit;
use crate::strategy::tools::{self, ToolMode, ToolOptions};
use crate::tokens;
use crate::validate;

/// Messages from which a conversation's pairing check runs on a thread of its own, beside the
/// classification of the input's requests or the making of the output's report (each takes
/// about 0.3 µs a message).
const PARALLEL_CHECK_MESSAGES: usize = 1_000;

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
}

/// Compacts a conversation to its budget. The conversation is taken by value: the pipeline
/// edits it in place rather than copy it.
///
/// # Errors
/// [`Error::Invalid`] when the input breaks tool pairing, [`Error::BadBudget`] for an unusable
/// budget, [`Error::BudgetTooSmall`] when even the pinned units exceed it.
pub fn compact(conversation: Conversation, options: &Options) -> Result<Compacted> {
    compact_counted(conversation, None, options)
}

/// [`compact`] for a conversation whose counts under `options.tokenizer` are already known (a
/// [`crate::Session`] keeps them), so that it is not tokenized again.
pub(crate) fn compact_counted(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<Compacted> {
    match run(conversation, counts, options)? {
        Run::Done(compacted) => Ok(*compacted),
        Run::CannotFit(report) => Err(Error::BudgetTooSmall {
            pinned: report.pinned_tokens,
            budget: report.budget,
            unlogged: report.unlogged_tokens.unwrap_or(0),
        }),
    }
}

/// Reports what [`compact`] would do, including `cannot_fit`, without producing output.
///
/// # Errors
/// As [`compact`], except that a budget too small is reported, not an error.
pub fn analyze(conversation: &Conversation, options: &Options) -> Result<Report> {
    run(conversation.clone(), None, options).map(|run| match run {
        Run::Done(compacted) => compacted.report,
        Run::CannotFit(report) => *report,
    })
}

/// Trims tool rounds alone, with no budget (for use on every turn).
///
/// # Errors
/// [`Error::Invalid`] when the input breaks tool pairing.
pub fn trim_tools(conversation: Conversation, options: &Options) -> Result<Compacted> {
    trim_tools_counted(conversation, None, options)
}

/// [`trim_tools`] for a conversation whose counts are already known, as [`compact_counted`].
pub(crate) fn trim_tools_counted(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<Compacted> {
    let (input, start) = checked_start(conversation, counts, options)?;
    let archive = archive_of(options, &start, &input);
    let budget = input.tokens;
    let features = start.measure(budget, &options.thresholds);
    let selector = Selector::new(&options.profile, None, &features, &options.policy);
    let (trimmed, tool_trim) = tools::trim(
        start,
        &options.tools,
        (None, false),
        options.tokenizer,
        archive.as_ref(),
    );
    let changed = tool_trim.cleared + tool_trim.dropped + tool_trim.truncated > 0;
    let action = if changed {
        Action::Compacted
    } else {
        Action::WithinBudget
    };
    let outcome = Outcome::new(action, budget, tool_trim, &selector);
    finish((&input, archive.as_ref()), trimmed, outcome, options)
}

/// Counts the input and checks its pairing: the starting point of every run. The check and
/// the classification of requests follow the count, beside each other, so that their walk
/// through the whole conversation does not compete with the tokenizer for memory.
fn checked_start(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<(Input, Applied)> {
    let (counts, overhead) = if let Some(counts) = counts {
        (counts, options.overhead)
    } else {
        let mut counts = options.tokenizer.count(&conversation);
        let overhead = options.outside(&counts);
        counts.system += overhead;
        (counts, overhead)
    };
    let apart = conversation.messages.len() >= PARALLEL_CHECK_MESSAGES;
    let (problems, (requests, (harness, instructions))) = parallel::beside(
        apart,
        || validate::check(&conversation),
        || {
            (
                classify::requests(&conversation),
                (
                    classify::harness(&conversation),
                    instruction_files(&conversation),
                ),
            )
        },
    );
    if let Some(first) = problems.first() {
        return Err(Error::Invalid {
            first: first.clone(),
            count: problems.len(),
        });
    }
    let input = Input {
        format: conversation.format,
        overhead,
        messages: conversation.messages.len(),
        tokens: counts.total(),
        counts: counts.messages.clone(),
        harness: harness
            .into_iter()
            .map(|(message, agent, pattern, source)| HarnessMessage {
                message,
                agent,
                pattern,
                source,
            })
            .collect(),
        task: requests.first().copied(),
        current: requests.last().copied(),
        requests,
        instructions,
        repairs: conversation.repairs.clone(),
        unlogged_tokens: options.unlogged(&conversation, &counts),
    };
    Ok((input, Applied::unchanged(conversation, counts)))
}

/// Where the run archives what it removes, when [`Options::archive`] names a folder.
fn archive_of(options: &Options, start: &Applied, input: &Input) -> Option<Archive> {
    let dir = options.archive.as_ref()?;
    Some(Archive::new(dir, &start.conversation, input.task))
}

/// The input's instruction files, as the report lists them.
fn instruction_files(conversation: &Conversation) -> Vec<InstructionFile> {
    instructions::instruction_files(conversation)
        .into_iter()
        .map(|(message, wrapper)| InstructionFile {
            message,
            agent: wrapper.agent.as_str(),
            file: wrapper.file.as_str(),
            pattern: wrapper.text.as_str(),
            paths: instructions::paths_named(&conversation.messages[message].text()),
        })
        .collect()
}

/// How a run of the pipeline ended.
enum Run {
    /// Within budget, or compacted to it.
    Done(Box<Compacted>),
    /// Even the pinned units exceed the budget: the report of what was tried.
    CannotFit(Box<Report>),
}

/// The shared run of [`compact`] and [`analyze`]: the output, or the report when it cannot fit.
///
/// Under a tight budget it degrades in a fixed order, naming each step in the report: clear old
/// rounds' outputs → clear outputs inside the protected recent rounds (not the round in
/// progress) → remove units by the chosen strategy → relax the head, then the tail → cut the
/// outputs of the round in progress (unless tool outputs are left alone) → shorten the task →
/// cannot fit.
/// Outputs go before units; the round whose clearing meets the budget is capped to just meet
/// it. A window budget keeps history first ([`Recent::new`] says why).
fn run(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<Run> {
    let (input, start) = checked_start(conversation, counts, options)?;
    let archive = archive_of(options, &start, &input);
    let resolved = options
        .budget
        .resolve(input.tokens, options.profile.context_window)?;
    let budget = resolved.tokens;
    // Nothing can be removed from an empty conversation: it is within any budget.
    let needed = resolved.compact && input.messages > 0;
    // The input's features, measured once: the rules and the scores read the input's figures.
    let features = start.measure(budget, &options.thresholds);
    let selector = Selector::new(
        &options.profile,
        options.strategy,
        &features,
        &options.policy,
    );
    if !needed {
        let rounds = tools::count_rounds(&start.conversation, &options.tools);
        let outcome = Outcome::new(Action::WithinBudget, budget, rounds, &selector);
        return finish((&input, archive.as_ref()), start, outcome, options)
            .map(|compacted| Run::Done(Box::new(compacted)));
    }
    let recent = Recent::new(budget, options, archive.as_ref());
    let (mut state, mut tool_trim, mut steps) = recent.trim_first(start, input.tokens);
    if state.counts.total() <= budget {
        let mut outcome = Outcome::new(Action::Compacted, budget, tool_trim, &selector);
        outcome.steps = steps;
        return finish((&input, archive.as_ref()), state, outcome, options)
            .map(|compacted| Run::Done(Box::new(compacted)));
    }
    let planner = Planner::new(options, budget, (&input, archive.as_ref()), &selector);
    let mut attempt = planner.attempt(&state, false);
    steps.push(Step::RemoveUnits);
    if !attempt.fits && !recent.fill && recent.clears() {
        let freed = tool_trim.tokens_freed;
        state = recent.clear(state, (&mut tool_trim, &mut steps));
        if tool_trim.tokens_freed > freed {
            attempt = planner.attempt(&state, false);
        }
    }
    if !attempt.fits {
        attempt = planner.attempt(&state, true);
    }
    if recent.fill && recent.clears() && (!attempt.fits || !attempt.plan.drop.is_empty()) {
        let done = (&mut tool_trim, &mut steps);
        (state, attempt) = recent.clear_inputs(state, attempt, &planner, done);
    }
    let outputs_cut;
    (state, attempt, outputs_cut) = cut_in_progress(state, attempt, &planner, recent.clears());
    let mut shortened = None;
    if !attempt.fits {
        if let Some((shorter, cut)) = planner.shorten_task(&state, &attempt) {
            let retry = planner.attempt(&shorter, true);
            if retry.fits {
                state = shorter;
                attempt = retry;
                shortened = Some(cut);
            }
        }
    }
    for protection in &attempt.plan.relaxed {
        steps.push(match protection {
            strategy::Protection::Head => Step::RelaxHead,
            strategy::Protection::Tail => Step::RelaxTail,
        });
    }
    if !outputs_cut.is_empty() {
        steps.push(Step::CutCurrentOutputs);
    }
    if shortened.is_some() {
        steps.push(Step::ShortenTask);
    }
    let mut outcome = Outcome::new(Action::Compacted, budget, tool_trim, &selector);
    outcome.decision = Some(attempt.decision);
    outcome.relaxed.clone_from(&attempt.plan.relaxed);
    outcome.steps = steps;
    outcome.shortened = shortened;
    outcome.outputs_cut = outputs_cut;
    if !attempt.fits {
        outcome.action = Action::CannotFit;
        outcome.steps.push(Step::CannotFit);
        outcome.pinned_tokens = Some(attempt.tokens_after);
        return Ok(Run::CannotFit(Box::new(
            outcome.report(&input, &state, options),
        )));
    }
    outcome.marker = !attempt.markers.is_empty();
    outcome.marker_mode = attempt.mode;
    (outcome.markers, outcome.archive) = (attempt.notes, attempt.archive);
    let applied = strategy::apply(
        state,
        &attempt.units,
        &attempt.plan.drop,
        &attempt.markers,
        &planner.counter,
    );
    finish((&input, archive.as_ref()), applied, outcome, options)
        .map(|compacted| Run::Done(Box::new(compacted)))
}

/// When `attempt`, which removed every unit it could, does not fit and outputs may be cleared
/// (`clears`): the state with the outputs of its round in progress cut by what `attempt` is
/// over the budget, and its plan; else both as they are (or when the last unit is no round).
fn cut_in_progress(
    state: Applied,
    attempt: planner::Attempt,
    planner: &Planner<'_>,
    clears: bool,
) -> (Applied, planner::Attempt, Vec<fit::CutOutput>) {
    let round = attempt.units.last().filter(|u| u.is_round);
    let Some(round) = round.filter(|_| clears && !attempt.fits) else {
        return (state, attempt, Vec::new());
    };
    let over = attempt.tokens_after.saturating_sub(planner.budget) + planner::MARKER_SLACK;
    let archive = planner.archive;
    let messages = round.messages.clone();
    let (state, cut) = fit::cut_in_progress(state, messages, over, &planner.counter, archive);
    if cut.is_empty() {
        return (state, attempt, cut);
    }
    let attempt = planner.attempt(&state, true);
    (state, attempt, cut)
}

/// How tool outputs are trimmed under a budget, and the recent rounds' cleared when they are.
struct Recent<'a> {
    budget: usize,
    /// Whether the recent rounds' outputs go before any unit.
    fill: bool,
    /// Whether the round that meets the budget is capped to just meet it.
    cap_crossing: bool,
    options: &'a Options,
    archive: Option<&'a Archive>,
}

impl<'a> Recent<'a> {
    /// A fixed budget is room the caller gives to fill: the recent rounds' outputs go before any
    /// unit, and the round whose clearing meets the budget is capped to just meet it. A window
    /// budget's target is where an agent loop compacts down to, and the room left under it is
    /// headroom until the next compaction: there history goes first, the recent outputs (the
    /// agent's working evidence) only when removal alone cannot fit, and outputs are cleared
    /// whole. Nor is an output capped with an archive: the archive gives back what it changes.
    fn new(budget: usize, options: &'a Options, archive: Option<&'a Archive>) -> Self {
        let fill = !matches!(options.budget, Budget::Window { .. });
        Self {
            budget,
            fill,
            cap_crossing: fill && archive.is_none(),
            options,
            archive,
        }
    }

    /// Whether tool outputs may be cleared at all.
    fn clears(&self) -> bool {
        self.options.tools.mode != ToolMode::Off
    }

    /// The trimming before any unit goes: the old rounds' outputs, then, with a fixed budget, the
    /// recent rounds'. `tokens` is the input's size (what cost-optimized trimming weighs).
    fn trim_first(&self, start: Applied, tokens: usize) -> (Applied, tools::ToolTrim, Vec<Step>) {
        let options = self.options;
        let tool_options = select::tool_options(&options.policy, &options.tools, tokens);
        let stop = (Some(self.budget), self.cap_crossing);
        let (mut state, mut tool_trim) =
            tools::trim(start, &tool_options, stop, options.tokenizer, self.archive);
        let mut steps = Vec::new();
        if tool_trim.cleared + tool_trim.dropped + tool_trim.truncated > 0 {
            steps.push(Step::ClearOldOutputs);
        }
        if self.fill && self.clears() && state.counts.total() > self.budget {
            state = self.clear(state, (&mut tool_trim, &mut steps));
        }
        (state, tool_trim, steps)
    }

    /// With a fixed budget and no archive, where `attempt` does not fit or fills less than 60%
    /// of the budget, the large tool-call inputs of the units `attempt` removes (of all but the last when it does not fit; [`fit::clear_large_inputs`]), oldest
    /// first, cleared to their path-like
    /// arguments until the conversation fits, when the plan over that state fits and keeps more
    /// messages than `attempt` (or as many, using more of the budget), or `attempt` does not
    /// fit: a file written whole in one call no longer takes its unit with it, nor leaves a
    /// pinned unit over the budget;
    /// else `state` and `attempt` as they are. What was cleared is added to the trimming figures
    /// and its step to the steps, before unit removal.
    fn clear_inputs(
        &self,
        mut state: Applied,
        attempt: planner::Attempt,
        planner: &Planner<'_>,
        (trim, steps): (&mut tools::ToolTrim, &mut Vec<Step>),
    ) -> (Applied, planner::Attempt) {
        // With an archive, nothing is changed that the archive would not give back.
        if self.options.tools.clear_inputs || self.archive.is_some() {
            return (state, attempt);
        }
        // Only where removal alone leaves the budget mostly empty (under 60% of it) or cannot
        // fit: a cleared input loses what it named, which the digest of a removed unit keeps.
        if attempt.fits && attempt.tokens_after * 10 >= self.budget * 6 {
            return (state, attempt);
        }
        let copy = Applied {
            conversation: state.conversation.clone(),
            counts: state.counts.clone(),
            origin: state.origin.clone(),
            discarded: Discarded::default(),
        };
        // Only the units the plan removes (the inputs of those it keeps stay whole), or, when it
        // cannot fit, every unit but the last.
        let units = &attempt.units;
        let candidates: Vec<usize> = if attempt.fits {
            let dropped = attempt.plan.drop.iter().map(|&u| units[u].messages.clone());
            dropped.flatten().collect()
        } else {
            (0..units.last().map_or(0, |u| u.messages.start)).collect()
        };
        let counter = &planner.counter;
        let (mut cleared, inputs, freed) =
            fit::clear_large_inputs(copy, candidates.into_iter(), self.budget, counter);
        if inputs == 0 {
            return (state, attempt);
        }
        let mut better = planner.attempt(&cleared, false);
        if !better.fits {
            better = planner.attempt(&cleared, true);
        }
        // More messages kept, or as many and more of the budget used.
        let (kept, was) = (better.plan.messages_kept, attempt.plan.messages_kept);
        let keeps_more = !attempt.fits
            || kept > was
            || (kept == was && better.tokens_after > attempt.tokens_after);
        if !better.fits || !keeps_more {
            return (state, attempt);
        }
        // Only inputs changed: what earlier steps discarded stays with the state.
        cleared.discarded = std::mem::take(&mut state.discarded);
        trim.inputs_cleared += inputs;
        trim.tokens_freed += freed;
        let at = steps.iter().position(|s| *s == Step::RemoveUnits);
        steps.insert(at.unwrap_or(steps.len()), Step::ClearOldInputs);
        (cleared, better)
    }

    /// Clears the recent rounds' outputs, oldest first, until the conversation fits the budget.
    /// The last round is spared only when it is the round in progress (the last unit). What was
    /// cleared is added to `done`'s trimming figures and steps.
    fn clear(&self, state: Applied, done: (&mut tools::ToolTrim, &mut Vec<Step>)) -> Applied {
        let recent = ToolOptions {
            mode: ToolMode::Clear,
            keep: usize::from(is_in_progress(&state)),
            ..self.options.tools.clone()
        };
        let stop = (Some(self.budget), self.cap_crossing);
        let tokenizer = self.options.tokenizer;
        let (cleared, more) = tools::trim(state, &recent, stop, tokenizer, self.archive);
        let (trim, steps) = done;
        if more.cleared + more.truncated > 0 {
            steps.push(Step::ClearRecentOutputs);
            trim.cleared += more.cleared;
            trim.truncated += more.truncated;
            trim.tokens_freed += more.tokens_freed;
        }
        cleared
    }
}

/// Whether the conversation ends in a tool round (the round in progress).
fn is_in_progress(state: &Applied) -> bool {
    let last = state.conversation.messages.last();
    last.is_some_and(|m| m.has_results() || m.has_calls())
}

/// The last checks before output — valid pairing, never more tokens than the input nor, when
/// compacted, than the budget — then the report.
fn finish(
    (input, archive): (&Input, Option<&Archive>),
    output: Applied,
    mut outcome: Outcome,
    options: &Options,
) -> Result<Compacted> {
    // The input was valid and the budget was planned for: a failure here is the engine's. The
    // report is made meanwhile: both read the output alone.
    let apart = output.conversation.messages.len() >= PARALLEL_CHECK_MESSAGES;
    let spans = std::mem::take(&mut outcome.archive);
    let (problems, mut report) = parallel::beside(
        apart,
        || validate::check(&output.conversation),
        || outcome.report(input, &output, options),
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
    let archive = archive
        .map(|archive| planner::archive_files(archive, &spans, &output))
        .unwrap_or_default();
    report.archive = archive.iter().map(|(path, _)| path.clone()).collect();
    Ok(Compacted {
        conversation: output.conversation,
        report,
        unchanged,
        archive,
        _discarded: output.discarded,
    })
}
