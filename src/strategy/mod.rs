//! Removal strategies: which whole units go, and the one step that applies that choice.
//!
//! Both strategies remove units oldest first until the conversation fits the budget, never a
//! pinned unit, and keep the protected tail (the last `preserve_end` units) while they can:
//! - **oldest** keeps only system units at the head and drops from the start forward;
//! - **middle** also keeps the first `preserve_start` non-system units (the task in the user's
//!   own words and what answered it) and drops what lies between head and tail.
//!
//! When a strategy cannot fit with its protections it relaxes them in a fixed order — the head
//! first, then the tail unit by unit — and names each one it gave up. Only when the pinned units
//! alone exceed the budget does a plan say it does not fit. Planning reads the units' cached
//! counts: O(units), no tokenizing. Strategies return a [`Plan`]; [`apply`] is the only code that
//! removes messages.

pub(crate) mod tools;

use serde::Serialize;

use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::features::{Features, Thresholds};
use crate::format::Format;
use crate::tokens::{Counts, TokenCounter};
use crate::units::Unit;

/// A message-removal strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Keep the head (system, task) and the tail; remove from the middle.
    Middle,
    /// Keep system units and the tail; remove from the start.
    Oldest,
}

impl Strategy {
    /// The strategy's name as the CLI and the report spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Middle => "middle",
            Self::Oldest => "oldest",
        }
    }
}

/// A protection a plan gave up to fit the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protection {
    /// Middle removal's kept head.
    Head,
    /// The protected tail of `preserve_end` units.
    Tail,
}

/// What a plan must fit into, and what it must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The token budget for the whole conversation.
    pub budget: usize,
    /// Tokens that are not in any unit: the Anthropic system prompt and the reply priming.
    pub fixed: usize,
    /// Tokens reserved for the removal marker once anything is removed (0 without a marker).
    pub marker: usize,
    /// Non-system units middle removal keeps at the head.
    pub preserve_start: usize,
    /// Units kept at the tail while the budget allows.
    pub preserve_end: usize,
}

/// Which units a strategy removes, and what is left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
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

/// Plans `strategy` over `units` within `limits`.
pub(crate) fn plan(strategy: Strategy, units: &[Unit], limits: &Limits) -> Plan {
    let total: usize = limits.fixed + units.iter().map(|u| u.tokens).sum::<usize>();
    let messages: usize = units.iter().map(|u| u.messages.len()).sum();
    let tail_start = units.len().saturating_sub(limits.preserve_end);
    let head: Vec<usize> = match strategy {
        Strategy::Middle => units
            .iter()
            .enumerate()
            .filter(|(_, u)| !u.is_system)
            .map(|(i, _)| i)
            .take(limits.preserve_start)
            .collect(),
        Strategy::Oldest => Vec::new(),
    };
    let is_head = |i: &usize| head.binary_search(i).is_ok();
    // Removal order: the unprotected middle, then the head, then the tail; oldest first in each.
    let order = (0..tail_start)
        .filter(|i| !is_head(i))
        .map(|i| (None, i))
        .chain(
            head.iter()
                .copied()
                .filter(|&i| i < tail_start)
                .map(|i| (Some(Protection::Head), i)),
        )
        .chain((tail_start..units.len()).map(|i| (Some(Protection::Tail), i)));
    let mut plan = Plan {
        strategy,
        drop: Vec::new(),
        tokens_after: total,
        messages_kept: messages,
        fits: total <= limits.budget,
        relaxed: Vec::new(),
    };
    let mut kept_tokens = total;
    for (protection, i) in order {
        if plan.fits {
            break;
        }
        let unit = &units[i];
        if unit.pinned {
            continue;
        }
        if let Some(protection) = protection {
            if plan.relaxed.last() != Some(&protection) {
                plan.relaxed.push(protection);
            }
        }
        plan.drop.push(i);
        kept_tokens -= unit.tokens;
        plan.messages_kept -= unit.messages.len();
        plan.tokens_after = kept_tokens + limits.marker;
        plan.fits = plan.tokens_after <= limits.budget;
    }
    plan.drop.sort_unstable();
    plan
}

/// A conversation after a step changed it, with its exact counts and where each message came
/// from.
#[derive(Debug, PartialEq)]
pub(crate) struct Applied {
    /// The changed conversation.
    pub conversation: Conversation,
    /// Exact counts of its messages: cached ones for unchanged messages, fresh ones for the rest.
    pub counts: Counts,
    /// For each message, the input message it is or was changed from; `None` for a new one.
    pub origin: Vec<Option<usize>>,
}

impl Applied {
    /// The starting point: a conversation as read, with its counts.
    pub(crate) fn unchanged(conversation: Conversation, counts: Counts) -> Self {
        let origin = (0..conversation.messages.len()).map(Some).collect();
        Self {
            conversation,
            counts,
            origin,
        }
    }

    /// The features of this state against `budget`.
    pub(crate) fn measure(&self, budget: usize, thresholds: &Thresholds) -> Features {
        Features::measure(&self.conversation, &self.counts, budget, thresholds)
    }

    /// The input messages that no longer appear, as `[start, end)` ranges.
    pub(crate) fn removed(&self, input_messages: usize) -> Vec<[usize; 2]> {
        let mut present = vec![false; input_messages];
        for index in self.origin.iter().flatten() {
            present[*index] = true;
        }
        let mut ranges: Vec<[usize; 2]> = Vec::new();
        for (index, _) in present.iter().enumerate().filter(|(_, p)| !**p) {
            match ranges.last_mut() {
                Some(range) if range[1] == index => range[1] = index + 1,
                _ => ranges.push([index, index + 1]),
            }
        }
        ranges
    }
}

/// Builds the output of a step from its messages, each with its origin and its count when it is
/// known (others are counted here, once).
fn rebuild(
    before: Applied,
    kept: Vec<(Message, Option<usize>, Option<usize>)>,
    counter: &dyn TokenCounter,
) -> Applied {
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
        ..before.conversation
    };
    Applied {
        conversation,
        counts: Counts::from_totals(counts, before.counts.system),
        origin,
    }
}

/// Removes the plan's units and puts `marker` (when given) where the first removed run was: as a
/// user message, or in Anthropic format merged into the next message when that is a user turn
/// without tool results. Kept messages are moved, never copied.
pub(crate) fn apply(
    mut before: Applied,
    units: &[Unit],
    drop: &[usize],
    marker: Option<&str>,
    counter: &dyn TokenCounter,
) -> Applied {
    let anthropic = before.conversation.format == Format::Anthropic;
    let messages = std::mem::take(&mut before.conversation.messages);
    let mut kept = Vec::with_capacity(messages.len());
    let mut pending = marker.filter(|_| !drop.is_empty());
    let mut sources = messages
        .into_iter()
        .zip(before.origin.iter().copied())
        .zip(&before.counts.messages);
    for (u, unit) in units.iter().enumerate() {
        let unit_messages = sources.by_ref().take(unit.messages.len());
        if drop.binary_search(&u).is_ok() {
            unit_messages.for_each(std::mem::drop);
            continue;
        }
        let after_gap = u > 0 && drop.binary_search(&(u - 1)).is_ok();
        for (offset, ((message, source), &cached)) in unit_messages.enumerate() {
            match pending.filter(|_| after_gap && offset == 0) {
                Some(text) if anthropic && can_merge(&message) => {
                    kept.push((merge_marker(message, text), source, None));
                    pending = None;
                }
                Some(text) => {
                    kept.push((Message::new_text(Role::User, text), None, None));
                    kept.push((message, source, Some(cached)));
                    pending = None;
                }
                None => kept.push((message, source, Some(cached))),
            }
        }
    }
    rebuild(before, kept, counter)
}

/// Whether the marker may be merged into `message`: a user turn with no tool results.
fn can_merge(message: &Message) -> bool {
    message.role == Role::User && !message.has_results()
}

/// `message` with the marker text in front of its content.
fn merge_marker(mut merged: Message, text: &str) -> Message {
    if let (Layout::Text, [Part::Text { text: existing, .. }]) =
        (merged.layout, merged.parts.as_mut_slice())
    {
        *existing = format!("{text}\n\n{existing}");
    } else {
        let mut block = serde_json::Map::new();
        block.insert("type".into(), serde_json::Value::String("text".into()));
        merged.parts.insert(
            0,
            Part::Text {
                text: text.to_string(),
                extra: block,
            },
        );
        merged.layout = Layout::Blocks;
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(start: usize, tokens: usize, pinned: bool, is_system: bool) -> Unit {
        Unit {
            messages: start..start + 1,
            tokens,
            pinned,
            is_system,
            is_round: false,
        }
    }

    /// system, task, answer, 5 middle units, 4 tail units (the last pinned); 10 tokens each.
    fn twelve() -> Vec<Unit> {
        (0..12)
            .map(|i| unit(i, 10, i == 0 || i == 11, i == 0))
            .collect()
    }

    fn limits(budget: usize) -> Limits {
        Limits {
            budget,
            fixed: 0,
            marker: 0,
            preserve_start: 2,
            preserve_end: 4,
        }
    }

    #[test]
    fn oldest_drops_from_the_start_after_system() {
        let plan = plan(Strategy::Oldest, &twelve(), &limits(90));
        assert_eq!(
            (plan.drop, plan.fits, plan.tokens_after),
            (vec![1, 2, 3], true, 90)
        );
    }

    #[test]
    fn middle_keeps_the_head() {
        let plan = plan(Strategy::Middle, &twelve(), &limits(90));
        assert_eq!((plan.drop, plan.relaxed), (vec![3, 4, 5], vec![]));
    }

    #[test]
    fn middle_relaxes_head_then_tail() {
        let plan = plan(Strategy::Middle, &twelve(), &limits(30));
        assert_eq!(plan.drop, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(plan.relaxed, vec![Protection::Head, Protection::Tail]);
        assert!(plan.fits);
    }

    #[test]
    fn pinned_units_alone_over_budget_do_not_fit() {
        let plan = plan(Strategy::Oldest, &twelve(), &limits(19));
        assert!(!plan.fits);
        assert_eq!(plan.tokens_after, 20);
    }

    #[test]
    fn marker_reserve_counts_once_anything_is_removed() {
        let limits = Limits {
            marker: 5,
            ..limits(100)
        };
        let plan = plan(Strategy::Oldest, &twelve(), &limits);
        assert_eq!((plan.drop, plan.tokens_after), (vec![1, 2, 3], 95));
    }
}
