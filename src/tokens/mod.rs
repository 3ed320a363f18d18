//! Token counting with OpenAI's chat-counting recipe.
//!
//! A message costs [`MESSAGE_OVERHEAD`] plus the tokens of each of its string fields (role,
//! content, name, tool call id, …) plus [`NAME_OVERHEAD`] when it has a name; the reply costs
//! [`REPLY_PRIMING`]. Tool calls add their name and arguments plus [`TOOL_CALL_OVERHEAD`]; opaque
//! parts (images, thinking, …) are estimated. Encoders are built once per process (start them
//! early with [`Tokenizer::prepare`]); each message is counted once by [`count`] or
//! [`Tokenizer::count`], and every later stage reads the cached [`Counts`], down to the tokens of
//! each part.
//!
//! The `o200k` and `cl100k` counts come from `bpe`, an exact counter that gives what
//! tiktoken-rs's `encode_ordinary(text).len()` gives, faster (see its docs and the README's
//! "Speed" section); tiktoken-rs supplies its rank tables and stays the reference in the tests.

mod bpe;
mod pretokenize;

use std::sync::OnceLock;

use serde_json::Value;

use crate::conversation::{Conversation, Message, Part};
use bpe::Bpe;
use pretokenize::Pattern;

/// Tokens every message costs beyond its fields. Source: OpenAI cookbook, "How to count tokens
/// with tiktoken" (`tokens_per_message = 3` for gpt-3.5-turbo-0613 and later, gpt-4, gpt-4o).
pub(crate) const MESSAGE_OVERHEAD: usize = 3;
/// Extra token for a message with a `name`. Source: the same cookbook (`tokens_per_name = 1`).
pub(crate) const NAME_OVERHEAD: usize = 1;
/// Tokens that prime the assistant's reply. Source: the same cookbook ("every reply is primed
/// with <|start|>assistant<|message|>").
pub(crate) const REPLY_PRIMING: usize = 3;
/// Tokens a tool call costs beyond its name and arguments: its framing and id. OpenAI does not
/// publish this; 3 matches the per-message overhead and errs on the side of counting more.
pub(crate) const TOOL_CALL_OVERHEAD: usize = 3;
/// Estimate for one opaque media part (image, audio, document, file): OpenAI's price of a
/// low-detail image (85 tokens, OpenAI vision pricing). Media inlined as base64 is not text the
/// model reads, so its byte length would be a gross overestimate.
pub(crate) const MEDIA_TOKENS: usize = 85;
/// Characters per token of the `chars` estimator and of opaque non-media parts (a common rule of
/// thumb for English text with BPE tokenizers).
pub(crate) const CHARS_PER_TOKEN: usize = 4;

/// Which tokenizer counts the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tokenizer {
    /// `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series).
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5-turbo).
    Cl100k,
    /// ceil(chars ÷ 4): for models whose tokenizer is not public.
    Chars,
}

impl Tokenizer {
    /// The tokenizer's name as the CLI spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200k => "o200k",
            Self::Cl100k => "cl100k",
            Self::Chars => "chars",
        }
    }

    /// The process-wide counter for this tokenizer, built on first use; every thread shares it.
    pub fn counter(self) -> &'static dyn TokenCounter {
        static O200K: OnceLock<Tiktoken> = OnceLock::new();
        static CL100K: OnceLock<Tiktoken> = OnceLock::new();
        match self {
            Self::O200k => O200K.get_or_init(|| Tiktoken::new(self)),
            Self::Cl100k => CL100K.get_or_init(|| Tiktoken::new(self)),
            Self::Chars => &CharEstimate,
        }
    }

    /// Starts building this tokenizer's counter on a background thread and returns at once, so
    /// that the build overlaps reading and parsing the input; [`Tokenizer::counter`] then waits
    /// for it only if it is not done yet. Calling it more than once builds nothing twice.
    pub fn prepare(self) {
        if self != Self::Chars {
            std::thread::spawn(move || self.counter());
        }
    }

    /// Counts every message of a conversation once, on several threads when the text is large
    /// enough to repay starting them. The result does not depend on the thread count: each
    /// message is counted whole by exactly one thread, with the one shared counter.
    ///
    /// # Panics
    /// Only if a counting thread panicked, which counting never does.
    pub fn count(self, conversation: &Conversation) -> Counts {
        let messages = &conversation.messages;
        let counter = self.counter();
        let system = conversation
            .system
            .as_ref()
            .map_or(0, |s| counter.count_message(s));
        let sizes: Vec<usize> = messages.iter().map(text_bytes).collect();
        let total_bytes: usize = sizes.iter().sum();
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(MAX_THREADS)
            .min(total_bytes / PARALLEL_MIN_BYTES + 1);
        if threads <= 1 || self == Self::Chars {
            return Counts::of(counter, messages, system);
        }
        // Contiguous slices of about equal text size, one per thread.
        let mut bounds = vec![0];
        let mut running = 0;
        for (index, size) in sizes.iter().enumerate() {
            running += size;
            if running * threads >= total_bytes * bounds.len() && bounds.len() < threads {
                bounds.push(index + 1);
            }
        }
        bounds.push(messages.len());
        std::thread::scope(|scope| {
            let workers: Vec<_> = bounds
                .windows(2)
                .map(|range| {
                    let slice = &messages[range[0]..range[1]];
                    scope.spawn(move || Counts::of(counter, slice, 0))
                })
                .collect();
            let mut counts = Counts {
                system,
                ..Counts::default()
            };
            for worker in workers {
                counts.append(worker.join().expect("counting threads do not panic"));
            }
            counts
        })
    }
}

/// Most threads counting uses; beyond this the gain is small.
const MAX_THREADS: usize = 8;
/// Text each extra counting thread must have to repay starting it (the counter is shared, so
/// a thread costs only its start, tens of microseconds: the time to count a few kilobytes).
const PARALLEL_MIN_BYTES: usize = 256 << 10;

/// Bytes of text a message holds, to balance counting threads.
fn text_bytes(message: &Message) -> usize {
    fn parts_bytes(parts: &[Part]) -> usize {
        parts
            .iter()
            .map(|part| match part {
                Part::Text { text, .. } => text.len(),
                Part::ToolCall {
                    name, arguments, ..
                } => name.len() + arguments.as_str().map_or(0, str::len),
                Part::ToolResult { content, .. } => parts_bytes(content),
                Part::Opaque(_) => 0,
            })
            .sum()
    }
    parts_bytes(&message.parts)
}

/// Counts tokens of text and of whole messages.
pub trait TokenCounter: Sync {
    /// Tokens of a piece of text.
    fn count_text(&self, text: &str) -> usize;

    /// Tokens of a message under OpenAI's chat recipe (see the module docs).
    fn count_message(&self, message: &Message) -> usize {
        self.count_fields(message) + self.count_parts(&message.parts)
    }

    /// Tokens of a message less its parts: the overheads, role, name and other string fields.
    fn count_fields(&self, message: &Message) -> usize {
        let mut tokens = MESSAGE_OVERHEAD;
        for (key, value) in &message.extra {
            // Interpreted fields are counted from the parts below, as they are now.
            if let ("content" | "tool_calls" | "tool_call_id", _) | (_, Value::Null) =
                (key.as_str(), value)
            {
                continue;
            }
            if let Value::String(text) = value {
                tokens += self.count_text(text);
            }
        }
        if message.extra.contains_key("name") {
            tokens += NAME_OVERHEAD;
        }
        if message.extra.is_empty() {
            tokens += self.count_text(message.role.as_str());
        }
        tokens
    }

    /// Tokens of content parts, calls and results.
    fn count_parts(&self, parts: &[Part]) -> usize {
        parts
            .iter()
            .map(|part| match part {
                Part::Text { text, .. } => self.count_text(text),
                Part::ToolCall {
                    name, arguments, ..
                } => {
                    let arguments = match arguments {
                        Value::String(text) => self.count_text(text),
                        other => self.count_text(&other.to_string()),
                    };
                    TOOL_CALL_OVERHEAD + self.count_text(name) + arguments
                }
                Part::ToolResult {
                    call_id, content, ..
                } => self.count_text(call_id) + self.count_parts(content),
                Part::Opaque(value) => opaque_tokens(value),
            })
            .sum()
    }
}

/// The documented estimate for a part the engine does not read.
fn opaque_tokens(value: &Value) -> usize {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    if matches!(
        kind,
        "image" | "image_url" | "input_image" | "input_audio" | "document" | "file"
    ) {
        MEDIA_TOKENS
    } else {
        value.to_string().chars().count().div_ceil(CHARS_PER_TOKEN)
    }
}

/// An exact `o200k_base` or `cl100k_base` counter: counts what tiktoken-rs's
/// `encode_ordinary(text).len()` counts, with a hand-written pre-tokenizer for the two split
/// patterns feeding a byte-pair merge (`src/tokens/bpe.rs` explains why the counts are exact).
pub(crate) struct Tiktoken {
    bpe: Bpe,
}

impl Tiktoken {
    /// Builds the counter for `o200k` or `cl100k` from its embedded table (tens of
    /// milliseconds: build once and reuse, or use [`Tokenizer::counter`]). `Chars` builds
    /// `o200k`.
    pub(crate) fn new(tokenizer: Tokenizer) -> Self {
        let pattern = match tokenizer {
            Tokenizer::Cl100k => Pattern::Cl100k,
            Tokenizer::O200k | Tokenizer::Chars => Pattern::O200k,
        };
        Self {
            bpe: Bpe::new(pattern),
        }
    }
}

impl TokenCounter for Tiktoken {
    fn count_text(&self, text: &str) -> usize {
        self.bpe.count(text)
    }
}

/// The ceil(chars ÷ 4) estimator.
pub(crate) struct CharEstimate;

impl TokenCounter for CharEstimate {
    fn count_text(&self, text: &str) -> usize {
        text.chars().count().div_ceil(CHARS_PER_TOKEN)
    }
}

/// Cached counts of one conversation: computed once, read by every later stage. Besides each
/// message's total it keeps the tokens of each message's fields and of each of its parts, so
/// that a later step that clears or drops parts never tokenizes them again.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Tokens of each message, by index.
    pub messages: Vec<usize>,
    /// Tokens of Anthropic's top-level system prompt (0 when there is none).
    pub system: usize,
    /// Tokens of each message less its parts ([`TokenCounter::count_fields`]), as counted.
    fields: Vec<usize>,
    /// Where each message's part counts start in `parts`; one more entry than messages.
    part_starts: Vec<usize>,
    /// Tokens of every part of every message, in order ([`TokenCounter::count_parts`] of one).
    parts: Vec<usize>,
}

impl Counts {
    /// Counts for messages whose totals are known but not their parts (a step that rebuilt a
    /// conversation): [`Counts::message_parts`] answers `None` for them.
    pub fn from_totals(messages: Vec<usize>, system: usize) -> Self {
        Self {
            messages,
            system,
            ..Self::default()
        }
    }

    /// Counts `messages` with `counter`, part by part.
    fn of(counter: &dyn TokenCounter, messages: &[Message], system: usize) -> Self {
        let mut counts = Self {
            system,
            messages: Vec::with_capacity(messages.len()),
            fields: Vec::with_capacity(messages.len()),
            part_starts: Vec::with_capacity(messages.len() + 1),
            parts: Vec::new(),
        };
        counts.part_starts.push(0);
        for message in messages {
            let fields = counter.count_fields(message);
            let before = counts.parts.len();
            counts.parts.extend(
                message
                    .parts
                    .iter()
                    .map(|part| counter.count_parts(std::slice::from_ref(part))),
            );
            counts.fields.push(fields);
            counts
                .messages
                .push(fields + counts.parts[before..].iter().sum::<usize>());
            counts.part_starts.push(counts.parts.len());
        }
        counts
    }

    /// Appends the counts of the messages that follow (one counting thread's share).
    fn append(&mut self, next: Self) {
        let offset = self.parts.len();
        if self.part_starts.is_empty() {
            self.part_starts.push(0);
        }
        self.messages.extend(next.messages);
        self.fields.extend(next.fields);
        self.part_starts
            .extend(next.part_starts.iter().skip(1).map(|start| start + offset));
        self.parts.extend(next.parts);
    }

    /// The conversation's total: every message, the system prompt and the reply priming.
    pub fn total(&self) -> usize {
        self.messages.iter().sum::<usize>() + self.system + REPLY_PRIMING
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
}

/// Counts are equal when their totals are: the part counts they cache are a detail.
impl PartialEq for Counts {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages && self.system == other.system
    }
}

impl Eq for Counts {}

/// Counts every message of a conversation once with `counter`, on this thread; see
/// [`Tokenizer::count`] for the parallel counting of the built-in tokenizers.
pub fn count(conversation: &Conversation, counter: &dyn TokenCounter) -> Counts {
    let system = conversation
        .system
        .as_ref()
        .map_or(0, |s| counter.count_message(s));
    Counts::of(counter, &conversation.messages, system)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Role;

    #[test]
    fn char_estimate_rounds_up_per_field() {
        let message = Message::new_text(Role::User, "hello");
        // 3 overhead + "user" (1) + "hello" (2).
        assert_eq!(CharEstimate.count_message(&message), 6);
    }

    #[test]
    fn image_parts_cost_a_fixed_estimate() {
        let image = serde_json::json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}});
        assert_eq!(opaque_tokens(&image), MEDIA_TOKENS);
    }
}
