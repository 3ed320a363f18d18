//! Cached counts of a conversation, per message, per field and per part.

use super::{REPLY_PRIMING, TokenCounter, count_outside};
use crate::conversation::{Conversation, Message, Part};

/// Cached counts of one conversation: computed once, read by every later stage. Besides each
/// message's total it keeps the tokens of each message's fields and of each of its parts, so
/// that a later step that clears or drops parts never tokenizes them again.
#[derive(Debug, Clone)]
pub struct Counts {
    /// Tokens of each message, by index.
    pub messages: Vec<usize>,
    /// Tokens the body holds outside its messages (`system` in the JSON, as `count --json`
    /// has always printed it): the conversation's own — a top-level system prompt and the tool
    /// definitions — and the unlogged part ([`Options::overhead`](crate::Options::overhead),
    /// or what an anchor measured); 0 when none.
    pub outside: usize,
    /// Tokens that prime the reply, once (the counter's [`TokenCounter::reply_priming`]).
    pub(super) priming: usize,
    /// Tokens of each message less its parts ([`TokenCounter::count_fields`]), as counted.
    fields: Vec<usize>,
    /// Where each message's part counts start in `parts`; one more entry than messages.
    part_starts: Vec<usize>,
    /// Tokens of every part of every message, in order ([`TokenCounter::count_parts`] of one;
    /// a tool result as its call id's text plus its content's parts).
    parts: Vec<usize>,
    /// Tokens of the call id of each part in `parts` that is a tool result (0 for other parts):
    /// a result's content costs its part's count less this.
    call_ids: Vec<usize>,
}

/// The counts as `count --json` prints them (and Python's `count` returns them):
/// `{"total": N, "system": N, "messages": [N, …]}`.
impl serde::Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut out = serializer.serialize_struct("Counts", 3)?;
        out.serialize_field("total", &self.total())?;
        out.serialize_field("system", &self.outside)?;
        out.serialize_field("messages", &self.messages)?;
        out.end()
    }
}

/// No messages, nothing outside them, and the reply priming of OpenAI's recipe.
impl Default for Counts {
    fn default() -> Self {
        Self {
            messages: Vec::new(),
            outside: 0,
            priming: REPLY_PRIMING,
            fields: Vec::new(),
            part_starts: Vec::new(),
            parts: Vec::new(),
            call_ids: Vec::new(),
        }
    }
}

impl Counts {
    /// Counts for messages whose totals are known but not their parts (a step that rebuilt a
    /// conversation): [`Counts::message_parts`] answers `None` for them.
    pub fn from_totals(messages: Vec<usize>, outside: usize) -> Self {
        Self {
            messages,
            outside,
            ..Self::default()
        }
    }

    /// Counts `messages` with `counter`, part by part.
    pub(super) fn of(counter: &dyn TokenCounter, messages: &[Message], outside: usize) -> Self {
        let mut counts = Self {
            outside,
            priming: counter.reply_priming(),
            messages: Vec::with_capacity(messages.len()),
            fields: Vec::with_capacity(messages.len()),
            part_starts: Vec::with_capacity(messages.len() + 1),
            parts: Vec::new(),
            call_ids: Vec::new(),
        };
        counts.part_starts.push(0);
        for message in messages {
            let fields = counter.count_fields(message);
            let before = counts.parts.len();
            for part in &message.parts {
                let (tokens, call_id) = match part {
                    Part::ToolResult {
                        call_id, content, ..
                    } => {
                        let call_id = counter.count_text(call_id);
                        (call_id + counter.count_parts(content), call_id)
                    }
                    _ => (counter.count_parts(std::slice::from_ref(part)), 0),
                };
                counts.parts.push(tokens);
                counts.call_ids.push(call_id);
            }
            counts.fields.push(fields);
            counts
                .messages
                .push(fields + counts.parts[before..].iter().sum::<usize>());
            counts.part_starts.push(counts.parts.len());
        }
        counts
    }

    /// Appends the counts of the messages that follow (one counting thread's share).
    pub(super) fn append(&mut self, next: Self) {
        let offset = self.parts.len();
        if self.part_starts.is_empty() {
            self.part_starts.push(0);
        }
        self.messages.extend(next.messages);
        self.fields.extend(next.fields);
        self.part_starts
            .extend(next.part_starts.iter().skip(1).map(|start| start + offset));
        self.parts.extend(next.parts);
        self.call_ids.extend(next.call_ids);
    }

    /// The body's total: every message, what lies outside them and the reply priming.
    pub fn total(&self) -> usize {
        self.messages.iter().sum::<usize>() + self.outside + self.priming
    }

    /// Tokens that prime the reply, counted once in the total.
    pub(crate) fn priming(&self) -> usize {
        self.priming
    }

    /// These counts with the reply priming of `other`: counts of the same conversation before a
    /// step rebuilt it, or of the conversation it was cut from.
    pub(crate) fn with_priming_of(self, other: &Self) -> Self {
        Self {
            priming: other.priming,
            ..self
        }
    }

    /// The cached counts of message `index`: the tokens of its fields and of each of its parts,
    /// or `None` when they no longer describe it. They are dropped for every message once
    /// messages are removed, and for one message once its total changes (every change a step
    /// makes to a message lowers its count): a stale part count is never returned.
    pub fn message_parts(&self, index: usize) -> Option<(usize, &[usize])> {
        if self.fields.len() != self.messages.len() {
            return None;
        }
        let fields = *self.fields.get(index)?;
        let parts = self
            .parts
            .get(self.part_starts[index]..self.part_starts[index + 1])?;
        (fields + parts.iter().sum::<usize>() == self.messages[index]).then_some((fields, parts))
    }

    /// The cached tokens of the content of the tool result in part `part` of message `index`
    /// (its part's count less its call id's), or `None` as [`Counts::message_parts`].
    pub(crate) fn result_content(&self, index: usize, part: usize) -> Option<usize> {
        let (_, parts) = self.message_parts(index)?;
        let at = self.part_starts[index] + part;
        Some(parts.get(part)?.saturating_sub(self.call_ids[at]))
    }
}

/// Counts are equal when their totals are: the part counts they cache are a detail.
impl PartialEq for Counts {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
            && self.outside == other.outside
            && self.priming == other.priming
    }
}

impl Eq for Counts {}

/// Counts every message of a conversation once with a counter of the caller's, on this thread;
/// [`Tokenizer::count`](super::Tokenizer::count) counts the same with a built-in tokenizer on
/// all cores, and [`Options::count_body`](crate::Options::count_body) adds the unlogged part
/// of what lies outside the messages.
pub fn count_with(conversation: &Conversation, counter: &dyn TokenCounter) -> Counts {
    let outside = count_outside(conversation, counter);
    Counts::of(counter, &conversation.messages, outside)
}
