//! The compaction decision: the body a request sends upstream, from the body it carried.
//!
//! The upstream body is a deterministic function of the received body and the proxy's flags.
//! The history is replayed at its own call boundaries (each run of assistant messages ends a
//! call) through a [`Session`], as `replay` does: messages are pushed up to each boundary and
//! the session compacts only when it passes the trigger, down to the target. So between two
//! compactions an upstream body is the previous one with the new messages appended, and the
//! cut moves only when the trigger is crossed again. Under the trigger (no compaction in the
//! replay) the received bytes are forwarded as they are.
//!
//! Anthropic `cache_control` breakpoints are left out of what the replay sees (a client moves
//! them from call to call) and put back on every marked message that survives unchanged, at
//! most [`MAX_BREAKPOINTS`] in the body.
//!
//! Usage reported in responses is not used to anchor counts: it reaches one proxy only, and
//! counts that depend on it would make another proxy, or a restarted one, send other bytes.

use ctxcompact::format::Format;
use ctxcompact::{Conversation, Role, Session, format};
use serde::Serialize;
use serde_json::{Map, Value};

use super::cache::{Cache, Key, State};
use super::client::{self, Recognised};
use super::config::{Config, Facts};

/// Anthropic's limit on `cache_control` breakpoints in one request.
pub(crate) const MAX_BREAKPOINTS: usize = 4;

/// What the proxy did with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Action {
    /// Read and forwarded byte for byte (under the trigger).
    Forwarded,
    /// Read, and its history compacted before forwarding.
    Compacted,
    /// Not read (another path, or a body over the size cap): forwarded unchanged.
    Passthrough,
    /// Read but not usable (not JSON, invalid, cannot fit): forwarded unchanged.
    FailedOpen,
}

/// The decision about one body.
#[derive(Debug)]
pub(crate) struct Decision {
    /// The body to send, or `None` to send the received bytes.
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) action: Action,
    /// Why, when the body went through unchanged past the trigger or failed open.
    pub(crate) reason: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) tokens_received: Option<usize>,
    pub(crate) tokens_forwarded: Option<usize>,
    /// Compactions so far in the conversation (its replay's).
    pub(crate) compactions: Option<usize>,
    /// Why the archive files of this request's compactions could not be written.
    pub(crate) archive_error: Option<String>,
    /// The window, the agent and the trigger (once the model is known).
    pub(crate) facts: Facts,
}

impl Decision {
    /// The received body sent as it is, unread past `reason`.
    pub(crate) fn unchanged(action: Action, model: Option<String>, reason: String) -> Self {
        Self {
            body: None,
            action,
            reason: Some(reason),
            model,
            tokens_received: None,
            tokens_forwarded: None,
            compactions: None,
            archive_error: None,
            facts: Facts::default(),
        }
    }

    fn failed_open(model: Option<String>, reason: String) -> Self {
        Self::unchanged(Action::FailedOpen, model, reason)
    }
}

/// A request read and checked, ready to replay.
struct Request {
    model: Option<String>,
    options: ctxcompact::Options,
    facts: Facts,
    conversation: Conversation,
    /// The client's marked messages, whole, by index (Anthropic).
    marked: Vec<(usize, Value)>,
    /// The key of each prefix of the history: `keys[p]` for the first `p` messages.
    keys: Vec<Key>,
}

/// Decides what to send upstream for `body`, a request in `format` (`path_model` is the model
/// the path names, for Gemini) from the agent its headers named, if any.
pub(crate) fn decide(
    config: &Config,
    cache: &Cache,
    format: Format,
    (path_model, recognised): (Option<&str>, Option<Recognised>),
    body: &[u8],
) -> Decision {
    match read(config, format, (path_model, recognised), body) {
        Ok(request) => replay(cache, request),
        Err(decision) => *decision,
    }
}

/// Reads a body into a checked conversation and its options; a decision to forward it
/// unchanged when it cannot be.
fn read(
    config: &Config,
    format: Format,
    (path_model, recognised): (Option<&str>, Option<Recognised>),
    body: &[u8],
) -> Result<Request, Box<Decision>> {
    let failed = |model: &Option<String>, reason: String| {
        Box::new(Decision::failed_open(model.clone(), reason))
    };
    let value: Value = serde_json::from_slice(body)
        .map_err(|err| failed(&None, format!("the body is not JSON: {err}")))?;
    let Value::Object(mut object) = value else {
        return Err(failed(&None, "the body is not a JSON object".into()));
    };
    let model = object
        .get("model")
        .and_then(Value::as_str)
        .or(path_model)
        .map(str::to_string);
    if format == Format::Responses
        && object
            .get("previous_response_id")
            .is_some_and(|id| !id.is_null())
    {
        let reason = "`previous_response_id`: the provider holds the history".into();
        return Err(Box::new(Decision::unchanged(
            Action::Forwarded,
            model,
            reason,
        )));
    }
    let recognised = recognised.or_else(|| client::from_body(format, &object));
    let (mut options, facts) = config
        .options(model.as_deref(), recognised)
        .map_err(|reason| failed(&model, reason))?;
    // Past here the model is known: what fails still names its window and agent.
    let failed = |model: &Option<String>, reason: String| {
        let mut decision = Decision::failed_open(model.clone(), reason);
        decision.facts = facts.clone();
        Box::new(decision)
    };
    options.overhead = object
        .get("tools")
        .map_or(0, |tools| options.tokenizer.counter().count_opaque(tools));
    let Some(Value::Array(messages)) = object.get_mut(format.list_key()) else {
        let reason = format!("the body has no `{}` list", format.list_key());
        return Err(failed(&model, reason));
    };
    // The replay reads every message without its breakpoints.
    let mut marked = Vec::new();
    if format == Format::Anthropic {
        for (index, message) in messages.iter_mut().enumerate() {
            let original = message.clone();
            if strip_breakpoints(message) {
                marked.push((index, original));
            }
        }
    }
    let encoded: Vec<Vec<u8>> = messages
        .iter()
        .map(|m| serde_json::to_vec(m).unwrap_or_default())
        .collect();
    let conversation = format::parse_value(Value::Object(object), Some(format))
        .map_err(|err| failed(&model, format!("unreadable: {err}")))?;
    let problems = ctxcompact::validate(&conversation);
    if let Some(first) = problems.first() {
        let more = match problems.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(failed(&model, format!("invalid: {first}{more}")));
    }
    let base = Key::of(format.as_str().as_bytes())
        .then(format!("{options:?}").as_bytes())
        .then(format!("{:?}", conversation.system).as_bytes());
    let mut keys = Vec::with_capacity(encoded.len() + 1);
    keys.push(base);
    for bytes in &encoded {
        let previous = *keys.last().expect("keys start with the base");
        keys.push(previous.then(bytes));
    }
    Ok(Request {
        model,
        options,
        facts,
        conversation,
        marked,
        keys,
    })
}

/// Replays a request's history at its call boundaries, from the longest prefix the cache
/// holds, and decides its body.
#[allow(clippy::too_many_lines)] // one replay, read top to bottom
fn replay(cache: &Cache, request: Request) -> Decision {
    let Request {
        model,
        options,
        mut facts,
        conversation,
        marked,
        keys,
    } = request;
    let format = conversation.format;
    let window = options.profile.context_window;
    let messages = &conversation.messages;
    let mut boundaries: Vec<usize> = (1..messages.len())
        .filter(|&i| messages[i].role == Role::Assistant && messages[i - 1].role != Role::Assistant)
        .collect();
    boundaries.push(messages.len());
    let resumed = boundaries.iter().rev().find_map(|&b| cache.take(keys[b]));
    let mut state = if let Some(state) = resumed {
        state
    } else {
        let start = Conversation {
            format,
            system: conversation.system.clone(),
            messages: Vec::new(),
            envelope: None,
            lines: Vec::new(),
            repairs: Vec::new(),
        };
        match Session::new(start, options) {
            Ok(session) => State {
                received_tokens: session.tokens(),
                session,
                pushed: 0,
                last_error: None,
            },
            Err(err) => {
                let mut decision = Decision::failed_open(model, format!("options: {err}"));
                decision.facts = facts;
                return decision;
            }
        }
    };
    let Conversation {
        system,
        messages,
        envelope,
        ..
    } = conversation;
    let resumed_at = state.pushed;
    let mut incoming = messages.into_iter().skip(resumed_at);
    for &boundary in boundaries.iter().filter(|&&b| b > resumed_at) {
        let count = boundary - state.pushed;
        state.session.extend(incoming.by_ref().take(count));
        let counts = &state.session.counts().messages;
        state.received_tokens += counts[counts.len() - count..].iter().sum::<usize>();
        state.pushed = boundary;
        if let Err(err) = state.session.compact_if_needed() {
            state.last_error = Some(err.to_string());
        }
    }
    // Written before the body that names them is sent; a failure fails nothing.
    let archive_error = state.session.write_archive().err().map(|e| e.to_string());
    let session = &state.session;
    let received = state.received_tokens;
    let forwarded = session.tokens();
    facts.trigger = Some(session.trigger());
    let mut decision = Decision {
        body: None,
        action: Action::Forwarded,
        reason: None,
        model,
        tokens_received: Some(received),
        tokens_forwarded: Some(received),
        compactions: Some(session.compactions()),
        archive_error,
        facts,
    };
    if forwarded > window {
        decision.action = Action::FailedOpen;
        decision.reason = Some(format!(
            "cannot compact within the window ({forwarded} > {window} tokens){}",
            state
                .last_error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ));
    } else if session.compactions() > 0 {
        let output = Conversation {
            format,
            system,
            messages: session.conversation().messages.clone(),
            envelope,
            lines: Vec::new(),
            repairs: Vec::new(),
        };
        let mut value = format::render(&output);
        if !marked.is_empty()
            && let Some(Value::Array(list)) = value.get_mut(format.list_key())
        {
            restore_breakpoints(list, marked);
        }
        if format == Format::Anthropic {
            cap_breakpoints(&mut value);
        }
        decision.body = Some(serde_json::to_vec(&value).expect("a JSON value serializes"));
        decision.action = Action::Compacted;
        decision.tokens_forwarded = Some(forwarded);
    } else if received > session.trigger() {
        decision.reason = state.last_error.clone().or_else(|| {
            Some("over the trigger, but the last round still waits for its results".into())
        });
    }
    cache.put(keys[state.pushed], state);
    decision
}

/// Takes every `cache_control` out of a message and its blocks (and the blocks inside a
/// `tool_result`); returns whether there was one.
fn strip_breakpoints(message: &mut Value) -> bool {
    fn strip(object: &mut Map<String, Value>) -> bool {
        let mut found = object.shift_remove("cache_control").is_some();
        if let Some(Value::Array(blocks)) = object.get_mut("content") {
            for block in blocks {
                if let Value::Object(block) = block {
                    found |= strip(block);
                }
            }
        }
        found
    }
    match message {
        Value::Object(object) => strip(object),
        _ => false,
    }
}

/// Puts the client's marked messages back in place of their unmarked copies that survived,
/// matching from the end, in order.
fn restore_breakpoints(list: &mut [Value], marked: Vec<(usize, Value)>) {
    let mut cursor = list.len();
    for (_, original) in marked.into_iter().rev() {
        let mut bare = original.clone();
        strip_breakpoints(&mut bare);
        if let Some(at) = list[..cursor].iter().rposition(|m| *m == bare) {
            list[at] = original;
            cursor = at;
        }
    }
}

/// Removes the earliest message breakpoints while the body holds more than Anthropic allows.
fn cap_breakpoints(body: &mut Value) {
    let mut total = count_breakpoints(body);
    let Some(Value::Array(list)) = body.get_mut("messages") else {
        return;
    };
    for message in list {
        if total <= MAX_BREAKPOINTS {
            break;
        }
        let here = count_breakpoints(message);
        if here > 0 && here <= total {
            strip_breakpoints(message);
            total -= here;
        }
    }
}

/// The `cache_control` fields anywhere in `value`.
pub(crate) fn count_breakpoints(value: &Value) -> usize {
    match value {
        Value::Object(object) => {
            usize::from(object.contains_key("cache_control"))
                + object.values().map(count_breakpoints).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_breakpoints).sum(),
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
        assert!(strip_breakpoints(&mut bare));
        let mut list = vec![json!({"role": "user", "content": "a"}), bare];
        restore_breakpoints(&mut list, vec![(7, marked.clone())]);
        assert_eq!(list[1], marked);
        let mut body = json!({"system": [{"type": "text", "text": "s", "cache_control": {}}],
            "messages": [marked.clone(), marked.clone(), marked.clone(), marked.clone()]});
        assert_eq!(count_breakpoints(&body), 5);
        cap_breakpoints(&mut body);
        assert_eq!(count_breakpoints(&body), 4);
        assert_eq!(count_breakpoints(&body["messages"][0]), 0);
    }
}
