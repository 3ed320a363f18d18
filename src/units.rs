//! Units: the smallest groups of messages that must stay or go together.
//!
//! A **tool round** — an assistant message with tool calls plus every message that carries one of
//! its results (parallel calls included) — is one unit; any other message is a unit of its own.
//! In Anthropic format the user message carrying `tool_result` blocks belongs to the round, with
//! any text beside them. A tool message that answers no call joins the unit before it, and a call
//! still in progress makes one unit of its message and everything after it (it is valid only
//! while only calls and results follow). A cut can only fall between units, so tool pairing
//! holds by construction. **Pinned** units are never removed: system messages, the units holding an
//! **instruction file** ([`crate::instructions`]), the **task** (the unit
//! holding the first request), the **current request** (the unit holding the last request), the last
//! unit, and in formats that must open with a user message (Anthropic, Bedrock, Gemini) the
//! unit holding the first user turn. Requests are told from harness text by [`crate::classify`]; when a conversation
//! has no request at all, the unit holding the last user turn stands for the current request.

use std::ops::Range;

use crate::classify::is_user_turn;
use crate::conversation::{Conversation, Role};
use crate::tokens::Counts;

/// One unit: a contiguous run of messages that stays or goes as a whole.
// Independent facts about one unit, read one at a time by planning: flags, not a state machine.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unit {
    /// The messages it holds, as indices into the conversation.
    pub messages: Range<usize>,
    /// The sum of its messages' cached token counts.
    pub tokens: usize,
    /// Whether it may never be removed.
    pub pinned: bool,
    /// Whether it is a system message.
    pub is_system: bool,
    /// Whether it is a tool round.
    pub is_round: bool,
    /// Whether it holds the task (the first request).
    pub is_task: bool,
    /// Whether it holds the current request (the last request).
    pub is_current: bool,
    /// Whether it holds any request: removal takes such units last.
    pub has_request: bool,
}

/// The message ranges of the units from message `from` (a unit's first message) on, in order,
/// each with the result window of its first message (empty when that message makes no calls):
/// the one walk every grouping of the crate follows.
pub(crate) fn spans(
    conversation: &Conversation,
    from: usize,
) -> impl Iterator<Item = (Range<usize>, Range<usize>)> + '_ {
    let mut start = from;
    let len = conversation.messages.len();
    // A call still in progress is valid only while every message after it is a call or a
    // result: from its message on, the conversation is one unit, which no marker can split.
    let in_progress = conversation.calls_in_progress().first().map(|&(m, _)| m);
    std::iter::from_fn(move || {
        if start >= len {
            return None;
        }
        let window = conversation.result_window(start);
        let mut end = window.end.max(start + 1);
        // A tool message that answers no call (an AI SDK tool message with no parts) goes with
        // the unit before it: alone, its unit's removal could leave it first.
        while conversation
            .messages
            .get(end)
            .is_some_and(|m| m.role == Role::Tool && !m.has_results())
        {
            end += 1;
        }
        if in_progress.is_some_and(|m| (start..end).contains(&m)) {
            end = len;
        }
        let unit = start..end;
        start = unit.end;
        Some((unit, window))
    })
}

/// Groups a conversation's messages into units, reading the cached per-message counts, its
/// `requests` (the indices of its messages that hold one, ascending, as [`crate::classify::requests`]
/// finds them: classified once per run, on the input) and its `instructions` (the indices of
/// its messages holding an instruction file, ascending, found once per run too).
pub(crate) fn group(
    conversation: &Conversation,
    counts: &Counts,
    requests: &[usize],
    instructions: &[usize],
) -> Vec<Unit> {
    let messages = &conversation.messages;
    let task = requests.first().copied();
    let current = requests
        .last()
        .copied()
        .or_else(|| messages.iter().rposition(is_user_turn));
    // Formats that must open with a user message keep their first user turn, so that no
    // compaction opens with anything else.
    let opening = conversation
        .must_open_with_user()
        .then(|| messages.iter().position(is_user_turn))
        .flatten();
    let mut units = Vec::new();
    for (span, window) in spans(conversation, 0) {
        let (start, end) = (span.start, span.end);
        let is_system = messages[start].role == Role::System;
        let is_task = task.is_some_and(|t| (start..end).contains(&t));
        let is_current = current.is_some_and(|c| (start..end).contains(&c));
        let first = requests.partition_point(|&r| r < start);
        let has_request = requests.get(first).is_some_and(|&r| r < end);
        let holds_instructions = instructions
            .get(instructions.partition_point(|&i| i < start))
            .is_some_and(|&i| i < end);
        units.push(Unit {
            messages: start..end,
            tokens: counts.messages[start..end].iter().sum(),
            pinned: is_system
                || holds_instructions
                || is_task
                || is_current
                || opening.is_some_and(|u| (start..end).contains(&u)),
            is_system,
            is_round: !window.is_empty(),
            is_task,
            is_current,
            has_request,
        });
    }
    if let Some(last) = units.last_mut() {
        last.pinned = true;
    }
    units
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::parse_value;
    use crate::tokens::{CharEstimate, count_with};

    fn units_of(value: serde_json::Value) -> Vec<(Range<usize>, bool)> {
        let conversation = parse_value(value, None).unwrap();
        let counts = count_with(&conversation, &CharEstimate);
        let instructions: Vec<usize> = crate::instructions::instruction_files(&conversation)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        group(
            &conversation,
            &counts,
            &crate::classify::requests(&conversation),
            &instructions,
        )
        .into_iter()
        .map(|u| (u.messages, u.pinned))
        .collect()
    }

    #[test]
    fn parallel_calls_and_their_results_form_one_unit() {
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
        let units = units_of(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(
            units,
            vec![(0..1, true), (1..2, true), (2..5, false), (5..6, true)]
        );
    }

    #[test]
    fn a_tool_message_that_answers_no_call_goes_with_the_unit_before_it() {
        // An AI SDK tool message with no parts: removing the unit before it alone would leave
        // the conversation opening with a tool message.
        let conversation = crate::format::parse_value(
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": ""},
                {"role": "tool", "content": []},
                {"role": "assistant", "content": "done"},
            ]),
            Some(crate::format::Format::AiSdk),
        )
        .unwrap();
        let counts = count_with(&conversation, &CharEstimate);
        let spans: Vec<Range<usize>> = group(&conversation, &counts, &[0], &[])
            .into_iter()
            .map(|u| u.messages)
            .collect();
        assert_eq!(spans, vec![0..1, 1..3, 3..4]);
    }

    #[test]
    fn a_call_still_in_progress_makes_one_unit_of_the_run_of_calls_after_it() {
        // Call `a` is in progress only while every message after it is a call or a result: a
        // marker put where a later round was removed would leave it unanswered.
        let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
        let units = units_of(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "assistant", "content": "next", "tool_calls": [call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "assistant", "content": null, "tool_calls": [call("c")]},
            {"role": "tool", "tool_call_id": "c", "content": "2"},
        ]));
        assert_eq!(units, vec![(0..1, true), (1..6, true)]);
    }

    // See: #33
    #[test]
    fn a_unit_holding_an_instruction_file_is_pinned() {
        let units = units_of(json!([
            {"role": "user", "content": "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nNever push.\n</INSTRUCTIONS>"},
            {"role": "user", "content": "<environment_context>\n</environment_context>"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(
            units,
            vec![
                (0..1, true),
                (1..2, false),
                (2..3, true),
                (3..4, false),
                (4..5, true),
                (5..6, true)
            ]
        );
    }

    #[test]
    fn anthropic_result_carrier_joins_the_round() {
        let units = units_of(json!({"system": "s", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}, {"type": "text", "text": "and?"}]},
            {"role": "assistant", "content": "ok"},
        ]}));
        // "go" is the task; the carrier's text is the current request, so its round is pinned.
        assert_eq!(units, vec![(0..1, true), (1..3, true), (3..4, true)]);
    }
}
