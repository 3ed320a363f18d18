//! Reading a session log as the agent would have sent it: the pairing repairs the session-log
//! readers share, on the request a reader has built (before it is parsed).
//!
//! A log holds what happened, not the request the agent sent next: a call interrupted before
//! its result was logged, a result logged twice (on resume), results whose calls are in an
//! earlier file of the session. The agent itself sends the history repaired — an interrupted
//! call with its own interruption result, each result once — so the readers do the same, and
//! name every repair ([`Repair`]). A call unanswered at the very end of the log is the call in
//! progress: it stays as it is, named `call_in_progress`, and is no problem to
//! [`crate::validate()`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Built, RecordedUsage, str_of};
use crate::conversation::Conversation;
use crate::report::Repair;

/// Moves recorded usages' message positions after an insertion at `at` (or a removal of the
/// message at `at`), so that each still names the message the call produced.
fn shift(usages: &mut [RecordedUsage], at: usize, inserted: bool) {
    for usage in usages.iter_mut() {
        if inserted && usage.message >= at {
            usage.message += 1;
        } else if !inserted && usage.message > at {
            usage.message -= 1;
        }
    }
}

/// Removes the messages `emptied` flags, moving usages with them.
fn remove_emptied(built: &mut Vec<Built>, emptied: &[bool], usages: &mut [RecordedUsage]) {
    for at in (0..built.len()).rev() {
        if emptied.get(at).copied().unwrap_or(false) {
            built.remove(at);
            shift(usages, at, false);
        }
    }
}

/// The conversation with its reader's repairs, in log order.
pub(super) fn attach(mut conversation: Conversation, mut repairs: Vec<Repair>) -> Conversation {
    repairs.sort_by_key(|r| r.line);
    conversation.repairs = repairs;
    conversation
}

/// Names a repair.
pub(super) fn named(line: usize, kind: &'static str, call_id: &str) -> Repair {
    Repair {
        line,
        kind,
        call_id: Some(call_id.to_string()),
    }
}

/// The blocks of an Anthropic message's content (none when it is a string).
fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The ids of an Anthropic message's blocks of type `kind`, read from `key`.
fn ids(message: &Value, kind: &str, key: &str) -> Vec<String> {
    blocks(message)
        .iter()
        .filter(|b| str_of(b, "type") == Some(kind))
        .filter_map(|b| str_of(b, key).map(str::to_string))
        .collect()
}

/// Whether an Anthropic message is a user message of tool results only.
fn results_only(message: &Value) -> bool {
    str_of(message, "role") == Some("user")
        && !blocks(message).is_empty()
        && blocks(message)
            .iter()
            .all(|b| str_of(b, "type") == Some("tool_result"))
}

/// Repairs the pairing of a log read as Anthropic Messages (Claude Code, pi). `interruption`
/// is the result block's content the agent sends for a call it interrupted (marked
/// `is_error`). Leading results with no call before them are dropped; every call without a
/// result in the message after it gets one, in that message when it carries results only,
/// else in a new user message right after the call — unless it is the last message (the call
/// in progress); a result of a call already answered is dropped.
pub(super) fn anthropic(
    built: &mut Vec<Built>,
    interruption: &Value,
    repairs: &mut Vec<Repair>,
    usages: &mut [RecordedUsage],
) {
    // Leading results: those before the first assistant message have no call in the file.
    let mut emptied = vec![false; built.len()];
    for (at, entry) in built.iter_mut().enumerate() {
        if str_of(&entry.value, "role") == Some("assistant") {
            break;
        }
        let line = entry.line;
        if let Some(Value::Array(content)) = entry.value.get_mut("content") {
            let before = content.len();
            content.retain(|b| {
                let orphan = str_of(b, "type") == Some("tool_result");
                if orphan {
                    let id = str_of(b, "tool_use_id").unwrap_or_default();
                    repairs.push(named(line, "result_without_call", id));
                }
                !orphan
            });
            emptied[at] = before > 0 && content.is_empty();
        }
    }
    remove_emptied(built, &emptied, usages);
    // Interrupted calls.
    let mut index = 0;
    while index < built.len() {
        if str_of(&built[index].value, "role") != Some("assistant") {
            index += 1;
            continue;
        }
        let calls = ids(&built[index].value, "tool_use", "id");
        let next = built.get(index + 1);
        let answered = next
            .map(|n| ids(&n.value, "tool_result", "tool_use_id"))
            .unwrap_or_default();
        let line = built[index].line;
        let last = index + 1 == built.len();
        let mut missing = Vec::new();
        for id in calls.iter().filter(|id| !answered.contains(id)) {
            if last {
                repairs.push(named(line, Repair::IN_PROGRESS, id));
            } else {
                repairs.push(named(line, "interrupted_call", id));
                missing.push(json!({"type": "tool_result", "tool_use_id": id, "content": interruption, "is_error": true}));
            }
        }
        let into_next = next.is_some_and(|n| results_only(&n.value));
        add_results(built, usages, index, into_next, "content", missing);
        index += 1;
    }
    // Results logged again.
    let result_id = |b: &Value| {
        (str_of(b, "type") == Some("tool_result"))
            .then(|| str_of(b, "tool_use_id").unwrap_or_default().to_string())
    };
    drop_repeated_results(built, usages, repairs, "content", result_id);
}

/// Whether a Responses item is a tool call.
fn is_call(item: &Value) -> bool {
    matches!(
        str_of(item, "type"),
        Some("function_call" | "custom_tool_call")
    )
}

/// Whether a Responses item is a tool call's output.
fn is_output(item: &Value) -> bool {
    str_of(item, "type").is_some_and(|t| t.ends_with("_call_output"))
}

/// Repairs a log read as Responses input (Codex): a call's `null` arguments become `"{}"`;
/// leading outputs with no call before them are dropped, and an output of a call already
/// answered; recorded usages move with the items.
pub(super) fn responses(
    built: &mut Vec<Built>,
    repairs: &mut Vec<Repair>,
    usages: &mut [RecordedUsage],
) {
    let mut calls_seen = false;
    let mut answered: BTreeMap<String, Value> = BTreeMap::new();
    let mut emptied = Vec::with_capacity(built.len());
    for entry in built.iter_mut() {
        let id = str_of(&entry.value, "call_id")
            .unwrap_or_default()
            .to_string();
        if is_call(&entry.value) {
            calls_seen = true;
            if entry.value.get("arguments") == Some(&Value::Null) {
                entry.value["arguments"] = Value::String("{}".into());
                repairs.push(named(entry.line, "null_arguments", &id));
            }
        }
        let mut kept = true;
        if is_output(&entry.value) {
            if !calls_seen {
                repairs.push(named(entry.line, "result_without_call", &id));
                kept = false;
            } else if let Some(earlier) = answered.get(&id) {
                let kind = if *earlier == entry.value {
                    "duplicate_result"
                } else {
                    "differing_duplicate_result"
                };
                repairs.push(named(entry.line, kind, &id));
                kept = false;
            } else {
                answered.insert(id, entry.value.clone());
            }
        }
        emptied.push(!kept);
    }
    remove_emptied(built, &emptied, usages);
}

/// Repairs a log read as Gemini contents (Gemini CLI): a call with no result in the content
/// after it gets the cancellation response Gemini CLI sends (unless it is in the last content:
/// the call in progress); a `functionResponse` of a call already answered is dropped.
pub(super) fn gemini(built: &mut Vec<Built>, usages: &mut [RecordedUsage]) -> Vec<Repair> {
    let mut repairs = Vec::new();
    let parts = |value: &Value| -> Vec<Value> {
        value
            .get("parts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let response_id = |part: &Value| {
        part.get("functionResponse")
            .and_then(|r| str_of(r, "id"))
            .map(str::to_string)
    };
    let mut index = 0;
    while index < built.len() {
        let calls: Vec<(String, Value)> = parts(&built[index].value)
            .iter()
            .filter_map(|p| p.get("functionCall"))
            .filter_map(|c| Some((str_of(c, "id")?.to_string(), c.get("name")?.clone())))
            .collect();
        if calls.is_empty() || str_of(&built[index].value, "role") != Some("model") {
            index += 1;
            continue;
        }
        let line = built[index].line;
        let next_is_results = built.get(index + 1).is_some_and(|n| {
            str_of(&n.value, "role") == Some("user")
                && parts(&n.value)
                    .iter()
                    .any(|p| p.get("functionResponse").is_some())
        });
        let answered: Vec<String> = if next_is_results {
            parts(&built[index + 1].value)
                .iter()
                .filter_map(response_id)
                .collect()
        } else {
            Vec::new()
        };
        let last = index + 1 == built.len();
        let mut missing = Vec::new();
        for (id, name) in calls.iter().filter(|(id, _)| !answered.contains(id)) {
            if last {
                repairs.push(named(line, Repair::IN_PROGRESS, id));
            } else {
                repairs.push(named(line, "interrupted_call", id));
                missing.push(json!({"functionResponse": {"id": id, "name": name, "response": {"error": GEMINI_CANCELLED}}}));
            }
        }
        add_results(built, usages, index, next_is_results, "parts", missing);
        index += 1;
    }
    drop_repeated_results(built, usages, &mut repairs, "parts", response_id);
    repairs
}

/// Adds the results made for `built[index]`'s interrupted calls: to the message after it when
/// `into_next` (it carries that call's other results), else as a user message of their own,
/// inserted after it. `key` is the format's content list (`content`, `parts`).
fn add_results(
    built: &mut Vec<Built>,
    usages: &mut [RecordedUsage],
    index: usize,
    into_next: bool,
    key: &str,
    missing: Vec<Value>,
) {
    if missing.is_empty() {
        return;
    }
    if into_next {
        if let Some(Value::Array(list)) = built[index + 1].value.get_mut(key) {
            list.extend(missing);
        }
    } else {
        let line = built[index].line;
        let mut value = json!({"role": "user"});
        value[key] = Value::Array(missing);
        built.insert(index + 1, Built { value, line });
        shift(usages, index + 1, true);
    }
}

/// Drops every result logged again for a call already answered (the first is kept), naming
/// each as an identical or a differing duplicate, and the messages left empty by it.
/// `result_id` is the call id of a block of the `key` list that is a result, else `None`.
fn drop_repeated_results(
    built: &mut Vec<Built>,
    usages: &mut [RecordedUsage],
    repairs: &mut Vec<Repair>,
    key: &str,
    result_id: impl Fn(&Value) -> Option<String>,
) {
    let mut first: BTreeMap<String, Value> = BTreeMap::new();
    let mut emptied = vec![false; built.len()];
    for (at, entry) in built.iter_mut().enumerate() {
        let line = entry.line;
        let Some(Value::Array(list)) = entry.value.get_mut(key) else {
            continue;
        };
        let before = list.len();
        list.retain(|block| {
            let Some(id) = result_id(block) else {
                return true;
            };
            match first.get(&id) {
                None => {
                    first.insert(id, block.clone());
                    true
                }
                Some(earlier) => {
                    let kind = if earlier == block {
                        "duplicate_result"
                    } else {
                        "differing_duplicate_result"
                    };
                    repairs.push(named(line, kind, &id));
                    false
                }
            }
        });
        emptied[at] = before > 0 && list.is_empty();
    }
    remove_emptied(built, &emptied, usages);
}

/// The response Gemini CLI records for a tool call the user cancelled.
const GEMINI_CANCELLED: &str = "[Operation Cancelled] Reason: User cancelled tool execution.";

/// The result Claude Code sends for a tool call the user interrupted.
pub(super) const CLAUDE_CODE_INTERRUPTED: &str = "[Request interrupted by user for tool use]";
