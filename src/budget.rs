//! Token budgets: where a run's budget comes from, and the one place it is resolved.
//!
//! A budget is an explicit token count, a share of the conversation's own total, or a model's
//! context window with a trigger and a target (docs/replay.md: the gap between the two keeps
//! compaction from running on every turn). [`Budget::resolve`] turns any of them into a number
//! of tokens and says whether compaction is needed at all; every caller goes through it.

use crate::account::LoopDepth;
use crate::conversation::{Conversation, Role};
use crate::error::{Error, Result};
use crate::tokens::Counts;

/// Compact when usage passes this share of the model's window (docs/replay.md).
pub(crate) const TRIGGER: f64 = 0.7;
/// Compact down to this share of the model's window (docs/replay.md); in an agent loop whose
/// depth follows its traffic, the shallowest it compacts to.
pub(crate) const TARGET_RATIO: f64 = 0.5;
/// The deepest an agent loop whose depth follows its traffic compacts to, as a share of the
/// window (docs/decisions.md: deeper, the references the agent's next steps use fell below
/// what the fixed target kept).
pub(crate) const DEPTH_FLOOR: f64 = 0.2;
/// The calls whose traffic an agent loop's compaction keeps room for: the agent's recent work,
/// what its next steps use most (docs/decisions.md).
pub(crate) const RECENT_CALLS: usize = 8;

/// Where the token budget comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// An explicit number of tokens.
    Tokens(usize),
    /// A share of the conversation's current total, above 0.
    Ratio(f64),
    /// The model's context window: compact when usage passes `trigger` of it, down to `target`
    /// of it. Needs a profile with a context window ([`Options::for_model`]).
    ///
    /// [`Options::for_model`]: crate::Options::for_model
    Window {
        /// Share of the window that triggers compaction.
        trigger: f64,
        /// Share of the window to compact down to.
        target: f64,
    },
}

impl Budget {
    /// The window budget with the default trigger (70%) and target (50%).
    pub fn window() -> Self {
        Self::window_with(None, None)
    }

    /// A window budget with `trigger` and `target`, each defaulting (70%, 50%) when `None`.
    pub fn window_with(trigger: Option<f64>, target: Option<f64>) -> Self {
        Self::Window {
            trigger: trigger.unwrap_or(TRIGGER),
            target: target.unwrap_or(TARGET_RATIO),
        }
    }

    /// The budget that whichever of these values names: `tokens`, else `ratio`, else a window
    /// with `trigger` and `target` (each defaulting when only the other is given); `None` when
    /// none is given (a model's window budget then applies, if there is a model).
    pub fn from_parts(
        tokens: Option<usize>,
        ratio: Option<f64>,
        trigger: Option<f64>,
        target: Option<f64>,
    ) -> Option<Self> {
        match (tokens, ratio, trigger, target) {
            (Some(tokens), ..) => Some(Self::Tokens(tokens)),
            (None, Some(ratio), ..) => Some(Self::Ratio(ratio)),
            (None, None, None, None) => None,
            (None, None, trigger, target) => Some(Self::window_with(trigger, target)),
        }
    }

    /// Resolves the budget for a conversation of `total` tokens and a model window of
    /// `window` tokens (0 when there is no model): the budget in tokens, and whether the
    /// conversation must be compacted to meet it.
    ///
    /// # Errors
    /// [`Error::BadBudget`] naming the field: a ratio that is not a number above 0, a budget
    /// that comes to 0 tokens, a window budget without a window, a trigger below the target.
    pub(crate) fn resolve(self, total: usize, window: usize) -> Result<ResolvedBudget> {
        match self {
            Self::Tokens(0) => Err(Error::bad_budget(
                "tokens",
                0,
                "a budget of 0 tokens fits nothing",
            )),
            Self::Tokens(tokens) => Ok(ResolvedBudget::new(tokens, total > tokens)),
            Self::Ratio(ratio) => {
                let tokens = share("ratio", ratio, total)?;
                if tokens == 0 && total > 0 {
                    return Err(Error::bad_budget(
                        "ratio",
                        ratio,
                        format!("{ratio} of {total} tokens is 0 tokens"),
                    ));
                }
                Ok(ResolvedBudget::new(tokens, total > tokens))
            }
            Self::Window { trigger, target } => {
                if window == 0 {
                    return Err(Error::bad_budget(
                        "context_window",
                        0,
                        "a window budget needs a model profile with a context window",
                    ));
                }
                let trigger_at = share("trigger", trigger, window)?;
                let target_at = share("target", target, window)?;
                if target > trigger {
                    return Err(Error::bad_budget(
                        "target",
                        target,
                        format!("the target is above the trigger ({trigger})"),
                    ));
                }
                if total <= trigger_at {
                    Ok(ResolvedBudget::new(trigger_at, false))
                } else {
                    Ok(ResolvedBudget::new(target_at.max(1), true))
                }
            }
        }
    }

    /// The token count above which a long-running session compacts: the budget itself, or the
    /// window's trigger share. A ratio has no fixed trigger.
    ///
    /// # Errors
    /// As [`Budget::resolve`]; a ratio budget is refused.
    pub(crate) fn trigger_tokens(self, window: usize) -> Result<usize> {
        match self {
            Self::Tokens(_) | Self::Window { .. } => self.resolve(0, window).map(|r| r.tokens),
            Self::Ratio(ratio) => Err(Error::bad_budget(
                "ratio",
                ratio,
                "a session needs a fixed trigger: a token budget or a model's window",
            )),
        }
    }

    /// Checks the budget's values without a conversation, for what resolves it later (the
    /// bench, a request compactor): as [`Budget::resolve`] checks them, and a window's trigger
    /// at most the whole window (a trigger past it is never reached before the window is).
    ///
    /// # Errors
    /// As [`Budget::resolve`], for the values that can be checked alone; a trigger above 1.
    pub(crate) fn check(self) -> Result<()> {
        match self {
            Self::Tokens(_) => self.resolve(0, 0).map(|_| ()),
            Self::Ratio(ratio) => share("ratio", ratio, 0).map(|_| ()),
            Self::Window { trigger, .. } => {
                self.resolve(0, 1)?;
                if trigger > 1.0 {
                    return Err(Error::bad_budget(
                        "trigger",
                        trigger,
                        "a share of the window is at most 1",
                    ));
                }
                Ok(())
            }
        }
    }
}

/// A resolved budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResolvedBudget {
    /// The budget in tokens.
    pub(crate) tokens: usize,
    /// Whether the conversation must be compacted to meet it.
    pub(crate) compact: bool,
}

impl ResolvedBudget {
    fn new(tokens: usize, compact: bool) -> Self {
        Self { tokens, compact }
    }
}

/// An agent loop's recent traffic, read from the conversation alone (so the proxy, replaying a
/// body, finds the same): what comes before its first model call, what its last calls added,
/// and so how deep a compaction can go while keeping the agent's recent work.
///
/// A model call starts at an assistant message after a message of another role; its traffic
/// runs to the next call's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// Tokens of the whole conversation: its messages, what lies outside them, the priming.
    total: usize,
    /// Tokens of the calls between the first call and the last [`RECENT_CALLS`]: what a
    /// compaction may take out without touching the recent work.
    older: usize,
    /// Tokens the last `calls` calls added.
    recent: usize,
    /// The calls measured, at most [`RECENT_CALLS`].
    calls: usize,
}

impl Traffic {
    /// The traffic of `conversation`, counted as `counts`; `None` before its first call.
    pub(crate) fn measure(conversation: &Conversation, counts: &Counts) -> Option<Self> {
        let messages = &conversation.messages;
        let starts: Vec<usize> = (0..messages.len())
            .filter(|&i| {
                messages[i].role == Role::Assistant
                    && (i == 0 || messages[i - 1].role != Role::Assistant)
            })
            .collect();
        let first = *starts.first()?;
        let calls = starts.len().min(RECENT_CALLS);
        let recent_from = starts[starts.len() - calls];
        let sum = |from: usize, to: usize| counts.messages[from..to].iter().sum::<usize>();
        Some(Self {
            total: counts.total(),
            older: sum(first, recent_from),
            recent: sum(recent_from, messages.len()),
            calls,
        })
    }

    /// Tokens a call adds, at the rate of the recent calls.
    pub(crate) fn growth(self) -> usize {
        self.recent.div_ceil(self.calls)
    }

    /// How deep a compaction goes in a window of `window` tokens, triggered at `trigger` tokens,
    /// with `target` (a share of the window) as its shallowest: the conversation less its
    /// older calls, kept between [`DEPTH_FLOOR`] of the window and the target, and a call below
    /// the trigger where that is above the floor, so that the next call does not compact
    /// again.
    ///
    /// Going deeper only lowers the expected input cost under prompt caching — each later call
    /// reads less, and the rewrite of the prefix that a compaction is comes after more calls —
    /// so the depth is the deepest that keeps the recent calls whole (docs/decisions.md).
    pub(crate) fn depth(self, window: usize, trigger: usize, target: f64) -> LoopDepth {
        let part = |value: f64| share("target", value, window).unwrap_or(0);
        let (floor, target) = (part(DEPTH_FLOOR), part(target));
        let growth = self.growth();
        let keep = self.total - self.older;
        let floor = floor.min(target);
        // Room for a call, where one fits above the floor (a call larger than that, the last
        // one read whole, say, is no rate to make room for).
        let below_trigger = trigger.saturating_sub(growth.max(1));
        let kept = keep.clamp(floor, target);
        let chosen = if below_trigger >= floor {
            kept.min(below_trigger)
        } else {
            kept
        }
        .max(1);
        LoopDepth {
            growth_per_call: growth,
            calls_measured: self.calls,
            target: chosen,
            room_calls: None,
            window_short: keep + RECENT_CALLS * growth > trigger,
        }
    }
}

/// `value` of `of` tokens, rounded down; `value` must be a finite number above 0. A product
/// within [`SHARE_SLACK`] of a whole number is that number: the share was written or computed
/// as that many tokens (`0.57` of 100,000, or a depth in tokens over its window), and the
/// multiplication's rounding error must not cost it a token.
fn share(field: &'static str, value: f64, of: usize) -> Result<usize> {
    if !value.is_finite() || value <= 0.0 {
        return Err(Error::bad_budget(field, value, "expected a number above 0"));
    }
    let tokens = of as f64 * value;
    let whole = tokens.round();
    let tokens = if (tokens - whole).abs() <= whole * SHARE_SLACK {
        whole
    } else {
        tokens.floor()
    };
    // Truncation is intended: a budget is a whole number of tokens, rounded down.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(tokens as usize)
}

/// The relative error a share's product may carry and still be the whole number it is next
/// to: a few units in the last place of an `f64`, far below a token of any window.
const SHARE_SLACK: f64 = 1e-12;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;
    use crate::format::Format;
    use proptest::strategy::Strategy;

    /// The traffic of a task of `task` tokens followed by one model call per item of `calls`,
    /// each an answer and a result that together take that many tokens.
    fn traffic(task: usize, calls: &[usize]) -> Traffic {
        let mut messages = vec![Message::new_text(Role::User, "the task")];
        let mut totals = vec![task];
        for &call in calls {
            messages.push(Message::new_text(Role::Assistant, "a call"));
            messages.push(Message::new_text(Role::User, "its result"));
            totals.extend([call / 2, call - call / 2]);
        }
        let conversation = Conversation {
            format: Format::OpenAi,
            system: None,
            messages,
            envelope: None,
            lines: Vec::new(),
            repairs: Vec::new(),
        };
        Traffic::measure(&conversation, &Counts::from_totals(totals, 0)).expect("a call")
    }

    #[test]
    fn a_loop_compacts_to_what_its_last_calls_take_within_a_fifth_and_the_target() {
        // 20 calls of 100 tokens after a task of 500: the last 8 calls, the task and the reply
        // priming (3) take 1,303.
        let busy = traffic(500, &[100; 20]);
        assert_eq!(busy.growth(), 100);
        let depth = busy.depth(5_000, 3_500, 0.5);
        assert_eq!(depth.target, 1_303);
        assert_eq!(depth.calls_measured, RECENT_CALLS);
        assert!(!depth.window_short, "{depth:?}");
        // Never deeper than a fifth of the window, nor shallower than the target.
        assert_eq!(busy.depth(20_000, 14_000, 0.5).target, 4_000);
        assert_eq!(busy.depth(2_000, 1_400, 0.5).target, 1_000);
        // A target below the fifth is the floor too.
        assert_eq!(busy.depth(20_000, 14_000, 0.1).target, 2_000);
    }

    #[test]
    fn a_loop_leaves_room_for_a_call_where_one_fits_above_the_floor() {
        // Calls of 1,000 tokens: the last 8 and the task (9,000) are over the target of 5,000
        // in a window of 10,000 triggered at 5,500, which leaves room for no call: one below
        // the trigger is 4,500, above the floor.
        let heavy = traffic(1_000, &[1_000; 10]);
        let depth = heavy.depth(10_000, 5_500, 0.5);
        assert_eq!(depth.target, 4_500);
        assert!(depth.window_short, "{depth:?}");
        // A single call larger than the room above the floor is no rate to make room for.
        let one = traffic(100, &[9_000]);
        assert_eq!(one.depth(10_000, 7_000, 0.5).target, 5_000);
    }

    #[test]
    fn a_conversation_before_its_first_call_has_no_traffic() {
        let conversation = Conversation {
            format: Format::OpenAi,
            system: None,
            messages: vec![Message::new_text(Role::User, "the task")],
            envelope: None,
            lines: Vec::new(),
            repairs: Vec::new(),
        };
        assert_eq!(
            Traffic::measure(&conversation, &Counts::from_totals(vec![10], 0)),
            None
        );
    }

    #[test]
    fn room_is_counted_in_calls_at_the_growth_rate() {
        let depth = traffic(500, &[100; 20]).depth(5_000, 3_500, 0.5);
        assert_eq!(depth.with_room(1_250, 3_500).room_calls, Some(22));
        assert_eq!(depth.with_room(3_600, 3_500).room_calls, Some(0));
    }

    #[test]
    fn tokens_and_ratios() {
        assert_eq!(
            Budget::Tokens(100).resolve(150, 0).unwrap(),
            ResolvedBudget::new(100, true)
        );
        assert_eq!(
            Budget::Ratio(0.5).resolve(101, 0).unwrap(),
            ResolvedBudget::new(50, true)
        );
        // An empty conversation is within any ratio.
        assert_eq!(
            Budget::Ratio(0.5).resolve(0, 0).unwrap(),
            ResolvedBudget::new(0, false)
        );
    }

    #[test]
    fn window_has_hysteresis() {
        let budget = Budget::window();
        assert_eq!(
            budget.resolve(700, 1000).unwrap(),
            ResolvedBudget::new(700, false)
        );
        assert_eq!(
            budget.resolve(701, 1000).unwrap(),
            ResolvedBudget::new(500, true)
        );
    }

    #[test]
    fn errors_name_the_field_not_a_flag() {
        let err = Budget::Ratio(-1.0).resolve(10, 0).unwrap_err().to_string();
        assert_eq!(err, "budget ratio = -1: expected a number above 0");
        let err = Budget::window().resolve(10, 0).unwrap_err().to_string();
        assert!(err.starts_with("budget context_window = 0:"), "{err}");
        assert!(!err.contains("--"), "{err}");
        let err = Budget::Window {
            trigger: 0.5,
            target: 0.7,
        }
        .resolve(10, 100)
        .unwrap_err()
        .to_string();
        assert!(err.contains("above the trigger"), "{err}");
    }

    proptest::proptest! {
        /// A share written as a number of tokens over its whole resolves to that number: a
        /// session's depth in tokens, passed as its share of the window, costs no token.
        #[test]
        fn a_share_of_whole_tokens_resolves_to_them(
            (of, tokens) in (1_usize..4_000_000)
                .prop_flat_map(|of| (proptest::strategy::Just(of), 1..=of)),
        ) {
            #[allow(clippy::cast_precision_loss)]
            let value = tokens as f64 / of as f64;
            proptest::prop_assert_eq!(share("target", value, of).unwrap(), tokens);
        }
    }
}
