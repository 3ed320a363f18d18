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

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::{Built, Format, RecordedUsage, str_of, wire};
use crate::conversation::Repair;
use crate::conversation::{Conversation, Message, Role};

/// Moves recorded usages' message positions after an insertion at `at` (or a removal of the
/// message at `at`), so that each still names the message the call produced.
fn shift(usages: &mut [RecordedUsage], at: usize, inserted: bool) {
    for usage in usages.iter_mut() {
        for index in [&mut usage.message, &mut usage.from] {
            if inserted && *index >= at {
                *index += 1;
            } else if !inserted && *index > at {
                *index -= 1;
            }
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

/// What Claude Code sends as the first user message of an agent's transcript whose start it
/// does not hold (Claude Code 2.1.328, its transcript loader's meta message); Anthropic-format
/// logs (Claude Code, pi) get it. Keep in sync with that client.
pub(crate) const CLAUDE_CODE_OPENING: &str =
    "[The start of this agent's transcript, with its prompt, is not available.]";
/// What Gemini CLI sends first when a history opens with the model's turn (Gemini CLI 0.61.0,
/// `historyHardening.ts`, its continuation sentinel). Keep in sync with that client.
pub(crate) const GEMINI_CLI_OPENING: &str = "[Continuing from previous AI thoughts...]";

/// A session log whose first message after its system messages is the model's (a subagent's
/// transcript without its prompt, a continued session whose leading results were dropped):
/// named `missing_first_request` at that message's line and, in a format whose first message
/// must be a user message, given the one the agent sends in its place, marked as harness text.
/// Usages move with the messages; a request that held the first message holds the new one too.
pub(super) fn opening(
    format: Format,
    conversation: &mut Conversation,
    usages: &mut [RecordedUsage],
) {
    let messages = &conversation.messages;
    let Some(at) = messages.iter().position(|m| m.role != Role::System) else {
        return;
    };
    if messages[at].role != Role::Assistant {
        return;
    }
    let line = conversation.lines.get(at).copied().unwrap_or(at);
    conversation.repairs.push(Repair {
        line,
        kind: Repair::MISSING_FIRST_REQUEST,
        call_id: None,
    });
    conversation.repairs.sort_by_key(|r| r.line);
    if !wire(format).first_must_be_user() {
        return;
    }
    let (agent, text) = match format {
        Format::Gemini | Format::GeminiCli => ("Gemini CLI", GEMINI_CLI_OPENING),
        _ => ("Claude Code", CLAUDE_CODE_OPENING),
    };
    let mut message = Message::new_text(Role::User, text);
    message.harness = Some((agent, Repair::MISSING_FIRST_REQUEST));
    conversation.messages.insert(at, message);
    if conversation.lines.len() + 1 == conversation.messages.len() {
        conversation.lines.insert(at, line);
    }
    for usage in usages.iter_mut() {
        if usage.message >= at {
            usage.message += 1;
        }
        if usage.from > at {
            usage.from += 1;
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

/// How a format that answers calls in blocks of the next user message writes them (Anthropic
/// `tool_use` / `tool_result`, Bedrock `toolUse` / `toolResult`).
pub(super) struct Blocks {
    /// The call id of a block that is a call.
    call: fn(&Value) -> Option<&str>,
    /// The call id of a block that is a result.
    result: fn(&Value) -> Option<&str>,
    /// The result block sent for an interrupted call, given its id.
    interrupted: fn(&str) -> Value,
}

/// Anthropic Messages blocks, an interrupted call answered as Claude Code answers it.
pub(super) const ANTHROPIC: Blocks = Blocks {
    call: |b| (str_of(b, "type") == Some("tool_use")).then(|| str_of(b, "id").unwrap_or_default()),
    result: |b| {
        (str_of(b, "type") == Some("tool_result"))
            .then(|| str_of(b, "tool_use_id").unwrap_or_default())
    },
    interrupted: |id| json!({"type": "tool_result", "tool_use_id": id, "content": CLAUDE_CODE_INTERRUPTED, "is_error": true}),
};

/// Bedrock Converse blocks, an interrupted call answered with Claude Code's text, as an error.
pub(super) const BEDROCK: Blocks = Blocks {
    call: |b| {
        b.get("toolUse")
            .map(|c| str_of(c, "toolUseId").unwrap_or_default())
    },
    result: |b| {
        b.get("toolResult")
            .map(|r| str_of(r, "toolUseId").unwrap_or_default())
    },
    interrupted: |id| json!({"toolResult": {"toolUseId": id, "content": [{"text": CLAUDE_CODE_INTERRUPTED}], "status": "error"}}),
};

/// The blocks of a message's content (none when it is a string).
fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The ids `id` finds in a message's blocks.
fn ids(message: &Value, id: fn(&Value) -> Option<&str>) -> Vec<String> {
    blocks(message)
        .iter()
        .filter_map(|b| id(b).map(str::to_string))
        .collect()
}

/// Whether a message is a user message of tool results only.
fn results_only(message: &Value, shape: &Blocks) -> bool {
    str_of(message, "role") == Some("user")
        && !blocks(message).is_empty()
        && blocks(message).iter().all(|b| (shape.result)(b).is_some())
}

/// Repairs the pairing of a request whose results are blocks of the next user message
/// (Claude Code and pi logs read as Anthropic Messages; Anthropic and Bedrock bodies).
/// `interruption`, when given, is the result block's content the agent sends for a call it
/// interrupted (marked `is_error`; Anthropic blocks only), else `shape`'s. Leading results
/// with no call before them are dropped; every call without a result in the message after it
/// gets one, in that message when it carries results only, else in a new user message right
/// after the call — unless it is the last message (the call in progress); a result of a call
/// already answered is dropped.
pub(super) fn anthropic(
    built: &mut Vec<Built>,
    shape: &Blocks,
    interruption: Option<&Value>,
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
                let orphan = (shape.result)(b);
                if let Some(id) = orphan {
                    repairs.push(named(line, "result_without_call", id));
                }
                orphan.is_none()
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
        let calls = ids(&built[index].value, shape.call);
        let next = built.get(index + 1);
        let answered = next
            .map(|n| ids(&n.value, shape.result))
            .unwrap_or_default();
        let line = built[index].line;
        let last = index + 1 == built.len();
        let mut missing = Vec::new();
        for id in calls.iter().filter(|id| !answered.contains(id)) {
            if last {
                repairs.push(named(line, Repair::IN_PROGRESS, id));
            } else {
                repairs.push(named(line, "interrupted_call", id));
                missing.push(match interruption {
                    Some(content) => json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": true}),
                    None => (shape.interrupted)(id),
                });
            }
        }
        let into_next = next.is_some_and(|n| results_only(&n.value, shape));
        add_results(built, usages, index, into_next, "content", missing);
        index += 1;
    }
    // Results logged again.
    let result_id = |b: &Value| (shape.result)(b).map(str::to_string);
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

/// How a format that answers each call in an item of its own writes them (Responses
/// `function_call` / `function_call_output` items, OpenAI `tool_calls` / `tool` messages).
pub(super) struct Items {
    /// The call ids an item makes.
    calls: fn(&Value) -> Vec<String>,
    /// The call id of an item that is a result.
    output: fn(&Value) -> Option<String>,
    /// The result item sent for an interrupted call, given its id and the item making it.
    interrupted: fn(&str, &Value) -> Value,
}

/// Responses items (Codex logs, Responses bodies), an interrupted call answered as Codex
/// answers it when it next sends the history: an `aborted` output of the call's kind.
pub(super) const RESPONSES: Items = Items {
    calls: |item| {
        if is_call(item) {
            vec![str_of(item, "call_id").unwrap_or_default().to_string()]
        } else {
            Vec::new()
        }
    },
    output: |item| is_output(item).then(|| str_of(item, "call_id").unwrap_or_default().to_string()),
    interrupted: |id, call| {
        let kind = format!("{}_output", str_of(call, "type").unwrap_or("function_call"));
        json!({"type": kind, "call_id": id, "output": "aborted"})
    },
};

/// OpenAI Chat messages, an interrupted call answered as Codex answers one (`aborted`).
pub(super) const OPENAI: Items = Items {
    calls: |message| {
        message
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| str_of(c, "id").unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    },
    output: |message| {
        (str_of(message, "role") == Some("tool")).then(|| {
            str_of(message, "tool_call_id")
                .unwrap_or_default()
                .to_string()
        })
    },
    interrupted: |id, _| json!({"role": "tool", "tool_call_id": id, "content": "aborted"}),
};

/// Repairs a request whose results are items of their own (Codex logs read as Responses
/// input; Responses and OpenAI bodies): a Responses call's `null` arguments become `"{}"`;
/// leading outputs with no call before them are dropped, and an output of a call already
/// answered; a call with no output gets `shape`'s, unless the request ends on its run of
/// calls (the call in progress). Recorded usages move with the items.
pub(super) fn responses(
    built: &mut Vec<Built>,
    shape: &Items,
    repairs: &mut Vec<Repair>,
    usages: &mut [RecordedUsage],
) {
    let mut calls_seen = false;
    let mut answered: BTreeMap<String, Value> = BTreeMap::new();
    let mut emptied = Vec::with_capacity(built.len());
    for entry in built.iter_mut() {
        if !(shape.calls)(&entry.value).is_empty() {
            calls_seen = true;
            if is_call(&entry.value) && entry.value.get("arguments") == Some(&Value::Null) {
                let id = str_of(&entry.value, "call_id")
                    .unwrap_or_default()
                    .to_string();
                entry.value["arguments"] = Value::String("{}".into());
                repairs.push(named(entry.line, "null_arguments", &id));
            }
        }
        let mut kept = true;
        if let Some(id) = (shape.output)(&entry.value) {
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
    // Interrupted calls: answered right after the run of items making calls they belong to,
    // in the order of the calls; a run the request ends on is in progress.
    let answered: BTreeSet<String> = built
        .iter()
        .filter_map(|b| (shape.output)(&b.value))
        .collect();
    let mut added: Vec<(usize, Built)> = Vec::new();
    for (index, item) in built.iter().enumerate() {
        let run_end = index
            + 1
            + built[index + 1..]
                .iter()
                .take_while(|b| !(shape.calls)(&b.value).is_empty())
                .count();
        for id in (shape.calls)(&item.value)
            .iter()
            .filter(|id| !answered.contains(*id))
        {
            if run_end == built.len() {
                repairs.push(named(item.line, Repair::IN_PROGRESS, id));
            } else {
                repairs.push(named(item.line, "interrupted_call", id));
                let value = (shape.interrupted)(id, &item.value);
                added.push((
                    run_end,
                    Built {
                        value,
                        line: item.line,
                    },
                ));
            }
        }
    }
    // From the last insertion back, so that earlier positions stay valid; the outputs of one
    // run keep the order of their calls.
    for (at, output) in added.into_iter().rev() {
        built.insert(at, output);
        shift(usages, at, true);
    }
}

/// Repairs a request read as Gemini contents (Gemini CLI logs, Gemini bodies): leading
/// `functionResponse`s with no call before them are dropped; a call with no result in the
/// content after it gets the cancellation response Gemini CLI sends (unless it is in the last
/// content: the call in progress); a `functionResponse` of a call already answered is dropped.
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
    // Leading responses: those before the first model content have no call before them.
    let mut emptied = vec![false; built.len()];
    for (at, entry) in built.iter_mut().enumerate() {
        if str_of(&entry.value, "role") == Some("model") {
            break;
        }
        let line = entry.line;
        if let Some(Value::Array(list)) = entry.value.get_mut("parts") {
            let before = list.len();
            list.retain(|part| {
                let Some(response) = part.get("functionResponse") else {
                    return true;
                };
                let id = str_of(response, "id").or_else(|| str_of(response, "name"));
                repairs.push(named(line, "result_without_call", id.unwrap_or_default()));
                false
            });
            emptied[at] = before > 0 && list.is_empty();
        }
    }
    remove_emptied(built, &emptied, usages);
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

/// The error response Gemini CLI sends for a tool call the user cancelled while it ran, as
/// its tool executor writes it since January 2026 (earlier versions wrote `Reason: ` after
/// the bracket).
const GEMINI_CANCELLED: &str = "[Operation Cancelled] User cancelled tool execution.";

/// The result Claude Code sends for a tool call the user interrupted; with `--repair`, also
/// the result of an interrupted call in a Bedrock body.
const CLAUDE_CODE_INTERRUPTED: &str = "[Request interrupted by user for tool use]";
