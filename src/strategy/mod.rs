//! Removal strategies: which whole units go, and the one step that applies that choice.
//!
//! Middle and oldest remove units oldest first until the conversation fits the budget, never a
//! pinned unit, and keep the protected tail (the last `preserve_end` units) while they can:
//! - **oldest** keeps only system units at the head and drops from the start forward;
//! - **middle** also keeps the first `preserve_start` non-system units (the task in the user's
//!   own words and what answered it) and drops what lies between head and tail;
//! - **relevant** removes by what units share with the current request ([`relevant`]): those
//!   sharing nothing first, the oldest first, then the weakest; once the plan fits, what it
//!   removed comes back, the most relevant and then the newest first, wherever it still fits.
//!
//! When a strategy cannot fit with its protections it relaxes them in a fixed order — the head
//! first, then the tail unit by unit — and names each one it gave up. Only when the pinned units
//! alone exceed the budget does a plan say it does not fit. Planning reads the units' cached
//! counts: O(units), no tokenizing. Strategies return a `Plan`; [`apply`] is the only code that
//! removes messages.

mod counting;
pub(crate) mod fit;
mod gist_size;
pub(crate) mod inputs;
pub(crate) mod relevant;
mod superseded;
pub(crate) mod tools;

use std::ops::Range;

use crate::account::{Protection, Strategy};
use crate::conversation::{Conversation, Message, Role};
use crate::format::{Wire, wire};
use crate::state::{Applied, Source};
use crate::tokens::{Counts, TokenCounter};
use crate::units::Unit;

/// A plan that gave up its tail and keeps less than this many tenths of its budget restores
/// units: below it, a large tail unit has left the budget mostly empty.
const REFILL_BELOW_TENTHS: usize = 6;
/// A plan using less than this many tenths of its budget restores removed units where no digest
/// takes the room it leaves: a plan without markers (none asked, or none fits) as it is made,
/// one with markers once they are built (the planner's `with_span_ends_kept`).
pub(crate) const REFILL_UNDER_TENTHS: usize = 9;

/// What a plan must fit into, and what it must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The token budget for the whole conversation.
    pub budget: usize,
    /// Tokens that are not in any unit: the Anthropic system prompt and the reply priming.
    pub fixed: usize,
    /// Tokens reserved for the markers' digests, shared by all of them, once anything is
    /// removed (0 without a digest).
    pub marker: usize,
    /// Tokens each marker costs besides its digest (0 without markers): one per removed span.
    pub marker_each: usize,
    /// Non-system units middle removal keeps at the head.
    pub preserve_start: usize,
    /// Units kept at the tail while the budget allows.
    pub preserve_end: usize,
    /// Whether the head and tail protections may be given up to fit.
    pub relax: bool,
    /// Whether units holding a request are removed only after all others of their region.
    pub requests_last: bool,
    /// Tool rounds without a request that end at or before this message are removed, protected
    /// or not, and no other unit: rounds whose outputs trimming cleared bare for want of room,
    /// which a digest names more of than their placeholders do (0: none, the plain removal).
    pub fold_before: usize,
}

/// Which units a strategy removes, and what is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The strategy that made it.
    pub strategy: Strategy,
    /// Indices of the units to remove, ascending.
    pub drop: Vec<usize>,
    /// Tokens after removal, the marker's reserve included.
    pub tokens_after: usize,
    /// Messages of the input kept (the marker not included).
    pub messages_kept: usize,
    /// Whether `tokens_after` is within the budget.
    pub fits: bool,
    /// Protections given up, in the order they were.
    pub relaxed: Vec<Protection>,
}

/// Plans `strategy` over `units` within `limits`; relevant removal reads the units' `relevance`
/// scores (the others ignore them; empty: none scores).
pub(crate) fn plan(strategy: Strategy, units: &[Unit], relevance: &[f64], limits: &Limits) -> Plan {
    let total: usize = limits.fixed + units.iter().map(|u| u.tokens).sum::<usize>();
    let messages: usize = units.iter().map(|u| u.messages.len()).sum();
    let protections = protections(strategy, units, limits);
    // Removal order: the unprotected middle, then the head, then the tail; oldest first in
    // each. With `requests_last`, units without a request go first in each, then those with one.
    let region = |protection: Option<Protection>| {
        let (requests, others): (Vec<_>, Vec<_>) = (0..units.len())
            .filter(|&i| protections[i] == protection)
            .map(|i| (protection, i))
            .partition(|(_, i)| limits.requests_last && units[*i].has_request);
        others.into_iter().chain(requests)
    };
    let order: Vec<_> = if strategy == Strategy::Relevant {
        // No protected head or tail: the order itself keeps what matters.
        relevant::removal_order(units, relevance)
            .into_iter()
            .map(|i| (None, i))
            .collect()
    } else {
        region(None)
            .chain(region(Some(Protection::Head)))
            .chain(region(Some(Protection::Tail)))
            .filter(|(protection, i)| {
                limits.relax || protection.is_none() || folds(&units[*i], limits)
            })
            .collect()
    };
    let mut plan = Plan {
        strategy,
        drop: Vec::new(),
        tokens_after: total,
        messages_kept: messages,
        fits: total <= limits.budget,
        relaxed: Vec::new(),
    };
    let mut removal = Removal::of(units, limits, &[]);
    let mut dropped: Vec<(Option<Protection>, usize)> = Vec::new();
    // A fold removes only the bare rounds: what else it would take to fit, it does not.
    let folding = limits.fold_before > 0;
    for &(protection, i) in &order {
        if plan.fits && !folding {
            break;
        }
        if units[i].pinned || folding && !folds(&units[i], limits) {
            continue;
        }
        dropped.push((protection, i));
        removal.set(i, true, &mut plan);
    }
    if plan.fits && !folding {
        removal.refill(strategy, &dropped, &mut plan);
    }
    plan.relaxed = removal.relaxed(&protections);
    plan.drop = (0..units.len()).filter(|&i| removal.removed[i]).collect();
    plan
}

/// `plan`, made by [`plan`] within `limits`, with its removed unit `i` kept: its tokens, the
/// markers of its spans and the protections it gives up counted again.
pub(crate) fn keep(plan: &Plan, units: &[Unit], limits: &Limits, i: usize) -> Plan {
    let mut removal = Removal::of(units, limits, &plan.drop);
    let mut kept = plan.clone();
    removal.set(i, false, &mut kept);
    kept.drop.retain(|&d| d != i);
    kept.relaxed = removal.relaxed(&protections(plan.strategy, units, limits));
    kept
}

/// The protection of each unit under `strategy` within `limits`: the tail (the last
/// `preserve_end` units), the head (middle removal's first `preserve_start` non-system units
/// before the tail), or none (every unit under relevant removal, whose order itself keeps what
/// matters).
fn protections(strategy: Strategy, units: &[Unit], limits: &Limits) -> Vec<Option<Protection>> {
    let tail_start = units.len().saturating_sub(limits.preserve_end);
    let mut protections = vec![None; units.len()];
    match strategy {
        Strategy::Relevant => return protections,
        Strategy::Middle => {
            let head = (0..tail_start).filter(|&i| !units[i].is_system);
            for i in head.take(limits.preserve_start) {
                protections[i] = Some(Protection::Head);
            }
        }
        Strategy::Oldest => {}
    }
    protections[tail_start..].fill(Some(Protection::Tail));
    protections
}

/// Whether `unit` is a tool round without a request ending at or before
/// [`Limits::fold_before`]: one to remove, protected or not.
fn folds(unit: &Unit, limits: &Limits) -> bool {
    unit.is_round && !unit.has_request && unit.messages.end <= limits.fold_before
}

/// The units a plan removes so far, with what they leave: its kept tokens and removed spans.
struct Removal<'a> {
    units: &'a [Unit],
    limits: &'a Limits,
    removed: Vec<bool>,
    spans: usize,
    kept_tokens: usize,
}

impl<'a> Removal<'a> {
    /// The removal of `drop` from `units` within `limits`.
    fn of(units: &'a [Unit], limits: &'a Limits, drop: &[usize]) -> Self {
        let mut removed = vec![false; units.len()];
        for &i in drop {
            removed[i] = true;
        }
        let kept: usize = (0..units.len())
            .filter(|&i| !removed[i])
            .map(|i| units[i].tokens)
            .sum();
        Self {
            units,
            limits,
            removed,
            spans: spans(drop).len(),
            kept_tokens: limits.fixed + kept,
        }
    }

    /// The protections (of `protections`, each unit's) the units removed give up, in the order
    /// removal reaches them: the head before the tail. A bare round folded gives up none:
    /// nothing of it was whole.
    fn relaxed(&self, protections: &[Option<Protection>]) -> Vec<Protection> {
        let given_up = |protection: Protection| {
            (0..self.units.len()).any(|i| {
                self.removed[i]
                    && protections[i] == Some(protection)
                    && !folds(&self.units[i], self.limits)
            })
        };
        [Protection::Head, Protection::Tail]
            .into_iter()
            .filter(|&p| given_up(p))
            .collect()
    }

    /// Gives back units of a plan that fits (`dropped`: what it removed, in order) where room
    /// is left. Relevant removal fills what room is left with what it removed, the most
    /// relevant and then the newest first, wherever a unit still fits (a large one skipped, a
    /// smaller kept). A tail unit too large for the room left can leave most of the budget
    /// empty once it goes: then the units removed before it are restored, newest first, while
    /// the plan fits. Above that fill the slack is left as it is: the markers' digests grow into
    /// it. Without markers nothing grows into it: units are restored wherever a tenth of the
    /// budget is left.
    fn refill(
        &mut self,
        strategy: Strategy,
        dropped: &[(Option<Protection>, usize)],
        plan: &mut Plan,
    ) {
        if strategy == Strategy::Relevant {
            self.restore_while_fits(dropped.iter().rev().map(|d| d.1), plan);
        }
        let limits = self.limits;
        let gave_up_tail = dropped
            .last()
            .is_some_and(|(p, _)| *p == Some(Protection::Tail));
        let tenths = |t: usize| plan.tokens_after * 10 < limits.budget * t;
        let no_markers = limits.marker == 0 && limits.marker_each == 0;
        let refill = if no_markers {
            tenths(REFILL_UNDER_TENTHS)
        } else {
            gave_up_tail && tenths(REFILL_BELOW_TENTHS)
        };
        if refill {
            self.restore_while_fits(dropped.iter().rev().skip(1).map(|d| d.1), plan);
        }
    }

    /// Restores each unit of `units` in turn where the plan still fits with it.
    /// Units already kept are passed over.
    fn restore_while_fits(&mut self, units: impl Iterator<Item = usize>, plan: &mut Plan) {
        for i in units {
            if !self.removed[i] {
                continue;
            }
            self.set(i, false, plan);
            if !plan.fits {
                self.set(i, true, plan);
            }
        }
    }

    /// Removes unit `i` (or restores it, when `remove` is false) and updates `plan`'s tokens,
    /// messages kept and fit, each marker counted by the spans removed.
    fn set(&mut self, i: usize, remove: bool, plan: &mut Plan) {
        let unit = &self.units[i];
        self.removed[i] = remove;
        // A unit removed opens a span, extends one, or joins two; restored, the reverse.
        let before = i > 0 && self.removed[i - 1];
        let after = i + 1 < self.units.len() && self.removed[i + 1];
        let (opens, closes) = match (before, after) {
            (true, true) => (false, true),
            (false, false) => (true, false),
            _ => (false, false),
        };
        if remove {
            self.spans = self.spans + usize::from(opens) - usize::from(closes);
            self.kept_tokens -= unit.tokens;
            plan.messages_kept -= unit.messages.len();
        } else {
            self.spans = self.spans + usize::from(closes) - usize::from(opens);
            self.kept_tokens += unit.tokens;
            plan.messages_kept += unit.messages.len();
        }
        let limits = self.limits;
        let spans = self.spans;
        let markers = spans * limits.marker_each + if spans > 0 { limits.marker } else { 0 };
        plan.tokens_after = self.kept_tokens + markers;
        plan.fits = plan.tokens_after <= limits.budget;
    }
}

/// Builds the output of a step from its messages, each with its origin and its count when it is
/// known (others are counted here, once).
fn rebuild(before: Applied, kept: Vec<Kept>, counter: &dyn TokenCounter) -> Applied {
    let mut messages = Vec::with_capacity(kept.len());
    let mut counts = Vec::with_capacity(kept.len());
    let mut origin = Vec::with_capacity(kept.len());
    for (message, source, cached) in kept {
        counts.push(cached.unwrap_or_else(|| counter.count_message(&message)));
        messages.push(message);
        origin.push(source);
    }
    let conversation = Conversation {
        messages,
        lines: Vec::new(),
        ..before.conversation
    };
    Applied {
        conversation,
        counts: Counts::from_totals(counts, before.counts.outside).with_priming_of(&before.counts),
        origin,
        discarded: before.discarded,
    }
}

/// The removed spans of a plan: runs of consecutive dropped units, as unit index ranges.
pub(crate) fn spans(drop: &[usize]) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    for &u in drop {
        match spans.last_mut() {
            Some(span) if span.end == u => span.end = u + 1,
            _ => spans.push(u..u + 1),
        }
    }
    spans
}

/// Removes the plan's units and puts one marker per removed span (`markers[i]` for
/// `spans(drop)[i]`, when given) at the place of that span. Kept messages are moved, never
/// copied.
pub(crate) fn apply(
    mut before: Applied,
    units: &[Unit],
    drop: &[usize],
    markers: &[String],
    counter: &dyn TokenCounter,
) -> Applied {
    let wire = wire(before.conversation.format);
    let messages = std::mem::take(&mut before.conversation.messages);
    let mut kept = Vec::with_capacity(messages.len());
    let mut markers = markers.iter();
    let mut pending: Option<&String> = None;
    let mut sources = messages
        .into_iter()
        .zip(before.origin.iter().copied())
        .zip(&before.counts.messages);
    for (u, unit) in units.iter().enumerate() {
        let unit_messages = sources.by_ref().take(unit.messages.len());
        if drop.binary_search(&u).is_ok() {
            unit_messages.for_each(|((message, _), _)| before.discarded.message(message));
            let starts_span = u == 0 || drop.binary_search(&(u - 1)).is_err();
            if starts_span {
                pending = markers.next();
            }
            continue;
        }
        for ((message, source), &cached) in unit_messages {
            match pending.take() {
                Some(text) => place_marker(wire, &mut kept, text, (message, source, cached)),
                None => kept.push((message, source, Some(cached))),
            }
        }
    }
    rebuild(before, kept, counter)
}

/// A kept message with its origin and its cached count (`None` once changed).
type Kept = (Message, Source, Option<usize>);

/// Puts a span's marker before `next`, the first message kept after the span: merged into
/// `next` when the format wants it there (formats whose turns must alternate), else as a user
/// message of its own. The one place a marker is placed.
fn place_marker(
    wire: &dyn Wire,
    kept: &mut Vec<Kept>,
    text: &str,
    (mut message, source, cached): (Message, Source, usize),
) {
    if wire.merge_marker(&mut message, text) {
        kept.push((message, source.edited(), None));
    } else {
        kept.push((Message::new_text(Role::User, text), Source::Marker, None));
        kept.push((message, source, Some(cached)));
    }
}
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation::Format;
    use crate::format::parse_value;
    use crate::state::CountedInput;
    use crate::tokens::{CharEstimate, count_with};

    fn unit(start: usize, tokens: usize, pinned: bool) -> Unit {
        Unit {
            messages: start..start + 1,
            tokens,
            pinned,
            is_system: false,
            is_round: false,
            is_task: false,
            is_current: false,
            has_request: false,
        }
    }

    /// system, task, answer, 5 middle units, 4 tail units (the last pinned); 10 tokens each.
    fn twelve() -> Vec<Unit> {
        (0..12)
            .map(|i| Unit {
                is_system: i == 0,
                ..unit(i, 10, i == 0 || i == 11)
            })
            .collect()
    }

    fn limits(budget: usize) -> Limits {
        Limits {
            budget,
            fixed: 0,
            marker: 0,
            marker_each: 0,
            preserve_start: 2,
            preserve_end: 4,
            relax: true,
            requests_last: false,
            fold_before: 0,
        }
    }

    #[test]
    fn oldest_drops_from_the_start_after_system() {
        let plan = plan(Strategy::Oldest, &twelve(), &[], &limits(90));
        assert_eq!(
            (plan.drop, plan.fits, plan.tokens_after),
            (vec![1, 2, 3], true, 90)
        );
    }

    #[test]
    fn middle_keeps_the_head() {
        let plan = plan(Strategy::Middle, &twelve(), &[], &limits(90));
        assert_eq!((plan.drop, plan.relaxed), (vec![3, 4, 5], vec![]));
    }

    #[test]
    fn middle_relaxes_head_then_tail() {
        let plan = plan(Strategy::Middle, &twelve(), &[], &limits(30));
        assert_eq!(plan.drop, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(plan.relaxed, vec![Protection::Head, Protection::Tail]);
        assert!(plan.fits);
    }

    #[test]
    fn a_tail_unit_too_large_for_the_room_goes_alone() {
        // Unit 9, in the protected tail, is larger than the budget: removing it frees the room
        // the middle units had given up, so they come back and only it goes.
        let mut units = twelve();
        units[9].tokens = 500;
        let plan = plan(Strategy::Oldest, &units, &[], &limits(100));
        assert_eq!(plan.drop, vec![1, 9]);
        assert_eq!((plan.tokens_after, plan.fits), (100, true));
        assert_eq!(plan.relaxed, vec![Protection::Tail]);
        assert_eq!(plan.messages_kept, 10);
    }

    proptest::proptest! {
        /// Over any units and budget: a plan counts what it keeps, never removes a pinned unit,
        /// fits exactly when within the budget; and one that gave up the tail and keeps under
        /// 0.6 of the budget, or leaves no marker and keeps under 0.9 of it, could restore no
        /// unit it removed without going over (with markers priced by the span, restoring may
        /// split one, so that is checked with a shared reserve only).
        #[test]
        fn a_plan_meets_its_budget_and_keeps_what_room_allows(
            sizes in proptest::collection::vec((1usize..400, proptest::bool::weighted(0.1)), 1..30),
            budget in 1usize..3000,
            (marker, marker_each) in (0usize..40, 0usize..4),
            oldest in proptest::bool::ANY,
        ) {
            let units: Vec<Unit> = sizes
                .iter()
                .enumerate()
                .map(|(i, &(tokens, pinned))| unit(i, tokens, pinned))
                .collect();
            let limits = Limits { marker, marker_each, ..limits(budget) };
            let strategy = if oldest { Strategy::Oldest } else { Strategy::Middle };
            let plan = plan(strategy, &units, &[], &limits);
            let cost = |drop: &[usize]| {
                let spans = spans(drop).len();
                let kept = (0..units.len()).filter(|i| !drop.contains(i));
                let markers = spans * marker_each + if spans > 0 { marker } else { 0 };
                kept.map(|i| units[i].tokens).sum::<usize>() + markers
            };
            let tokens = cost(&plan.drop);
            proptest::prop_assert_eq!(plan.tokens_after, tokens);
            proptest::prop_assert_eq!(plan.messages_kept, units.len() - plan.drop.len());
            proptest::prop_assert!(plan.drop.iter().all(|&i| !units[i].pinned));
            proptest::prop_assert_eq!(plan.fits, tokens <= budget);
            // Any removed unit kept again: the plan counted as if made without it.
            for &i in &plan.drop {
                let fewer: Vec<usize> = plan.drop.iter().copied().filter(|&d| d != i).collect();
                let kept = keep(&plan, &units, &limits, i);
                proptest::prop_assert_eq!(&kept.drop, &fewer);
                proptest::prop_assert_eq!(kept.tokens_after, cost(&fewer));
                proptest::prop_assert_eq!(kept.messages_kept, plan.messages_kept + 1);
                proptest::prop_assert_eq!(kept.fits, cost(&fewer) <= budget);
                let tail = fewer.iter().any(|&d| d + limits.preserve_end >= units.len());
                proptest::prop_assert_eq!(kept.relaxed.contains(&Protection::Tail), tail);
                proptest::prop_assert!(kept.relaxed.iter().all(|p| plan.relaxed.contains(p)));
            }
            let underfilled = tokens * 10 < budget * REFILL_BELOW_TENTHS;
            let tail = plan.relaxed.contains(&Protection::Tail);
            let no_markers = marker == 0 && marker_each == 0;
            let unfilled = tokens * 10 < budget * REFILL_UNDER_TENTHS;
            if plan.fits && (tail && underfilled && marker_each == 0 || no_markers && unfilled) {
                for &i in &plan.drop {
                    let fewer: Vec<usize> = plan.drop.iter().copied().filter(|&d| d != i).collect();
                    proptest::prop_assert!(cost(&fewer) > budget, "unit {} could stay", i);
                }
            }
        }
    }

    proptest::proptest! {
        /// Relevant removal over any units, scores and budget: it never removes a pinned unit,
        /// counts what it keeps, fits whenever the pinned units and a marker leave room, and no
        /// unit it removed could come back within the budget (with a shared reserve); the same
        /// input gives the same plan. Order and pairing hold as for every plan: `drop` is
        /// ascending and only whole units go.
        #[test]
        fn relevant_removal_meets_its_budget_and_keeps_what_room_allows(
            sizes in proptest::collection::vec(
                (1usize..400, proptest::bool::weighted(0.1), 0u8..4), 1..30),
            budget in 1usize..3000,
            marker in 0usize..40,
        ) {
            let units: Vec<Unit> = sizes
                .iter()
                .enumerate()
                .map(|(i, &(tokens, pinned, _))| unit(i, tokens, pinned))
                .collect();
            let scores: Vec<f64> = sizes.iter().map(|&(_, _, s)| f64::from(s)).collect();
            let limits = Limits { marker, ..limits(budget) };
            let plan = plan(Strategy::Relevant, &units, &scores, &limits);
            proptest::prop_assert_eq!(&plan, &super::plan(Strategy::Relevant, &units, &scores, &limits));
            proptest::prop_assert!(plan.drop.windows(2).all(|w| w[0] < w[1]));
            proptest::prop_assert!(plan.drop.iter().all(|&i| !units[i].pinned));
            let cost = |drop: &[usize]| {
                let kept = (0..units.len()).filter(|i| !drop.contains(i));
                kept.map(|i| units[i].tokens).sum::<usize>() + if drop.is_empty() { 0 } else { marker }
            };
            proptest::prop_assert_eq!(plan.tokens_after, cost(&plan.drop));
            proptest::prop_assert_eq!(plan.fits, plan.tokens_after <= budget);
            let pinned: usize = units.iter().filter(|u| u.pinned).map(|u| u.tokens).sum();
            proptest::prop_assert!(plan.fits || pinned + marker > budget);
            if plan.fits {
                for &i in &plan.drop {
                    let fewer: Vec<usize> = plan.drop.iter().copied().filter(|&d| d != i).collect();
                    proptest::prop_assert!(cost(&fewer) > budget, "unit {} could stay", i);
                }
            }
        }
    }

    #[test]
    fn relevant_removal_keeps_the_scoring_unit_and_its_neighbour() {
        // Twelve units of 10 tokens, room for six: the system unit and the last are pinned;
        // unit 2 scores, units 1 and 3 beside it take half its score; the rest go oldest
        // first, so the newest fill what is left.
        let mut scores = vec![0.0; 12];
        scores[2] = 4.0;
        let plan = plan(Strategy::Relevant, &twelve(), &scores, &limits(60));
        assert_eq!(plan.drop, vec![4, 5, 6, 7, 8, 9]);
        assert!(plan.fits && plan.relaxed.is_empty());
    }

    #[test]
    fn pinned_units_alone_over_budget_do_not_fit() {
        let plan = plan(Strategy::Oldest, &twelve(), &[], &limits(19));
        assert!(!plan.fits);
        assert_eq!(plan.tokens_after, 20);
    }

    #[test]
    fn marker_reserve_counts_once_anything_is_removed() {
        let limits = Limits {
            marker: 5,
            ..limits(100)
        };
        let plan = plan(Strategy::Oldest, &twelve(), &[], &limits);
        assert_eq!((plan.drop, plan.tokens_after), (vec![1, 2, 3], 95));
    }

    /// The pinned tokens of `input` with `drop` applied (a marker in each span), as the run
    /// finds them and as grouping the output again would, and the output's messages.
    fn pinned_both_ways(format: Format, drop: &[usize]) -> (usize, usize, usize) {
        let conversation = parse_value(five_turns(), Some(format)).unwrap();
        let counts = count_with(&conversation, &CharEstimate);
        let facts = CountedInput::checked(&conversation, (&counts, 0), None).unwrap();
        let state = Applied::unchanged(conversation, counts);
        let units = state.units(&facts);
        let pinned = state.pinned_inputs(&units);
        let markers = vec!["[3 earlier messages removed]".to_string(); drop.len()];
        let output = apply(state, &units, drop, &markers, &CharEstimate);
        let regrouped = output.units(&facts);
        let again: usize = regrouped
            .iter()
            .filter(|u| u.pinned)
            .map(|u| u.tokens)
            .sum();
        let again = again + output.counts.outside + output.counts.priming();
        let messages = output.conversation.messages.len();
        (output.pinned_tokens(&pinned), again, messages)
    }

    fn five_turns() -> serde_json::Value {
        json!({"model": "m", "max_tokens": 100, "messages": [
            {"role": "user", "content": "fix the parser in src/parse.rs"},
            {"role": "assistant", "content": "looking at it now"},
            {"role": "user", "content": "also keep the old error names"},
            {"role": "assistant", "content": "done, the names are kept"},
            {"role": "user", "content": "now run the tests"}
        ]})
    }

    #[test]
    fn pinned_tokens_from_the_plans_units_equal_the_outputs_grouped_again() {
        // A marker merged into the current request (Anthropic) is counted with it either way;
        // one standing alone (OpenAI) is pinned neither way.
        for format in [Format::Anthropic, Format::OpenAi] {
            for drop in [&[1, 2, 3][..], &[1][..], &[3][..], &[]] {
                let (run, regrouped, _) = pinned_both_ways(format, drop);
                assert_eq!(run, regrouped, "{format:?} {drop:?}");
            }
            let (_, _, messages) = pinned_both_ways(format, &[1, 2, 3]);
            let merged = format == Format::Anthropic;
            assert_eq!(messages, if merged { 2 } else { 3 }, "{format:?}");
        }
    }
}
