//! Token budgets: where a run's budget comes from, and the one place it is resolved.
//!
//! A budget is an explicit token count, a share of the conversation's own total, or a model's
//! context window with a trigger and a target (docs/replay.md: the gap between the two keeps
//! compaction from running on every turn). [`Budget::resolve`] turns any of them into a number
//! of tokens and says whether compaction is needed at all; every caller goes through it.

use crate::error::{Error, Result};

/// Compact when usage passes this share of the model's window (docs/replay.md).
pub(crate) const TRIGGER: f64 = 0.7;
/// Compact down to this share of the model's window (docs/replay.md).
pub(crate) const TARGET_RATIO: f64 = 0.5;

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
    pub(crate) fn resolve(self, total: usize, window: usize) -> Result<Resolved> {
        match self {
            Self::Tokens(0) => Err(Error::bad_budget(
                "tokens",
                0,
                "a budget of 0 tokens fits nothing",
            )),
            Self::Tokens(tokens) => Ok(Resolved::new(tokens, total > tokens)),
            Self::Ratio(ratio) => {
                let tokens = share("ratio", ratio, total)?;
                if tokens == 0 && total > 0 {
                    return Err(Error::bad_budget(
                        "ratio",
                        ratio,
                        format!("{ratio} of {total} tokens is 0 tokens"),
                    ));
                }
                Ok(Resolved::new(tokens, total > tokens))
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
                    Ok(Resolved::new(trigger_at, false))
                } else {
                    Ok(Resolved::new(target_at.max(1), true))
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
pub(crate) struct Resolved {
    /// The budget in tokens.
    pub(crate) tokens: usize,
    /// Whether the conversation must be compacted to meet it.
    pub(crate) compact: bool,
}

impl Resolved {
    fn new(tokens: usize, compact: bool) -> Self {
        Self { tokens, compact }
    }
}

/// `value` of `of` tokens, rounded down; `value` must be a finite number above 0.
fn share(field: &'static str, value: f64, of: usize) -> Result<usize> {
    if !value.is_finite() || value <= 0.0 {
        return Err(Error::bad_budget(field, value, "expected a number above 0"));
    }
    // Truncation is intended: a budget is a whole number of tokens, rounded down.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok((of as f64 * value).floor() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_ratios() {
        assert_eq!(
            Budget::Tokens(100).resolve(150, 0).unwrap(),
            Resolved::new(100, true)
        );
        assert_eq!(
            Budget::Ratio(0.5).resolve(101, 0).unwrap(),
            Resolved::new(50, true)
        );
        // An empty conversation is within any ratio.
        assert_eq!(
            Budget::Ratio(0.5).resolve(0, 0).unwrap(),
            Resolved::new(0, false)
        );
    }

    #[test]
    fn window_has_hysteresis() {
        let budget = Budget::window();
        assert_eq!(
            budget.resolve(700, 1000).unwrap(),
            Resolved::new(700, false)
        );
        assert_eq!(budget.resolve(701, 1000).unwrap(), Resolved::new(500, true));
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
}
