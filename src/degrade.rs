//! The degrade order: what a run over its budget does, step by step, to come within it — the
//! fitting loop, read top to bottom in [`fit`], each step added to the run's [`RunRecord`].
//!
//! Clear old rounds' outputs → clear outputs inside the protected recent rounds (not the round
//! in progress) → remove units by the chosen strategy → relax the head, then the tail → cut the
//! outputs of the round in progress (unless tool outputs are left alone) → shorten the task →
//! cannot fit. Outputs go before units; the round whose clearing meets the budget is capped to
//! just meet it, and rounds cleared bare for want of room fold into a digest where that uses
//! the budget as fully ([`fold_bare`]). A window budget keeps history first ([`Fitting::new`]
//! says why). Each step taken is named in the report, in order. The plan the loop ends with is
//! the pipeline's to apply.

use crate::account::{Action, CutOutput, Protection, Shortened, Step, ToolTrim};
use crate::conversation::{Layout, Part};
use crate::digest::MarkerMode;
use crate::planner::{self, Attempt, Planner, Protections};
use crate::report::Outcome;
use crate::select::{self, Selector};
use crate::state::Applied;
use crate::strategy::fit;
use crate::strategy::tools::{self, ToolMode};
use crate::tokens::TokenCounter;

/// Brings `start`, the run's checked input, over its budget, within the budget `planner`
/// plans for: the last state (its plan not yet applied) and the run's record, whose plan, when
/// it made one, fits or is the least that could not.
pub(crate) fn fit(planner: &Planner<'_>, start: Applied) -> (Applied, RunRecord) {
    // Trim tools: the old rounds' outputs, then, with a fixed budget, the recent rounds'.
    let fitting = Fitting::new(planner);
    let untrimmed = fitting.untrimmed(&start);
    let (mut state, mut record) = fitting.trim_first(start);
    if state.counts.total() <= planner.budget {
        // Rounds cleared bare go into a digest where one fits.
        fitting.fold_bare(&state, &mut record);
        return (state, record);
    }
    // Group, select, plan with markers: remove units by the chosen strategy, the protections
    // kept (under a window's target, the recent rounds' outputs go where removal alone
    // cannot fit).
    let mut attempt = planner.attempt(&state, Protections::Keep);
    record.steps.push(Step::RemoveUnits);
    if !attempt.fits && !planner.fill && fitting.clears() {
        let freed = record.tool_trim.tokens_freed;
        state = fitting.clear(state, &mut record);
        if record.tool_trim.tokens_freed > freed {
            attempt = planner.attempt(&state, Protections::Keep);
        }
    }
    // Relax the head, then the tail.
    if !attempt.fits {
        attempt = planner.attempt(&state, Protections::Relax);
    }
    // Under a fixed budget, large tool-call inputs cleared where that keeps more of the units.
    if planner.fill && fitting.clears() && (!attempt.fits || !attempt.plan.drop.is_empty()) {
        (state, attempt) = fitting.clear_inputs(state, untrimmed, attempt, &mut record);
    }
    // Cut the outputs of the round in progress.
    (state, attempt) = fitting.cut_in_progress(state, attempt, &mut record);
    // Under a fixed budget, outputs given back in the room the removal left.
    if planner.fill && attempt.fits && !attempt.plan.drop.is_empty() {
        (state, attempt) = fitting.give_back(state, attempt, &mut record);
    }
    // Shorten the task.
    if !attempt.fits {
        (state, attempt) = fitting.shorten_task(state, attempt, &mut record);
    }
    record.conclude(attempt);
    (state, record)
}

/// The steps tool-round trimming took, as `tool_trim` counts them: the old rounds' outputs
/// cleared, dropped or cut, and the recent rounds' cleared when fewer than `keep` rounds kept
/// theirs.
pub(crate) fn trimming_steps(tool_trim: &ToolTrim, keep: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    if tool_trim.cleared + tool_trim.dropped + tool_trim.truncated > 0 {
        steps.push(Step::ClearOldOutputs);
    }
    if tool_trim.kept < tool_trim.rounds.min(keep) {
        steps.push(Step::ClearRecentOutputs);
    }
    steps
}

/// The record of one run, which each of its steps adds to: what trimming did, the steps taken
/// in order, and the last plan with what was done to make it fit. The run's [`Outcome`] is made
/// from it alone ([`RunRecord::outcome`]).
pub(crate) struct RunRecord {
    /// What the run did when it planned no removal: nothing (within budget), or trimming.
    action: Action,
    /// What tool-round trimming did.
    tool_trim: ToolTrim,
    /// The steps taken, in order.
    steps: Vec<Step>,
    /// The last plan, when units were planned to go: one that fits, or the least that could
    /// not.
    pub(crate) plan: Option<Attempt>,
    /// How the task was shortened, when it had to be.
    shortened: Option<Shortened>,
    /// The outputs of the round in progress cut to fit.
    outputs_cut: Vec<CutOutput>,
}

impl RunRecord {
    /// The record of a run within its budget: nothing done, `tool_trim` counting its rounds.
    pub(crate) fn within_budget(tool_trim: ToolTrim) -> Self {
        Self::new(Action::WithinBudget, tool_trim, Vec::new())
    }

    /// The record of a run that trimmed tool outputs (`tool_trim`), taking `steps`.
    pub(crate) fn trimmed(tool_trim: ToolTrim, steps: Vec<Step>) -> Self {
        Self::new(Action::Compacted, tool_trim, steps)
    }

    fn new(action: Action, tool_trim: ToolTrim, steps: Vec<Step>) -> Self {
        Self {
            action,
            tool_trim,
            steps,
            plan: None,
            shortened: None,
            outputs_cut: Vec::new(),
        }
    }

    /// Adds `step`, taken beside unit removal, next to [`Step::RemoveUnits`] (last where no
    /// unit removal was recorded): inputs cleared for it ([`Step::ClearOldInputs`]) just before
    /// it, outputs given back in the room it left just after it.
    fn add_beside_removal(&mut self, step: Step) {
        let removal = self.steps.iter().position(|s| *s == Step::RemoveUnits);
        let at = match step {
            Step::ClearOldInputs => removal,
            _ => removal.map(|at| at + 1),
        };
        self.steps.insert(at.unwrap_or(self.steps.len()), step);
    }

    /// Ends the run with its last plan, `attempt`, adding the steps that plan took, in order:
    /// the protections it gave up, the round in progress cut, the task shortened.
    fn conclude(&mut self, attempt: Attempt) {
        for protection in &attempt.plan.relaxed {
            self.steps.push(match protection {
                Protection::Head => Step::RelaxHead,
                Protection::Tail => Step::RelaxTail,
            });
        }
        if !self.outputs_cut.is_empty() {
            self.steps.push(Step::CutCurrentOutputs);
        }
        if self.shortened.is_some() {
            self.steps.push(Step::ShortenTask);
        }
        self.plan = Some(attempt);
    }

    /// When the run's plan cannot fit its budget, the least tokens the pinned units take;
    /// `None` when it fits (it planned no removal, or its plan fits).
    pub(crate) fn cannot_fit(&self) -> Option<usize> {
        (self.plan.as_ref())
            .filter(|plan| !plan.fits)
            .map(|plan| plan.tokens_after)
    }

    /// The run's outcome under `budget`, its features and rules' verdicts `selector`'s: the
    /// one place an [`Outcome`] is made. A plan that fits gives it its decision and markers;
    /// one that does not, the step [`Step::CannotFit`].
    pub(crate) fn outcome(self, budget: usize, selector: &Selector<'_>) -> Outcome {
        let Self {
            action,
            tool_trim,
            mut steps,
            plan,
            shortened,
            outputs_cut,
        } = self;
        let smallest_span_end = plan.as_ref().and_then(smallest_span_end);
        // A plan gives its decision and the protections it gave up; one that fits, its markers
        // (whether there are any, their mode, what each stands for, their archive files).
        let (action, decision, relaxed, fitted) = match plan {
            None => (action, None, Vec::new(), None),
            Some(Attempt {
                decision,
                plan,
                markers,
                notes,
                archive,
                mode,
                fits,
                ..
            }) => {
                let action = if fits {
                    Action::Compacted
                } else {
                    Action::CannotFit
                };
                let fitted = fits.then_some((!markers.is_empty(), mode, notes, archive));
                (action, Some(decision), plan.relaxed, fitted)
            }
        };
        if action == Action::CannotFit {
            steps.push(Step::CannotFit);
        }
        let (marker, marker_mode, markers, archive) =
            fitted.unwrap_or((false, MarkerMode::None, Vec::new(), Vec::new()));
        Outcome {
            action,
            budget,
            tool_trim,
            features: selector.features.clone(),
            rules: selector.checks.clone(),
            smallest_span_end,
            decision,
            relaxed,
            marker,
            marker_mode,
            markers,
            steps,
            shortened,
            outputs_cut,
            archive,
        }
    }
}

/// Tokens of the smallest unit at either end of a run of units `attempt` removes: the cheapest
/// one to keep without splitting a span, and so a marker, in two.
fn smallest_span_end(attempt: &Attempt) -> Option<usize> {
    let mut drop = attempt.plan.drop.clone();
    drop.sort_unstable();
    let starts = drop
        .iter()
        .enumerate()
        .filter(|&(at, &u)| at == 0 || drop[at - 1] + 1 != u);
    let ends = drop
        .iter()
        .enumerate()
        .filter(|&(at, &u)| drop.get(at + 1) != Some(&(u + 1)));
    let tokens = starts.chain(ends).map(|(_, &u)| attempt.units[u].tokens);
    tokens.min()
}

/// Tokens the round in progress gives beyond what the budget needs when its outputs are cut,
/// where a cap can: room for the marker of the history removed before it, whose digest names
/// the files and ids the agent read there and goes on to use. A tenth of `budget` (the digest's
/// share of it besides the requests), at most [`MARKER_RESERVE_MAX`].
fn marker_reserve(budget: usize) -> usize {
    (budget / 10).min(MARKER_RESERVE_MAX)
}

/// The most tokens [`marker_reserve`] takes from the round in progress.
const MARKER_RESERVE_MAX: usize = 400;

/// One run's fitting: its planner, and how tool outputs are trimmed and cut under its budget.
struct Fitting<'p, 'a> {
    planner: &'p Planner<'a>,
    /// Whether the round that meets the budget is capped to just meet it.
    cap_crossing: bool,
    /// What cutting outputs and inputs reads: the planner's counter and archive.
    cutting: fit::Cutting<'p>,
}

impl<'p, 'a> Fitting<'p, 'a> {
    /// A fixed budget is room the caller gives to fill ([`Planner::fill`]): the recent rounds'
    /// outputs go before any unit, and the round whose clearing meets the budget is capped to
    /// just meet it. A window budget's target is where an agent loop compacts down to, and the
    /// room left under it is headroom until the next compaction: there history goes first, the
    /// recent outputs (the agent's working evidence) only when removal alone cannot fit, and
    /// outputs are cleared whole. Nor is an output capped with an archive: the archive gives
    /// back what it changes.
    fn new(planner: &'p Planner<'a>) -> Self {
        Self {
            planner,
            cap_crossing: planner.fill && planner.archive.is_none(),
            cutting: fit::Cutting {
                counter: &planner.counter,
                archive: planner.archive,
            },
        }
    }

    /// Where trimming stops: at the budget, the crossing round capped when the budget is room to
    /// fill. Cleared outputs keep their gists under a window's target too: an agent loop's
    /// depth leaves the room until the next compaction below the target, so gists take none
    /// of it.
    fn stop(&self) -> tools::Stop {
        tools::Stop {
            budget: Some(self.planner.budget),
            cap_crossing: self.cap_crossing,
            widen_to: None,
        }
    }

    /// A copy of `start` for [`Fitting::clear_inputs`] to trim again once it has cleared large
    /// inputs, kept only where it may clear one: a fixed budget, outputs cleared, no archive,
    /// inputs not cleared anyway, and a call whose input is large.
    fn untrimmed(&self, start: &Applied) -> Option<Applied> {
        let tools = &self.planner.options.tools;
        let may = self.planner.fill
            && self.clears()
            && self.planner.archive.is_none()
            && !tools.clear_inputs;
        (may && fit::has_large_input(start)).then(|| start.copy())
    }

    /// Whether tool outputs may be cleared at all.
    fn clears(&self) -> bool {
        self.planner.options.tools.mode != ToolMode::Off
    }

    /// The trimming before any unit goes: the old rounds' outputs, then, with a fixed budget, the
    /// recent rounds'. The first step: it makes the run's record.
    fn trim_first(&self, start: Applied) -> (Applied, RunRecord) {
        let (options, tokens) = (self.planner.options, self.planner.input.tokens);
        // Cost-optimized trimming weighs the input's size.
        let tool_options = select::tool_options(&options.selector, &options.tools, tokens);
        // With a fixed budget that full gists of the old rounds' outputs cannot meet, the recent
        // rounds' outputs keep full gists before the old ones' keep poorer ones: trimmed with
        // them, oldest poorest.
        // Only where trimming clears: the recent rounds are never dropped whole.
        let clears_only = tool_options.mode == ToolMode::Clear;
        let widen_to =
            (self.planner.fill && clears_only).then(|| usize::from(tools::is_in_progress(&start)));
        let stop = tools::Stop {
            widen_to,
            ..self.stop()
        };
        let protected = tool_options.keep;
        let (mut state, tool_trim) = tools::trim(
            start,
            &tool_options,
            stop,
            options.tokenizer,
            self.planner.archive,
        );
        let steps = trimming_steps(&tool_trim, protected);
        let mut record = RunRecord::trimmed(tool_trim, steps);
        if self.planner.fill && self.clears() && state.counts.total() > self.planner.budget {
            state = self.clear(state, &mut record);
        }
        (state, record)
    }

    /// When trimming met the budget by clearing the oldest rounds' outputs bare
    /// ([`ToolTrim::bare_before`]), the plan that removes the most of those rounds, oldest first,
    /// into a digest instead, with its step, added to `record`: the digest names the files and
    /// names of their outputs that the placeholders lost. Taken only where the budget is used as
    /// fully as by the trimmed conversation (but for the markers' slack), and never with a brief
    /// marker, which would name less than the calls did.
    fn fold_bare(&self, state: &Applied, record: &mut RunRecord) {
        let planner = self.planner;
        let bare_before = record.tool_trim.bare_before;
        if bare_before == 0 {
            return;
        }
        // As fully as the trimmed conversation, but for the markers' slack (a plan with markers
        // leaves it unused).
        let full = state.counts.total().saturating_sub(planner::MARKER_SLACK);
        // Where each bare round ends: folding up to one folds every bare round before it too.
        let ends: Vec<usize> = state
            .units(planner.input)
            .iter()
            .filter(|u| u.is_round && !u.pinned && u.messages.end <= bare_before)
            .map(|u| u.messages.end)
            .collect();
        let fold = |end: usize| {
            let attempt = planner.fold(state, end);
            let taken = attempt.fits
                && attempt.mode == MarkerMode::Digest
                && !attempt.plan.drop.is_empty()
                && attempt.tokens_after >= full;
            taken.then_some(attempt)
        };
        // The more rounds fold, the fewer tokens the digest makes up for: the most that still use
        // the budget as fully, by bisection.
        let (mut low, mut high) = (0, ends.len());
        let mut best = None;
        while low < high {
            let mid = usize::midpoint(low, high);
            match fold(ends[mid]) {
                Some(attempt) => {
                    best = Some(attempt);
                    low = mid + 1;
                }
                None => high = mid,
            }
        }
        if let Some(attempt) = best {
            record.steps.push(Step::FoldBareRounds);
            record.plan = Some(attempt);
        }
    }

    /// With a fixed budget and no archive, where `attempt` does not fit or fills less than 60%
    /// of the budget, the large tool-call inputs of the units `attempt` removes (of all but the
    /// last when it does not fit; [`fit::clear_large_inputs`]), oldest first, cleared to their
    /// path-like arguments until the conversation fits, when the plan over that state fits and
    /// keeps more messages than `attempt` (or as many, using more of the budget), or `attempt`
    /// does not fit: a file written whole in one call no longer takes its unit with it, nor
    /// leaves a pinned unit over the budget; else `state` and `attempt` as they are. What was
    /// cleared is added to `record`'s trimming figures and its step to its steps, before unit
    /// removal.
    ///
    /// The outputs were cleared for a budget those inputs kept out of reach, so clearing them
    /// frees more than needed: the outputs are given back by trimming `untrimmed` (the state
    /// before any output was cleared) again with those inputs cleared, so that outputs are
    /// cleared, gisted and capped only as far as the budget then needs, the record of that
    /// trimming redone replacing `record`; and where that leaves room, the last input
    /// cleared is capped instead, its head and tail kept, to fill it.
    fn clear_inputs(
        &self,
        mut state: Applied,
        untrimmed: Option<Applied>,
        attempt: Attempt,
        record: &mut RunRecord,
    ) -> (Applied, Attempt) {
        let planner = self.planner;
        // With an archive, nothing is changed that the archive would not give back.
        if planner.options.tools.clear_inputs || planner.archive.is_some() {
            return (state, attempt);
        }
        // Only where removal alone leaves the budget mostly empty (under 60% of it) or cannot
        // fit: a cleared input loses what it named, which the digest of a removed unit keeps.
        if attempt.fits && attempt.tokens_after * 10 >= planner.budget * 9 {
            return (state, attempt);
        }
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
        let (mut cleared, changed, inputs) = fit::clear_large_inputs(
            state.copy(),
            candidates.into_iter(),
            planner.budget,
            counter,
        );
        if inputs.inputs_cleared == 0 {
            return (state, attempt);
        }
        let better = self.kept_else_relaxed(&cleared);
        // More messages kept, or as many and more of the budget used.
        let keeps_more = |better: &Attempt, than: &Attempt| {
            let (kept, was) = (better.plan.messages_kept, than.plan.messages_kept);
            !than.fits || kept > was || (kept == was && better.tokens_after > than.tokens_after)
        };
        if !better.fits || !keeps_more(&better, &attempt) {
            return (state, attempt);
        }
        // The outputs given back: the same inputs cleared before any output (the start holds
        // each input message at its index), then trimmed again to the budget.
        let given_back = untrimmed.and_then(|start| {
            let inputs_at: Vec<usize> = changed
                .iter()
                .filter_map(|&m| state.origin[m].input())
                .collect();
            let last = inputs_at
                .last()
                .map(|&i| start.conversation.messages[i].clone());
            let (start, _, mut again) =
                fit::clear_large_inputs(start, inputs_at.iter().copied(), 0, counter);
            let (mut retrimmed, mut redone) = self.trim_first(start);
            // The last input cleared is capped instead where the budget leaves room for more
            // of it: the outputs whole, it fills what is left.
            let at = retrimmed
                .origin
                .iter()
                .rposition(|o| o.input() == inputs_at.last().copied());
            if let (Some(at), Some(last)) = (at, last) {
                let cleared = retrimmed.counts.messages[at];
                let room = (planner.budget + cleared).saturating_sub(retrimmed.counts.total());
                if let Some((capped, tokens)) = self.cutting.cap_inputs(&last, room) {
                    if tokens > cleared {
                        retrimmed.conversation.messages[at] = capped;
                        retrimmed.counts.messages[at] = tokens;
                        again.tokens_freed -= tokens - cleared;
                    }
                }
            }
            let fuller = self.kept_else_relaxed(&retrimmed);
            let same = again.inputs_cleared == inputs.inputs_cleared;
            (fuller.fits && same && keeps_more(&fuller, &better)).then(|| {
                redone.tool_trim.add(&again);
                redone.steps.push(Step::RemoveUnits);
                (retrimmed, fuller, redone)
            })
        });
        let attempt = if let Some((retrimmed, fuller, redone)) = given_back {
            cleared = retrimmed;
            // The trimming redone from the start takes the first's place: its record holds
            // all the run has recorded so far (trimming, then unit removal).
            *record = redone;
            fuller
        } else {
            // Only inputs changed: what earlier steps discarded stays with the state.
            cleared.discarded = std::mem::take(&mut state.discarded);
            record.tool_trim.add(&inputs);
            better
        };
        record.add_beside_removal(Step::ClearOldInputs);
        (cleared, attempt)
    }

    /// The plan over `state` with the head and tail kept, else relaxed.
    fn kept_else_relaxed(&self, state: &Applied) -> Attempt {
        let planner = self.planner;
        let attempt = planner.attempt(state, Protections::Keep);
        if attempt.fits {
            return attempt;
        }
        planner.attempt(state, Protections::Relax)
    }

    /// When `attempt`, which removed every unit it could, does not fit and outputs may be
    /// cleared: the state with the outputs of its round in progress cut by what `attempt` is over
    /// the budget, and its plan, the outputs cut added to `record`; else both as they are (or
    /// when the last unit is no round).
    fn cut_in_progress(
        &self,
        state: Applied,
        attempt: Attempt,
        record: &mut RunRecord,
    ) -> (Applied, Attempt) {
        let planner = self.planner;
        let round = attempt.units.last().filter(|u| u.is_round);
        let Some(round) = round.filter(|_| self.clears() && !attempt.fits) else {
            return (state, attempt);
        };
        let over = attempt.tokens_after.saturating_sub(planner.budget) + planner::MARKER_SLACK;
        let reserve = marker_reserve(planner.budget);
        let messages = round.messages.clone();
        let (state, cut) = self.cutting.cut_in_progress(state, messages, over, reserve);
        if cut.is_empty() {
            return (state, attempt);
        }
        record.outputs_cut = cut;
        let attempt = planner.attempt(&state, Protections::Relax);
        (state, attempt)
    }

    /// When the task can be shortened ([`Planner::shorten_task`]) so that the plan, the
    /// protections relaxed, fits: that state and plan, how the task was shortened added to
    /// `record`; else `state` and `attempt` as they are.
    fn shorten_task(
        &self,
        state: Applied,
        attempt: Attempt,
        record: &mut RunRecord,
    ) -> (Applied, Attempt) {
        let planner = self.planner;
        let Some((shorter, cut)) = planner.shorten_task(&state, &attempt) else {
            return (state, attempt);
        };
        let retry = planner.attempt(&shorter, Protections::Relax);
        if !retry.fits {
            return (state, attempt);
        }
        record.shortened = Some(cut);
        (shorter, retry)
    }

    /// Where `attempt` fits a fixed budget by removing units, the outputs trimming cleared or
    /// capped in the messages it keeps, given back in the room the removal left: trimming
    /// cleared them for a budget that the units now removed kept out of reach, so they were
    /// cleared past what the budget needs. Newest first (what the agent works from), each
    /// message's outputs whole where they fit, else, where outputs may be capped, capped to
    /// fill what is left. The plan and its markers stay as they are; `attempt`'s tokens grow
    /// by what was given back, which is added to `record` with its step, after unit removal. A
    /// message given back stays fitted as changed: an output capped to `max_output` holds no
    /// original, so what is given back is that cap.
    fn give_back(
        &self,
        mut state: Applied,
        mut attempt: Attempt,
        record: &mut RunRecord,
    ) -> (Applied, Attempt) {
        let planner = self.planner;
        let mut removed = vec![false; state.conversation.messages.len()];
        for &unit in &attempt.plan.drop {
            removed[attempt.units[unit].messages.clone()].fill(true);
        }
        let counter = &planner.counter;
        let full = planner.budget.saturating_sub(planner::MARKER_SLACK);
        // Outputs given back, and the tokens they added.
        let (mut restored, mut added) = (0, 0);
        for index in (0..state.conversation.messages.len()).rev() {
            let room = full.saturating_sub(attempt.tokens_after);
            if room == 0 {
                break;
            }
            let Some(input) = state.origin[index].input().filter(|_| !removed[index]) else {
                continue;
            };
            let Some((whole, parts)) = state.whole_outputs(index, input) else {
                continue;
            };
            let now = state.counts.messages[index];
            let tokens = counter.count_message(&whole);
            if tokens <= now {
                continue;
            }
            let cleared = std::mem::replace(&mut state.conversation.messages[index], whole);
            state.counts.messages[index] = tokens;
            if tokens - now > room {
                // Capped to fill what is left, the largest cap that does, where one can.
                let outputs: Vec<(usize, usize)> = parts.iter().map(|&p| (index, p)).collect();
                let capped = self
                    .cap_crossing
                    .then(|| self.cutting.cap_outputs(&state, &outputs, now + room))
                    .flatten()
                    .and_then(|mut capped| capped.pop())
                    .filter(|&(_, _, tokens)| tokens > now);
                let Some((_, texts, tokens)) = capped else {
                    state.conversation.messages[index] = cleared;
                    state.counts.messages[index] = now;
                    continue;
                };
                let message = &mut state.conversation.messages[index];
                for (part, text) in texts {
                    if let Part::ToolResult {
                        content, layout, ..
                    } = &mut message.parts[part]
                    {
                        *content = vec![Part::text(text)];
                        *layout = Layout::Text;
                    }
                }
                state.counts.messages[index] = tokens;
            }
            let more = state.counts.messages[index] - now;
            attempt.tokens_after += more;
            attempt.kept_tokens += more;
            restored += parts.len();
            added += more;
        }
        if restored > 0 {
            let trim = &mut record.tool_trim;
            trim.outputs_restored += restored;
            trim.tokens_freed = trim.tokens_freed.saturating_sub(added);
            record.add_beside_removal(Step::RestoreOutputs);
        }
        (state, attempt)
    }

    /// Clears the recent rounds' outputs, oldest first, until the conversation fits the budget.
    /// The last round is spared only when it is the round in progress (the last unit). What was
    /// cleared is added to `record`'s trimming figures and steps.
    fn clear(&self, state: Applied, record: &mut RunRecord) -> Applied {
        let (tools, tokenizer) = (&self.planner.options.tools, self.planner.options.tokenizer);
        let (cleared, more) =
            tools::clear_recent(state, tools, self.stop(), tokenizer, self.planner.archive);
        if more.cleared + more.truncated > 0 {
            record.steps.push(Step::ClearRecentOutputs);
            record.tool_trim.add(&more);
        }
        cleared
    }
}
