//! Large tool-call inputs cleared to fit a fixed budget: a call's arguments reduced to their
//! path-like entries, in the same shape, so that what it touched stays named.

use serde_json::{Map, Value};

use crate::account::ToolTrim;
use crate::conversation::Part;
use crate::evidence;
use crate::state::Applied;
use crate::tokens::TokenCounter;

/// A call input of at least this many tokens is content (a file written whole, a patch), not a
/// path or a pattern: only such inputs are cleared to fit a fixed budget, so that the small ones,
/// which name what the agent worked on, stay.
pub(crate) const LARGE_INPUT: usize = 256;

/// Clears the large inputs ([`LARGE_INPUT`] tokens or more) of the calls in the messages
/// `messages` of `state`, in the order given, to their path-like arguments (as
/// `--clear-tool-inputs` does), until the conversation takes at most `budget` tokens; returns
/// the messages whose inputs were cleared and, as trimming figures, how many inputs were and
/// the tokens freed.
pub(crate) fn clear_large_inputs(
    mut state: Applied,
    messages: impl Iterator<Item = usize>,
    budget: usize,
    counter: &dyn TokenCounter,
) -> (Applied, Vec<usize>, ToolTrim) {
    let (mut changed, mut inputs, mut freed) = (Vec::new(), 0, 0);
    let mut total = state.counts.total();
    for index in messages {
        if total <= budget {
            break;
        }
        let message = &mut state.conversation.messages[index];
        let mut cleared = 0;
        for part in &mut message.parts {
            let Part::ToolCall { arguments, .. } = part else {
                continue;
            };
            if counter.count_text(&arguments.to_string()) >= LARGE_INPUT {
                clear_input(part);
                cleared += 1;
            }
        }
        if cleared == 0 {
            continue;
        }
        let tokens = counter.count_message(message);
        let before = state.counts.messages[index];
        total = (total + tokens).saturating_sub(before);
        freed += before.saturating_sub(tokens);
        inputs += cleared;
        changed.push(index);
        state.counts.messages[index] = tokens;
        state.origin[index] = state.origin[index].edited();
    }
    let trim = ToolTrim {
        inputs_cleared: inputs,
        tokens_freed: freed,
        ..ToolTrim::default()
    };
    (state, changed, trim)
}

/// Whether a call of `state` may have a large input ([`LARGE_INPUT`] tokens or more), by its
/// cached count (or, where none is cached, its message's).
pub(crate) fn has_large_input(state: &Applied) -> bool {
    let messages = state.conversation.messages.iter().enumerate();
    messages
        .filter(|(_, m)| m.has_calls())
        .any(|(index, message)| {
            state.counts.message_parts(index).map_or_else(
                || state.counts.messages[index] >= LARGE_INPUT,
                |(_, parts)| {
                    message.parts.iter().zip(parts).any(|(part, &tokens)| {
                        matches!(part, Part::ToolCall { .. }) && tokens >= LARGE_INPUT
                    })
                },
            )
        })
}

/// Empty arguments of the same shape: `"{}"` for a JSON-encoded string, `{}` for an object.
fn empty_arguments(arguments: &Value) -> Value {
    match arguments {
        Value::String(_) => Value::String("{}".into()),
        _ => Value::Object(Map::new()),
    }
}

/// Replaces a call's arguments with ones of the same shape that keep only its path-like
/// arguments (the evidence of which files it touched).
pub(crate) fn clear_input(part: &mut Part) {
    if let Part::ToolCall { arguments, .. } = part {
        *arguments = path_arguments(arguments);
    }
}

/// A call's arguments reduced to their path-like entries, in the same shape: a JSON-encoded
/// string stays a string, an object stays an object.
fn path_arguments(arguments: &Value) -> Value {
    let parsed = match arguments {
        Value::String(text) => serde_json::from_str::<Value>(text).ok(),
        other => Some(other.clone()),
    };
    let Some(Value::Object(map)) = parsed else {
        return empty_arguments(arguments);
    };
    let kept: Map<String, Value> = map
        .into_iter()
        .filter(|(key, value)| evidence::is_path_key(key) && is_short_path_value(value))
        .collect();
    match arguments {
        Value::String(_) => Value::String(Value::Object(kept).to_string()),
        _ => Value::Object(kept),
    }
}

/// Whether an argument's value is a path or a list of paths (not file contents).
pub(super) fn is_short_path_value(value: &Value) -> bool {
    let is_path = |s: &str| !s.contains('\n') && s.len() <= 500;
    match value {
        Value::String(s) => is_path(s),
        Value::Array(items) => items.iter().all(|i| i.as_str().is_some_and(is_path)),
        _ => false,
    }
}
