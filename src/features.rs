//! Features: plain numbers that describe a conversation against its budget. No decisions here.
//!
//! Every figure is computed once from the cached per-message counts. The thresholds are named
//! constants with defaults in [`FeatureThresholds`], overridable through the compaction options.

use crate::account::{Features, Severity};
use crate::classify::is_user_turn;
use crate::conversation::{Conversation, Role};
use crate::relevance::Relevance;
use crate::tokens::Counts;

/// A message longer than this many tokens is "long" (docs/decisions.md; cipher's hybrid rule 4 uses 300).
pub(crate) const LONG_MESSAGE_TOKENS: usize = 300;
/// Target ratio above which severity is light, in percent (docs/decisions.md: light > 0.8).
pub(crate) const LIGHT_ABOVE_PCT: usize = 80;
/// Target ratio above which severity is moderate, in percent (docs/decisions.md: moderate > 0.6).
pub(crate) const MODERATE_ABOVE_PCT: usize = 60;
/// How many trailing messages rule 3 looks at (docs/decisions.md).
pub(crate) const RECENT_MESSAGES: usize = 5;

/// The feature thresholds; [`Default`] gives the documented constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureThresholds {
    /// See `LONG_MESSAGE_TOKENS`.
    pub long_message_tokens: usize,
    /// See `LIGHT_ABOVE_PCT`.
    pub light_above_pct: usize,
    /// See `MODERATE_ABOVE_PCT`.
    pub moderate_above_pct: usize,
    /// See `RECENT_MESSAGES`.
    pub recent_messages: usize,
}

impl Default for FeatureThresholds {
    fn default() -> Self {
        Self {
            long_message_tokens: LONG_MESSAGE_TOKENS,
            light_above_pct: LIGHT_ABOVE_PCT,
            moderate_above_pct: MODERATE_ABOVE_PCT,
            recent_messages: RECENT_MESSAGES,
        }
    }
}

impl Features {
    /// Measures a conversation against `budget` from its cached counts.
    pub fn measure(
        conversation: &Conversation,
        counts: &Counts,
        budget: usize,
        thresholds: &FeatureThresholds,
    ) -> Self {
        let messages = conversation.messages.len();
        let tokens = counts.total();
        let message_tokens: usize = counts.messages.iter().sum();
        let tail_sum = |n: usize| {
            counts.messages[messages - n.min(messages)..]
                .iter()
                .sum::<usize>()
        };
        let recent = tail_sum(messages.div_ceil(4));
        let last = tail_sum(thresholds.recent_messages);
        let tool_tokens: usize = conversation
            .messages
            .iter()
            .zip(&counts.messages)
            .filter(|(m, _)| m.has_calls() || m.has_results())
            .map(|(_, t)| t)
            .sum();
        let severity = if budget * 100 > tokens * thresholds.light_above_pct {
            Severity::Light
        } else if budget * 100 > tokens * thresholds.moderate_above_pct {
            Severity::Moderate
        } else {
            Severity::Heavy
        };
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Self {
            messages,
            tokens,
            average_tokens: ratio(message_tokens, messages),
            target_ratio: ratio(budget, tokens),
            severity,
            recent_ratio: ratio(recent, message_tokens),
            last_messages_ratio: ratio(last, message_tokens),
            has_long_messages: counts
                .messages
                .iter()
                .any(|&t| t > thresholds.long_message_tokens),
            has_tool_messages: tool_tokens > 0,
            has_system_messages: conversation.system.is_some()
                || conversation.messages.iter().any(|m| m.role == Role::System),
            tool_token_share: ratio(tool_tokens, message_tokens),
            refers_back: if tool_tokens > 0 {
                0.0
            } else {
                refers_back(conversation)
            },
            budget_over_tokens: [budget, tokens],
            last_over_tokens: [last, message_tokens],
        }
    }
}

/// How much the last user turn refers back ([`Relevance::concentration`]): read in chats only,
/// where every earlier turn is scored against it.
fn refers_back(conversation: &Conversation) -> f64 {
    let Some(last) = conversation.messages.iter().rposition(is_user_turn) else {
        return 0.0;
    };
    Relevance::measure(&conversation.messages, last..last + 1, 0..0).concentration()
}
