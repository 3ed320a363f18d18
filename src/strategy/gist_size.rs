//! How much of each cleared tool output stays: the size of its gist ([`crate::gist`]) at each
//! level, and which rounds give most when the budget is tight (the oldest).

use crate::gist::Room;

/// How much of a cleared output its gist keeps ([`crate::gist::gist`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GistSize {
    /// Up to a [`GIST_SHARE`]th of the output, at most [`GIST_MAX`] tokens, or up to
    /// [`FULL_NAMES_GROWTH`] times that as far as the output's names need it.
    Full,
    /// Up to a [`HALF_SHARE`]th of the output, at most [`HALF_MAX`] tokens: the step between
    /// full and small gists, so that an old output the budget cannot give a full gist does not
    /// fall straight to a few names (a large file read whole: 600 tokens, then 96).
    Half,
    /// Up to a [`SMALL_SHARE`]th of it, at most [`SMALL_MAX`] tokens: mostly its names.
    Small,
    /// None: the bare placeholder.
    Bare,
}

/// Trimmed rounds, the newest, whose outputs keep gists; older ones clear to bare placeholders.
pub(super) const GIST_ROUNDS: usize = 48;
/// A full gist takes up to this share of its output (its inverse) …
const GIST_SHARE: usize = 4;
/// … and at most this many tokens …
const GIST_MAX: usize = 600;
/// … unless its names need more: up to this many times that room. A gist keeps names before
/// lines, and the names are what a later step writes; a small file dense with them (a router,
/// a config) holds more of those than its size gives it. Only full gists grow: under a tight
/// budget, the room one output's names take is another's.
const FULL_NAMES_GROWTH: usize = 2;
/// A half gist takes up to this share of its output (its inverse) …
const HALF_SHARE: usize = 8;
/// … and at most this many tokens.
const HALF_MAX: usize = 300;
/// Outputs under this many tokens are cleared only for poorer gists than full ones (or when
/// stale).
pub(super) const SMALL_OUTPUT: usize = 64;
/// A small gist takes up to this share of its output (its inverse) …
const SMALL_SHARE: usize = 16;
/// … at least this many (a few names) …
const SMALL_MIN: usize = 12;
/// … and at most this many tokens.
const SMALL_MAX: usize = 96;

impl GistSize {
    /// The room of the gist of an output of `tokens` tokens.
    pub(super) fn room(self, tokens: usize) -> Room {
        match self {
            Self::Full => {
                let least = (tokens / GIST_SHARE).min(GIST_MAX);
                Room {
                    least,
                    most: least * FULL_NAMES_GROWTH,
                }
            }
            Self::Half => Room::fixed((tokens / HALF_SHARE).min(HALF_MAX)),
            Self::Small => Room::fixed((tokens / SMALL_SHARE).clamp(SMALL_MIN, SMALL_MAX)),
            Self::Bare => Room::fixed(0),
        }
    }
}

/// When full gists of every round's output (`full`, each round's plan; `saves`, a plan's
/// tokens saved) cannot save the `needed` tokens, the oldest keep less: the newest
/// [`GIST_ROUNDS`] (those with gists) planned again by `plan_from(size, first round)` with half
/// gists, then small ones, then none, as far as needed, and each round's plan chosen by
/// [`oldest_poorest`]. With the plans, how many rounds from the first are bare for want of room:
/// up to the last one whose output the budget left no gist (0 when every one has one).
pub(super) fn with_poorer_gists<P>(
    full: Vec<Option<P>>,
    needed: usize,
    saves: impl Fn(&P) -> usize,
    mut plan_from: impl FnMut(GistSize, usize) -> Vec<Option<P>>,
) -> (Vec<Option<P>>, usize) {
    let total = |plans: &[Option<P>]| plans.iter().flatten().map(&saves).sum::<usize>();
    // Only the newest rounds have gists to shrink; older ones are bare already.
    let start = full.len().saturating_sub(GIST_ROUNDS);
    let bare = total(&full[..start]);
    let mut levels = vec![full];
    for size in [GistSize::Half, GistSize::Small, GistSize::Bare] {
        let poorer = plan_from(size, start);
        let enough = bare + total(&poorer) >= needed;
        levels.push(poorer);
        if enough {
            break;
        }
    }
    let bare = levels.len() == BARE_LEVEL + 1;
    let (plans, poorest) = oldest_poorest(levels, needed, saves);
    let bare_rounds = match poorest {
        Some(last) if bare => last.max(start) + 1,
        _ => 0,
    };
    (plans, bare_rounds)
}

/// The index of the bare level in [`with_poorer_gists`]'s levels: full, half, small, none.
const BARE_LEVEL: usize = 3;

/// Each round's plan from one of `levels` (every round's plans with full gists, then the
/// newest rounds' with poorer ones, aligned at the end; `saves` is a plan's tokens saved), the oldest rounds at the poorest level
/// needed so that full gists of the rounds after them save the `needed` tokens left: the
/// oldest outputs give most. With the plans, the last round planned at the poorest level,
/// if any.
fn oldest_poorest<P>(
    levels: Vec<Vec<Option<P>>>,
    needed: usize,
    saves: impl Fn(&P) -> usize,
) -> (Vec<Option<P>>, Option<usize>) {
    let worth = |plan: &Option<P>| plan.as_ref().map_or(0, &saves);
    let mut rest: usize = levels[0].iter().map(worth).sum();
    let mut deficit = needed;
    let rounds = levels[0].len();
    let starts: Vec<usize> = levels.iter().map(|level| rounds - level.len()).collect();
    let mut levels: Vec<_> = levels.into_iter().map(Vec::into_iter).collect();
    let mut plans = Vec::with_capacity(rounds);
    let mut poorest = None;
    for round in 0..rounds {
        let choices: Vec<Option<P>> = levels
            .iter_mut()
            .zip(&starts)
            .filter(|(_, start)| round >= **start)
            .filter_map(|(level, _)| level.next())
            .collect();
        rest -= worth(&choices[0]);
        let at = choices
            .iter()
            .position(|plan| worth(plan) + rest >= deficit)
            .unwrap_or(choices.len() - 1);
        if at == levels.len() - 1 {
            poorest = Some(round);
        }
        let plan = choices.into_iter().nth(at).flatten();
        deficit = deficit.saturating_sub(worth(&plan));
        plans.push(plan);
    }
    (plans, poorest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each round's plan at `size`: the tokens its one output of `tokens` saves.
    fn plans(size: GistSize, outputs: &[usize]) -> Vec<Option<usize>> {
        outputs
            .iter()
            .map(|&t| Some(t - size.room(t).least))
            .collect()
    }

    #[test]
    fn an_old_output_the_budget_cannot_give_a_full_gist_keeps_a_half_one_before_a_small_one() {
        let outputs = [4000, 4000, 4000];
        let full_saves: usize = plans(GistSize::Full, &outputs).iter().flatten().sum();
        // A little more than full gists save: the oldest output gives the rest.
        let (rooms, bare) = poorer(&outputs, full_saves + 200);
        assert_eq!(rooms, [GistSize::Half.room(4000).least, 600, 600]);
        assert_eq!(GistSize::Half.room(4000), Room::fixed(300));
        assert_eq!(bare, 0, "every output keeps a gist");
    }

    #[test]
    fn rounds_the_budget_leaves_no_gist_are_counted_from_the_oldest() {
        let outputs = [4000, 4000, 4000, 4000];
        // Small gists of all four save less than needed: the oldest go bare, as far as full
        // gists of the rest would need, and the newest keeps what is left.
        let small: usize = plans(GistSize::Small, &outputs).iter().flatten().sum();
        let (rooms, bare) = poorer(&outputs, small + GistSize::Small.room(4000).least);
        assert_eq!(rooms, [0, 0, 0, GistSize::Small.room(4000).least]);
        assert_eq!(bare, 3);
    }

    /// The gist rooms [`with_poorer_gists`] chooses for `outputs` to save `needed` tokens (which
    /// they must), and the rounds it leaves bare.
    fn poorer(outputs: &[usize], needed: usize) -> (Vec<usize>, usize) {
        let (chosen, bare) = with_poorer_gists(
            plans(GistSize::Full, outputs),
            needed,
            |saved| *saved,
            |size, from| plans(size, &outputs[from..]),
        );
        assert!(chosen.iter().flatten().sum::<usize>() >= needed);
        let rooms = outputs
            .iter()
            .zip(&chosen)
            .map(|(t, saved)| t - saved.unwrap_or(0))
            .collect();
        (rooms, bare)
    }
}
