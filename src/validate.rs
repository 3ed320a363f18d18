//! Tool-call pairing and placement rules that an API enforces.
//!
//! Every tool call must be answered exactly once, by a result placed where the format requires
//! it (the format's result window: OpenAI's `tool` messages right after the call, Anthropic's
//! next user message, …); no result may lack its call; no call id may repeat; no conversation
//! may open with a tool result, nor, where the format requires it, with anything but a user
//! message. [`check`] lists every breach with its message index (and log line) and field, in
//! message order. It runs in one pass over the messages, with a map keyed by call id (hashed
//! with `FxHash`: the ids are short, and a keyed hash's defence against chosen collisions buys
//! nothing in a check whose input is the caller's own conversation).

use std::collections::HashMap;

use crate::conversation::{Ahead, Conversation, Part, Role, Warmth};
use crate::error::Location;
pub(crate) use crate::error::{Problem, ProblemKind};
use crate::format::wire;
use crate::hash::FxBuild;

/// Lists every pairing and placement problem of a conversation, in message order.
pub fn check(conversation: &Conversation) -> Vec<Problem> {
    let messages = &conversation.messages;
    let wire = wire(conversation.format);
    let at = |index: usize, field: String| location(conversation, index, field);
    let mut problems = Vec::new();
    if let Some(first) = messages.first() {
        if first.role == Role::Tool {
            problems.push(Problem {
                at: at(0, "role".into()),
                kind: ProblemKind::ToolFirst,
            });
        } else if wire.first_must_be_user() && first.role != Role::User {
            problems.push(Problem {
                at: at(0, "role".into()),
                kind: ProblemKind::FirstNotUser,
            });
        }
    }
    // Call id → where what is known of it is kept: one lookup per call and per result. Looked
    // up only, never iterated, so a hash map keeps the output deterministic. A call is open in
    // the group being checked when the message that made it lies in the group.
    let mut slots: HashMap<&str, usize, FxBuild> =
        HashMap::with_capacity_and_hasher(messages.len(), FxBuild::default());
    let mut ids: Vec<Id> = Vec::with_capacity(messages.len());
    // The calls made in the group being checked, in order: id, its slot, and where it is.
    let mut open: Vec<(&str, usize, usize, usize)> = Vec::new();
    let mut index = 0;
    let mut ahead = Ahead::new(messages, Warmth::Ids);
    while index < messages.len() {
        ahead.reach(index);
        let end = conversation.result_window(index).end.max(index + 1);
        let group = index..end;
        open.clear();
        for (m, message) in messages.iter().enumerate().take(end).skip(index) {
            for (p, part) in message.parts.iter().enumerate() {
                let Part::ToolCall { id, .. } = part else {
                    continue;
                };
                let slot = slot_of(&mut slots, &mut ids, id);
                if let Some(first) = ids[slot].call {
                    problems.push(Problem {
                        at: at(m, wire.call_field(message, p)),
                        kind: ProblemKind::DuplicateCallId {
                            call_id: id.clone(),
                            first,
                        },
                    });
                } else {
                    ids[slot].call = Some(m);
                    open.push((id, slot, m, p));
                }
            }
        }
        // Results mostly answer the group's calls in their order: the next call open is tried
        // before the map, and its slot is the one the map holds for the same id.
        let mut next_open = 0;
        for (m, message) in messages.iter().enumerate().take(end).skip(index) {
            for (p, part) in message.parts.iter().enumerate() {
                let Part::ToolResult { call_id, .. } = part else {
                    continue;
                };
                let slot = match open.get(next_open) {
                    Some(&(id, slot, ..)) if id == call_id => {
                        next_open += 1;
                        slot
                    }
                    _ => slot_of(&mut slots, &mut ids, call_id),
                };
                let known = &mut ids[slot];
                let kind = match (known.answer, known.call) {
                    (Some(first), _) => ProblemKind::AnsweredTwice {
                        call_id: call_id.clone(),
                        first,
                    },
                    (None, Some(call)) if group.contains(&call) => {
                        known.answer = Some(m);
                        continue;
                    }
                    (None, Some(call_message)) => ProblemKind::Misplaced {
                        call_id: call_id.clone(),
                        call_message,
                    },
                    (None, None) => ProblemKind::Orphan {
                        call_id: call_id.clone(),
                    },
                };
                problems.push(Problem {
                    at: at(m, wire.result_field(message, p)),
                    kind,
                });
            }
        }
        for &(id, slot, m, p) in &open {
            if ids[slot].answer.is_none() && !conversation.calls_in_progress().contains(&(m, id)) {
                problems.push(Problem {
                    at: at(m, wire.call_field(&messages[m], p)),
                    kind: ProblemKind::Unanswered {
                        call_id: id.to_string(),
                    },
                });
            }
        }
        index = end;
    }
    problems.sort_by_key(|p| p.at.message);
    problems
}

/// What [`check`] knows of a call id: the message that made the call, and the one that
/// answered it where the format requires.
#[derive(Default)]
struct Id {
    call: Option<usize>,
    answer: Option<usize>,
}

/// The slot of `id` in `ids`, a new one when it has none.
fn slot_of<'a>(
    slots: &mut HashMap<&'a str, usize, FxBuild>,
    ids: &mut Vec<Id>,
    id: &'a str,
) -> usize {
    *slots.entry(id).or_insert_with(|| {
        ids.push(Id::default());
        ids.len() - 1
    })
}

/// Where message `index`'s `field` is, with its log line when the conversation was read from a
/// log.
fn location(conversation: &Conversation, index: usize, field: String) -> Location {
    let mut at = Location::message(index, field);
    if conversation.lines.len() == conversation.messages.len() {
        at.line = conversation.lines.get(index).copied();
    }
    at
}

impl Conversation {
    /// The problems a provider refuses this conversation for when it is sent as a request:
    /// [`crate::validate()`]'s, and each call still in progress at the end
    /// ([`ProblemKind::InProgress`]), which `validate()` accepts because a session read while a
    /// call runs is valid state. `ctxcompact validate` reports these.
    pub fn request_problems(&self) -> Vec<Problem> {
        let mut problems = check(self);
        let wire = wire(self.format);
        for (m, id) in self.calls_in_progress() {
            let message = &self.messages[m];
            let part = message
                .parts
                .iter()
                .position(|part| matches!(part, Part::ToolCall { id: call, .. } if call == id))
                .unwrap_or(0);
            problems.push(Problem {
                at: location(self, m, wire.call_field(message, part)),
                kind: ProblemKind::InProgress {
                    call_id: id.to_string(),
                },
            });
        }
        problems.sort_by_key(|p| p.at.message);
        problems
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation::{Format, Layout, Message};
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
    fn a_call_in_progress_is_state_to_check_and_a_problem_as_a_request() {
        let openai = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "content": null, "tool_calls": [call("b"), call("c")]},
            {"role": "tool", "tool_call_id": "b", "content": "2"}
        ]);
        let anthropic = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "x"},
                {"type": "tool_use", "id": "c", "name": "f", "input": {}}]}
        ]});
        let expected = [
            "message 3: tool_calls[1].id: tool call `c` is still in progress: no result follows it, and a provider refuses a request that ends so",
            "message 1: content[1].id: tool call `c` is still in progress: no result follows it, and a provider refuses a request that ends so",
        ];
        for (value, expected) in [openai, anthropic].into_iter().zip(expected) {
            let conversation = parse_value(value, None).unwrap();
            assert!(check(&conversation).is_empty());
            let as_request: Vec<String> = conversation
                .request_problems()
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(as_request, vec![expected.to_string()]);
        }
    }

    /// The pairing rules read one part at a time against every part before it, with no map:
    /// each call id's first call, each result taken as its call's answer (the first result of
    /// an id whose first call lies in the result's group), and what the rest of them are.
    /// The opening rules are left out.
    fn pairing_by_search(conversation: &Conversation) -> Vec<Problem> {
        let messages = &conversation.messages;
        let wire = wire(conversation.format);
        // The first message of the group each message is checked in.
        let mut starts = vec![0; messages.len()];
        let mut index = 0;
        while index < messages.len() {
            let end = conversation.result_window(index).end.max(index + 1);
            starts[index..end].fill(index);
            index = end;
        }
        let parts = || {
            messages.iter().enumerate().flat_map(|(m, message)| {
                message
                    .parts
                    .iter()
                    .enumerate()
                    .map(move |(p, part)| (m, p, part))
            })
        };
        // Where the first call of an id is: message and part.
        let first_call = |wanted: &str| {
            parts().find_map(|(m, p, part)| match part {
                Part::ToolCall { id, .. } if id == wanted => Some((m, p)),
                _ => None,
            })
        };
        let mut answers: Vec<(&str, usize)> = Vec::new();
        let mut problems = Vec::new();
        for (m, p, part) in parts() {
            if let Part::ToolCall { id, .. } = part {
                let (first, at) = first_call(id).unwrap();
                if (first, at) != (m, p) {
                    problems.push(Problem {
                        at: location(conversation, m, wire.call_field(&messages[m], p)),
                        kind: ProblemKind::DuplicateCallId {
                            call_id: id.clone(),
                            first,
                        },
                    });
                }
            }
            let Part::ToolResult { call_id, .. } = part else {
                continue;
            };
            let answered = answers.iter().find(|(id, _)| id == call_id);
            let kind = match (answered, first_call(call_id)) {
                (Some(&(_, first)), _) => ProblemKind::AnsweredTwice {
                    call_id: call_id.clone(),
                    first,
                },
                (None, Some((call, _))) if starts[call] == starts[m] => {
                    answers.push((call_id, m));
                    continue;
                }
                (None, Some((call_message, _))) if call_message < starts[m] => {
                    ProblemKind::Misplaced {
                        call_id: call_id.clone(),
                        call_message,
                    }
                }
                (None, _) => ProblemKind::Orphan {
                    call_id: call_id.clone(),
                },
            };
            problems.push(Problem {
                at: location(conversation, m, wire.result_field(&messages[m], p)),
                kind,
            });
        }
        let in_progress = conversation.calls_in_progress();
        for (m, p, part) in parts() {
            let Part::ToolCall { id, .. } = part else {
                continue;
            };
            if first_call(id) == Some((m, p))
                && !answers.iter().any(|(answered, _)| answered == id)
                && !in_progress.contains(&(m, id.as_str()))
            {
                problems.push(Problem {
                    at: location(conversation, m, wire.call_field(&messages[m], p)),
                    kind: ProblemKind::Unanswered {
                        call_id: id.clone(),
                    },
                });
            }
        }
        // In each message: its repeated calls, its results' problems, its unanswered calls.
        problems.sort_by_key(|p| {
            let class = match p.kind {
                ProblemKind::DuplicateCallId { .. } => 0,
                ProblemKind::Unanswered { .. } => 2,
                _ => 1,
            };
            (p.at.message, class)
        });
        problems
    }

    proptest::proptest! {
        /// The check finds what the rules read part by part find, on conversations of calls
        /// and results of a few ids in any order and placement, in each kind of result window.
        #[test]
        fn the_check_finds_what_the_rules_find_part_by_part(
            format in proptest::sample::select(vec![Format::OpenAi, Format::Anthropic, Format::Responses]),
            shape in proptest::collection::vec(
                (0..3_u8, proptest::collection::vec((0..3_u8, 0..4_u8), 0..4)),
                0..14,
            ),
        ) {
            let ids = ["a", "b", "c", "d"];
            let messages: Vec<Message> = shape
                .iter()
                .map(|(role, parts)| Message {
                    role: [Role::User, Role::Assistant, Role::Tool][usize::from(*role)],
                    parts: parts
                        .iter()
                        .map(|&(kind, id)| {
                            let id = ids[usize::from(id)].to_string();
                            match kind {
                                0 => Part::text("x"),
                                1 => Part::ToolCall {
                                    id,
                                    name: "f".into(),
                                    arguments: serde_json::Value::Null,
                                    extra: serde_json::Map::new(),
                                },
                                _ => Part::ToolResult {
                                    call_id: id,
                                    content: Vec::new(),
                                    layout: Layout::Blocks,
                                    is_error: false,
                                    extra: serde_json::Map::new(),
                                },
                            }
                        })
                        .collect(),
                    layout: Layout::Blocks,
                    extra: serde_json::Map::new(),
                    harness: None,
                })
                .collect();
            let conversation = Conversation {
                format,
                system: None,
                messages,
                envelope: None,
                lines: Vec::new(),
                repairs: Vec::new(),
            };
            let pairing: Vec<Problem> = check(&conversation)
                .into_iter()
                .filter(|p| !matches!(p.kind, ProblemKind::ToolFirst | ProblemKind::FirstNotUser))
                .collect();
            proptest::prop_assert_eq!(pairing, pairing_by_search(&conversation));
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
