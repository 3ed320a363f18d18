//! Relevant removal's order: which units share the most with the current request.
//!
//! A unit's score is its best message's ([`crate::relevance`]); a unit next to a scoring one
//! takes a share of its score too (a question's answer, the call before a result), so that a
//! fact is kept with what frames it. Units scoring at least 5% of the best are
//! **relevant**: they are removed last, the weakest first; the others go before them, the
//! oldest first, so that what room relevant units leave keeps the newest history.
//!
//! [`Scored`] holds a state's units scored against its current request, and names the terms
//! that kept a unit for the report.

use std::cmp::Ordering;

use crate::account::KeptFor;
use crate::relevance::Relevance;
use crate::state::Applied;
use crate::strategy::Plan;
use crate::units::Unit;

/// The share of a unit's score its neighbours take, in percent.
const NEIGHBOUR_PCT: f64 = 50.0;
/// A unit is relevant when it scores at least this share of the best, in percent.
const RELEVANT_PCT: f64 = 5.0;
/// The report names at most this many of the terms that kept a unit.
const KEPT_FOR_TERMS: usize = 5;

/// The relevance of one state's units to its current request: each unit's score (its best
/// message's) and the messages' matched terms.
#[derive(Debug, Default)]
pub(crate) struct Scored {
    /// Each unit's score.
    pub(crate) units: Vec<f64>,
    messages: Relevance,
}

impl Scored {
    /// Scores `units` of `state` against the current request and, when the last unit is a tool
    /// round, its calls' arguments.
    pub(crate) fn measure(state: &Applied, units: &[Unit]) -> Self {
        let messages = &state.conversation.messages;
        let request = units
            .iter()
            .find(|u| u.is_current)
            .map_or(0..0, |u| u.messages.clone());
        let calls = units
            .last()
            .filter(|u| u.is_round && !u.is_current)
            .map_or(0..0, |u| u.messages.clone());
        let relevance = Relevance::measure(messages, request, calls);
        let units = units
            .iter()
            .map(|u| {
                relevance.scores[u.messages.clone()]
                    .iter()
                    .copied()
                    .fold(0.0, f64::max)
            })
            .collect();
        Self {
            units,
            messages: relevance,
        }
    }

    /// The units a relevant plan kept for their relevance, each with the terms that kept it
    /// (its own, or its scoring neighbour's), as the report gives them.
    pub(crate) fn kept_for(&self, state: &Applied, units: &[Unit], plan: &Plan) -> Vec<KeptFor> {
        let reasons = reasons(units, &self.units);
        (0..units.len())
            .filter(|u| plan.drop.binary_search(u).is_err() && !units[*u].pinned)
            .filter_map(|u| {
                let (_, from) = reasons[u]?;
                let best = units[from]
                    .messages
                    .clone()
                    .max_by(|&a, &b| self.messages.scores[a].total_cmp(&self.messages.scores[b]))?;
                let terms = self
                    .messages
                    .terms_of(best)
                    .take(KEPT_FOR_TERMS)
                    .map(str::to_owned)
                    .collect();
                Some(KeptFor {
                    message: state.origin[units[u].messages.start].input(),
                    terms,
                })
            })
            .collect()
    }
}

/// Each unit's effective score and the unit it takes it from (itself or a neighbour); `None`
/// for a unit that is not relevant. `scores` are the units' own scores (empty: none scores).
pub(crate) fn reasons(units: &[Unit], scores: &[f64]) -> Vec<Option<(f64, usize)>> {
    let own = |i: usize| scores.get(i).copied().unwrap_or(0.0);
    let effective: Vec<(f64, usize)> = (0..units.len())
        .map(|i| {
            let mut best = (own(i), i);
            for j in [i.wrapping_sub(1), i + 1] {
                let lent = own(j) * NEIGHBOUR_PCT / 100.0;
                if j < units.len() && lent > best.0 {
                    best = (lent, j);
                }
            }
            best
        })
        .collect();
    let top = effective.iter().map(|e| e.0).fold(0.0, f64::max);
    effective
        .into_iter()
        .map(|(score, from)| {
            (top > 0.0 && score > 0.0 && score * 100.0 >= top * RELEVANT_PCT)
                .then_some((score, from))
        })
        .collect()
}

/// The order in which relevant removal removes units: those not relevant, oldest first, then
/// the relevant ones, weakest first (of equal scores, the older first).
pub(crate) fn removal_order(units: &[Unit], scores: &[f64]) -> Vec<usize> {
    let reasons = reasons(units, scores);
    let mut order: Vec<usize> = (0..units.len()).collect();
    let key = |i: usize| reasons[i].map(|(score, _)| score);
    order.sort_by(|&a, &b| match (key(a), key(b)) {
        (None, None) => a.cmp(&b),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.total_cmp(&y).then(a.cmp(&b)),
    });
    order
}
