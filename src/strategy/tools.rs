//! Tool-round trimming: keep the last N rounds whole, clear or drop the older ones, cap oversize
//! outputs.
//!
//! Tool outputs are most of an agent's tokens and the least of its meaning. Rounds are numbered
//! oldest first; the last `keep` rounds are never touched (but for the `max_output` cap, which
//! applies to every result so that one huge output cannot make a budget unreachable). In older
//! rounds, oldest first:
//! - **clear** replaces each result's content with a short placeholder naming the tool and what
//!   was removed; the call, its id, `is_error` and every other field stay, so pairing holds;
//! - **drop** removes the whole round, keeping text the assistant wrote beside its calls (and, in
//!   Anthropic format, text the user wrote beside the results) as plain messages; a pinned round
//!   (the conversation's last unit, or the one holding the last user turn) is cleared instead.
//!
//! Calls to excluded tools are never touched, and a round holding one is never dropped. Trimming
//! stops as soon as an optional budget is met, and trims nothing when it would free fewer than
//! `clear_at_least` tokens (a cleared prefix spoils the prompt cache, so it must be worth it).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::counting::Counting;
use super::fit;
use super::gist_size::{GIST_ROUNDS, GistSize, SMALL_OUTPUT, with_poorer_gists};
use super::inputs::clear_input;
use super::superseded::repeated_calls;
use crate::account::ToolTrim;
use crate::archive::Archive;
use crate::classify::is_user_turn;
use crate::conversation::{Conversation, Layout, Message, Part, Role, Warmth, joined_text, warm};
use crate::hash::FxBuild;
use crate::parallel;
use crate::state::Applied;
use crate::tokens::{Counts, TokenCounter, Tokenizer};
use crate::{evidence, gist, instructions, note, units};

/// Rounds kept whole by default (Anthropic's context editing keeps the last 3 tool uses).
pub(crate) const KEEP_ROUNDS: usize = 3;

/// What happens to tool rounds older than the kept ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// Replace each result's content with a placeholder.
    #[default]
    Clear,
    /// Remove the whole round.
    Drop,
    /// Leave tool rounds alone.
    Off,
}

/// Tool-trimming settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOptions {
    /// What to do with older rounds.
    pub mode: ToolMode,
    /// How many of the latest rounds are never touched.
    pub keep: usize,
    /// Tools whose calls and results are never touched.
    pub exclude: Vec<String>,
    /// Also clear cleared calls' arguments, keeping only their path-like ones.
    pub clear_inputs: bool,
    /// Trim nothing unless at least this many tokens are freed.
    pub clear_at_least: usize,
    /// Cap every single result at this many tokens, keeping its head and tail lines.
    pub max_output: Option<usize>,
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self {
            mode: ToolMode::Clear,
            keep: KEEP_ROUNDS,
            exclude: Vec::new(),
            clear_inputs: false,
            clear_at_least: 0,
            max_output: None,
        }
    }
}

/// A tool round: the calling message and its result window.
struct Round {
    caller: usize,
    end: usize,
}

/// One change that trimming makes to a message.
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Change {
    /// Replace the content of the result in part `part` with `placeholder`.
    ClearResult { part: usize, placeholder: String },
    /// Replace the arguments of the call in part `part` with an empty object.
    ClearInput { part: usize },
    /// Keep only the message's non-blank text parts.
    KeepText,
    /// Remove the message.
    Remove,
}

/// The planned changes to one message, and its count once they are made.
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Edit {
    message: usize,
    changes: Vec<Change>,
    tokens: usize,
}

/// When tool trimming stops, and how the round that meets the budget is cleared. A cleared
/// output keeps its gist (poorer ones, or none, only where full gists cannot meet the budget).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stop {
    /// Stop as soon as the conversation takes at most this many tokens; `None` trims every
    /// older round.
    pub(crate) budget: Option<usize>,
    /// Whether the round that meets the budget is capped to just meet it (else cleared whole).
    pub(crate) cap_crossing: bool,
    /// The rounds to keep whole, fewer than the options', when clearing every older round
    /// with full gists cannot meet the budget: the recent rounds are then planned with the
    /// older ones, so that their outputs keep full gists before the older outputs keep poorer
    /// ones (`None`: the options' rounds stay whole).
    pub(crate) widen_to: Option<usize>,
}

impl Stop {
    /// Trimming every older round, each cleared output keeping its gist.
    pub(crate) const ALL: Self = Self {
        budget: None,
        cap_crossing: false,
        widen_to: None,
    };
}

/// Trims tool rounds as `stop` says: with a budget, stops as soon as the conversation fits it.
/// Rounds are planned first and changed only once `clear_at_least` is known to be met, so
/// nothing has to be undone; messages are changed in place, never copied. With an `archive`,
/// each placeholder names the file its message is archived in.
pub(crate) fn trim(
    mut state: Applied,
    options: &ToolOptions,
    stop: Stop,
    tokenizer: Tokenizer,
    archive: Option<&Archive>,
) -> (Applied, ToolTrim) {
    let Stop {
        budget,
        cap_crossing,
        ..
    } = stop;
    let cutting = fit::Cutting {
        counter: tokenizer.counter(),
        archive,
    };
    let rounds = rounds(&state.conversation);
    let mut report = census(&rounds, options);
    let untouched_total = state.counts.total();
    if let Some(cap) = options.max_output {
        report.truncated = cutting.cap_all(&mut state, cap);
    }
    let capped_total = state.counts.total();
    let mut total = capped_total;
    let mut planned = Vec::new();
    let (mut cleared, mut dropped) = (0, 0);
    let needed = budget.map_or(usize::MAX, |b| capped_total.saturating_sub(b));
    let planning = Planning {
        options,
        tokenizer,
        cutting,
        gist: GistSize::Full,
        superseded: repeated_calls(&state.conversation),
    };
    let plans = plan_trim(&state, &rounds, (planning, &mut report), stop, needed);
    for plan in plans {
        if budget.is_some_and(|b| total <= b) {
            break;
        }
        let Some(plan) = plan else {
            report.excluded += 1;
            continue;
        };
        report.excluded += usize::from(plan.partly_excluded);
        // The round whose clearing meets the budget is capped instead, to just meet it, when
        // clearing would free more than needed.
        let crossing =
            budget.filter(|&b| cap_crossing && plan.saved > 0 && total - plan.saved <= b);
        let fitted = crossing.and_then(|b| fit(&state, &plan, (total, b), &cutting));
        if let Some(capped) = fitted {
            let (before, after) = capped.iter().fold((0, 0), |(b, a), (m, _, t)| {
                (b + state.counts.messages[*m], a + t)
            });
            total = total - before + after;
            for (message, parts, tokens) in capped {
                report.truncated += parts.len();
                let changes = parts
                    .into_iter()
                    .map(|(part, placeholder)| Change::ClearResult { part, placeholder })
                    .collect();
                planned.push(Edit {
                    message,
                    changes,
                    tokens,
                });
            }
            continue;
        }
        if plan.saved > 0 {
            total -= plan.saved;
            let removes = plan
                .edits
                .iter()
                .flat_map(|e| &e.changes)
                .any(|c| matches!(c, Change::Remove | Change::KeepText));
            if removes {
                dropped += 1;
            } else {
                cleared += 1;
            }
            planned.extend(plan.edits);
        }
    }
    if capped_total - total < options.clear_at_least {
        // Not worth spoiling the prompt cache: keep only the caps.
        planned.clear();
        (cleared, dropped) = (0, 0);
        report.bare_before = 0;
        total = capped_total;
    }
    (report.cleared, report.dropped) = (cleared, dropped);
    report.inputs_cleared = planned
        .iter()
        .flat_map(|e| &e.changes)
        .filter(|c| matches!(c, Change::ClearInput { .. }))
        .count();
    report.tokens_freed = untouched_total.saturating_sub(total);
    (apply_edits(state, planned), report)
}

/// The plans of the rounds `stop` lets trimming touch, oldest first, to save `needed` tokens:
/// the rounds before the kept ones (`report.kept`), or, when those cannot save enough with full
/// gists and `stop.widen_to` says so and they save more, the rounds before fewer kept ones (and
/// `report.kept` set to it).
fn plan_trim(
    state: &Applied,
    rounds: &[Round],
    (mut planning, report): (Planning<'_>, &mut ToolTrim),
    stop: Stop,
    needed: usize,
) -> Vec<Option<RoundPlan>> {
    let older = |kept: usize| match planning.options.mode {
        ToolMode::Off => &[][..],
        _ => &rounds[..rounds.len() - kept],
    };
    let threads = if older(report.kept).len() >= PARALLEL_MIN_ROUNDS {
        parallel::cores()
    } else {
        1
    };
    let gist = planning.gist;
    // The plans, whether full gists fell short (the oldest outputs keep poorer ones), and the
    // message before which rounds are bare for want of room (0: none).
    let plan = |planning: &mut Planning<'_>, rounds: &[Round]| {
        planning.gist = gist;
        let plans = plan_rounds(state, rounds, needed, planning, threads);
        if stop.budget.is_some() && saved(&plans) < needed {
            let saves = |plan: &RoundPlan| plan.saved;
            let (poorer, bare) = with_poorer_gists(plans, needed, saves, |size, start| {
                planning.gist = size;
                plan_rounds(state, &rounds[start..], usize::MAX, planning, threads)
            });
            let bare_before = bare.checked_sub(1).map_or(0, |last| rounds[last].end);
            return (poorer, true, bare_before);
        }
        (plans, false, 0)
    };
    let (plans, poorer, bare_before) = plan(&mut planning, older(report.kept));
    report.bare_before = bare_before;
    match stop.widen_to {
        // The recent rounds' outputs keep full gists before the old ones' keep poorer ones.
        Some(kept) if kept < report.kept && (poorer || saved(&plans) < needed) => {
            let (wider, _, bare_before) = plan(&mut planning, older(kept));
            if saved(&wider) <= saved(&plans) {
                return plans;
            }
            report.kept = kept;
            report.bare_before = bare_before;
            wider
        }
        _ => plans,
    }
}

/// Tokens a list of round plans saves.
fn saved(plans: &[Option<RoundPlan>]) -> usize {
    plans.iter().flatten().map(|plan| plan.saved).sum()
}

/// The outputs a clearing plan would clear, capped instead so that the conversation, now of
/// `total` tokens, takes at most `budget`, each cut naming its message's archive file, if any;
/// `None` when the plan does more than clear outputs or no cap fits
/// ([`fit::Cutting::cap_outputs`]).
fn fit(
    state: &Applied,
    plan: &RoundPlan,
    (total, budget): (usize, usize),
    cutting: &fit::Cutting<'_>,
) -> Option<Vec<fit::CappedMessage>> {
    let mut outputs = Vec::new();
    for edit in &plan.edits {
        for change in &edit.changes {
            let Change::ClearResult { part, .. } = change else {
                return None;
            };
            outputs.push((edit.message, *part));
        }
    }
    let mut held: Vec<usize> = outputs.iter().map(|&(m, _)| m).collect();
    held.dedup();
    let others = total
        - held
            .iter()
            .map(|&m| state.counts.messages[m])
            .sum::<usize>();
    cutting.cap_outputs(state, &outputs, budget.checked_sub(others)?)
}

/// What trimming would start from, with nothing trimmed: how many tool rounds there are and how
/// many of them are kept whole.
pub(crate) fn count_rounds(conversation: &Conversation, options: &ToolOptions) -> ToolTrim {
    census(&rounds(conversation), options)
}

/// The rounds and kept rounds of a report with nothing trimmed yet.
fn census(rounds: &[Round], options: &ToolOptions) -> ToolTrim {
    ToolTrim {
        rounds: rounds.len(),
        kept: rounds.len().min(options.keep),
        ..ToolTrim::default()
    }
}

/// The tool rounds of a conversation, in order. In formats with one item per call
/// (Responses), a round starts at the first item of its window (a reasoning item before the
/// calls) and covers the calls after its first: those start no round of their own.
fn rounds(conversation: &Conversation) -> Vec<Round> {
    units::spans(conversation, 0)
        .filter(|(unit, _)| {
            conversation.messages[unit.clone()]
                .iter()
                .any(Message::has_calls)
        })
        .map(|(unit, window)| Round {
            caller: unit.start,
            end: window.end,
        })
        .collect()
}

/// Rounds planned by one job of [`plan_rounds`] when it plans on several threads.
const ROUNDS_PER_JOB: usize = 32;
/// Rounds that repay planning them on several threads (a round takes 5–10 µs, mostly reading
/// the head and tail of its outputs; a thread tens of microseconds to start).
const PARALLEL_MIN_ROUNDS: usize = 64;

/// The plans of `rounds`, in order, as [`plan_round`] makes them: at least up to the first
/// prefix whose plans save `needed` tokens, or all of them. On several `threads`, jobs of
/// consecutive rounds are planned in turn; one thread plans round by round and stops at that
/// prefix. The caller reads the plans in order and stops where the budget is met, so what it
/// does does not depend on the thread count.
fn plan_rounds(
    state: &Applied,
    rounds: &[Round],
    needed: usize,
    planning: &Planning<'_>,
    threads: usize,
) -> Vec<Option<RoundPlan>> {
    let last_user_turn = state.conversation.messages.iter().rposition(is_user_turn);
    let per_job = if threads > 1 { ROUNDS_PER_JOB } else { 1 };
    let job = |at: usize| -> Vec<_> {
        let end = rounds.len().min((at + 1) * per_job);
        let mut counting = Counting::new(planning.tokenizer);
        if let (Some(first), Some(last)) = (rounds.get(at * per_job), rounds.get(end - 1)) {
            let span = first.caller..last.end.max(first.caller);
            warm(&state.conversation.messages[span], Warmth::Texts);
        }
        let first = at * per_job;
        rounds[first..end]
            .iter()
            .enumerate()
            .map(|(k, round)| {
                // Only the newest rounds' outputs keep gists: what an agent uses next sits
                // mostly in its latest outputs, and a gist reads its output whole.
                let size = if first + k + GIST_ROUNDS < rounds.len() {
                    GistSize::Bare
                } else {
                    planning.gist
                };
                plan_round(state, round, last_user_turn, planning, size, &mut counting)
            })
            .collect()
    };
    let jobs = rounds.len().div_ceil(per_job);
    parallel::prefix_in_turn(jobs, threads, needed, |plans| saved(plans), job)
        .into_iter()
        .flatten()
        .collect()
}

/// What every round of one trim is planned with.
struct Planning<'a> {
    options: &'a ToolOptions,
    tokenizer: Tokenizer,
    /// The counter and where cleared outputs' messages are archived, if they are.
    cutting: fit::Cutting<'a>,
    /// How much of each cleared output its gist keeps.
    gist: GistSize,
    /// The ids of calls that a later call repeats (the same tool with the same arguments):
    /// their outputs are stale, and cleared without a gist.
    superseded: HashSet<&'a str, FxBuild>,
}

/// The planned changes to one round.
#[cfg_attr(test, derive(Debug, PartialEq))]
struct RoundPlan {
    edits: Vec<Edit>,
    /// Whether some of its calls were excluded (and left whole).
    partly_excluded: bool,
    /// Tokens the edits save (none when they would not shrink the round).
    saved: usize,
}

/// Plans the changes that clear or drop one round; `None` when excluded tools keep it whole.
/// `last_user_turn` (found once per trim, not once per round) pins the round that holds it.
fn plan_round(
    state: &Applied,
    round: &Round,
    last_user_turn: Option<usize>,
    planning: &Planning<'_>,
    size: GistSize,
    counting: &mut Counting,
) -> Option<RoundPlan> {
    let options = planning.options;
    let messages = &state.conversation.messages;
    // The round's calls: in Responses, the call items after the caller hold some.
    let names: Vec<(&str, &str)> = messages[round.caller..round.end]
        .iter()
        .flat_map(call_names)
        .collect();
    let excluded: Vec<&str> = names
        .iter()
        .filter(|(_, n)| is_excluded(options, n))
        .map(|(id, _)| *id)
        .collect();
    let all_excluded = excluded.len() == names.len();
    let span = round.caller..round.end;
    // A pinned round (the last unit, or the one holding the last user turn) is never removed:
    // in drop mode it is cleared instead.
    let pinned = span.end == messages.len() || last_user_turn.is_some_and(|u| span.contains(&u));
    let mode = match options.mode {
        ToolMode::Drop if pinned && excluded.is_empty() => ToolMode::Clear,
        mode => mode,
    };
    match mode {
        ToolMode::Clear if !all_excluded => {}
        ToolMode::Drop if excluded.is_empty() => {}
        _ => return None,
    }
    let mut edits = Vec::new();
    let mut shown = gist::Shown::default();
    for (index, message) in span.clone().zip(&messages[span]) {
        let counts = &state.counts;
        if mode == ToolMode::Drop {
            edits.push(plan_drop(index, message, counts, counting.counter));
            continue;
        }
        let reference = planning.cutting.reference(state, index);
        let clear = Clear {
            names: &names,
            excluded: &excluded,
            options,
            reference: reference.as_deref(),
            gist: size,
            superseded: &planning.superseded,
        };
        edits.extend(plan_clear(
            index, message, counts, &clear, &mut shown, counting,
        ));
    }
    let before: usize = edits.iter().map(|e| state.counts.messages[e.message]).sum();
    let after: usize = edits.iter().map(|e| e.tokens).sum();
    Some(RoundPlan {
        saved: before.saturating_sub(after),
        partly_excluded: !excluded.is_empty(),
        edits,
    })
}

/// What clearing one message's results reads besides the message.
#[derive(Clone, Copy)]
struct Clear<'a> {
    /// The round's calls: id and tool name.
    names: &'a [(&'a str, &'a str)],
    /// The ids of calls of excluded tools.
    excluded: &'a [&'a str],
    options: &'a ToolOptions,
    /// The reference to the message's archive file, when archived.
    reference: Option<&'a str>,
    /// How much of each output its gist keeps.
    gist: GistSize,
    /// The ids of calls a later call repeats.
    superseded: &'a HashSet<&'a str, FxBuild>,
}

/// The changes that clear a message's results (and inputs, when asked), if any, costed from the
/// cached counts; a gist leaves out the names the round's earlier gists show (`shown`).
fn plan_clear(
    index: usize,
    message: &Message,
    counts: &Counts,
    clear: &Clear<'_>,
    shown: &mut gist::Shown,
    counting: &mut Counting,
) -> Option<Edit> {
    let Clear {
        names,
        excluded,
        options,
        reference,
        gist: size,
        superseded,
    } = *clear;
    let counter = counting.counter;
    let name_of = |id: &str| {
        names
            .iter()
            .find(|(i, _)| *i == id)
            .map_or("tool", |(_, n)| *n)
    };
    let tokens = counts.messages[index];
    let cached = counts.message_parts(index).map(|(_, parts)| parts);
    let mut changes = Vec::new();
    let mut after = tokens;
    for (part, content) in message.parts.iter().enumerate() {
        match content {
            Part::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } if !excluded.contains(&call_id.as_str()) && !is_cleared(content) => {
                // A result costs its cached count less its id; a result alone in its message
                // costs the message's count less its fields and id.
                let content_tokens = if let Some(tokens) = counts.result_content(index, part) {
                    tokens
                } else if message.parts.len() == 1 {
                    tokens
                        .saturating_sub(counter.count_fields(message) + counter.count_text(call_id))
                } else {
                    counter.count_parts(content)
                };
                let stale = superseded.contains(call_id.as_str());
                // A small output gives little: only a tight budget (small gists) clears it.
                if size == GistSize::Full && !stale && content_tokens < SMALL_OUTPUT {
                    continue;
                }
                let tool = name_of(call_id);
                let text = joined_text(content);
                let outcome = evidence::outcome_in(&text, *is_error);
                let mut placeholder = note::cleared_output(tool, content_tokens, outcome);
                if let Some(reference) = reference {
                    placeholder = note::with_reference(&placeholder, reference);
                }
                let kept = if stale {
                    note::mark_superseded(&mut placeholder);
                    None
                } else {
                    let room = size.room(content_tokens);
                    gist::gist(&text, *is_error, outcome, room, shown, counter)
                };
                if let Some(kept) = &kept {
                    kept.show_in(shown);
                    placeholder =
                        note::with_gist(&placeholder, kept.lines_kept, kept.lines, &kept.text);
                }
                // An instruction file the output carries is never cleared: it follows the
                // placeholder.
                let carried = instructions::carried_in_output(&text);
                if let Some(carried) = carried {
                    placeholder.push_str(carried);
                }
                let placeholder_tokens = match &kept {
                    Some(kept) if carried.is_none() => counting.with_gist(&placeholder, kept),
                    Some(_) => counter.count_text(&placeholder),
                    None => counting.placeholder(tool, &placeholder),
                };
                if placeholder_tokens < content_tokens {
                    after -= content_tokens - placeholder_tokens;
                    changes.push(Change::ClearResult { part, placeholder });
                }
            }
            Part::ToolCall { id, .. }
                if options.clear_inputs && !excluded.contains(&id.as_str()) =>
            {
                let old = cached.map_or_else(
                    || counter.count_parts(std::slice::from_ref(content)),
                    |parts| parts[part],
                );
                let mut cleared = content.clone();
                clear_input(&mut cleared);
                let new = counter.count_parts(std::slice::from_ref(&cleared));
                if new < old {
                    after -= old - new;
                    changes.push(Change::ClearInput { part });
                }
            }
            _ => {}
        }
    }
    (!changes.is_empty()).then_some(Edit {
        message: index,
        changes,
        tokens: after,
    })
}

/// The change that drops a message of a round: tool messages go, other messages keep only
/// their non-blank text (the words written beside the calls or results).
fn plan_drop(index: usize, message: &Message, counts: &Counts, counter: &dyn TokenCounter) -> Edit {
    let text: Vec<&Part> = message.parts.iter().filter(|p| is_kept_text(p)).collect();
    if message.role == Role::Tool || text.is_empty() {
        return Edit {
            message: index,
            changes: vec![Change::Remove],
            tokens: 0,
        };
    }
    let tokens = match counts.message_parts(index) {
        Some((fields, parts)) => {
            let kept = message
                .parts
                .iter()
                .zip(parts)
                .filter(|(p, _)| is_kept_text(p));
            fields + kept.map(|(_, tokens)| tokens).sum::<usize>()
        }
        None => {
            counter.count_fields(message)
                + text
                    .iter()
                    .map(|p| counter.count_parts(std::slice::from_ref(*p)))
                    .sum::<usize>()
        }
    };
    Edit {
        message: index,
        changes: vec![Change::KeepText],
        tokens,
    }
}

/// Whether a part is text worth keeping when its round is dropped.
fn is_kept_text(part: &Part) -> bool {
    matches!(part, Part::Text { text, .. } if !text.trim().is_empty())
}

/// Makes the planned changes in place, removing the messages that go.
fn apply_edits(mut state: Applied, edits: Vec<Edit>) -> Applied {
    let mut removed = vec![false; state.conversation.messages.len()];
    for edit in edits {
        let message = &mut state.conversation.messages[edit.message];
        state.counts.messages[edit.message] = edit.tokens;
        let input = state.origin[edit.message].input();
        state.origin[edit.message] = state.origin[edit.message].edited();
        for change in edit.changes {
            match change {
                Change::ClearResult { part, placeholder } => {
                    if let Part::ToolResult {
                        content, layout, ..
                    } = &mut message.parts[part]
                    {
                        let output = std::mem::replace(content, vec![Part::text(placeholder)]);
                        let was = std::mem::replace(layout, Layout::Text);
                        state.discarded.output(input, (part, was), output);
                    }
                }
                Change::ClearInput { part } => clear_input(&mut message.parts[part]),
                Change::KeepText => message.parts.retain(is_kept_text),
                Change::Remove => removed[edit.message] = true,
            }
        }
    }
    if removed.contains(&true) {
        let keep = |i: &usize| !removed[*i];
        let messages = std::mem::take(&mut state.conversation.messages);
        let mut kept = Vec::with_capacity(messages.len());
        for (index, message) in messages.into_iter().enumerate() {
            if keep(&index) {
                kept.push(message);
            } else {
                state.discarded.message(message);
            }
        }
        state.conversation.messages = kept;
        state.counts.messages = filter_by(&state.counts.messages, &removed);
        state.origin = filter_by(&state.origin, &removed);
    }
    state
}

/// The items whose index is not marked removed.
fn filter_by<T: Copy>(items: &[T], removed: &[bool]) -> Vec<T> {
    items
        .iter()
        .zip(removed)
        .filter(|(_, r)| !**r)
        .map(|(item, _)| *item)
        .collect()
}

/// Whether a tool name is excluded.
fn is_excluded(options: &ToolOptions, name: &str) -> bool {
    options.exclude.iter().any(|e| e == name)
}

/// The tool name of each call id in a round's calling message.
fn call_names(caller: &Message) -> impl Iterator<Item = (&str, &str)> {
    caller.parts.iter().filter_map(|p| match p {
        Part::ToolCall { id, name, .. } => Some((id.as_str(), name.as_str())),
        _ => None,
    })
}

/// Whether a result's content is already a ctxcompact placeholder.
fn is_cleared(content: &[Part]) -> bool {
    matches!(content, [Part::Text { text, .. }] if note::is_cleared_output(text))
}

/// Clears the recent rounds' outputs, oldest first, until `stop` is met: every round's but the
/// round in progress (the conversation's last unit, when it is a tool round). `tools` names the
/// excluded tools and the caps; the mode and the rounds kept are this step's own.
pub(crate) fn clear_recent(
    state: Applied,
    tools: &ToolOptions,
    stop: Stop,
    tokenizer: Tokenizer,
    archive: Option<&Archive>,
) -> (Applied, ToolTrim) {
    let recent = ToolOptions {
        mode: ToolMode::Clear,
        keep: usize::from(is_in_progress(&state)),
        ..tools.clone()
    };
    trim(state, &recent, stop, tokenizer, archive)
}

/// Whether the conversation ends in a tool round (the round in progress).
pub(crate) fn is_in_progress(state: &Applied) -> bool {
    let last = state.conversation.messages.last();
    last.is_some_and(|m| m.has_results() || m.has_calls())
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use serde_json::{Value, json};

    use super::*;
    use crate::format::parse_value;
    use crate::tokens::{CharEstimate, count_with};
    use crate::validate::check;

    /// `rounds` OpenAI rounds; round `i` calls `tools[i % len]` twice in parallel, with outputs
    /// of 50 lines.
    fn openai(rounds: usize, tools: &[&str]) -> Value {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..rounds {
            let name = tools[i % tools.len()];
            let call = |c: usize| json!({"id": format!("r{i}c{c}"), "type": "function", "function": {"name": name, "arguments": format!("{{\"path\": \"src/m{i}_{c}.rs\"}}")}});
            messages.push(json!({"role": "assistant", "content": format!("step {i}"), "tool_calls": [call(0), call(1)]}));
            for c in 0..2 {
                messages.push(json!({"role": "tool", "tool_call_id": format!("r{i}c{c}"), "content": format!("line of output {i}\n").repeat(50)}));
            }
        }
        messages.push(json!({"role": "assistant", "content": "done"}));
        Value::Array(messages)
    }

    /// `conversation` with each line of each output numbered, so that no two are the same.
    fn numbered(mut conversation: Value) -> Value {
        for message in conversation.as_array_mut().unwrap() {
            if message["role"] == "tool" {
                let text = message["content"].as_str().unwrap();
                let mut lines = String::new();
                for (k, line) in text.lines().enumerate() {
                    lines.push_str(&line.replacen("line", &format!("line {k}"), 1));
                    lines.push('\n');
                }
                message["content"] = Value::String(lines);
            }
        }
        conversation
    }

    fn anthropic(rounds: usize) -> Value {
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..rounds {
            messages.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("step {i}")},
                {"type": "tool_use", "id": format!("t{i}a"), "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": format!("t{i}b"), "name": "read", "input": {"path": "b"}}]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}a"), "content": "x\n".repeat(200)},
                {"type": "tool_result", "tool_use_id": format!("t{i}b"), "is_error": true, "content": "y\n".repeat(200)},
                {"type": "text", "text": format!("note {i}")}]}));
        }
        messages.push(json!({"role": "assistant", "content": "done"}));
        json!({"system": "s", "messages": messages})
    }

    fn run(
        value: Value,
        options: &ToolOptions,
        budget: Option<usize>,
    ) -> (Applied, Applied, ToolTrim) {
        let conversation = parse_value(value, None).unwrap();
        let counts = count_with(&conversation, &CharEstimate);
        let before = Applied::unchanged(conversation.clone(), counts.clone());
        let start = Applied::unchanged(conversation, counts);
        let stop = Stop {
            budget,
            cap_crossing: true,
            widen_to: None,
        };
        let (after, report) = trim(start, options, stop, Tokenizer::Chars, None);
        assert_eq!(check(&after.conversation), Vec::new());
        assert_eq!(after.counts, count_with(&after.conversation, &CharEstimate));
        (before, after, report)
    }

    /// `value` trimmed with the default options to `budget` (characters), cleared outputs
    /// keeping gists, the recent rounds planned with the old ones as `widen_to` says.
    fn trim_within(value: Value, budget: usize, widen_to: Option<usize>) -> (Applied, ToolTrim) {
        let conversation = parse_value(value, None).unwrap();
        let counts = count_with(&conversation, &CharEstimate);
        let stop = Stop {
            budget: Some(budget),
            cap_crossing: true,
            widen_to,
        };
        let start = Applied::unchanged(conversation, counts);
        trim(start, &ToolOptions::default(), stop, Tokenizer::Chars, None)
    }

    /// The text of the tool result that is message `at`'s first part.
    fn output_text(state: &Applied, at: usize) -> String {
        match &state.conversation.messages[at].parts[0] {
            Part::ToolResult { content, .. } => joined_text(content).into_owned(),
            other => panic!("{other:?}"),
        }
    }

    /// Indices of the calling messages whose round changed.
    fn touched_rounds(before: &Applied, after: &Applied) -> Vec<usize> {
        let rounds: Vec<usize> = (0..before.conversation.messages.len())
            .filter(|&i| before.conversation.messages[i].has_calls())
            .collect();
        rounds
            .iter()
            .enumerate()
            .filter(|(_, caller)| {
                let window = before.conversation.result_window(**caller);
                (**caller..window.end).any(|i| {
                    !after
                        .conversation
                        .messages
                        .contains(&before.conversation.messages[i])
                })
            })
            .map(|(n, _)| n)
            .collect()
    }

    proptest::proptest! {
        /// Under the BPE tokenizers and the estimates calibrated on one, a placeholder costs
        /// its tool's head, its size and the rest, exactly as counted whole, whatever the tool's
        /// name, the size, the output's last lines and the notes after it.
        #[test]
        fn a_placeholder_costs_its_head_its_size_and_its_rest(
            tool in "(?s).{0,12}",
            tokens in proptest::prop_oneof![0_usize..2_000, 0_usize..usize::MAX],
            content in "(?s)(.{0,30}(exit code|error:|\n| |[0-9]{1,4})){0,6}",
            is_error: bool,
            superseded: bool,
            reference in proptest::option::of("(?s).{0,20}"),
        ) {
            let mut placeholder = note::cleared_output(&tool, tokens, evidence::outcome_in(&content, is_error));
            if let Some(reference) = reference {
                placeholder = note::with_reference(&placeholder, &reference);
            }
            if superseded {
                note::mark_superseded(&mut placeholder);
            }
            let calibrated = Tokenizer::from_name("claude-sonnet").expect("a shipped family");
            for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k, calibrated] {
                let mut counting = Counting::new(tokenizer);
                let whole = tokenizer.counter().count_text(&placeholder);
                // The first call counts the head and the rest, the second reads them back.
                proptest::prop_assert_eq!(counting.placeholder(&tool, &placeholder), whole);
                proptest::prop_assert_eq!(counting.placeholder(&tool, &placeholder), whole);
            }
        }
    }

    #[test]
    fn rounds_are_planned_alike_on_one_thread_and_on_several() {
        for tokenizer in [Tokenizer::Chars, Tokenizer::O200k] {
            plans_alike_on_one_thread_and_on_several(tokenizer);
        }
    }

    fn plans_alike_on_one_thread_and_on_several(tokenizer: Tokenizer) {
        let conversation = parse_value(openai(600, &["read", "grep", "edit"]), None).unwrap();
        let counts = count_with(&conversation, tokenizer.counter());
        let state = Applied::unchanged(conversation, counts);
        let rounds = rounds(&state.conversation);
        for mode in [ToolMode::Clear, ToolMode::Drop] {
            let options = ToolOptions {
                mode,
                exclude: vec!["grep".into()],
                ..ToolOptions::default()
            };
            for needed in [0, 1, 5_000, 60_000, usize::MAX] {
                let planning = Planning {
                    options: &options,
                    tokenizer,
                    cutting: fit::Cutting {
                        counter: tokenizer.counter(),
                        archive: None,
                    },
                    gist: GistSize::Full,
                    superseded: repeated_calls(&state.conversation),
                };
                let one = plan_rounds(&state, &rounds, needed, &planning, 1);
                let many = plan_rounds(&state, &rounds, needed, &planning, 4);
                assert!(many.len() >= one.len(), "{mode:?} {needed}");
                assert_eq!(many[..one.len()], one[..], "{mode:?} {needed}");
                let saved = |plans: &[Option<RoundPlan>]| -> usize {
                    plans
                        .iter()
                        .flatten()
                        .map(|plan| {
                            let edits = &plan.edits;
                            let before: usize =
                                edits.iter().map(|e| state.counts.messages[e.message]).sum();
                            let after: usize = edits.iter().map(|e| e.tokens).sum();
                            before.saturating_sub(after)
                        })
                        .sum()
                };
                // One thread stops at the first prefix that saves enough.
                assert!(saved(&one) >= needed || one.len() == rounds.len());
                if let Some(shorter) = one.len().checked_sub(1) {
                    assert!(saved(&one[..shorter]) < needed);
                }
            }
        }
    }

    #[test]
    fn exactly_the_last_n_rounds_stay_untouched() {
        for keep in 0..7 {
            let options = ToolOptions {
                keep,
                ..ToolOptions::default()
            };
            let (before, after, report) = run(openai(5, &["read"]), &options, None);
            let expected: Vec<usize> = (0..5usize.saturating_sub(keep)).collect();
            assert_eq!(touched_rounds(&before, &after), expected, "keep {keep}");
            assert_eq!(
                (report.rounds, report.kept, report.cleared),
                (5, keep.min(5), expected.len())
            );
            assert_eq!(
                after.conversation.messages.len(),
                before.conversation.messages.len()
            );
        }
    }

    #[test]
    fn excluded_tools_are_never_touched() {
        let options = ToolOptions {
            keep: 0,
            exclude: vec!["bash".into()],
            ..ToolOptions::default()
        };
        let (before, after, report) = run(openai(4, &["read", "bash"]), &options, None);
        assert_eq!(touched_rounds(&before, &after), vec![0, 2]);
        assert_eq!(report.excluded, 2);
        let drop = ToolOptions {
            mode: ToolMode::Drop,
            ..options
        };
        let (before, after, _) = run(openai(4, &["read", "bash"]), &drop, None);
        assert_eq!(touched_rounds(&before, &after), vec![0, 2]);
    }

    #[test]
    fn clear_at_least_trims_nothing_when_the_gain_is_smaller() {
        let (_, _, report) = run(
            openai(4, &["read"]),
            &ToolOptions {
                keep: 3,
                ..ToolOptions::default()
            },
            None,
        );
        let gain = report.tokens_freed;
        assert!(gain > 0);
        let options = ToolOptions {
            keep: 3,
            clear_at_least: gain + 1,
            ..ToolOptions::default()
        };
        let (before, after, report) = run(openai(4, &["read"]), &options, None);
        assert_eq!(after.conversation, before.conversation);
        assert_eq!((report.cleared, report.tokens_freed), (0, 0));
        let options = ToolOptions {
            keep: 3,
            clear_at_least: gain,
            ..ToolOptions::default()
        };
        assert_eq!(run(openai(4, &["read"]), &options, None).2.cleared, 1);
    }

    #[test]
    fn parallel_results_are_cleared_together_and_keep_their_pairing() {
        let options = ToolOptions {
            keep: 1,
            clear_inputs: true,
            ..ToolOptions::default()
        };
        let (_, after, _) = run(openai(2, &["read"]), &options, None);
        let messages = &after.conversation.messages;
        for index in [2, 3] {
            let text = messages[index].parts.iter().find_map(|p| match p {
                Part::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            });
            // The output's own ⌈chars ÷ 4⌉: 50 lines of 17 characters.
            let tokens = (50 * 17usize).div_ceil(4);
            // Its one line, repeated, is its gist.
            let expected = format!(
                "[ctxcompact: output of read cleared ({tokens} tokens); 1 of 1 lines below]\n\
                 line of output 0 (×50)"
            );
            assert_eq!(text.unwrap(), vec![Part::text(expected)]);
        }
        // Cleared inputs keep their path-like arguments: here, all there is.
        assert!(messages[1].parts.iter().all(
            |p| !matches!(p, Part::ToolCall { arguments, .. } if !arguments.to_string().contains("src/m0_"))
        ));
    }

    #[test]
    fn a_gist_leaves_out_the_names_an_earlier_gist_of_its_round_shows() {
        // Two parallel reads of the same lines (two copies of one file): every name the second
        // holds, the first one's gist already shows.
        let mut file = String::new();
        for k in 0..40 {
            let _ = writeln!(file, "line {k} calls handle_event_{k}");
        }
        let mut conversation = openai(2, &["read"]);
        for at in [2, 3] {
            conversation[at]["content"] = Value::String(file.clone());
        }
        let options = ToolOptions {
            keep: 1,
            ..ToolOptions::default()
        };
        let (_, after, _) = run(conversation, &options, None);
        let (first, second) = (output_text(&after, 2), output_text(&after, 3));
        let names = |text: &str| -> Vec<String> {
            (0..40)
                .map(|k| format!("handle_event_{k}"))
                .filter(|name| text.contains(&format!("{name},")) || text.ends_with(name))
                .collect()
        };
        let (named_first, named_second) = (names(&first), names(&second));
        assert!(!named_first.is_empty(), "{first}");
        assert!(!named_second.is_empty(), "{second}");
        // The second names only what the first does not: between them, more of the file.
        assert!(
            named_second.iter().all(|n| !named_first.contains(n)),
            "{first}\n{second}"
        );
    }

    #[test]
    fn anthropic_results_keep_is_error_and_the_user_text() {
        let options = ToolOptions {
            keep: 1,
            ..ToolOptions::default()
        };
        let (_, after, report) = run(anthropic(3), &options, None);
        assert_eq!(report.cleared, 2);
        let rendered = crate::format::render(&after.conversation);
        let carrier = &rendered["messages"][2]["content"];
        assert_eq!(carrier[1]["is_error"], true);
        assert!(
            carrier[0]["content"]
                .as_str()
                .unwrap()
                .starts_with("[ctxcompact: output of read cleared")
        );
        assert_eq!(carrier[2]["text"], "note 0");
    }

    #[test]
    fn drop_removes_whole_rounds_but_keeps_the_text_beside_them() {
        let options = ToolOptions {
            mode: ToolMode::Drop,
            keep: 1,
            ..ToolOptions::default()
        };
        let (_, after, report) = run(openai(3, &["read"]), &options, None);
        assert_eq!(report.dropped, 2);
        let texts: Vec<String> = after
            .conversation
            .messages
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts[..4], ["go", "step 0", "step 1", "step 2"]);
        assert!(!after.conversation.messages[1].has_calls());
        let (_, after, _) = run(anthropic(2), &options, None);
        let texts: Vec<String> = after
            .conversation
            .messages
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts[..4], ["go", "step 0", "note 0", "step 1"]);
    }

    #[test]
    fn trimming_stops_as_soon_as_the_budget_is_met() {
        let options = ToolOptions {
            keep: 0,
            ..ToolOptions::default()
        };
        let (before, _, full) = run(openai(5, &["read"]), &options, None);
        let budget = before.counts.total() - 1;
        let (_, after, report) = run(openai(5, &["read"]), &options, Some(budget));
        // The first round alone is touched, and its outputs are capped rather than cleared:
        // clearing would free far more than the one token needed.
        assert_eq!((report.cleared, report.truncated), (0, 2), "{report:?}");
        assert!(after.counts.total() <= budget);
        assert!(full.cleared == 5);
        // With room for a placeholder and little more, the round is cleared.
        let cleared = full.tokens_freed / 5;
        let budget = before.counts.total() - cleared + 10;
        let (_, after, report) = run(openai(5, &["read"]), &options, Some(budget));
        assert_eq!((report.cleared, report.truncated), (1, 0), "{report:?}");
        assert!(after.counts.total() <= budget);
    }

    #[test]
    fn recent_outputs_keep_gists_before_older_ones_go_bare() {
        // Every round's outputs cleared with full gists fit the budget; the old rounds'
        // cleared bare do not, the three recent ones kept whole.
        let conversation = || numbered(openai(10, &["read"]));
        let all = ToolOptions {
            keep: 0,
            ..ToolOptions::default()
        };
        let (_, gisted, _) = run(conversation(), &all, None);
        let budget = gisted.counts.total() + 20;
        let (kept_whole, report) = trim_within(conversation(), budget, None);
        assert!(kept_whole.counts.total() > budget);
        assert_eq!(report.kept, 3);
        let (widened, report) = trim_within(conversation(), budget, Some(0));
        assert!(widened.counts.total() <= budget, "{report:?}");
        assert_eq!(report.kept, 0);
        // The oldest output keeps lines of its own under its placeholder.
        let first = output_text(&widened, 2);
        assert!(first.contains("line 0 of output 0"), "{first}");
    }

    #[test]
    fn recent_outputs_keep_full_gists_before_older_ones_keep_poorer_ones() {
        // Full gists of the old rounds' outputs, the three recent rounds whole, come just over
        // the budget: poorer gists of the oldest would meet it, but the recent rounds' outputs
        // are trimmed first, and every old output keeps its full gist.
        let conversation = || numbered(openai(10, &["read"]));
        let (_, old_gisted, _) = run(conversation(), &ToolOptions::default(), None);
        let budget = old_gisted.counts.total() - 10;
        let (widened, report) = trim_within(conversation(), budget, Some(0));
        assert!(widened.counts.total() <= budget, "{report:?}");
        assert!(report.kept < 3, "{report:?}");
        // The seven old rounds' outputs: messages 2, 3, 5, 6, … 21, 22.
        for at in (2..23).filter(|at| at % 3 != 1) {
            assert_eq!(output_text(&widened, at), output_text(&old_gisted, at));
        }
    }

    #[test]
    fn the_round_that_meets_the_budget_is_capped_to_just_meet_it() {
        let options = ToolOptions {
            keep: 0,
            ..ToolOptions::default()
        };
        let (before, _, _) = run(numbered(openai(5, &["read"])), &options, None);
        // Half of one round's two outputs must go.
        let budget = before.counts.total() - 110;
        let (_, after, report) = run(numbered(openai(5, &["read"])), &options, Some(budget));
        assert_eq!((report.cleared, report.truncated), (0, 2), "{report:?}");
        let total = after.counts.total();
        // Within a few lines of each capped output (the gist of a middle keeps whole lines).
        assert!(
            total <= budget && total + 32 >= budget,
            "{total} for {budget}"
        );
        let text = after.conversation.messages[2]
            .parts
            .iter()
            .find_map(|p| match p {
                Part::ToolResult { content, .. } => Some(joined_text(content)),
                _ => None,
            })
            .unwrap();
        assert!(text.starts_with("line 0 of output 0\n"), "{text}");
        assert!(text.contains(" of 50 lines omitted …]\n"), "{text}");
    }

    #[test]
    fn clearing_twice_changes_nothing() {
        let options = ToolOptions {
            keep: 1,
            ..ToolOptions::default()
        };
        let (_, once, _) = run(openai(3, &["read"]), &options, None);
        let expected = once.conversation.clone();
        let (twice, report) = trim(once, &options, Stop::ALL, Tokenizer::Chars, None);
        assert_eq!(twice.conversation, expected);
        assert_eq!(report.tokens_freed, 0);
    }

    #[test]
    fn oversize_outputs_keep_head_and_tail_even_in_kept_rounds() {
        let options = ToolOptions {
            mode: ToolMode::Off,
            max_output: Some(60),
            ..ToolOptions::default()
        };
        let (_, after, report) = run(openai(1, &["read"]), &options, None);
        assert_eq!(report.truncated, 2);
        let text = after.conversation.messages[2]
            .parts
            .iter()
            .find_map(|p| match p {
                Part::ToolResult { content, .. } => Some(content[0].clone()),
                _ => None,
            });
        let Some(Part::Text { text, .. }) = text else {
            panic!("no text")
        };
        assert!(text.starts_with("line of output 0\n"), "{text}");
        assert!(text.contains(" of 50 lines omitted …]\n"), "{text}");
        assert!(text.ends_with("line of output 0\n"), "{text}");
        assert!(CharEstimate.count_text(&text) <= 60);
        // One long line is cut by characters.
        let long = json!([{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                          {"role": "tool", "tool_call_id": "a", "content": "z".repeat(5000)}]);
        let (_, after, report) = run(long, &options, None);
        assert_eq!(report.truncated, 1);
        assert!(after.conversation.messages[1].text().is_empty());
        assert!(after.counts.messages[1] < 80);
    }

    #[test]
    fn a_cleared_placeholder_is_not_capped() {
        let placeholder =
            note::cleared_output("Task", 2_755, evidence::outcome_in("all good", false));
        let value = json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "Task", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": placeholder}]);
        let mut tool = parse_value(value, None).unwrap().messages.remove(2);
        let before = tool.clone();
        let cutting = fit::Cutting {
            counter: &CharEstimate,
            archive: None,
        };
        assert_eq!(cutting.cap_results(&mut tool, 1), 0);
        assert_eq!(tool, before);
    }

    #[test]
    fn a_json_output_is_capped_to_its_gist_with_the_names_of_its_later_items() {
        let flights: Vec<Value> = (0..40)
            .map(|i| {
                json!({"flight_number": format!("HAT{:03}", 100 + i), "origin": "JFK",
                       "status": "available", "prices": {"economy": 100 + i},
                       "departure": format!("{:02}:00:00", i % 24)})
            })
            .collect();
        let output = Value::Array(flights).to_string();
        let cutting = fit::Cutting {
            counter: &CharEstimate,
            archive: None,
        };
        let cap = 120;
        let text = cutting.cap_text(&output, cap, None).unwrap();
        assert!(CharEstimate.count_text(&text) <= cap, "{text}");
        assert!(fit::is_capped(&text), "{text}");
        assert!(text.starts_with("[… "), "{text}");
        assert!(text.contains(" of 201 values omitted …]\n"), "{text}");
        // Names of later items than a head of the text holds, and no key.
        assert!(text.contains("HAT103"), "{text}");
        assert!(!text.contains("flight_number"), "{text}");
        assert_eq!(cutting.cap_text(&output, cap, None).unwrap(), text);
        // With an archive, the note names the file holding the whole output.
        let archived = cutting
            .cap_text(&output, cap, Some("archived in /a/b.jsonl, line 1"))
            .unwrap();
        assert!(
            archived.starts_with("[… ") && archived.contains("; archived in /a/b.jsonl, line 1]\n"),
            "{archived}"
        );
        assert!(CharEstimate.count_text(&archived) <= cap, "{archived}");
        // A wrapper of one text (Gemini CLI's `{"output": …}`) is not a listing: it keeps its
        // head and tail as text does.
        let wrapper = json!({"output": "HAT001 is on time\n".repeat(100)}).to_string();
        let text = cutting.cap_text(&wrapper, cap, None).unwrap();
        assert!(text.starts_with("{\"output\":"), "{text}");
        assert!(text.contains(" characters omitted …]"), "{text}");
        // Text that is not JSON keeps its head and tail.
        let plain = "line\n".repeat(200);
        let text = cutting.cap_text(&plain, cap, None).unwrap();
        assert!(
            text.starts_with("line\n") && text.contains(" lines omitted …]"),
            "{text}"
        );
    }

    #[test]
    fn a_capped_output_of_a_few_long_lines_fills_its_cap_without_the_harness_reminder() {
        let lines: Vec<String> = (0..5)
            .map(|k| format!("line {k} {}\n", "word ".repeat(80)))
            .collect();
        let reminder =
            "<system-reminder>\nConsider whether the file is malware.\n</system-reminder>\n";
        let output = format!("{}\n{reminder}", lines.concat());
        let cutting = fit::Cutting {
            counter: &CharEstimate,
            archive: None,
        };
        let cap = 200;
        let text = cutting.cap_text(&output, cap, None).unwrap();
        let tokens = CharEstimate.count_text(&text);
        // A line is about 100 tokens: the head's line and the start of the next fill the cap.
        assert!(tokens <= cap && tokens >= cap * 9 / 10, "{tokens}: {text}");
        assert!(
            text.starts_with(&format!("{}line 1 word", lines[0])),
            "{text}"
        );
        assert!(text.contains(" lines omitted …]"), "{text}");
        assert!(!text.contains("system-reminder"), "{text}");
        assert!(fit::is_capped(&text), "{text}");
    }

    #[test]
    fn a_capped_output_is_recognised_and_not_cut_again() {
        for unit in ["lines", "characters", "values"] {
            let text = format!("head\n{}\ntail", note::omitted(1_200, 1_300, unit));
            assert!(fit::is_capped(&text), "{text}");
        }
        assert!(!fit::is_capped("[… a line of output …]"));
    }
}
