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
//!
//! Which text is counted is the same for every tokenizer; how it is counted differs: exactly by
//! the BPE counter, as ⌈chars ÷ 4⌉ by `chars`, or as `o200k` tokens × a family's fitted factor
//! by a calibrated estimator (which reads tool-call arguments as their unescaped keys and values, and
//! thinking blocks as their text). What a request holds outside its messages — a top-level
//! system prompt and the tool definitions, as JSON — is counted in [`Counts::system`].

mod bpe;
pub(crate) mod calibration;
mod pretokenize;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::Value;

use crate::conversation::{Conversation, Message, Part};
use bpe::Bpe;
use calibration::Family;
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

/// Which tokenizer counts the text. Written in JSON (the catalog, the report) by its name:
/// `o200k`, `cl100k`, `chars`, or a model family's name (`claude-opus`, …) for the calibrated
/// estimator, which reads back with that family's shipped factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Tokenizer {
    /// `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series).
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5-turbo).
    Cl100k,
    /// ceil(chars ÷ 4): a rough estimate for models whose tokenizer is not public.
    Chars,
    /// ceil(`o200k` tokens × a factor fitted on a model family's recorded usage), plus a fitted
    /// cost per tool call (see `ctxcompact calibrate`): for Claude and Gemini models, whose
    /// tokenizers are not public.
    Calibrated(Factor),
}

/// The factor of a calibrated estimator, for one model family: the provider's tokens per
/// `o200k` token of the same text, and the tokens each tool call costs beyond its name and
/// arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Factor {
    /// The family it was fitted for.
    pub family: Family,
    /// The provider's tokens per million `o200k` tokens (an integer, so that counting is exact
    /// arithmetic and the tokenizer stays `Eq`).
    pub per_million: u32,
    /// Tokens each tool call costs beyond its name and arguments (and the usual 3 tokens of
    /// OpenAI's recipe): its framing and ids, and what the agent adds to the call and its result
    /// without recording it.
    pub per_call: u32,
}

impl Factor {
    /// The factor of `tokens_per_o200k` for `family`, rounded to a millionth.
    pub fn new(family: Family, tokens_per_o200k: f64) -> Self {
        // Factors are small positive numbers (about 0.8 to 1.5); the clamp keeps the cast exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let per_million = (tokens_per_o200k * 1e6).round().clamp(1.0, 1e9) as u32;
        Self {
            family,
            per_million,
            per_call: 0,
        }
    }

    /// This factor with `tokens` (rounded to a whole token) for each tool call.
    pub(crate) fn with_per_call(self, tokens: f64) -> Self {
        // A handful to a few hundred tokens; the clamp keeps the cast exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let per_call = tokens.round().clamp(0.0, 1e6) as u32;
        Self { per_call, ..self }
    }

    /// The provider's tokens per `o200k` token.
    pub fn tokens_per_o200k(self) -> f64 {
        f64::from(self.per_million) / 1e6
    }
}

impl Tokenizer {
    /// The tokenizer's name as the CLI spells it (a family's name for a calibrated one).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200k => "o200k",
            Self::Cl100k => "cl100k",
            Self::Chars => "chars",
            Self::Calibrated(factor) => factor.family.as_str(),
        }
    }

    /// The tokenizer named `name` (as [`Tokenizer::as_str`] spells it); a family's name gives
    /// its calibrated estimator with the shipped factor.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "o200k" => Some(Self::O200k),
            "cl100k" => Some(Self::Cl100k),
            "chars" => Some(Self::Chars),
            other => Family::from_name(other).map(|f| Self::Calibrated(calibration::shipped(f))),
        }
    }

    /// What counts and how far it is known to be from the provider's own figures, in one line.
    pub fn describe(self) -> String {
        match self {
            Self::O200k => "tiktoken o200k_base: exact for the models that use it".into(),
            Self::Cl100k => "tiktoken cl100k_base: exact for the models that use it".into(),
            Self::Chars => "ceil(characters / 4): a rough estimate, no measured error".into(),
            Self::Calibrated(factor) => calibration::describe(factor),
        }
    }

    /// Whether a text cut where the tokenizer always ends a piece (between punctuation and a
    /// digit) counts as the sum of its sides: true of the BPE tokenizers, which cut a text into
    /// pieces before merging each alone; not of the estimates, which round each count.
    pub(crate) fn adds_across_piece_ends(self) -> bool {
        matches!(self, Self::O200k | Self::Cl100k)
    }

    /// The process-wide counter for this tokenizer, built on first use; every thread shares it.
    pub fn counter(self) -> &'static dyn TokenCounter {
        static O200K: OnceLock<Tiktoken> = OnceLock::new();
        static CL100K: OnceLock<Tiktoken> = OnceLock::new();
        match self {
            Self::O200k => O200K.get_or_init(|| Tiktoken::new(self)),
            Self::Cl100k => CL100K.get_or_init(|| Tiktoken::new(self)),
            Self::Chars => &CharEstimate,
            Self::Calibrated(factor) => calibrated(factor),
        }
    }

    /// Starts building this tokenizer's counter on a background thread and returns at once, so
    /// that the build overlaps reading and parsing the input; [`Tokenizer::counter`] then waits
    /// for it only if it is not done yet. Calling it more than once builds nothing twice.
    pub fn prepare(self) {
        if matches!(self, Self::O200k | Self::Cl100k | Self::Calibrated(_)) {
            std::thread::spawn(move || self.counter());
        }
    }

    /// Counts every message of a conversation once, on several threads when the text is large
    /// enough to repay starting them. The result does not depend on the thread count: each
    /// message is counted whole by exactly one thread, with the one shared counter. The text is
    /// cut into slices that shrink toward its end, and each thread takes the next slice not
    /// taken yet, so that a thread slowed by other work (another process on a shared machine)
    /// leaves its share to the others, and the threads finish within a small slice of each
    /// other.
    ///
    /// # Panics
    /// Only if a counting thread panicked, which counting never does.
    pub fn count(self, conversation: &Conversation) -> Counts {
        let messages = &conversation.messages;
        let counter = self.counter();
        let system = fixed_tokens(conversation, counter);
        let sizes: Vec<usize> = messages.iter().map(text_bytes).collect();
        let total_bytes: usize = sizes.iter().sum();
        let threads = crate::parallel::cores()
            .min(MAX_THREADS)
            .min(total_bytes / PARALLEL_MIN_BYTES + 1);
        if threads <= 1 || matches!(self, Self::Chars | Self::Calibrated(_)) {
            return Counts::of(counter, messages, system);
        }
        let bounds = slice_bounds(&sizes, threads);
        let slices = crate::parallel::in_turn(bounds.len() - 1, threads, |slice| {
            Counts::of(counter, &messages[bounds[slice]..bounds[slice + 1]], 0)
        });
        let mut counts = Counts {
            system,
            ..Counts::default()
        };
        for slice in slices {
            counts.append(slice);
        }
        counts
    }
}

impl From<Tokenizer> for String {
    fn from(tokenizer: Tokenizer) -> Self {
        tokenizer.as_str().into()
    }
}

impl TryFrom<String> for Tokenizer {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::from_name(&name).ok_or_else(|| {
            format!(
                "unknown tokenizer `{name}` (expected o200k, cl100k, chars or a family: {})",
                Family::ALL.map(Family::as_str).join(", ")
            )
        })
    }
}

/// The process-wide counter of a calibrated factor. Each distinct factor is built once and kept
/// for the life of the process (a handful: the shipped families and a user's calibration).
fn calibrated(factor: Factor) -> &'static dyn TokenCounter {
    static BUILT: Mutex<BTreeMap<(u32, u32), &'static CalibratedEstimate>> =
        Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    *built
        .entry((factor.per_million, factor.per_call))
        .or_insert_with(|| {
            Box::leak(Box::new(CalibratedEstimate {
                per_million: u64::from(factor.per_million),
                per_call: factor.per_call as usize,
                base: Tokenizer::O200k.counter(),
            }))
        })
}

/// Tokens of what a request holds besides its messages: the top-level system prompt and the
/// tool definitions (`tools`, Bedrock's `toolConfig`), counted as their JSON text.
pub(crate) fn fixed_tokens(conversation: &Conversation, counter: &dyn TokenCounter) -> usize {
    let system = conversation
        .system
        .as_ref()
        .map_or(0, |s| counter.count_message(s));
    let tools: usize = conversation.envelope.as_ref().map_or(0, |envelope| {
        ["tools", "toolConfig"]
            .iter()
            .filter_map(|key| envelope.get(*key))
            .filter(|value| !value.is_null())
            .map(|value| counter.count_text(&value.to_string()))
            .sum()
    });
    system + tools
}

/// Most threads counting uses; beyond this the gain is small.
const MAX_THREADS: usize = 8;

/// Where the counting slices of messages of text `sizes` start, and where the last one ends:
/// contiguous slices, each a share of the text left after the slices before it
/// ([`SLICE_SHARE`] times `threads` of it) and no smaller than [`MIN_SLICE_BYTES`].
fn slice_bounds(sizes: &[usize], threads: usize) -> Vec<usize> {
    let total: usize = sizes.iter().sum();
    let slice_end =
        |done: usize| done + ((total - done) / (threads * SLICE_SHARE)).max(MIN_SLICE_BYTES);
    let mut bounds = vec![0];
    let (mut running, mut end) = (0, slice_end(0));
    for (index, size) in sizes.iter().enumerate() {
        running += size;
        if running >= end && index + 1 < sizes.len() {
            bounds.push(index + 1);
            end = slice_end(running);
        }
    }
    bounds.push(sizes.len());
    bounds
}

/// Each counting slice is the text left divided by this many times the threads (see
/// [`Tokenizer::count`]).
const SLICE_SHARE: usize = 2;
/// The smallest counting slice, in bytes of text: some hundreds of microseconds of counting.
const MIN_SLICE_BYTES: usize = 32 << 10;
/// Text each extra counting thread must have to repay starting it (the counter is shared, so
/// a thread costs only its start, tens of microseconds: the time to count a few kilobytes).
const PARALLEL_MIN_BYTES: usize = 256 << 10;

/// Bytes of text a message holds, to balance counting (and rendering) threads.
pub(crate) fn text_bytes(message: &Message) -> usize {
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

    /// Tokens of a tool call's arguments: a JSON string as its text, other JSON as written.
    fn count_arguments(&self, arguments: &Value) -> usize {
        match arguments {
            Value::String(text) => self.count_text(text),
            other => self.count_text(&other.to_string()),
        }
    }

    /// Tokens each tool call costs beyond its name and arguments.
    fn call_overhead(&self) -> usize {
        TOOL_CALL_OVERHEAD
    }

    /// Tokens of content parts, calls and results (a result: its call id's text plus its
    /// content's parts; [`Counts`] caches the two apart).
    fn count_parts(&self, parts: &[Part]) -> usize {
        parts
            .iter()
            .map(|part| match part {
                Part::Text { text, .. } => self.count_text(text),
                Part::ToolCall {
                    name, arguments, ..
                } => self.call_overhead() + self.count_text(name) + self.count_arguments(arguments),
                Part::ToolResult {
                    call_id, content, ..
                } => self.count_text(call_id) + self.count_parts(content),
                Part::Opaque(value) => self.count_opaque(value),
            })
            .sum()
    }

    /// Tokens of a part the engine does not read: a documented estimate (85 for media, as a
    /// low-detail image; ⌈JSON characters ÷ 4⌉ otherwise).
    fn count_opaque(&self, value: &Value) -> usize {
        opaque_tokens(value)
    }
}

/// The documented estimate for a part the engine does not read.
pub(crate) fn opaque_tokens(value: &Value) -> usize {
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
            Tokenizer::O200k | Tokenizer::Chars | Tokenizer::Calibrated(_) => Pattern::O200k,
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

/// A counter that remembers what each text it counted costs, for work that counts the same
/// texts again and again: planning counts each digest item and marker in every attempt it
/// makes. Counts are its counter's: texts are counted by it once, and the other counts it
/// overrides are passed to it.
pub(crate) struct Memo<'a> {
    counter: &'a dyn TokenCounter,
    known: Mutex<HashMap<String, usize>>,
}

impl<'a> Memo<'a> {
    pub(crate) fn new(counter: &'a dyn TokenCounter) -> Self {
        Self {
            counter,
            known: Mutex::default(),
        }
    }
}

impl TokenCounter for Memo<'_> {
    fn count_text(&self, text: &str) -> usize {
        let known = || self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&tokens) = known().get(text) {
            return tokens;
        }
        let tokens = self.counter.count_text(text);
        known().insert(text.to_owned(), tokens);
        tokens
    }

    fn count_arguments(&self, arguments: &Value) -> usize {
        self.counter.count_arguments(arguments)
    }

    fn call_overhead(&self) -> usize {
        self.counter.call_overhead()
    }

    fn count_opaque(&self, value: &Value) -> usize {
        self.counter.count_opaque(value)
    }
}

/// ceil(`o200k` tokens × the factor) for one calibrated factor.
pub(crate) struct CalibratedEstimate {
    /// The provider's tokens per million `o200k` tokens.
    per_million: u64,
    /// Tokens each tool call costs beyond the default recipe's.
    per_call: usize,
    /// The shared `o200k` counter.
    base: &'static dyn TokenCounter,
}

/// `base` tokens scaled by `per_million` ÷ 10⁶, rounded up: the calibrated count of a text whose
/// `o200k` count is `base`. The `o200k` count follows the kind of text (prose, code, JSON) far
/// better than its characters do, so one factor per family holds across kinds (see
/// `ctxcompact calibrate`).
pub(crate) fn scale(base: usize, per_million: u64) -> usize {
    let base = u64::try_from(base).unwrap_or(u64::MAX);
    usize::try_from(base.saturating_mul(per_million).div_ceil(1_000_000)).unwrap_or(usize::MAX)
}

impl TokenCounter for CalibratedEstimate {
    fn count_text(&self, text: &str) -> usize {
        scale(self.base.count_text(text), self.per_million)
    }

    /// The recipe's overhead plus [`Factor::per_call`].
    fn call_overhead(&self) -> usize {
        TOOL_CALL_OVERHEAD + self.per_call
    }

    /// Arguments count as the text of their keys and values, unescaped: Claude and Gemini are
    /// sent them as parameters rather than as escaped JSON, and escapes (`\n`, `\"`) would
    /// otherwise count as text.
    fn count_arguments(&self, arguments: &Value) -> usize {
        self.count_text(&unescaped(arguments))
    }

    /// A thinking block counts as its text: its signature is not text the model reads.
    fn count_opaque(&self, value: &Value) -> usize {
        match thinking_text(value) {
            Some(text) => self.count_text(text),
            None => opaque_tokens(value),
        }
    }
}

/// The text of a thinking block (Anthropic `thinking`, `redacted_thinking` counting as empty).
pub(crate) fn thinking_text(value: &Value) -> Option<&str> {
    match value.get("type").and_then(Value::as_str) {
        Some("thinking") => Some(value.get("thinking").and_then(Value::as_str).unwrap_or("")),
        Some("redacted_thinking") => Some(""),
        _ => None,
    }
}

/// The keys and values of tool-call arguments as plain text, one per line, strings unescaped.
/// Arguments held as a JSON string (OpenAI's `arguments`) are read as the JSON they hold, when
/// they hold an object or an array.
pub(crate) fn unescaped(value: &Value) -> String {
    fn walk(value: &Value, out: &mut String) {
        match value {
            Value::String(text) => {
                out.push_str(text);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            Value::Object(map) => {
                for (key, item) in map {
                    out.push_str(key);
                    out.push('\n');
                    walk(item, out);
                }
            }
            other => {
                out.push_str(&other.to_string());
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    if let Value::String(text) = value {
        if let Ok(parsed @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(text) {
            walk(&parsed, &mut out);
            return out;
        }
    }
    walk(value, &mut out);
    out
}

/// Cached counts of one conversation: computed once, read by every later stage. Besides each
/// message's total it keeps the tokens of each message's fields and of each of its parts, so
/// that a later step that clears or drops parts never tokenizes them again.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Tokens of each message, by index.
    pub messages: Vec<usize>,
    /// Tokens the request holds outside its messages: a top-level system prompt, the tool
    /// definitions, and any overhead the caller added (`Options::overhead`); 0 when none.
    pub system: usize,
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
        self.call_ids.extend(next.call_ids);
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
        self.messages == other.messages && self.system == other.system
    }
}

impl Eq for Counts {}

/// Counts every message of a conversation once with `counter`, on this thread; see
/// [`Tokenizer::count`] for the parallel counting of the built-in tokenizers.
pub fn count(conversation: &Conversation, counter: &dyn TokenCounter) -> Counts {
    let system = fixed_tokens(conversation, counter);
    Counts::of(counter, &conversation.messages, system)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::conversation::Role;

    proptest! {
        /// Slices cover every message once, in order; each but the last starts where a share
        /// of the text left is reached, so they shrink toward the end.
        #[test]
        fn counting_slices_cover_the_messages_and_shrink(
            sizes in prop::collection::vec(0usize..200_000, 1..400),
            threads in 2usize..9,
        ) {
            let bounds = slice_bounds(&sizes, threads);
            prop_assert_eq!(bounds.first(), Some(&0));
            prop_assert_eq!(bounds.last(), Some(&sizes.len()));
            prop_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
            let total: usize = sizes.iter().sum();
            for pair in bounds.windows(2).take(bounds.len() - 2) {
                let done: usize = sizes[..pair[0]].iter().sum();
                let slice: usize = sizes[pair[0]..pair[1]].iter().sum();
                let share = ((total - done) / (threads * SLICE_SHARE)).max(MIN_SLICE_BYTES);
                // A slice ends at the first message that reaches its share.
                prop_assert!(slice >= share);
                prop_assert!(slice - sizes[pair[1] - 1] < share);
            }
        }
    }

    #[test]
    fn char_estimate_rounds_up_per_field() {
        let message = Message::new_text(Role::User, "hello");
        // 3 overhead + "user" (1) + "hello" (2).
        assert_eq!(CharEstimate.count_message(&message), 6);
    }

    #[test]
    fn calibrated_arguments_count_the_same_as_an_object_or_as_json_text() {
        let object = serde_json::json!({"path": "src/a.rs", "text": "line one\nline \"two\""});
        let text = Value::String(object.to_string());
        assert_eq!(
            unescaped(&object),
            "path\nsrc/a.rs\ntext\nline one\nline \"two\"\n"
        );
        assert_eq!(unescaped(&text), unescaped(&object));
        assert_eq!(unescaped(&Value::String("ls -la".into())), "ls -la\n");
    }

    #[test]
    fn cached_result_contents_cost_their_parts_without_the_call_id() {
        let conversation = crate::format::parse_value(
            serde_json::json!([
                {"role": "user", "content": "Run the tests."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "toolu_01LhDaeqAmYQbNnJ2zq8vUyP", "type": "function",
                        "function": {"name": "bash", "arguments": "{}"}},
                    {"id": "call_2", "type": "function",
                        "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "toolu_01LhDaeqAmYQbNnJ2zq8vUyP",
                    "content": "test result: FAILED. 1 passed; 2 failed"},
                {"role": "tool", "tool_call_id": "call_2", "content": [
                    {"type": "text", "text": "exit code 0"}, {"type": "text", "text": "ok"}]}
            ]),
            None,
        )
        .expect("a valid conversation");
        for tokenizer in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Chars] {
            let counter = tokenizer.counter();
            let mut counts = tokenizer.count(&conversation);
            for (index, message) in conversation.messages.iter().enumerate() {
                for (part, content) in message.parts.iter().enumerate() {
                    let expected = match content {
                        Part::ToolResult { content, .. } => Some(counter.count_parts(content)),
                        _ => None,
                    };
                    if let Some(expected) = expected {
                        assert_eq!(counts.result_content(index, part), Some(expected));
                    }
                }
            }
            // A message whose count changed no longer has cached parts.
            counts.messages[2] -= 1;
            assert_eq!(counts.result_content(2, 0), None);
        }
    }

    #[test]
    fn a_memo_counts_as_its_counter_does() {
        let conversation = crate::format::parse_value(
            serde_json::json!([
                {"role": "user", "content": "Read src/main.rs and fix the build, please."},
                {"role": "assistant", "content": "Reading.", "tool_calls": [{"id": "call_1",
                    "type": "function", "function": {"name": "read_file",
                    "arguments": "{\"path\": \"src/main.rs\", \"text\": \"a\\nb\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}\n"},
                {"role": "user", "content": [{"type": "text", "text": "Again"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
            ]),
            None,
        )
        .expect("a valid conversation");
        let tokenizers = [
            Tokenizer::O200k,
            Tokenizer::Cl100k,
            Tokenizer::Chars,
            Tokenizer::Calibrated(Factor::new(Family::ClaudeSonnet, 1.6).with_per_call(9.0)),
        ];
        for tokenizer in tokenizers {
            let counter = tokenizer.counter();
            let memo = Memo::new(counter);
            // Twice: counted the first time, remembered the second.
            for _ in 0..2 {
                for message in &conversation.messages {
                    assert_eq!(memo.count_message(message), counter.count_message(message));
                    assert_eq!(
                        memo.count_parts(&message.parts),
                        counter.count_parts(&message.parts)
                    );
                }
            }
        }
    }

    #[test]
    fn image_parts_cost_a_fixed_estimate() {
        let image = serde_json::json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}});
        assert_eq!(opaque_tokens(&image), MEDIA_TOKENS);
    }
}
