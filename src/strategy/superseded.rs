//! Which tool calls a later call repeats (the same tool with the same arguments): tool
//! trimming clears their outputs first and notes them as superseded.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde_json::Value;

use crate::conversation::{Conversation, Part};
use crate::hash::FxBuild;

/// The ids of the calls of `conversation` that a later call repeats: the same tool with the
/// same arguments (a file read again, a command run again). A call without arguments is not
/// known to repeat one: `--clear-tool-inputs` leaves `{}` of two different commands, and
/// trimming again would take the first for stale.
pub(super) fn repeated_calls(conversation: &Conversation) -> HashSet<&str, FxBuild> {
    let parts = || conversation.messages.iter().flat_map(|m| &m.parts);
    // Sized once: a long session makes thousands of calls, most of them repeats in some.
    let calls = parts()
        .filter(|part| matches!(part, Part::ToolCall { .. }))
        .count();
    let mut last: HashMap<(&str, Arguments<'_>), &str, FxBuild> =
        HashMap::with_capacity_and_hasher(calls, FxBuild::default());
    let mut stale = HashSet::with_capacity_and_hasher(calls, FxBuild::default());
    for part in parts() {
        if let Part::ToolCall {
            id,
            name,
            arguments,
            ..
        } = part
        {
            if is_empty(arguments) {
                continue;
            }
            let key = (name.as_str(), Arguments(arguments));
            if let Some(earlier) = last.insert(key, id.as_str()) {
                stale.insert(earlier);
            }
        }
    }
    stale
}

/// A call's arguments as [`repeated_calls`] compares them: equal when their JSON texts are, without
/// writing them. Arrays and objects compare item by item in order (an object's keys too, as its
/// text lists them); any other value as it is: a string by its text, a number by its text (kept
/// by `arbitrary_precision`), and no two kinds of value alike.
struct Arguments<'a>(&'a Value);

impl PartialEq for Arguments<'_> {
    fn eq(&self, other: &Self) -> bool {
        same_text(self.0, other.0)
    }
}

impl Eq for Arguments<'_> {}

impl Hash for Arguments<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_in_order(self.0, state);
    }
}

/// Whether `a` and `b` have the same JSON text.
fn same_text(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_text(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_text(va, vb))
        }
        (Value::String(a), Value::String(b)) => a == b,
        _ => a == b,
    }
}

/// Hashes `value` as [`same_text`] compares it: arrays and objects in their order.
fn hash_in_order<H: Hasher>(value: &Value, state: &mut H) {
    match value {
        Value::Array(items) => {
            state.write_usize(items.len());
            for item in items {
                hash_in_order(item, state);
            }
        }
        Value::Object(map) => {
            state.write_usize(map.len());
            for (key, item) in map {
                key.hash(state);
                hash_in_order(item, state);
            }
        }
        // A string by its text alone: a value of another kind may hash alike, and `same_text`
        // tells them apart.
        Value::String(text) => text.hash(state),
        scalar => scalar.hash(state),
    }
}

/// Whether a call's arguments hold nothing: null, an empty object or string, or one encoded
/// in a string (`"{}"`).
fn is_empty(arguments: &Value) -> bool {
    match arguments {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::String(text) => {
            let text = text.trim();
            text.is_empty() || text == "{}"
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use serde_json::json;

    use super::*;
    use crate::format::parse_value;

    #[test]
    fn a_call_repeats_one_with_the_same_arguments_and_none_without_arguments() {
        // The last two: what `--clear-tool-inputs` leaves of two different commands.
        let arguments = [
            r#"{"command": "ls"}"#,
            r#"{"command": "ls"}"#,
            "{}",
            "{}",
            "",
        ];
        let calls: Vec<Value> = arguments
            .iter()
            .enumerate()
            .map(|(i, a)| {
                json!({"id": format!("c{i}"), "type": "function",
                       "function": {"name": "bash", "arguments": a}})
            })
            .collect();
        let mut messages = vec![json!({"role": "assistant", "content": null, "tool_calls": calls})];
        for i in 0..arguments.len() {
            messages
                .push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "ok"}));
        }
        let conversation = parse_value(Value::Array(messages), None).unwrap();
        let stale = repeated_calls(&conversation);
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert!(stale.contains("c0"));
    }

    #[test]
    fn arguments_are_alike_when_their_json_texts_are() {
        let values: Vec<Value> = [
            r#"{"a": 1, "b": [1, "x"]}"#,
            r#"{"b": [1, "x"], "a": 1}"#,
            r#"{"a": 1.0, "b": [1, "x"]}"#,
            r#"{"a": 1, "b": ["x", 1]}"#,
            r#"{"a": 1, "b": [1, "x"], "c": null}"#,
            r#"{"a": "1"}"#,
            r#"{"a": "2"}"#,
            r#"["ls", "rm"]"#,
            r#"["rm", "ls"]"#,
            r#"{"a": 1}"#,
            r#"[{"a": 1}]"#,
            "[]",
            "{}",
            r#""{}""#,
            "-0.0",
            "0.0",
            "1e2",
            "100",
            "true",
            "null",
        ]
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect();
        let hash = |value: &Value| FxBuild::default().hash_one(Arguments(value));
        for a in &values {
            for b in &values {
                let alike = serde_json::to_string(a).unwrap() == serde_json::to_string(b).unwrap();
                assert_eq!(Arguments(a) == Arguments(b), alike, "{a} {b}");
                if alike {
                    assert_eq!(hash(a), hash(b));
                }
            }
        }
    }
}
