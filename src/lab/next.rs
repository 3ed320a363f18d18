//! The next-step measure: whether a compacted history still holds what the agent went on to
//! use. A recording is cut before a model call; the references (the `references` module) that
//! the next assistant messages of the recording write, and that the history before the cut
//! holds only where compaction may remove it, are looked up in the compacted history.
//!
//! Removable history is all but the pinned: the system messages, the task (the first request)
//! and the last unit (the last message, or the whole last tool round). A reference the pinned
//! messages hold is kept by every compaction, and one the history never held was not the
//! history's to keep: neither counts.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::classify;
use crate::{Budget, Conversation, Message, Options, Part, Result, Role, compact};

use super::recall::searchable;
use super::references::{holds, scan};

/// Where a recording is cut: at the first model call at or after these percentages of its
/// messages (the two cuts).
const CUT_PERCENTS: [usize; 2] = [50, 75];

/// How many assistant messages after a cut have their references looked up, unless told
/// otherwise (the five: the steps a compaction must carry the agent through).
pub const NEXT_MESSAGES: usize = 5;

/// How Claude Code opens the user message that holds its own summary of the history it
/// compacted (its auto-compaction, and `/compact`).
const CLAUDE_CODE_SUMMARY: &str = "This session is being continued from a previous conversation";

/// Where in removable history a reference was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// The text of a user message: a request, or harness text.
    UserText,
    /// The text of an assistant message.
    AssistantText,
    /// The arguments of a tool call.
    ToolCall,
    /// A tool's output.
    ToolOutput,
}

/// A reference the next assistant messages write that the history before the cut holds only
/// in removable history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// The reference, normalised (`#W2378156` → `W2378156`, `./a.rs:4` → `a.rs`).
    pub reference: String,
    /// Every kind of removable message that holds it.
    pub holders: BTreeSet<Holder>,
}

/// The cut points of a conversation: for each of `CUT_PERCENTS`, the first message index at
/// or after that share of its messages where the agent calls the model — the next message is
/// an assistant's, the one before it a user or tool message, and every call before it has its
/// result. A share with no such index has no cut; the cuts are distinct and in order.
pub fn cuts(conversation: &Conversation) -> Vec<usize> {
    let messages = &conversation.messages;
    // `ready[i]`: messages[..i] leave no call unanswered.
    let mut ready = Vec::with_capacity(messages.len() + 1);
    let mut open = BTreeSet::new();
    for message in messages {
        ready.push(open.is_empty());
        for part in &message.parts {
            match part {
                Part::ToolCall { id, .. } => {
                    open.insert(id.as_str());
                }
                Part::ToolResult { call_id, .. } => {
                    open.remove(call_id.as_str());
                }
                _ => {}
            }
        }
    }
    let is_call = |i: usize| {
        messages[i].role == Role::Assistant
            && matches!(messages[i - 1].role, Role::User | Role::Tool)
            && ready[i]
    };
    let mut out: Vec<usize> = CUT_PERCENTS
        .iter()
        .filter_map(|percent| {
            let from = (messages.len() * percent).div_ceil(100).max(1);
            (from..messages.len()).find(|&i| is_call(i))
        })
        .collect();
    out.dedup();
    out
}

/// The conversation's first `cut` messages, as the agent would send them at that call.
pub fn prefix(conversation: &Conversation, cut: usize) -> Conversation {
    let mut prefix = conversation.clone();
    prefix.messages.truncate(cut);
    prefix.lines.truncate(cut);
    prefix
}

/// The references that the first `next` assistant messages from `cut` on write (in their
/// text and their calls' argument values) and that `conversation.messages[..cut]` holds only
/// in removable history.
pub fn pending(conversation: &Conversation, cut: usize, next: usize) -> Vec<Pending> {
    let messages = &conversation.messages;
    let mut written = BTreeSet::new();
    let ahead = messages[cut..].iter().filter(|m| m.role == Role::Assistant);
    for message in ahead.take(next) {
        for part in &message.parts {
            match part {
                Part::Text { text, .. } => scan(text, &mut written),
                Part::ToolCall { arguments, .. } => scan(&argument_values(arguments), &mut written),
                _ => {}
            }
        }
    }
    let history = &messages[..cut];
    let task = classify::requests_in(history).first().copied();
    let last = last_unit(history);
    let mut pinned: Vec<String> = conversation.system.iter().map(Message::text).collect();
    let mut removable: Vec<(Holder, String)> = Vec::new();
    for (index, message) in history.iter().enumerate() {
        let is_pinned = message.role == Role::System || Some(index) == task || index >= last;
        for (holder, text) in texts(message) {
            if is_pinned {
                pinned.push(text);
            } else {
                removable.push((holder, text));
            }
        }
    }
    written
        .into_iter()
        .filter(|reference| !pinned.iter().any(|text| holds(text, reference)))
        .filter_map(|reference| {
            let holders: BTreeSet<Holder> = removable
                .iter()
                .filter(|(_, text)| holds(text, &reference))
                .map(|(holder, _)| *holder)
                .collect();
            (!holders.is_empty()).then_some(Pending { reference, holders })
        })
        .collect()
}

/// For each of `pending`, whether `output` (all its text: messages, markers, digests,
/// placeholders, calls) still holds it.
pub fn kept(pending: &[Pending], output: &Conversation) -> Vec<bool> {
    let text = searchable(output);
    pending.iter().map(|p| holds(&text, &p.reference)).collect()
}

/// The index at which the last unit of `history` starts: its last message, or the assistant
/// message that opens the tool round its last message closes.
fn last_unit(history: &[Message]) -> usize {
    let results = |m: &Message| m.parts.iter().any(|p| matches!(p, Part::ToolResult { .. }));
    let Some(mut at) = history.len().checked_sub(1) else {
        return 0;
    };
    if !results(&history[at]) {
        return at;
    }
    while at > 0 && results(&history[at]) {
        at -= 1;
    }
    let calls = history[at]
        .parts
        .iter()
        .any(|p| matches!(p, Part::ToolCall { .. }));
    if calls { at } else { at + 1 }
}

/// A message's texts, each with who holds it: text parts by the message's role, each call's
/// arguments, each result's content.
fn texts(message: &Message) -> Vec<(Holder, String)> {
    let by_role = match message.role {
        Role::Assistant => Holder::AssistantText,
        Role::Tool => Holder::ToolOutput,
        Role::System | Role::User => Holder::UserText,
    };
    let mut out = Vec::new();
    for part in &message.parts {
        match part {
            Part::Text { text, .. } => out.push((by_role, text.clone())),
            Part::ToolCall { arguments, .. } => out.push((Holder::ToolCall, raw(arguments))),
            Part::ToolResult { content, .. } => {
                let text = content.iter().filter_map(|p| match p {
                    Part::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                });
                out.push((Holder::ToolOutput, text.collect::<Vec<_>>().join("\n")));
            }
            Part::Opaque(_) => {}
        }
    }
    out
}

/// Arguments as written: the JSON-encoded string itself, or the object's JSON.
fn raw(arguments: &serde_json::Value) -> String {
    match arguments {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The string values of a call's arguments, one a line: not the keys, which name parameters,
/// nor numbers, which set them (`"timeout": 120000`, `"limit": 600`) where an id would be a
/// string; arguments that are not JSON are taken whole.
fn argument_values(arguments: &serde_json::Value) -> String {
    fn leaves(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::String(text) => out.push_str(text),
            serde_json::Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
            serde_json::Value::Object(fields) => fields.values().for_each(|v| leaves(v, out)),
            serde_json::Value::Number(_) | serde_json::Value::Bool(_) | serde_json::Value::Null => {
            }
        }
        out.push('\n');
    }
    let mut out = String::new();
    match arguments {
        serde_json::Value::String(text) => match serde_json::from_str(text) {
            Ok(value) => leaves(&value, &mut out),
            Err(_) => out.push_str(text),
        },
        other => leaves(other, &mut out),
    }
    out
}

/// Claude Code's own summary against `compact` at its size, on a session that holds one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SummaryComparison {
    /// The index of the user message holding the summary.
    pub summary_at: usize,
    /// The budget `compact` had: the tokens of what Claude Code sent in place of the history,
    /// the system messages and the summary message.
    pub target: usize,
    /// The references the next assistant messages after the summary write that the history
    /// before it holds only in removable history.
    pub pending: Vec<Pending>,
    /// For each of `pending`, whether the summary's text holds it.
    pub summary_kept: Vec<bool>,
    /// For each of `pending`, whether `compact`'s output of the history before the summary
    /// holds it.
    pub compact_kept: Vec<bool>,
}

/// On a Claude Code session holding Claude Code's own summary (a user message opening with
/// `CLAUDE_CODE_SUMMARY`), which of the references the `next` assistant messages after it
/// use the summary keeps, and which `compact` keeps of the history before it, run with `base`
/// at a budget of the tokens Claude Code sent in its place: the system messages and the summary
/// message (its system prompt and tool definitions are not in the recording, and it does not
/// resend the task, which the summary restates). `None` for a session without a summary.
///
/// # Errors
/// As [`compact`], at that budget.
pub fn against_summary(
    conversation: &Conversation,
    base: &Options,
    next: usize,
) -> Result<Option<SummaryComparison>> {
    let messages = &conversation.messages;
    let Some(summary_at) = messages.iter().position(|m| {
        m.role == Role::User && m.text().trim_start().starts_with(CLAUDE_CODE_SUMMARY)
    }) else {
        return Ok(None);
    };
    let pending = pending(conversation, summary_at, next);
    let summary = messages[summary_at].text();
    let summary_kept = pending
        .iter()
        .map(|p| holds(&summary, &p.reference))
        .collect();
    let mut sent = prefix(conversation, summary_at);
    sent.messages.retain(|m| m.role == Role::System);
    sent.messages.push(messages[summary_at].clone());
    sent.lines.clear();
    let target = base.tokenizer.count(&sent).total();
    let options = Options {
        budget: Budget::Tokens(target),
        ..base.clone()
    };
    let output = compact(prefix(conversation, summary_at), &options)?.conversation;
    let compact_kept = kept(&pending, &output);
    Ok(Some(SummaryComparison {
        summary_at,
        target,
        pending,
        summary_kept,
        compact_kept,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::parse_value;

    fn call(id: &str, name: &str, arguments: &serde_json::Value) -> serde_json::Value {
        json!({"id": id, "type": "function",
               "function": {"name": name, "arguments": arguments.to_string()}})
    }

    /// A task naming a reservation; a lookup whose output holds a card; an answer naming a
    /// flight; a booking that uses all three.
    fn airline() -> Conversation {
        let lookup = call("a", "get_user_details", &json!({"user_id": "mia_li_3668"}));
        let book = call(
            "b",
            "book",
            &json!({"reservation_id": "ZFA04Y", "flight": "HAT138",
                    "payment_id": "credit_card_7407366", "timeout": 120_000}),
        );
        parse_value(
            json!([
                {"role": "system", "content": "You are an airline agent."},
                {"role": "user", "content": "Please move reservation ZFA04Y to a later flight."},
                {"role": "assistant", "content": null, "tool_calls": [lookup]},
                {"role": "tool", "tool_call_id": "a",
                 "content": format!("payment methods: credit_card_7407366. timeout 120000 {}",
                                    "x ".repeat(400))},
                {"role": "assistant", "content": "The later flight is HAT138."},
                {"role": "user", "content": "Book it with my card."},
                {"role": "assistant", "content": null, "tool_calls": [book]},
                {"role": "tool", "tool_call_id": "b", "content": "booked"},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "Thanks."}
            ]),
            None,
        )
        .unwrap()
    }

    #[test]
    fn cuts_fall_before_model_calls_at_or_after_half_and_three_quarters() {
        // Half of 10 is message 5, a user message: the call is at 6. Three quarters is 8,
        // after the booking's result.
        assert_eq!(cuts(&airline()), [6, 8]);
    }

    #[test]
    fn pending_references_are_those_only_removable_history_holds() {
        let conversation = airline();
        let pending = pending(&conversation, 6, NEXT_MESSAGES);
        // ZFA04Y is in the task; the tool names, argument keys and numbers are not written
        // references.
        assert_eq!(
            pending,
            [
                Pending {
                    reference: "HAT138".into(),
                    holders: [Holder::AssistantText].into(),
                },
                Pending {
                    reference: "credit_card_7407366".into(),
                    holders: [Holder::ToolOutput].into(),
                },
            ]
        );
        // After the second cut the agent only says it is done.
        assert_eq!(super::pending(&conversation, 8, NEXT_MESSAGES), Vec::new());
    }

    #[test]
    fn a_reference_in_a_cleared_output_is_lost_and_one_kept_verbatim_is_kept() {
        let conversation = airline();
        let pending = pending(&conversation, 6, NEXT_MESSAGES);
        let mut output = prefix(&conversation, 6);
        if let Part::ToolResult { content, .. } = &mut output.messages[3].parts[0] {
            *content = vec![Part::text("[output cleared]")];
        }
        assert_eq!(kept(&pending, &output), [true, false]);
    }

    #[test]
    fn the_bench_counts_a_removed_output_lost_a_kept_answer_kept_and_the_task_not_at_all() {
        use crate::lab::bench::{Bench, Contender};
        let mut bench = Bench::new(Budget::Ratio(0.5), crate::Tokenizer::Chars).unwrap();
        bench.add(&airline()).unwrap();
        let rows = bench.rows();
        let naive = rows
            .iter()
            .find(|r| r.strategy == Contender::Naive)
            .unwrap();
        // Naive drops the task, the lookup and its output, and keeps the answer.
        assert_eq!(
            (naive.next_cuts, naive.next_references, naive.next_found),
            (2, 2, 1)
        );
        assert_eq!(naive.next_pct, Some(50.0), "{naive:?}");
    }

    #[test]
    fn a_session_with_claude_codes_summary_is_compared_at_its_size() {
        let mut messages = airline().messages;
        let summary = "This session is being continued from a previous conversation. The user \
                       wants ZFA04Y moved to HAT138.";
        messages.insert(
            6,
            parse_value(json!([{"role": "user", "content": summary}]), None)
                .unwrap()
                .messages
                .remove(0),
        );
        let conversation = Conversation {
            messages,
            ..airline()
        };
        let base = Options::with_budget(Budget::Ratio(0.5));
        let base = Options {
            tokenizer: crate::Tokenizer::Chars,
            ..base
        };
        let comparison = against_summary(&conversation, &base, NEXT_MESSAGES)
            .unwrap()
            .unwrap();
        assert_eq!(comparison.summary_at, 6);
        let references: Vec<&str> = comparison
            .pending
            .iter()
            .map(|p| p.reference.as_str())
            .collect();
        assert_eq!(references, ["HAT138", "credit_card_7407366"]);
        assert_eq!(comparison.summary_kept, [true, false]);
        assert_eq!(comparison.compact_kept.len(), 2);
        assert_eq!(
            against_summary(&airline(), &base, NEXT_MESSAGES).unwrap(),
            None
        );
    }
}
