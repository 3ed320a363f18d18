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
//!
//! Three types carry a run, in order: the [`RunRecord`] its steps add to; the [`Outcome`] made
//! from it once, in one place ([`RunRecord::outcome`]); and the report the pipeline makes from
//! that outcome and the output (`Outcome::report`).

use crate::account::MarkerMode;
use crate::account::{Action, CutOutput, Protection, Shortened, Step, ToolTrim};
use crate::conversation::{Layout, Part};
use crate::planner::{self, Attempt, Planner, Protections};
use crate::report::Outcome;
use crate::select::{self, Selector};
use crate::state::Applied;
use crate::strategy::fit::Cutting;
use crate::strategy::inputs::{clear_large_inputs, has_large_input};
use crate::strategy::tools::{self, ToolMode};
use crate::tokens::TokenCounter;

/// Brings `start`, the run's checked input, over its budget, within the budget `planner`
/// plans for: the last state (its plan not yet applied) and the run's record, whose plan, when
/// it made one, fits or is the least that could not.
///
/// Unit removal and relaxing the protections are the planner's plans, which the record takes
/// ([`RunRecord::remove_units`], [`RunRecord::take_plan`]). Each step after them has one shape,
/// `fn(&self, Applied, &mut RunRecord) -> Applied`: it reads the run's current plan from the
/// record ([`RunRecord::plan`]) and records what it did and the plan it leaves. The steps
/// before (trimming, folding bare rounds) run before any plan is made and make or add to the
/// record themselves.
pub(crate) fn fit(planner: &Planner<'_>, start: Applied) -> (Applied, RunRecord) {
    // Trim tools: the old rounds' outputs, then, with a fixed budget, the recent rounds'.
    let fitting = Fitting::new(planner);
    let untrimmed = fitting.untrimmed(&start);
    let (mut state, trimming) = fitting.trim_first(start);
    let mut record = RunRecord::new(Action::Compacted, trimming);
    if state.counts.total() <= planner.budget {
        // Rounds cleared bare go into a digest where one fits.
        fitting.fold_bare(&state, &mut record);
        return (state, record);
    }
    // Group, select, plan with markers: remove units by the chosen strategy, the protections
    // kept; then relax the head, then the tail. Under a window's target, the recent rounds'
    // outputs go first where removal alone cannot fit, and the state is grouped again.
    let clears_recent = !planner.fill && fitting.clears();
    let grouped = planner.group(&state);
    record.remove_units(grouped.attempt(Protections::Keep));
    if !record.fits() && !clears_recent {
        record.take_plan(grouped.attempt(Protections::Relax));
    }
    if !record.fits() && clears_recent {
        state = fitting.clear_recent(state, &mut record);
        if !record.fits() {
            record.take_plan(planner.attempt(&state, Protections::Relax));
        }
    }
    // Under a fixed budget, large tool-call inputs cleared where that keeps more of the units.
    if planner.fill && fitting.clears() && (!record.fits() || record.removes()) {
        state = fitting.clear_inputs(state, untrimmed, &mut record);
    }
    // Cut the outputs of the round in progress.
    state = fitting.cut_in_progress(state, &mut record);
    // Under a fixed budget, outputs given back in the room the removal left.
    if planner.fill && record.fits() && record.removes() {
        state = fitting.give_back(state, &mut record);
    }
    // Shorten the task.
    if !record.fits() {
        state = fitting.shorten_task(state, &mut record);
    }
    (state, record)
}

/// The steps tool-round trimming took, as `tool_trim` counts them: the old rounds' outputs
/// cleared, dropped or cut, and the recent rounds' cleared when fewer than `keep` rounds kept
/// theirs.
pub(crate) fn trimming_steps(tool_trim: &ToolTrim, keep: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    if tool_trim.trimmed_outputs() {
        steps.push(Step::ClearOldOutputs);
    }
    if tool_trim.kept < tool_trim.rounds.min(keep) {
        steps.push(Step::ClearRecentOutputs);
    }
    steps
}

/// What the trimming before any unit goes did, and its steps in order: the part of a run's
/// record that a redo of that trimming ([`Fitting::clear_inputs`]) replaces whole.
pub(crate) struct Trimming {
    tool_trim: ToolTrim,
    steps: Vec<Step>,
}

/// Tool outputs given back in the room unit removal left.
#[derive(Debug, Clone, Copy, Default)]
struct Restored {
    /// How many outputs.
    outputs: usize,
    /// The tokens they added.
    tokens: usize,
}

impl Trimming {
    /// Adds the recent rounds' outputs cleared (`more`) after the first trimming, as its step.
    fn add_recent_cleared(&mut self, more: &ToolTrim) {
        self.steps.push(Step::ClearRecentOutputs);
        self.tool_trim.add(more);
    }
}

/// The record of one run, which each of its steps adds to through its methods: what trimming
/// did, what each later step did, and the current plan. The report's steps are placed in one
/// order by [`RunRecord::outcome`], the run's [`Outcome`] made from the record alone.
pub(crate) struct RunRecord {
    /// What the run did when it planned no removal: nothing (within budget), or trimming.
    action: Action,
    /// What the trimming before any unit goes did, and its steps.
    trimming: Trimming,
    /// Whether bare rounds were folded into a digest instead of unit removal.
    folded: bool,
    /// Whether units were planned to go by the chosen strategy.
    removed: bool,
    /// What clearing large tool-call inputs did, beside unit removal.
    inputs_cleared: Option<ToolTrim>,
    /// What clearing the recent rounds' outputs did after unit removal (a window's target).
    recent_cleared: Option<ToolTrim>,
    /// Outputs given back in the room unit removal left.
    restored: Restored,
    /// The outputs of the round in progress cut to fit.
    outputs_cut: Vec<CutOutput>,
    /// How the task was shortened, when it had to be.
    shortened: Option<Shortened>,
    /// The current plan, when units were planned to go: from unit removal on, each step's
    /// plan; at the end one that fits, or the least that could not.
    plan: Option<Attempt>,
}

impl RunRecord {
    /// The record of a run within its budget: nothing done, `tool_trim` counting its rounds.
    pub(crate) fn within_budget(tool_trim: ToolTrim) -> Self {
        let trimming = Trimming {
            tool_trim,
            steps: Vec::new(),
        };
        Self::new(Action::WithinBudget, trimming)
    }

    /// The record of a run that trimmed tool outputs (`tool_trim`), taking `steps`.
    pub(crate) fn trimmed(tool_trim: ToolTrim, steps: Vec<Step>) -> Self {
        Self::new(Action::Compacted, Trimming { tool_trim, steps })
    }

    fn new(action: Action, trimming: Trimming) -> Self {
        Self {
            action,
            trimming,
            folded: false,
            removed: false,
            inputs_cleared: None,
            recent_cleared: None,
            restored: Restored::default(),
            outputs_cut: Vec::new(),
            shortened: None,
            plan: None,
        }
    }

    /// The run's current plan, when units were planned to go.
    pub(crate) fn plan(&self) -> Option<&Attempt> {
        self.plan.as_ref()
    }

    /// The current plan of a step taken from unit removal on, which [`RunRecord::remove_units`]
    /// made.
    fn attempt(&self) -> &Attempt {
        self.plan
            .as_ref()
            .expect("unit removal planned before this step")
    }

    /// Whether the current plan fits.
    fn fits(&self) -> bool {
        self.attempt().fits
    }

    /// Whether the current plan removes any unit.
    fn removes(&self) -> bool {
        !self.attempt().plan.drop.is_empty()
    }

    /// The run's plan is now `attempt`.
    fn take_plan(&mut self, attempt: Attempt) {
        self.plan = Some(attempt);
    }

    /// Bare rounds folded into a digest by `attempt`, the run's plan.
    fn fold_bare_rounds(&mut self, attempt: Attempt) {
        self.folded = true;
        self.take_plan(attempt);
    }

    /// Units planned to go by the chosen strategy, `attempt` the first plan.
    fn remove_units(&mut self, attempt: Attempt) {
        self.removed = true;
        self.take_plan(attempt);
    }

    /// The recent rounds' outputs cleared after unit removal (`more`).
    fn clear_recent(&mut self, more: ToolTrim) {
        self.recent_cleared = Some(more);
    }

    /// Large tool-call inputs cleared (`inputs`), the plan now `attempt`; the trimming before
    /// any unit went replaced by `redone` where it was redone with those inputs cleared.
    fn clear_inputs(&mut self, inputs: ToolTrim, redone: Option<Trimming>, attempt: Attempt) {
        if let Some(redone) = redone {
            self.trimming = redone;
        }
        self.inputs_cleared = Some(inputs);
        self.take_plan(attempt);
    }

    /// The outputs of the round in progress cut (`cut`), the plan now `attempt`.
    fn cut_outputs(&mut self, cut: Vec<CutOutput>, attempt: Attempt) {
        self.outputs_cut = cut;
        self.take_plan(attempt);
    }

    /// Outputs given back (`restored`), their tokens added to the plan.
    fn restore_outputs(&mut self, restored: Restored) {
        if let Some(plan) = &mut self.plan {
            plan.add_restored(restored.tokens);
        }
        if restored.outputs > 0 {
            self.restored = restored;
        }
    }

    /// The task shortened (`cut`), the plan now `attempt`.
    fn shorten_task(&mut self, cut: Shortened, attempt: Attempt) {
        self.shortened = Some(cut);
        self.take_plan(attempt);
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
    /// one that does not, the step [`Step::CannotFit`]. The steps go in one order: trimming's,
    /// bare rounds folded, inputs cleared, units removed, outputs given back, the recent
    /// rounds' outputs cleared, the protections the plan gave up, the round in progress cut,
    /// the task shortened, cannot fit.
    pub(crate) fn outcome(self, budget: usize, selector: &Selector<'_>) -> Outcome {
        let Self {
            action,
            trimming,
            folded,
            removed,
            inputs_cleared,
            recent_cleared,
            restored,
            outputs_cut,
            shortened,
            plan,
        } = self;
        let Trimming {
            mut tool_trim,
            mut steps,
        } = trimming;
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
        let mut taken = |step, taken: bool| {
            if taken {
                steps.push(step);
            }
        };
        taken(Step::FoldBareRounds, folded);
        taken(Step::ClearOldInputs, inputs_cleared.is_some());
        taken(Step::RemoveUnits, removed);
        taken(Step::RestoreOutputs, restored.outputs > 0);
        taken(Step::ClearRecentOutputs, recent_cleared.is_some());
        // The protections unit removal gave up (a fold's plan names none).
        for protection in relaxed.iter().filter(|_| removed) {
            taken(
                match protection {
                    Protection::Head => Step::RelaxHead,
                    Protection::Tail => Step::RelaxTail,
                },
                true,
            );
        }
        taken(Step::CutCurrentOutputs, !outputs_cut.is_empty());
        taken(Step::ShortenTask, shortened.is_some());
        taken(Step::CannotFit, action == Action::CannotFit);
        for more in inputs_cleared.iter().chain(&recent_cleared) {
            tool_trim.add(more);
        }
        tool_trim.outputs_restored += restored.outputs;
        tool_trim.tokens_freed = tool_trim.tokens_freed.saturating_sub(restored.tokens);
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
    cutting: Cutting<'p>,
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
            cutting: Cutting {
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
        (may && has_large_input(start)).then(|| start.copy())
    }

    /// Whether tool outputs may be cleared at all.
    fn clears(&self) -> bool {
        self.planner.options.tools.mode != ToolMode::Off
    }

    /// The trimming before any unit goes: the old rounds' outputs, then, with a fixed budget, the
    /// recent rounds'. The first step: what it did makes the run's record.
    fn trim_first(&self, start: Applied) -> (Applied, Trimming) {
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
        let mut trimming = Trimming { tool_trim, steps };
        if self.planner.fill && self.clears() && state.counts.total() > self.planner.budget {
            let more;
            (state, more) = self.clear(state);
            if let Some(more) = more {
                trimming.add_recent_cleared(&more);
            }
        }
        (state, trimming)
    }

    /// When trimming met the budget by clearing the oldest rounds' outputs bare
    /// ([`ToolTrim::bare_before`]), the plan that removes the most of those rounds, oldest first,
    /// into a digest instead, with its step, added to `record`: the digest names the files and
    /// names of their outputs that the placeholders lost. Taken only where the budget is used as
    /// fully as by the trimmed conversation (but for the markers' slack), and never with a brief
    /// marker, which would name less than the calls did.
    fn fold_bare(&self, state: &Applied, record: &mut RunRecord) {
        let planner = self.planner;
        let bare_before = record.trimming.tool_trim.bare_before;
        if bare_before == 0 {
            return;
        }
        // As fully as the trimmed conversation, but for the markers' slack (a plan with markers
        // leaves it unused).
        let full = state.counts.total().saturating_sub(planner::MARKER_SLACK);
        // Where each bare round ends: folding up to one folds every bare round before it too.
        let grouped = planner.group(state);
        let ends: Vec<usize> = (grouped.units.iter())
            .filter(|u| u.is_round && !u.pinned && u.messages.end <= bare_before)
            .map(|u| u.messages.end)
            .collect();
        let fold = |end: usize| {
            let attempt = grouped.fold(end);
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
            record.fold_bare_rounds(attempt);
        }
    }

    /// With a fixed budget and no archive, where the run's plan, `attempt`, does not fit or
    /// fills less than 60% of the budget, the large tool-call inputs of the units it removes (of all but the
    /// last when it does not fit; [`clear_large_inputs`]), oldest first, cleared to their
    /// path-like arguments until the conversation fits, when the plan over that state fits and
    /// keeps more messages than `attempt` (or as many, using more of the budget), or `attempt`
    /// does not fit: a file written whole in one call no longer takes its unit with it, nor
    /// leaves a pinned unit over the budget; else `state` as it is. What was cleared and the
    /// plan over it are added to `record`, its step before unit removal.
    ///
    /// The outputs were cleared for a budget those inputs kept out of reach, so clearing them
    /// frees more than needed: the outputs are given back by trimming `untrimmed` (the state
    /// before any output was cleared) again with those inputs cleared, so that outputs are
    /// cleared, gisted and capped only as far as the budget then needs, what that trimming
    /// redone did replacing what the first did in `record`; and where that leaves room, the
    /// last input cleared is capped instead, its head and tail kept, to fill it.
    fn clear_inputs(
        &self,
        mut state: Applied,
        untrimmed: Option<Applied>,
        record: &mut RunRecord,
    ) -> Applied {
        let planner = self.planner;
        // With an archive, nothing is changed that the archive would not give back.
        if planner.options.tools.clear_inputs || planner.archive.is_some() {
            return state;
        }
        let attempt = record.attempt();
        // Only where removal alone leaves the budget mostly empty (under 60% of it) or cannot
        // fit: a cleared input loses what it named, which the digest of a removed unit keeps.
        if attempt.fits && attempt.tokens_after * 10 >= planner.budget * 9 {
            return state;
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
        let (mut cleared, changed, inputs) = clear_large_inputs(
            state.copy(),
            candidates.into_iter(),
            planner.budget,
            counter,
        );
        if inputs.inputs_cleared == 0 {
            return state;
        }
        let better = self.kept_else_relaxed(&cleared);
        // More messages kept, or as many and more of the budget used.
        let keeps_more = |better: &Attempt, than: &Attempt| {
            let (kept, was) = (better.plan.messages_kept, than.plan.messages_kept);
            !than.fits || kept > was || (kept == was && better.tokens_after > than.tokens_after)
        };
        if !better.fits || !keeps_more(&better, attempt) {
            return state;
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
                clear_large_inputs(start, inputs_at.iter().copied(), 0, counter);
            let (mut retrimmed, redone) = self.trim_first(start);
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
            (fuller.fits && same && keeps_more(&fuller, &better))
                .then_some((retrimmed, fuller, redone, again))
        });
        if let Some((retrimmed, fuller, redone, again)) = given_back {
            // The trimming redone from the start takes the first's place.
            record.clear_inputs(again, Some(redone), fuller);
            retrimmed
        } else {
            // Only inputs changed: what earlier steps discarded stays with the state.
            cleared.discarded = std::mem::take(&mut state.discarded);
            record.clear_inputs(inputs, None, better);
            cleared
        }
    }

    /// The plan over `state` with the head and tail kept, else relaxed.
    fn kept_else_relaxed(&self, state: &Applied) -> Attempt {
        let grouped = self.planner.group(state);
        let attempt = grouped.attempt(Protections::Keep);
        if attempt.fits {
            return attempt;
        }
        grouped.attempt(Protections::Relax)
    }

    /// When the run's plan, `attempt`, which removed every unit it could, does not fit and
    /// outputs may be cleared: the state with the outputs of its round in progress cut by what
    /// `attempt` is over the budget, the outputs cut and the plan over it added to `record`;
    /// else `state` as it is (or when the last unit is no round).
    fn cut_in_progress(&self, state: Applied, record: &mut RunRecord) -> Applied {
        let planner = self.planner;
        let attempt = record.attempt();
        let round = attempt.units.last().filter(|u| u.is_round);
        let Some(round) = round.filter(|_| self.clears() && !attempt.fits) else {
            return state;
        };
        let over = attempt.tokens_after.saturating_sub(planner.budget) + planner::MARKER_SLACK;
        let reserve = marker_reserve(planner.budget);
        let messages = round.messages.clone();
        let (state, cut) = self.cutting.cut_in_progress(state, messages, over, reserve);
        if cut.is_empty() {
            return state;
        }
        record.cut_outputs(cut, planner.attempt(&state, Protections::Relax));
        state
    }

    /// When the task can be shortened ([`Planner::shorten_task`]) so that the plan, the
    /// protections relaxed, fits: that state, how the task was shortened and the plan added
    /// to `record`; else `state` as it is.
    fn shorten_task(&self, state: Applied, record: &mut RunRecord) -> Applied {
        let planner = self.planner;
        let Some((shorter, cut)) = planner.shorten_task(&state, record.attempt()) else {
            return state;
        };
        let retry = planner.attempt(&shorter, Protections::Relax);
        if !retry.fits {
            return state;
        }
        record.shorten_task(cut, retry);
        shorter
    }

    /// Where the run's plan fits a fixed budget by removing units, the outputs trimming cleared or
    /// capped in the messages it keeps, given back in the room the removal left: trimming
    /// cleared them for a budget that the units now removed kept out of reach, so they were
    /// cleared past what the budget needs. Newest first (what the agent works from), each
    /// message's outputs whole where they fit, else, where outputs may be capped, capped to
    /// fill what is left. The plan and its markers stay as they are; its tokens grow by what
    /// was given back, which is added to `record` with its step, after unit removal. A
    /// message given back stays fitted as changed: an output capped to `max_output` holds no
    /// original, so what is given back is that cap.
    fn give_back(&self, mut state: Applied, record: &mut RunRecord) -> Applied {
        let planner = self.planner;
        let attempt = record.attempt();
        let mut removed = vec![false; state.conversation.messages.len()];
        for &unit in &attempt.plan.drop {
            removed[attempt.units[unit].messages.clone()].fill(true);
        }
        let counter = &planner.counter;
        let full = planner.budget.saturating_sub(planner::MARKER_SLACK);
        let mut restored = Restored::default();
        for index in (0..state.conversation.messages.len()).rev() {
            let room = full.saturating_sub(attempt.tokens_after + restored.tokens);
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
            restored.outputs += parts.len();
            restored.tokens += state.counts.messages[index] - now;
        }
        record.restore_outputs(restored);
        state
    }

    /// Under a window's target, where the run's plan does not fit: the recent rounds' outputs
    /// cleared ([`Fitting::clear`]), what was cleared added to `record` with its step, after
    /// unit removal, and the plan made again, the protections kept, where that freed tokens.
    fn clear_recent(&self, state: Applied, record: &mut RunRecord) -> Applied {
        let (state, more) = self.clear(state);
        if let Some(more) = more {
            let freed = more.tokens_freed > 0;
            record.clear_recent(more);
            if freed {
                record.take_plan(self.planner.attempt(&state, Protections::Keep));
            }
        }
        state
    }

    /// Clears the recent rounds' outputs, oldest first, until the conversation fits the budget.
    /// The last round is spared only when it is the round in progress (the last unit). Returns
    /// what was cleared, when any output was.
    fn clear(&self, state: Applied) -> (Applied, Option<ToolTrim>) {
        let (tools, tokenizer) = (&self.planner.options.tools, self.planner.options.tokenizer);
        let (cleared, more) =
            tools::clear_recent(state, tools, self.stop(), tokenizer, self.planner.archive);
        let any = more.cleared + more.truncated > 0;
        (cleared, any.then_some(more))
    }
}
