//! The replay cache: a conversation's replayed state, kept under a hash of what produced it.
//!
//! A request's upstream body is a function of the body alone (see [`super`]); this cache only
//! saves work. Its key hashes everything the replayed state depends on — the format, the
//! options, the system prompt and the messages of the history's prefix — so a hit gives the
//! state a replay from scratch would reach, and a miss (a fresh proxy, an evicted entry) costs
//! time, never different bytes. It holds at most its capacity of entries and evicts the
//! oldest inserted first.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hasher};
use std::sync::Mutex;

use crate::session::Session;

/// A 128-bit content hash: two `SipHash` passes with different leading bytes (the standard
/// library's `DefaultHasher::new()` has fixed keys, so the hash is the same in every process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key(u64, u64);

impl Key {
    /// The key of `bytes` alone.
    pub(crate) fn of(bytes: &[u8]) -> Self {
        Self(0, 0).then(bytes)
    }

    /// The key of what this key hashed followed by `bytes`.
    pub(crate) fn then(self, bytes: &[u8]) -> Self {
        let pass = |lead: u8, seed: u64| {
            let mut hasher = DefaultHasher::new();
            hasher.write_u8(lead);
            hasher.write_u64(seed);
            hasher.write_usize(bytes.len());
            hasher.write(bytes);
            hasher.finish()
        };
        Self(pass(1, self.0), pass(2, self.1))
    }
}

/// The replayed state of one conversation after a prefix of its history.
#[derive(Clone)]
pub(crate) struct State {
    /// The session, as the replay left it.
    pub(crate) session: Session,
    /// How many of the history's messages were pushed into it.
    pub(crate) pushed: usize,
    /// What those messages and the rest of the request cost as received (uncompacted).
    pub(crate) received_tokens: usize,
    /// The last compaction error, for the ledger.
    pub(crate) last_error: Option<String>,
}

/// A bounded map from keys to states.
pub(crate) struct Cache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Looked up by key only, never iterated: the order of eviction is `order`'s.
    states: HashMap<Key, State>,
    order: VecDeque<Key>,
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
    pub(crate) fn take(&self, key: Key) -> Option<State> {
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
    pub(crate) fn put(&self, key: Key, state: State) {
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
    use super::*;

    #[test]
    fn a_key_depends_on_every_byte_and_on_how_they_were_split() {
        let a = Key::of(b"ab").then(b"c");
        assert_eq!(a, Key::of(b"ab").then(b"c"));
        assert_ne!(a, Key::of(b"a").then(b"bc"));
        assert_ne!(a, Key::of(b"ab").then(b"d"));
    }
}
