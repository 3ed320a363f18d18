//! Tool-call pairing and placement rules that an API enforces.
//!
//! Every tool call must be answered exactly once, by a result placed where the format requires
//! it (OpenAI: the `tool` messages right after the calling assistant message; Anthropic:
//! `tool_result` blocks in the very next user message); no result may lack its call; no call id
//! may repeat; no conversation may open with a tool message. [`check`] lists every breach with
//! its message index and field, in message order.

use std::collections::BTreeMap;
use std::fmt;

use crate::conversation::{Conversation, Part, Role};
use crate::error::Location;
use crate::format::Format;

/// One breach of the pairing rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where it is.
    pub at: Location,
    /// What is wrong.
    pub kind: ProblemKind,
}

/// The kinds of pairing breach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// The conversation opens with a tool result.
    ToolFirst,
    /// A call that no result answers where the format requires.
    Unanswered {
        /// The call id.
        call_id: String,
    },
    /// A result whose id no earlier call made.
    Orphan {
        /// The call id it claims to answer.
        call_id: String,
    },
    /// A result for a call made earlier, but not where the format requires it.
    Misplaced {
        /// The call id.
        call_id: String,
        /// The message that made the call.
        call_message: usize,
    },
    /// A second result for the same call.
    AnsweredTwice {
        /// The call id.
        call_id: String,
        /// The message holding the first result.
        first: usize,
    },
    /// A call id already used by an earlier call.
    DuplicateCallId {
        /// The call id.
        call_id: String,
        /// The message that used it first.
        first: usize,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.at)?;
        match &self.kind {
            ProblemKind::ToolFirst => write!(f, "the conversation opens with a tool result"),
            ProblemKind::Unanswered { call_id } => {
                write!(
                    f,
                    "tool call `{call_id}` is never answered where the format requires"
                )
            }
            ProblemKind::Orphan { call_id } => {
                write!(f, "tool result refers to unknown call id `{call_id}`")
            }
            ProblemKind::Misplaced {
                call_id,
                call_message,
            } => write!(
                f,
                "tool result for call `{call_id}` is not placed right after its call in message {call_message}"
            ),
            ProblemKind::AnsweredTwice { call_id, first } => {
                write!(
                    f,
                    "tool call `{call_id}` is answered again (first answered in message {first})"
                )
            }
            ProblemKind::DuplicateCallId { call_id, first } => {
                write!(f, "call id `{call_id}` is already used by message {first}")
            }
        }
    }
}

/// Lists every pairing and placement problem of a conversation, in message order.
pub fn check(conversation: &Conversation) -> Vec<Problem> {
    let messages = &conversation.messages;
    let mut problems = Vec::new();
    // Call id → message that made it; call id → message that answered it.
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut answers: BTreeMap<&str, usize> = BTreeMap::new();
    if messages.first().is_some_and(|m| m.role == Role::Tool) {
        problems.push(Problem {
            at: Location::message(0, "role"),
            kind: ProblemKind::ToolFirst,
        });
    }
    // The calls of the latest assistant message with calls, while its result window lasts.
    let mut open: Vec<&str> = Vec::new();
    let mut window_end = 0;
    let mut caller = 0;
    for (index, message) in messages.iter().enumerate() {
        if index == window_end {
            report_unanswered(conversation, caller, &open, &answers, &mut problems);
            open.clear();
        }
        for (p, part) in message.parts.iter().enumerate() {
            let Part::ToolResult { call_id, .. } = part else {
                continue;
            };
            let field = result_field(conversation.format, p);
            let kind = if let Some(&first) = answers.get(call_id.as_str()) {
                ProblemKind::AnsweredTwice {
                    call_id: call_id.clone(),
                    first,
                }
            } else if open.contains(&call_id.as_str()) && index < window_end {
                answers.insert(call_id, index);
                continue;
            } else if let Some(&call_message) = calls.get(call_id.as_str()) {
                ProblemKind::Misplaced {
                    call_id: call_id.clone(),
                    call_message,
                }
            } else {
                ProblemKind::Orphan {
                    call_id: call_id.clone(),
                }
            };
            problems.push(Problem {
                at: Location::message(index, field),
                kind,
            });
        }
        if message.has_calls() {
            for (c, id) in message.call_ids().enumerate() {
                if let Some(&first) = calls.get(id) {
                    let field = call_field(conversation.format, message, c);
                    let kind = ProblemKind::DuplicateCallId {
                        call_id: id.to_string(),
                        first,
                    };
                    problems.push(Problem {
                        at: Location::message(index, field),
                        kind,
                    });
                } else {
                    calls.insert(id, index);
                }
            }
            open = message.call_ids().collect();
            caller = index;
            window_end = conversation.result_window(index).end;
        }
    }
    if window_end >= messages.len() {
        report_unanswered(conversation, caller, &open, &answers, &mut problems);
    }
    problems.sort_by_key(|p| p.at.message);
    problems
}

fn report_unanswered(
    conversation: &Conversation,
    caller: usize,
    open: &[&str],
    answers: &BTreeMap<&str, usize>,
    problems: &mut Vec<Problem>,
) {
    if open.is_empty() {
        return;
    }
    let message = &conversation.messages[caller];
    for (c, id) in message.call_ids().enumerate() {
        if open.contains(&id) && !answers.contains_key(id) {
            let field = call_field(conversation.format, message, c);
            let kind = ProblemKind::Unanswered {
                call_id: id.to_string(),
            };
            problems.push(Problem {
                at: Location::message(caller, field),
                kind,
            });
        }
    }
}

/// The wire field of the `c`-th call of a message.
fn call_field(format: Format, message: &crate::conversation::Message, c: usize) -> String {
    match format {
        Format::OpenAi => format!("tool_calls[{c}].id"),
        Format::Anthropic => {
            let block = message
                .parts
                .iter()
                .enumerate()
                .filter(|(_, part)| matches!(part, Part::ToolCall { .. }))
                .nth(c)
                .map_or(c, |(b, _)| b);
            format!("content[{block}].id")
        }
    }
}

/// The wire field of the result in part `p` of a message.
fn result_field(format: Format, p: usize) -> String {
    match format {
        Format::OpenAi => "tool_call_id".into(),
        Format::Anthropic => format!("content[{p}].tool_use_id"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::parse_value;

    fn problems(value: serde_json::Value) -> Vec<String> {
        check(&parse_value(value, None).unwrap())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn call(id: &str) -> serde_json::Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }

    #[test]
    fn paired_rounds_are_valid() {
        let value = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "assistant", "content": "done"}
        ]);
        assert_eq!(problems(value), Vec::<String>::new());
    }

    #[test]
    fn breakages_name_the_message() {
        let table = [
            (
                json!([{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call("a")]}, {"role": "user", "content": "?"}]),
                "message 1: tool_calls[0].id: tool call `a` is never answered where the format requires",
            ),
            (
                json!([{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "z", "content": "1"}]),
                "message 1: tool_call_id: tool result refers to unknown call id `z`",
            ),
            (
                json!([{"role": "tool", "tool_call_id": "z", "content": "1"}]),
                "message 0: role: the conversation opens with a tool result",
            ),
            (
                json!([{"role": "assistant", "tool_calls": [call("a")]}, {"role": "tool", "tool_call_id": "a", "content": "1"},
                       {"role": "assistant", "tool_calls": [call("a")]}, {"role": "tool", "tool_call_id": "a", "content": "1"}]),
                "message 2: tool_calls[0].id: call id `a` is already used by message 0",
            ),
            (
                json!([{"role": "assistant", "tool_calls": [call("a")]}, {"role": "tool", "tool_call_id": "a", "content": "1"},
                       {"role": "tool", "tool_call_id": "a", "content": "1"}]),
                "message 2: tool_call_id: tool call `a` is answered again (first answered in message 1)",
            ),
            (
                json!([{"role": "assistant", "tool_calls": [call("a")]}, {"role": "user", "content": "wait"},
                       {"role": "tool", "tool_call_id": "a", "content": "1"}]),
                "message 0: tool_calls[0].id: tool call `a` is never answered where the format requires",
            ),
        ];
        for (value, expected) in table {
            let found = problems(value);
            assert!(
                found.iter().any(|p| p == expected),
                "expected {expected:?} in {found:?}"
            );
        }
    }

    #[test]
    fn anthropic_results_must_be_in_the_next_user_message() {
        let value = json!({"system": "s", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": "not yet"},
            {"role": "assistant", "content": "hm"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}]}
        ]});
        assert_eq!(
            problems(value),
            vec![
                "message 1: content[0].id: tool call `a` is never answered where the format requires",
                "message 4: content[0].tool_use_id: tool result for call `a` is not placed right after its call in message 1",
            ]
        );
    }
}
