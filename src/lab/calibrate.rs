//! Calibration: how many tokens a provider counts per character, fitted on the usage that
//! session logs recorded.
//!
//! Claude and Gemini tokenizers are not public, so their counts are estimates: the text's
//! `o200k` tokens times a factor per model family, plus a cost per tool call. Agents' logs
//! record the size the API reported for each request (Claude Code `message.usage`, Gemini CLI
//! `tokens`), and that size is, call after call, a straight line in the `o200k` tokens and the
//! tool calls of the conversation sent so far: a factor and a cost per call (the slopes) plus a
//! fixed overhead (the system prompt and tool definitions, which the logs do not hold, and which
//! differ from one agent setup to another). [`fit`] finds that line per family by least squares,
//! with shared slopes and each session's own overhead, so the overhead never biases the factor;
//! [`evaluate`] applies a calibration's factors the way the engine counts and measures how far
//! the estimates fall from the reported sizes.
//!
//! Why `o200k` tokens and not characters: tokens per character differ with the kind of text
//! (about 0.26 for fetched English documentation, 0.44 for code and tool output in the
//! recorded Claude sessions), so a per-character factor fitted on one kind of session misses
//! on another by up to 40%. The provider's tokens per `o200k` token vary far less, because both
//! are byte-pair encodings that split text alike. Why a cost per tool call: each call brings
//! framing and ids, and Claude Code adds text to calls and results that it does not log; with
//! that cost apart, the factor is 1.10–1.12 for every Claude family (without it, 1.13–1.35,
//! the most for the sessions with the most calls). A separate factor for tool results, or for
//! tool-call arguments, did not lower the error on held-out sessions.
//!
//! What [`evaluate`] reports is what a user sees: each call after a session's first is
//! estimated as the previous call's reported size plus the estimate of the messages added
//! since (as [`crate::Session::observe_usage`] and the CLI's anchoring count), against the
//! size the API reported for it. The first call of a session is the anchor, not measured:
//! nothing in the log tells its fixed overhead. A log is read whole, compactions included: each
//! call's request held the history as it was then (from the last compaction's summary on), so
//! every recorded call is a measurement, and the first call after a compaction is an anchor of
//! its own, as is each stretch's overhead in [`fit`]. The same figures anchored on the
//! stretch's first call only ([`Spread`], `first_call`) show how the error grows when the
//! anchor is old.
//!
//! The shipped factors are `data/calibration.json`, the output of `ctxcompact calibrate --json`
//! over the recorded logs it names; a user's own fit of the same shape is read with
//! [`Calibration::from_json`]. Figures are rounded (factors to a millionth, errors to a
//! hundredth of a percent) so the output is the same on every run.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::catalog::Catalog;
use crate::format::{self, ReadOptions, RecordedUsage};
pub use crate::tokens::calibration::{Calibration, Family, FamilyFit, HeldOut, Spread};
use crate::tokens::{Factor, TokenCounter, Tokenizer, opaque_tokens, thinking_text, unescaped};
use crate::{Conversation, Message, Part, Result};

/// Sessions with fewer recorded calls of a family than this do not enter its fit: each session
/// has its own overhead, so one or two calls fit exactly and say nothing about the factor.
pub const MIN_SESSION_CALLS: usize = 3;

/// A session log with the usage it recorded.
#[derive(Debug, Clone)]
pub struct SessionLog {
    /// Where it came from (a path), to name it in output.
    pub name: String,
    /// The conversation the log holds, its whole history: every compaction's summary where it
    /// happened, so that the calls before a compaction are read too (each usage names where
    /// its request started, [`RecordedUsage::from`]).
    pub conversation: Conversation,
    /// The input sizes the provider reported, call by call.
    pub usages: Vec<RecordedUsage>,
}

impl SessionLog {
    /// Reads a session log (format detected), its whole history, with its recorded usage.
    ///
    /// # Errors
    /// As [`format::parse`].
    pub fn read(name: &str, bytes: &[u8]) -> Result<Self> {
        let options = ReadOptions {
            whole_history: true,
            ..ReadOptions::default()
        };
        let (conversation, usages) = format::parse_with_usage(bytes, &options)?;
        Ok(Self {
            name: name.to_string(),
            conversation,
            usages,
        })
    }
}

/// One recorded call: what the request held, measured, and what the provider reported.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// Index of the log among those given.
    session: usize,
    /// Where the call's request started in the log (after the last compaction before it).
    from: usize,
    /// `o200k` tokens of the text the request's messages held (fields, text, calls, results),
    /// counted as the calibrated estimator reads it.
    base: f64,
    /// Characters of the same text (for the informative tokens per character).
    chars: f64,
    /// Tokens estimated apart from text: images and other opaque parts.
    fixed: f64,
    /// Tool calls the request's messages held.
    tool_calls: f64,
    /// The size the provider reported.
    reported: f64,
}

/// Counts what the calibrated estimator counts, with `inner` for text: tool-call arguments as
/// their unescaped keys and values, thinking blocks as their text, other opaque parts as
/// nothing (they are measured apart, see [`opaque_in`]).
struct Reading<C>(C);

impl<C: TokenCounter> TokenCounter for Reading<C> {
    fn count_text(&self, text: &str) -> usize {
        self.0.count_text(text)
    }

    fn count_arguments(&self, arguments: &Value) -> usize {
        self.count_text(&unescaped(arguments))
    }

    fn count_opaque(&self, value: &Value) -> usize {
        thinking_text(value).map_or(0, |text| self.count_text(text))
    }
}

/// Counts characters.
struct Chars;

impl TokenCounter for Chars {
    fn count_text(&self, text: &str) -> usize {
        text.chars().count()
    }
}

/// Counts `o200k` tokens, with the process-wide counter.
struct O200k;

impl TokenCounter for O200k {
    fn count_text(&self, text: &str) -> usize {
        Tokenizer::O200k.counter().count_text(text)
    }
}

/// The documented estimate of the opaque parts of a message (results included).
fn opaque_in(parts: &[Part]) -> usize {
    parts
        .iter()
        .map(|part| match part {
            Part::Opaque(value) if thinking_text(value).is_none() => opaque_tokens(value),
            Part::ToolResult { content, .. } => opaque_in(content),
            Part::Opaque(_) | Part::Text { .. } | Part::ToolCall { .. } => 0,
        })
        .sum()
}

/// (`o200k` tokens, characters, opaque tokens, tool calls) of one message.
fn measure(message: &Message) -> [usize; 4] {
    let calls = message
        .parts
        .iter()
        .filter(|part| matches!(part, Part::ToolCall { .. }))
        .count();
    [
        Reading(O200k).count_message(message),
        Reading(Chars).count_message(message),
        opaque_in(&message.parts),
        calls,
    ]
}

/// The calibrated-estimate family of a model a log names, as the catalog resolves the name
/// (its profile's tokenizer); `None` for a model counted otherwise, or one the catalog does
/// not know.
fn family_of(catalog: &Catalog, model: &str) -> Option<Family> {
    match catalog.resolve(model).ok()?.profile.tokenizer {
        Tokenizer::Calibrated(factor) => Some(factor.family),
        _ => None,
    }
}

/// The recorded calls of every log, by family, in log order.
fn calls(logs: &[(usize, &SessionLog)]) -> BTreeMap<Family, Vec<Call>> {
    let catalog = Catalog::builtin();
    let mut by_family: BTreeMap<Family, Vec<Call>> = BTreeMap::new();
    for &(session, log) in logs {
        let conversation = &log.conversation;
        let system = conversation.system.as_ref().map_or([0; 4], measure);
        // Prefix sums: entry k measures the messages before index k.
        let mut prefix = vec![system];
        for message in &conversation.messages {
            let mut sum = prefix[prefix.len() - 1];
            for (total, this) in sum.iter_mut().zip(measure(message)) {
                *total += this;
            }
            prefix.push(sum);
        }
        for usage in &log.usages {
            // The request held the system prompt and the messages from `from` on.
            let (Some(family), Some(held), Some(before)) = (
                family_of(catalog, &usage.model),
                prefix.get(usage.message),
                prefix
                    .get(usage.from)
                    .filter(|_| usage.from <= usage.message),
            ) else {
                continue;
            };
            let mut sum = system;
            for ((total, held), before) in sum.iter_mut().zip(held).zip(before) {
                *total += held - before;
            }
            let [base, chars, opaque, tool_calls] = sum;
            by_family.entry(family).or_default().push(Call {
                session,
                from: usage.from,
                base: as_f64(base),
                chars: as_f64(chars),
                fixed: as_f64(opaque),
                tool_calls: as_f64(tool_calls),
                reported: as_f64(usage.input_tokens),
            });
        }
    }
    by_family
}

/// Fits each family found in `logs`: one tokens-per-`o200k`-token factor shared by all
/// sessions, and a fixed overhead per session, by least squares on the reported sizes.
/// Families with no session of at least [`MIN_SESSION_CALLS`] calls, or whose calls all hold
/// the same text, are left out.
pub fn fit(logs: &[SessionLog]) -> Vec<FamilyFit> {
    calls(&logs.iter().enumerate().collect::<Vec<_>>())
        .into_iter()
        .filter_map(|(family, calls)| fit_family(family, &calls))
        .collect()
}

/// [`fit`], with each family's error on sessions held out of the fit: each log that recorded
/// usage of a known family is measured as [`evaluate`] measures, with the factors fitted on
/// all the other logs (leave one session out), and the measurements are pooled into
/// [`FamilyFit::held_out`].
pub fn fit_with_held_out(logs: &[SessionLog]) -> Vec<FamilyFit> {
    let indexed: Vec<(usize, &SessionLog)> = logs.iter().enumerate().collect();
    let all = calls(&indexed);
    let mut fits: Vec<FamilyFit> = all
        .iter()
        .filter_map(|(&family, calls)| fit_family(family, calls))
        .collect();
    let mut pooled = Measured::new();
    for &(session, log) in &indexed {
        let families = all
            .iter()
            .filter(|(_, calls)| calls.iter().any(|c| c.session == session))
            .filter_map(|(&family, calls)| {
                let others: Vec<Call> = calls
                    .iter()
                    .filter(|c| c.session != session)
                    .copied()
                    .collect();
                fit_family(family, &others)
            })
            .collect();
        let calibration = Calibration {
            families,
            files: Vec::new(),
        };
        for (family, measured) in measure_anchored(&[(session, log)], &calibration) {
            pooled.entry(family).or_default().extend(measured);
        }
    }
    for fit in &mut fits {
        if let Some(measured) = pooled.get(&fit.family) {
            let previous = Errors::of(&measured.previous);
            let first = Errors::of(&measured.first);
            fit.held_out = Some(HeldOut {
                calls: measured.previous.len(),
                sessions: measured.sessions.len(),
                median_ape_pct: previous.median,
                p95_ape_pct: previous.p95,
                first_call: Some(first.spread()),
            });
        }
    }
    fits
}

/// The anchored estimates of one family, with the reported sizes.
#[derive(Debug, Default)]
struct Anchored {
    /// (estimate, reported): each call anchored on the previous call of its session.
    previous: Vec<(f64, f64)>,
    /// (estimate, reported): each call anchored on the first call of its session.
    first: Vec<(f64, f64)>,
    /// The sessions measured.
    sessions: BTreeSet<usize>,
}

impl Anchored {
    fn extend(&mut self, other: Self) {
        self.previous.extend(other.previous);
        self.first.extend(other.first);
        self.sessions.extend(other.sessions);
    }
}

/// Anchored estimates per family.
type Measured = BTreeMap<Family, Anchored>;

/// The fit of one family's calls (see [`fit`]): least squares within each session (each its
/// own overhead) for the tokens per `o200k` token and per tool call; when the calls say a tool
/// call costs nothing or less (or cannot tell), the factor alone.
fn fit_family(family: Family, calls: &[Call]) -> Option<FamilyFit> {
    // Each stretch of a session between compactions has its own overhead: what the agent adds
    // to the request and does not log (tool definitions, reminders) changes with it.
    let mut sessions: BTreeMap<(usize, usize), Vec<Call>> = BTreeMap::new();
    for call in calls {
        sessions
            .entry((call.session, call.from))
            .or_default()
            .push(*call);
    }
    sessions.retain(|_, calls| calls.len() >= MIN_SESSION_CALLS);
    // Within each session, deviations from the session's means; the slopes are shared.
    // Sums of products of deviations: [base·base, base·calls, calls·calls, base·y, calls·y].
    let mut sums = [0.0; 5];
    let mut means = BTreeMap::new();
    for (&session, calls) in &sessions {
        let n = as_f64(calls.len());
        let mean = |value: &dyn Fn(&Call) -> f64| calls.iter().map(value).sum::<f64>() / n;
        let (base, tools, y) = (
            mean(&|c| c.base),
            mean(&|c| c.tool_calls),
            mean(&|c| c.reported - c.fixed),
        );
        for call in calls {
            let (db, dt, dy) = (
                call.base - base,
                call.tool_calls - tools,
                call.reported - call.fixed - y,
            );
            for (sum, product) in sums
                .iter_mut()
                .zip([db * db, db * dt, dt * dt, db * dy, dt * dy])
            {
                *sum += product;
            }
        }
        means.insert(session, (base, tools, y));
    }
    let [bb, bt, tt, by, ty] = sums;
    if bb <= 0.0 {
        return None;
    }
    let determinant = bb * tt - bt * bt;
    let both = (determinant > 1e-9 * bb * tt)
        .then(|| {
            (
                (tt * by - bt * ty) / determinant,
                (bb * ty - bt * by) / determinant,
            )
        })
        .filter(|&(_, per_call)| per_call > 0.0);
    let (slope, per_call) = both.map_or((by / bb, 0.0), |(slope, per_call)| {
        (slope, per_call.round())
    });
    let intercepts: BTreeMap<(usize, usize), f64> = means
        .iter()
        .map(|(&session, &(base, tools, y))| (session, y - slope * base - per_call * tools))
        .collect();
    let pairs: Vec<(f64, f64)> = sessions
        .iter()
        .flat_map(|(session, calls)| {
            let intercept = intercepts[session];
            calls.iter().map(move |c| {
                (
                    slope * c.base + per_call * c.tool_calls + intercept + c.fixed,
                    c.reported,
                )
            })
        })
        .collect();
    let fitted = sessions.values().flatten();
    let (base, chars) = fitted.fold((0.0, 0.0), |(b, c), call| (b + call.base, c + call.chars));
    let mut overheads: Vec<f64> = intercepts.values().copied().collect();
    let overhead = median(&mut overheads).max(0.0);
    let errors = Errors::of(&pairs);
    Some(FamilyFit {
        family,
        calls: pairs.len(),
        sessions: sessions
            .keys()
            .map(|&(session, _)| session)
            .collect::<BTreeSet<_>>()
            .len(),
        tokens_per_o200k: round_to(slope, 1e6),
        tokens_per_tool_call: per_call,
        tokens_per_char: if chars > 0.0 {
            round_to(slope * base / chars, 1e6)
        } else {
            0.0
        },
        // Rounded to a whole token; the clamp above keeps it non-negative.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        fixed_overhead: overhead.round() as usize,
        r2: errors.r2,
        median_ape_pct: errors.median,
        p95_ape_pct: errors.p95,
        first_call: None,
        held_out: None,
    })
}

/// Measures `calibration`'s factors on `logs` as a user sees them: for each session and
/// family, every call after the first is estimated as the previous call's reported size plus
/// the estimated tokens of the messages added since, and compared with its reported size
/// ([`FamilyFit::first_call`]: the same, anchored on the session's first call instead). The
/// first call of each session is the anchor and is not measured. Families the calibration has
/// no factor for are left out.
pub fn evaluate(logs: &[SessionLog], calibration: &Calibration) -> Vec<FamilyFit> {
    let logs: Vec<(usize, &SessionLog)> = logs.iter().enumerate().collect();
    measure_anchored(&logs, calibration)
        .into_iter()
        .map(|(family, measured)| {
            let errors = Errors::of(&measured.previous);
            let factor = calibration.factor(family);
            FamilyFit {
                family,
                calls: measured.previous.len(),
                sessions: measured.sessions.len(),
                tokens_per_o200k: factor.map_or(0.0, Factor::tokens_per_o200k),
                tokens_per_tool_call: factor.map_or(0.0, |f| f64::from(f.per_call)),
                tokens_per_char: calibration
                    .families
                    .iter()
                    .find(|fit| fit.family == family)
                    .map_or(0.0, |fit| fit.tokens_per_char),
                fixed_overhead: 0,
                r2: errors.r2,
                median_ape_pct: errors.median,
                p95_ape_pct: errors.p95,
                first_call: Some(Errors::of(&measured.first).spread()),
                held_out: None,
            }
        })
        .collect()
}

/// The anchored estimates of [`evaluate`], with the reported sizes.
fn measure_anchored(logs: &[(usize, &SessionLog)], calibration: &Calibration) -> Measured {
    let catalog = Catalog::builtin();
    let mut measured = Measured::new();
    for &(session, log) in logs {
        for family in Family::ALL {
            let Some(factor) = calibration.factor(family) else {
                continue;
            };
            let usages: Vec<&RecordedUsage> = log
                .usages
                .iter()
                .filter(|u| family_of(catalog, &u.model) == Some(family))
                .filter(|u| u.message <= log.conversation.messages.len())
                .collect();
            if usages.len() < 2 {
                continue;
            }
            let counter = Tokenizer::Calibrated(factor).counter();
            let mut prefix = vec![0usize];
            for message in &log.conversation.messages {
                prefix.push(prefix[prefix.len() - 1] + counter.count_message(message));
            }
            let added = |from: &RecordedUsage, to: &RecordedUsage| {
                as_f64(prefix[to.message]) - as_f64(prefix[from.message])
            };
            let entry = measured.entry(family).or_default();
            entry.sessions.insert(session);
            // A compaction starts the request anew: the first call after it is an anchor.
            let mut first = usages[0];
            for pair in usages.windows(2) {
                let (previous, usage) = (pair[0], pair[1]);
                if usage.from != previous.from {
                    first = usage;
                    continue;
                }
                let reported = as_f64(usage.input_tokens);
                let from_previous = as_f64(previous.input_tokens) + added(previous, usage);
                entry.previous.push((from_previous, reported));
                let from_first = as_f64(first.input_tokens) + added(first, usage);
                entry.first.push((from_first, reported));
            }
        }
    }
    measured
}

/// Error figures of (estimate, reported) pairs.
struct Errors {
    r2: f64,
    median: f64,
    p95: f64,
}

impl Errors {
    fn of(pairs: &[(f64, f64)]) -> Self {
        let n = as_f64(pairs.len().max(1));
        let mean = pairs.iter().map(|p| p.1).sum::<f64>() / n;
        let total: f64 = pairs.iter().map(|p| (p.1 - mean).powi(2)).sum();
        let residual: f64 = pairs.iter().map(|p| (p.1 - p.0).powi(2)).sum();
        let r2 = if total > 0.0 {
            1.0 - residual / total
        } else {
            0.0
        };
        let mut ape: Vec<f64> = pairs
            .iter()
            .filter(|p| p.1 > 0.0)
            .map(|p| (p.0 - p.1).abs() / p.1 * 100.0)
            .collect();
        ape.sort_by(f64::total_cmp);
        Self {
            r2: round_to(r2, 1e5),
            median: round_to(median(&mut ape), 100.0),
            p95: round_to(percentile(&ape, 95), 100.0),
        }
    }

    fn spread(&self) -> Spread {
        Spread {
            median_ape_pct: self.median,
            p95_ape_pct: self.p95,
        }
    }
}

/// The median of `values` (sorted here); 0 when empty.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => f64::midpoint(values[n / 2 - 1], values[n / 2]),
    }
}

/// The nearest-rank `pct`th percentile of sorted `values`; 0 when empty.
fn percentile(sorted: &[f64], pct: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// `value` rounded to the nearest 1/`scale`.
fn round_to(value: f64, scale: f64) -> f64 {
    (value * scale).round() / scale
}

/// A count as a float (counts here are far below 2^52, so exactly).
#[allow(clippy::cast_precision_loss)]
fn as_f64(n: usize) -> f64 {
    n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // See: #31
    #[test]
    fn a_log_model_finds_its_family_through_the_catalog() {
        let catalog = Catalog::builtin();
        let cases = [
            ("claude-opus-4-6", Some(Family::ClaudeOpus)),
            ("claude-opus-5-7-20270101", Some(Family::ClaudeOpus)),
            ("sonnet", Some(Family::ClaudeSonnet)),
            ("claude-haiku-4-5-20251001", Some(Family::ClaudeHaiku)),
            ("gemini-2.5-pro", Some(Family::Gemini)),
            ("gpt-5.3-codex", None),
            ("<synthetic>", None),
        ];
        for (model, family) in cases {
            assert_eq!(family_of(catalog, model), family, "{model}");
        }
    }

    /// A Claude Code log of `turns` user/assistant pairs with growing text, each assistant line
    /// recording `usage(i)` for the assistant message at index `i` (`None`: no usage).
    /// A Claude Code log of `turns` user/assistant pairs with growing text, each assistant line
    /// recording `usage(i)` for the assistant message at index `i` (`None`: no usage), and the
    /// assistant message of turn `t` making `calls(t)` tool calls, answered at the start of the
    /// next user message.
    fn claude_log(
        turns: usize,
        calls: &dyn Fn(usize) -> usize,
        usage: &dyn Fn(usize) -> Option<usize>,
    ) -> String {
        let mut lines = Vec::new();
        let mut parent = serde_json::Value::Null;
        let mut pending: Vec<serde_json::Value> = Vec::new();
        for turn in 0..turns {
            let question = format!(
                "question {turn}: {}",
                "why is the sky blue? ".repeat(turn + 1)
            );
            let answer = format!(
                "answer {turn}: {}",
                "because of scattering. ".repeat(2 * turn + 3)
            );
            let user_id = format!("u{turn}");
            let mut content: Vec<serde_json::Value> = std::mem::take(&mut pending);
            content.push(json!({"type": "text", "text": question}));
            lines.push(json!({"type": "user", "sessionId": "s", "uuid": user_id,
                "parentUuid": parent, "message": {"role": "user", "content": content}}));
            let mut blocks = vec![json!({"type": "text", "text": answer})];
            for call in 0..calls(turn) {
                let id = format!("toolu_{turn}_{call}");
                blocks.push(json!({"type": "tool_use", "id": id, "name": "Read",
                    "input": {"file_path": format!("src/file_{call}.rs")}}));
                pending.push(json!({"type": "tool_result", "tool_use_id": id,
                    "content": format!("fn f{call}() {{}}")}));
            }
            let mut message = json!({"id": format!("m{turn}"), "role": "assistant",
                "model": "claude-opus-4-6", "content": blocks});
            if let Some(tokens) = usage(2 * turn + 1) {
                message["usage"] = json!({"input_tokens": 3,
                    "cache_read_input_tokens": tokens.saturating_sub(3) / 2,
                    "cache_creation_input_tokens": tokens.saturating_sub(3) - tokens.saturating_sub(3) / 2});
            }
            let assistant_id = format!("a{turn}");
            lines.push(
                json!({"type": "assistant", "sessionId": "s", "uuid": assistant_id,
                "parentUuid": user_id, "message": message}),
            );
            parent = json!(assistant_id);
        }
        lines.iter().map(|l| l.to_string() + "\n").collect()
    }

    /// A log whose every call reports `per_token` × the `o200k` tokens before it + `overhead`.
    fn lawful_log(name: &str, turns: usize, per_token: f64, overhead: f64) -> SessionLog {
        lawful_log_with_calls(name, turns, (per_token, 0.0), overhead)
    }

    /// [`lawful_log`] with a tool call in some turns, each costing `per_call` more tokens.
    fn lawful_log_with_calls(
        name: &str,
        turns: usize,
        (per_token, per_call): (f64, f64),
        overhead: f64,
    ) -> SessionLog {
        // No, one or two calls, not in step with the text's growth.
        let calls = |turn: usize| [0, 2, 1][turn % 3] * usize::from(per_call > 0.0);
        let empty = claude_log(turns, &calls, &|_| None);
        let bare = SessionLog::read(name, empty.as_bytes()).unwrap();
        let messages = &bare.conversation.messages;
        let law = |index: usize| {
            let [o200k, _, _, tool_calls] =
                messages[..index]
                    .iter()
                    .map(measure)
                    .fold([0; 4], |mut sum, this| {
                        sum.iter_mut().zip(this).for_each(|(s, t)| *s += t);
                        sum
                    });
            // Whole tokens, as an API reports them.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let tokens = (per_token * as_f64(o200k) + per_call * as_f64(tool_calls) + overhead)
                .round() as usize;
            Some(tokens)
        };
        let log = SessionLog::read(name, claude_log(turns, &calls, &law).as_bytes()).unwrap();
        assert_eq!(log.usages.len(), turns, "one usage per assistant message");
        log
    }

    #[test]
    fn a_fit_recovers_the_factor_and_each_sessions_overhead() {
        let logs = [
            lawful_log("a", 12, 0.45, 1000.0),
            lawful_log("b", 8, 0.45, 3000.0),
            // Too few calls to say anything: left out of the fit.
            lawful_log("c", 2, 0.45, 9000.0),
        ];
        let fits = fit(&logs);
        assert_eq!(fits.len(), 1);
        let opus = &fits[0];
        assert_eq!(opus.family, Family::ClaudeOpus);
        assert_eq!((opus.calls, opus.sessions), (20, 2));
        assert!((opus.tokens_per_o200k - 0.45).abs() < 1e-3, "{opus:?}");
        // English text: about four characters per `o200k` token.
        assert!(
            opus.tokens_per_char > 0.06 && opus.tokens_per_char < 0.2,
            "{opus:?}"
        );
        // The median of 1000 and 3000.
        assert!(opus.fixed_overhead.abs_diff(2000) <= 2, "{opus:?}");
        assert!(opus.r2 > 0.9999, "{opus:?}");
        assert!(opus.p95_ape_pct < 0.1, "{opus:?}");
    }

    #[test]
    fn a_fit_recovers_the_cost_of_a_tool_call() {
        let logs = [
            lawful_log_with_calls("a", 12, (1.1, 80.0), 20_000.0),
            lawful_log_with_calls("b", 9, (1.1, 80.0), 25_000.0),
        ];
        let fits = fit(&logs);
        let opus = &fits[0];
        assert!((opus.tokens_per_o200k - 1.1).abs() < 0.01, "{opus:?}");
        assert!((opus.tokens_per_tool_call - 80.0).abs() <= 2.0, "{opus:?}");
        assert!(opus.p95_ape_pct < 0.1, "{opus:?}");
        // The calibrated estimator counts the call's cost, so estimates anchored on the
        // previous call are off by rounding only.
        let calibration = Calibration {
            families: fits,
            files: Vec::new(),
        };
        let measured = evaluate(&logs, &calibration);
        assert!(measured[0].p95_ape_pct < 0.1, "{measured:?}");
        // Without it, the turns with calls are short of 80 tokens a call.
        let mut without = calibration.clone();
        without.families[0].tokens_per_tool_call = 0.0;
        let short = evaluate(&logs, &without);
        assert!(
            short[0].p95_ape_pct > 5.0 * measured[0].p95_ape_pct + 0.1,
            "{short:?}"
        );
    }

    #[test]
    fn each_session_held_out_is_measured_with_the_others_fit() {
        let same = [
            lawful_log("a", 6, 0.4, 10_000.0),
            lawful_log("b", 7, 0.4, 15_000.0),
            lawful_log("c", 8, 0.4, 20_000.0),
        ];
        let fits = fit_with_held_out(&same);
        let held = fits[0].held_out.as_ref().expect("held out");
        // Every call but each session's anchor, each measured with a fit that did not see it.
        assert_eq!((held.calls, held.sessions), (5 + 6 + 7, 3));
        // Rounding up per field is all that separates the estimates from the law.
        assert!(held.p95_ape_pct < 0.5, "{held:?}");
        // A session whose text costs twice as much is far from the others' fit.
        let odd = [
            lawful_log("a", 6, 0.4, 200.0),
            lawful_log("b", 7, 0.4, 200.0),
            lawful_log("c", 8, 0.8, 200.0),
        ];
        let fits = fit_with_held_out(&odd);
        let held = fits[0].held_out.as_ref().expect("held out");
        assert!(held.p95_ape_pct > 5.0, "{held:?}");
        let first = held.first_call.as_ref().expect("measured");
        assert!(first.p95_ape_pct > held.p95_ape_pct, "{held:?}");
    }

    #[test]
    fn evaluation_anchors_on_the_previous_call_and_measures_the_rest() {
        let logs = [lawful_log("a", 10, 1.2, 2_000.0)];
        let right = Calibration {
            families: fit(&logs),
            files: Vec::new(),
        };
        let good = evaluate(&logs, &right);
        assert_eq!((good[0].calls, good[0].sessions), (9, 1));
        // Rounding up per field is all that separates the estimate from the law.
        assert!(good[0].p95_ape_pct < 0.5, "{good:?}");
        let mut wrong = right.clone();
        wrong.families[0].tokens_per_o200k = 0.6;
        let bad = evaluate(&logs, &wrong);
        // Anchored on the previous call, the error is the factor's error on one turn.
        assert!(bad[0].median_ape_pct > 1.0, "{bad:?}");
        assert!(
            bad[0].median_ape_pct > 5.0 * good[0].median_ape_pct,
            "{bad:?}"
        );
        // Anchored on the first call, it is the error on every turn since, and grows.
        let first = bad[0].first_call.as_ref().expect("measured");
        assert!(first.p95_ape_pct > 2.0 * bad[0].p95_ape_pct, "{bad:?}");
        let from_first = good[0].first_call.as_ref().expect("measured");
        assert!(from_first.p95_ape_pct < 0.5, "{good:?}");
    }

    #[test]
    fn calls_before_and_after_a_compaction_are_each_measured_on_their_own_history() {
        let log = lawful_log("a", 8, 1.2, 2_000.0);
        let text = claude_log(8, &|_| 0, &|_| None);
        // The same log, compacted after turn 3: a boundary pointing back to it, a summary
        // starting the request anew, then turns 4.. hanging off the summary.
        let mut lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for (line, usage) in lines
            .iter_mut()
            .filter(|l| l["type"] == "assistant")
            .zip(&log.usages)
        {
            line["message"]["usage"] = json!({"input_tokens": usage.input_tokens});
        }
        lines[8]["parentUuid"] = json!("summary");
        let boundary = json!({"type": "system", "subtype": "compact_boundary", "sessionId": "s",
            "uuid": "boundary", "parentUuid": null, "logicalParentUuid": "a3"});
        let summary = json!({"type": "user", "sessionId": "s", "uuid": "summary",
            "parentUuid": "boundary", "isCompactSummary": true,
            "message": {"role": "user", "content": "This session continues: the sky."}});
        lines.splice(8..8, [boundary, summary]);
        let bytes: String = lines.iter().map(|l| l.to_string() + "\n").collect();
        let read = SessionLog::read("a", bytes.as_bytes()).unwrap();
        assert_eq!(read.usages.len(), 8, "every call, before and after");
        let froms: Vec<usize> = read.usages.iter().map(|u| u.from).collect();
        assert_eq!(froms, [0, 0, 0, 0, 8, 8, 8, 8]);
        let calibration = Calibration {
            families: fit(std::slice::from_ref(&log)),
            files: Vec::new(),
        };
        // Each stretch's first call is an anchor; the call after the compaction is not
        // measured against the one before it.
        let measured = evaluate(&[read], &calibration);
        assert_eq!(measured[0].calls, 6, "{measured:?}");
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert!((percentile(&values, 95) - 19.0).abs() < f64::EPSILON);
        assert!((median(&mut values.clone()) - 10.5).abs() < f64::EPSILON);
    }
}
