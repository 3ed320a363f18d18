//! The replay cache: a conversation's replayed state, kept under a hash of what produced it.
//!
//! A request's upstream body is a function of the body alone (see [`super`]); this cache only
//! saves work. Its key hashes everything the replayed state depends on — the format, the
//! options, the system prompt and the messages of the history's prefix — so a hit gives the
//! state a replay from scratch would reach, and a miss (a fresh proxy, an evicted entry) costs
//! time, never different bytes. It holds at most its capacity of entries and evicts the
//! oldest inserted first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::agent::Agent;
use super::forward::LastCompaction;
use crate::conversation::Conversation;
use crate::format;
use crate::hash::{ContentHash, FxBuild};
use crate::session::Session;

/// The key of a replayed state: the content hash of what produced it.
pub(crate) type ReplayKey = ContentHash;

/// The hash of a JSON value (a message as the replay reads it), walked as it is held rather
/// than serialised: each scalar with its kind, each array and object with its length, object
/// entries in their order. Two values hash alike when their serialisations are alike.
pub(crate) fn hash_value(value: &Value) -> ReplayKey {
    fn add(hash: ReplayKey, value: &Value) -> ReplayKey {
        match value {
            Value::Null => hash.then(b"null"),
            Value::Bool(true) => hash.then(b"true"),
            Value::Bool(false) => hash.then(b"false"),
            Value::Number(number) => hash.then(b"number").then(number.as_str().as_bytes()),
            Value::String(text) => hash.then(b"string").then(text.as_bytes()),
            Value::Array(items) => {
                let start = hash.then(b"array").then(&items.len().to_le_bytes());
                items.iter().fold(start, add)
            }
            Value::Object(object) => {
                let start = hash.then(b"object").then(&object.len().to_le_bytes());
                object.iter().fold(start, |hash, (key, value)| {
                    add(hash.then(key.as_bytes()), value)
                })
            }
        }
    }
    add(ReplayKey::default(), value)
}

/// The part of a key the options give: what the compactor makes them from (`Compactor::options`),
/// the model a request names and the agent that sends it, its settings being fixed for its
/// cache's life. Requests whose options may differ never share a replay.
pub(crate) fn options_key(model: Option<&str>, agent: Option<Agent>) -> ReplayKey {
    let named = |name: Option<&str>| {
        let name = name.unwrap_or_default();
        ReplayKey::of(&[u8::from(!name.is_empty())])
            .then(&name.len().to_le_bytes())
            .then(name.as_bytes())
    };
    named(model).then_hash(named(agent.map(Agent::as_str)))
}

/// The hash of a request's system prompt as its format writes it, outside the message list
/// (alike for every request without one).
pub(crate) fn system_hash(conversation: &Conversation) -> ReplayKey {
    let alone = Conversation {
        format: conversation.format,
        system: conversation.system.clone(),
        messages: Vec::new(),
        envelope: Some(Map::new()),
        lines: Vec::new(),
        repairs: Vec::new(),
    };
    hash_value(&format::render(&alone))
}

/// The replayed state of one conversation after a prefix of its history.
#[derive(Clone)]
pub(crate) struct ReplayState {
    /// The session, as the replay left it.
    pub(crate) session: Session,
    /// How many of the history's messages were pushed into it.
    pub(crate) pushed: usize,
    /// What those messages and the rest of the request cost as received (uncompacted).
    pub(crate) received_tokens: usize,
    /// The last compaction error, for the ledger.
    pub(crate) last_error: Option<String>,
    /// What the last compaction reported, for the ledger.
    pub(crate) last: Option<LastCompaction>,
}

/// A bounded map from keys to states.
pub(crate) struct Cache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Looked up by key only, never iterated: the order of eviction is `order`'s.
    states: HashMap<ReplayKey, ReplayState, FxBuild>,
    order: VecDeque<ReplayKey>,
}

impl Cache {
    /// An empty cache holding at most `capacity` states (0 keeps none).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Takes the state under `key` out of the cache.
    pub(crate) fn take(&self, key: ReplayKey) -> Option<ReplayState> {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let state = inner.states.remove(&key)?;
        if let Some(at) = inner.order.iter().position(|k| *k == key) {
            inner.order.remove(at);
        }
        Some(state)
    }

    /// Puts a state under `key`, evicting the oldest when full.
    pub(crate) fn put(&self, key: ReplayKey, state: ReplayState) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if inner.states.insert(key, state).is_none() {
            inner.order.push_back(key);
        }
        while inner.order.len() > self.capacity {
            if let Some(old) = inner.order.pop_front() {
                inner.states.remove(&old);
            }
        }
    }

    /// How many states it holds.
    pub(crate) fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .states
            .len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_hash_alike_exactly_when_they_serialise_alike() {
        let read = |text: &str| -> Value { serde_json::from_str(text).unwrap() };
        let value =
            read(r#"{"role": "user", "content": [{"type": "text", "text": "a\"b"}], "n": 1.50}"#);
        assert_eq!(hash_value(&value), hash_value(&value.clone()));
        // Each differs from it, or from the others, in what its serialisation writes.
        let others = [
            read(r#"{"content": [{"type": "text", "text": "a\"b"}], "role": "user", "n": 1.50}"#),
            read(r#"{"role": "user", "content": [{"type": "text", "text": "a\"b"}], "n": 1.5}"#),
            read(r#"{"role": "user", "content": [{"type": "text", "text": "a\"b"}], "n": "1.50"}"#),
            read(r#"{"role": "user", "content": [{"type": "text"}, {"text": "a\"b"}], "n": 1.50}"#),
            read(r#"{"role": "user", "content": [{"type": "text", "text": "a\"b"}]}"#),
            json!(["ab"]),
            json!(["a", "b"]),
            json!([null]),
            json!(["null"]),
            json!([]),
            json!({}),
        ];
        let mut hashes: Vec<ReplayKey> = others.iter().map(hash_value).collect();
        hashes.push(hash_value(&value));
        let count = hashes.len();
        hashes.sort();
        hashes.dedup();
        assert_eq!(hashes.len(), count);
    }
}
