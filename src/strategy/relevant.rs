//! Relevant removal's order: which units share the most with the current request.
//!
//! A unit's score is its best message's ([`crate::relevance`]); a unit next to a scoring one
//! takes a share of its score too (a question's answer, the call before a result), so that a
//! fact is kept with what frames it. Units scoring at least 5% of the best are
//! **relevant**: they are removed last, the weakest first; the others go before them, the
//! oldest first, so that what room relevant units leave keeps the newest history.

use std::cmp::Ordering;

use crate::units::Unit;

/// The share of a unit's score its neighbours take, in percent.
const NEIGHBOUR_PCT: f64 = 50.0;
/// A unit is relevant when it scores at least this share of the best, in percent.
const RELEVANT_PCT: f64 = 5.0;

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
