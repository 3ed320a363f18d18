//! The agent that sent a request, told from its headers or, failing them, its body's shape;
//! and where that agent compacts its own history (an LLM summary), so that the proxy's trigger
//! can sit below it and the deterministic compaction acts first.
//!
//! The agents' points, read from the pinned bundles: Claude Code 2.1.328 compacts at its
//! window less `min(max output, 20,000)` less a 13,000-token summary buffer (`bin/claude.exe`),
//! window − 33,000; Codex 0.169.0 at 90% of its window (`ModelInfo::auto_compact_token_limit`
//! in openai/codex `codex-rs/protocol/src/openai_models.rs`, `null` in the bundled catalog, so
//! the 90% default); Gemini CLI 0.61.0 at 50% (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD`,
//! `bundle/chunk-JDPZ4CE3.js`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::format::Format;

/// An agent CLI the proxy recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Agent {
    /// Anthropic's Claude Code (and the Agent SDK, which sends the same).
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// Google's Gemini CLI.
    GeminiCli,
}

/// Claude Code's distance from its window to its own compaction: `min(max output, 20,000)`
/// reserved for the reply plus a 13,000-token summary buffer (`bin/claude.exe` of
/// `@anthropic-ai/claude-code@2.1.328`).
const CLAUDE_CODE_RESERVE: usize = 33_000;

/// The share of the window kept between an agent's own compaction point and the proxy's
/// trigger, in percent: more than the calibrated estimates' held-out p95 error (under 4%,
/// `data/calibration.json`), so that a count a little under the agent's is still under its
/// point, and room for the growth of a call.
const MARGIN_PCT: usize = 5;

impl Agent {
    /// The agent's name, as the ledger spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::GeminiCli => "gemini-cli",
        }
    }

    /// The tokens at which the agent compacts itself in a window of `window` tokens.
    pub fn own_point(self, window: usize) -> usize {
        match self {
            Self::ClaudeCode => window.saturating_sub(CLAUDE_CODE_RESERVE),
            Self::Codex => window * 9 / 10,
            Self::GeminiCli => window / 2,
        }
    }

    /// How the agent's point is defined, in words.
    fn point_rule(self) -> &'static str {
        match self {
            Self::ClaudeCode => "window − 33,000",
            Self::Codex => "90% of the window",
            Self::GeminiCli => "50% of the window",
        }
    }

    /// The agent a request's headers name (`header` gives a header's value by its lowercase
    /// name), with the header that told it: Claude Code's `user-agent: claude-cli/…` or
    /// `x-app: cli…`, Codex's `originator: codex…` or `user-agent: codex…`, Gemini CLI's
    /// `user-agent: GeminiCLI…`.
    pub fn from_headers<'a>(
        header: impl Fn(&str) -> Option<&'a str>,
    ) -> Option<(Self, &'static str)> {
        let header = |name: &str| header(name).unwrap_or("");
        let user_agent = header("user-agent");
        if user_agent.starts_with("claude-cli/") {
            Some((Self::ClaudeCode, "user-agent header"))
        } else if header("x-app").starts_with("cli") {
            Some((Self::ClaudeCode, "x-app header"))
        } else if header("originator").starts_with("codex") {
            Some((Self::Codex, "originator header"))
        } else if user_agent.starts_with("codex") {
            Some((Self::Codex, "user-agent header"))
        } else if user_agent.starts_with("GeminiCLI") {
            Some((Self::GeminiCli, "user-agent header"))
        } else {
            None
        }
    }
}

/// The agent a request body's shape names: Claude Code's `metadata.user_id` (a JSON string
/// with its `device_id` and `session_id`), Codex's `client_metadata` with its `x-codex-…` keys.
pub(super) fn from_body(
    format: Format,
    body: &Map<String, Value>,
) -> Option<(Agent, &'static str)> {
    match format {
        Format::Anthropic => {
            let user = body.get("metadata")?.get("user_id")?.as_str()?;
            (user.contains("\"device_id\"") && user.contains("\"session_id\""))
                .then_some((Agent::ClaudeCode, "body: metadata.user_id"))
        }
        Format::Responses => {
            let metadata = body.get("client_metadata")?.as_object()?;
            metadata
                .keys()
                .any(|key| key.starts_with("x-codex-"))
                .then_some((Agent::Codex, "body: client_metadata"))
        }
        _ => None,
    }
}

/// The trigger and target shares for a window of `window` tokens: `trigger` and `target`
/// (the flags' or their defaults) unless an agent is recognised, `--trigger` was not given and
/// the agent's own point less the margin is below `trigger` × window — then that point, with
/// the target lowered in the same proportion, so that the space between the two stays the
/// same share of the trigger. With why, in one line.
pub(super) fn shares(
    agent: Option<Agent>,
    window: usize,
    (trigger, target): (f64, f64),
    trigger_given: bool,
) -> ((f64, f64), String) {
    let Some(agent) = agent else {
        return (
            (trigger, target),
            format!("--trigger {trigger}: no agent recognised"),
        );
    };
    let own = agent.own_point(window);
    let below = own.saturating_sub(window * MARGIN_PCT / 100);
    let name = agent.as_str();
    let theirs = format!("{name} compacts itself at {} ({own})", agent.point_rule());
    if trigger_given {
        return (
            (trigger, target),
            format!("--trigger {trigger} given ({theirs})"),
        );
    }
    #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
    let share = below as f64 / window.max(1) as f64;
    if below == 0 || share >= trigger {
        let why = format!("--trigger {trigger} is below {theirs} less {MARGIN_PCT}%");
        return ((trigger, target), why);
    }
    let lowered = target * share / trigger;
    let why = format!(
        "{theirs}: {MARGIN_PCT}% of the window below it, {below}, is under --trigger {trigger}; target {target} lowered with it to {lowered:.4}"
    );
    ((share, lowered), why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_is_told_by_its_headers() {
        assert_eq!(Agent::from_headers(|_| None), None);
        let cases = [
            (
                "user-agent",
                "claude-cli/2.1.328 (external, cli)",
                Agent::ClaudeCode,
            ),
            ("x-app", "cli", Agent::ClaudeCode),
            ("originator", "codex_cli_rs", Agent::Codex),
            (
                "user-agent",
                "codex_exec/0.169.0 (Linux; x86_64)",
                Agent::Codex,
            ),
            (
                "user-agent",
                "GeminiCLI/0.61.0/gemini-3.1-pro-preview (linux; x64)",
                Agent::GeminiCli,
            ),
        ];
        for (name, value, agent) in cases {
            let header = |asked: &str| (asked == name).then_some(value);
            assert_eq!(
                Agent::from_headers(header).map(|(agent, _)| agent),
                Some(agent),
                "{value}"
            );
        }
    }

    #[test]
    #[allow(clippy::float_cmp)] // the shares are exact quotients of the figures written here
    fn the_trigger_goes_below_the_agents_own_point_unless_given() {
        let gemini = Some(Agent::GeminiCli);
        let ((trigger, target), _) = shares(gemini, 1_048_576, (0.7, 0.5), false);
        assert_eq!(trigger, 471_860.0 / 1_048_576.0);
        assert!((target - 0.5 * trigger / 0.7).abs() < 1e-12);
        assert_eq!(shares(gemini, 1_048_576, (0.7, 0.5), true).0, (0.7, 0.5));
        // Codex's 90% less the margin is above 70%: the default stays.
        let codex = Some(Agent::Codex);
        assert_eq!(shares(codex, 272_000, (0.7, 0.5), false).0, (0.7, 0.5));
        assert_eq!(shares(None, 272_000, (0.7, 0.5), false).0, (0.7, 0.5));
        // Claude Code in a 100,000-token window: 67,000 less 5,000.
        let claude = Some(Agent::ClaudeCode);
        assert_eq!(shares(claude, 100_000, (0.7, 0.5), false).0.0, 0.62);
    }
}
