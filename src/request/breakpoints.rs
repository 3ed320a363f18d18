//! Anthropic `cache_control` breakpoints: taken out of the messages before the replay reads
//! them, put back on every marked message that survives unchanged, and capped at what
//! Anthropic allows in one request.

use serde_json::{Map, Value};

/// Anthropic's limit on `cache_control` breakpoints in one request.
pub(super) const MAX_BREAKPOINTS: usize = 4;

/// Takes every breakpoint out of `messages`; returns each marked message as it was, by index
/// (only those are copied).
pub(super) fn strip_all(messages: &mut [Value]) -> Vec<(usize, Value)> {
    let mut marked = Vec::new();
    for (index, message) in messages.iter_mut().enumerate() {
        if find(message, false) {
            marked.push((index, message.clone()));
            strip(message);
        }
    }
    marked
}

/// Puts the client's marked messages back into a rendered body, then removes the earliest
/// message breakpoints while it holds more than Anthropic allows.
pub(super) fn restore(body: &mut Value, marked: Vec<(usize, Value)>) {
    if !marked.is_empty()
        && let Some(Value::Array(list)) = body.get_mut("messages")
    {
        put_back(list, marked);
    }
    cap(body);
}

/// Takes every `cache_control` out of a message and its blocks (and the blocks inside a
/// `tool_result`); returns whether there was one.
fn strip(message: &mut Value) -> bool {
    find(message, true)
}

/// Whether a message or its blocks (or the blocks inside a `tool_result`) hold a
/// `cache_control`; each taken out when `take`, else the message is left as it is.
fn find(message: &mut Value, take: bool) -> bool {
    fn find_in(object: &mut Map<String, Value>, take: bool) -> bool {
        let mut found = if take {
            object.shift_remove("cache_control").is_some()
        } else {
            object.contains_key("cache_control")
        };
        if let Some(Value::Array(blocks)) = object.get_mut("content") {
            for block in blocks {
                if let Value::Object(block) = block {
                    found |= find_in(block, take);
                }
            }
        }
        found
    }
    match message {
        Value::Object(object) => find_in(object, take),
        _ => false,
    }
}

/// Puts the client's marked messages back in place of their unmarked copies that survived,
/// matching from the end, in order.
fn put_back(list: &mut [Value], marked: Vec<(usize, Value)>) {
    let mut cursor = list.len();
    for (_, original) in marked.into_iter().rev() {
        let mut bare = original.clone();
        strip(&mut bare);
        if let Some(at) = list[..cursor].iter().rposition(|m| *m == bare) {
            list[at] = original;
            cursor = at;
        }
    }
}

/// Removes the earliest message breakpoints while the body holds more than Anthropic allows.
fn cap(body: &mut Value) {
    let mut total = count(body);
    let Some(Value::Array(list)) = body.get_mut("messages") else {
        return;
    };
    for message in list {
        if total <= MAX_BREAKPOINTS {
            break;
        }
        let here = count(message);
        if here > 0 && here <= total {
            strip(message);
            total -= here;
        }
    }
}

/// The `cache_control` fields anywhere in `value`.
fn count(value: &Value) -> usize {
    match value {
        Value::Object(object) => {
            usize::from(object.contains_key("cache_control"))
                + object.values().map(count).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn breakpoints_return_to_surviving_messages_and_stay_within_the_limit() {
        let marked = json!({"role": "user", "content": [{"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]});
        let mut bare = marked.clone();
        assert!(strip(&mut bare));
        let mut list = vec![json!({"role": "user", "content": "a"}), bare];
        put_back(&mut list, vec![(7, marked.clone())]);
        assert_eq!(list[1], marked);
        let mut body = json!({"system": [{"type": "text", "text": "s", "cache_control": {}}],
            "messages": [marked.clone(), marked.clone(), marked.clone(), marked.clone()]});
        assert_eq!(count(&body), 5);
        cap(&mut body);
        assert_eq!(count(&body), 4);
        assert_eq!(count(&body["messages"][0]), 0);
    }
}
