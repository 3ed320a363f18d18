//! Token counting with OpenAI's chat-counting recipe.
//!
//! A message costs [`MESSAGE_OVERHEAD`] plus the tokens of each of its string fields (role,
//! content, name, tool call id, …) plus [`NAME_OVERHEAD`] when it has a name; the reply costs
//! [`REPLY_PRIMING`]. Tool calls add their name and arguments plus [`TOOL_CALL_OVERHEAD`]; opaque
//! parts (images, thinking, …) are estimated. Encoders are built once per process (start them
//! early with [`Tokenizer::prepare`]); each message is counted once by [`count_with`] or
//! [`Tokenizer::count`], and every later stage reads the cached [`Counts`], down to the tokens of
//! each part.
//!
//! The `o200k` and `cl100k` counts come from `bpe`, an exact counter that gives what
//! tiktoken-rs's `encode_ordinary(text).len()` gives, faster (see its docs and the README's
//! "Speed" section); tiktoken-rs supplies its rank tables and stays the reference in the tests.
//! The open-weight families (Llama 3, Qwen2, `DeepSeek` V3, Mistral's Tekken, Kimi K2, GLM-4.5,
//! `MiniMax` M2) are counted with their own vocabularies from the `tiktoken` crate, each built the
//! first time a model of that family is counted, and with the framing of the family's published
//! chat template in place of OpenAI's overheads (see `Template`).
//!
//! Which text is counted is the same for every tokenizer; how it is counted differs: exactly by
//! a BPE counter, as ⌈chars ÷ 4⌉ by `chars`, or as `o200k` tokens × a family's fitted factor
//! by a calibrated estimator (which reads tool-call arguments as their unescaped keys and values, and
//! thinking blocks as their text). What a body holds outside its messages — a top-level
//! system prompt and the tool definitions, as JSON — is counted in [`Counts::outside`].

mod bpe;
pub(crate) mod calibration;
mod counts;
mod open_weight;
mod pretokenize;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock, PoisonError};

use serde_json::Value;

use crate::conversation::{Conversation, Message, Part};
use crate::hash::FxBuild;
pub(crate) use crate::profile::Factor;
use crate::profile::Family;
pub use crate::profile::Tokenizer;
use bpe::Bpe;
pub use counts::{Counts, count_with};
use open_weight::{
    DEEPSEEK_V3, GLM4, KIMI_K2, LLAMA3, MINIMAX_M2, OpenWeight, QWEN2, TEKKEN, Template,
};
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

impl Tokenizer {
    /// The tokenizer's name as the CLI spells it (a family's name for a calibrated one).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::O200k => "o200k",
            Self::Cl100k => "cl100k",
            Self::Chars => "chars",
            Self::Llama3 => "llama3",
            Self::Qwen2 => "qwen2",
            Self::DeepSeekV3 => "deepseek-v3",
            Self::Tekken => "tekken",
            Self::KimiK2 => "kimi-k2",
            Self::Glm4 => "glm4",
            Self::MinimaxM2 => "minimax-m2",
            Self::Calibrated(factor) => factor.family.as_str(),
        }
    }

    /// The tokenizers of open-weight model families: each an exact vocabulary with its family's
    /// chat template.
    pub(crate) const OPEN_WEIGHT: [Self; 7] = [
        Self::Llama3,
        Self::Qwen2,
        Self::DeepSeekV3,
        Self::Tekken,
        Self::KimiK2,
        Self::Glm4,
        Self::MinimaxM2,
    ];

    /// The chat template of an open-weight family's tokenizer; `None` for the others.
    fn template(self) -> Option<&'static Template> {
        Some(match self {
            Self::Llama3 => &LLAMA3,
            Self::Qwen2 => &QWEN2,
            Self::DeepSeekV3 => &DEEPSEEK_V3,
            Self::Tekken => &TEKKEN,
            Self::KimiK2 => &KIMI_K2,
            Self::Glm4 => &GLM4,
            Self::MinimaxM2 => &MINIMAX_M2,
            Self::O200k | Self::Cl100k | Self::Chars | Self::Calibrated(_) => return None,
        })
    }

    /// The tokenizer named `name` (as [`Tokenizer::as_str`] spells it); a family's name gives
    /// its calibrated estimator with the shipped factor.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "o200k" => Some(Self::O200k),
            "cl100k" => Some(Self::Cl100k),
            "chars" => Some(Self::Chars),
            other => Self::OPEN_WEIGHT
                .into_iter()
                .find(|open| open.as_str() == other)
                .or_else(|| {
                    Family::from_name(other).map(|f| Self::Calibrated(calibration::shipped(f)))
                }),
        }
    }

    /// What counts and how far it is known to be from the provider's own figures, in one line.
    pub fn describe(self) -> String {
        match (self, self.template()) {
            (_, Some(template)) => format!(
                "{} vocabulary (tiktoken crate): exact text tokens for {}; message, tool-call \
                 and reply framing estimated from its chat template ({})",
                template.encoding, template.models, template.source
            ),
            (Self::O200k, _) => "tiktoken o200k_base: exact for the models that use it".into(),
            (Self::Cl100k, _) => "tiktoken cl100k_base: exact for the models that use it".into(),
            (Self::Calibrated(factor), _) => calibration::describe(factor),
            (_, None) => "ceil(characters / 4): a rough estimate, no measured error".into(),
        }
    }

    /// The tokenizer whose counts add across piece ends that this one's counts are made of, and
    /// the factor per million this one scales them by ([`scale`]): a text cut where the BPE
    /// tokenizers always end a piece (between punctuation and a digit, a digit and a space)
    /// counts as the sum of its sides, since they cut a text into pieces before merging each
    /// alone. The BPE tokenizers themselves, unscaled; a calibrated estimate, `o200k` scaled by
    /// its factor; `None` for the other estimates, which round each count.
    pub(crate) fn additive_base(self) -> Option<(Self, Option<u64>)> {
        match self {
            Self::O200k | Self::Cl100k => Some((self, None)),
            Self::Calibrated(factor) => Some((Self::O200k, Some(u64::from(factor.per_million)))),
            _ => None,
        }
    }

    /// The process-wide counter for this tokenizer, built on first use; every thread shares it.
    /// An open-weight vocabulary is built only when its tokenizer is first used.
    ///
    /// # Panics
    /// Never: every tokenizer not named in the first arms is an open-weight one, with a
    /// template whose vocabulary is compiled in (the unit tests build each).
    pub fn counter(self) -> &'static dyn TokenCounter {
        static O200K: OnceLock<Tiktoken> = OnceLock::new();
        static CL100K: OnceLock<Tiktoken> = OnceLock::new();
        static OPEN: [OnceLock<OpenWeight>; 7] = [const { OnceLock::new() }; 7];
        match self {
            Self::O200k => O200K.get_or_init(|| Tiktoken::new(self)),
            Self::Cl100k => CL100K.get_or_init(|| Tiktoken::new(self)),
            Self::Chars => &CharEstimate,
            Self::Calibrated(factor) => calibrated(factor),
            open => {
                let index = Self::OPEN_WEIGHT
                    .iter()
                    .position(|t| *t == open)
                    .expect("every other tokenizer is an open-weight one");
                let template = open
                    .template()
                    .expect("an open-weight tokenizer has a template");
                OPEN[index].get_or_init(|| OpenWeight::new(template))
            }
        }
    }

    /// Starts building this tokenizer's counter on a background thread and returns at once, so
    /// that the build overlaps reading and parsing the input; [`Tokenizer::counter`] then waits
    /// for it only if it is not done yet. Calling it more than once builds nothing twice.
    pub fn prepare(self) {
        if !matches!(self, Self::Chars) {
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
        let outside = count_outside(conversation, counter);
        let sizes: Vec<usize> = messages.iter().map(text_bytes).collect();
        let total_bytes: usize = sizes.iter().sum();
        let threads = crate::parallel::cores()
            .min(MAX_THREADS)
            .min(total_bytes / PARALLEL_MIN_BYTES + 1);
        if threads <= 1 || matches!(self, Self::Chars | Self::Calibrated(_)) {
            return Counts::of(counter, messages, outside);
        }
        let bounds = slice_bounds(&sizes, threads);
        let slices = crate::parallel::in_turn(bounds.len() - 1, threads, |slice| {
            Counts::of(counter, &messages[bounds[slice]..bounds[slice + 1]], 0)
        });
        let mut counts = Counts::default();
        counts.outside = outside;
        counts.priming = counter.reply_priming();
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
                "unknown tokenizer `{name}` (expected o200k, cl100k, chars, an open-weight \
                 vocabulary: {}, or a family: {})",
                Tokenizer::OPEN_WEIGHT.map(Tokenizer::as_str).join(", "),
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

/// Tokens of what a conversation holds outside its messages: the top-level system prompt and
/// the tool definitions (`tools`, Bedrock's `toolConfig`), counted as their JSON text.
pub(crate) fn count_outside(conversation: &Conversation, counter: &dyn TokenCounter) -> usize {
    let system = conversation
        .system
        .as_ref()
        .map_or(0, |s| counter.count_message(s));
    let tools: usize = tool_definitions(conversation)
        .map(|value| counter.count_text(&value.to_string()))
        .sum();
    system + tools
}

/// The tool definitions a request holds beside its messages (`tools`, Bedrock's `toolConfig`).
pub(crate) fn tool_definitions(conversation: &Conversation) -> impl Iterator<Item = &Value> {
    let envelope = conversation.envelope.as_ref();
    ["tools", "toolConfig"]
        .into_iter()
        .filter_map(move |key| envelope?.get(key))
        .filter(|value| !value.is_null())
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

    /// Tokens every message costs beyond its fields: 3 in OpenAI's recipe (see the module docs),
    /// the framing of a message in an open-weight family's chat template.
    fn message_overhead(&self) -> usize {
        MESSAGE_OVERHEAD
    }

    /// Tokens that prime the reply, once after the last message: 3 in OpenAI's recipe; the start
    /// of the conversation and the assistant's header in a chat template.
    fn reply_priming(&self) -> usize {
        REPLY_PRIMING
    }

    /// Tokens of a message less its parts: the overheads, role, name and other string fields.
    fn count_fields(&self, message: &Message) -> usize {
        let mut tokens = self.message_overhead();
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
    /// milliseconds: build once and reuse, or use [`Tokenizer::counter`]). Any other tokenizer
    /// builds `o200k`.
    pub(crate) fn new(tokenizer: Tokenizer) -> Self {
        let pattern = match tokenizer {
            Tokenizer::Cl100k => Pattern::Cl100k,
            _ => Pattern::O200k,
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
    known: Mutex<HashMap<String, usize, FxBuild>>,
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

    fn message_overhead(&self) -> usize {
        self.counter.message_overhead()
    }

    fn reply_priming(&self) -> usize {
        self.counter.reply_priming()
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
    fn open_weight_tokenizers_read_back_by_name_and_build() {
        for tokenizer in Tokenizer::OPEN_WEIGHT {
            assert_eq!(Tokenizer::from_name(tokenizer.as_str()), Some(tokenizer));
            let counter = tokenizer.counter();
            assert!(
                counter.count_text("fn main() {}") > 0,
                "{}",
                tokenizer.as_str()
            );
            assert!(tokenizer.describe().contains("exact text tokens"));
            assert!(
                tokenizer
                    .describe()
                    .contains("estimated from its chat template")
            );
        }
        assert!(!Tokenizer::Chars.describe().contains("exact"));
    }

    /// Each template's markers are special tokens of its vocabulary: one token each, not their
    /// text's several. A misspelt marker would count as text and fail here.
    #[test]
    fn template_markers_are_special_tokens_of_their_vocabulary() {
        let markers: [(Tokenizer, &[&str]); 7] = [
            (
                Tokenizer::Llama3,
                &[
                    "<|begin_of_text|>",
                    "<|start_header_id|>",
                    "<|end_header_id|>",
                    "<|eot_id|>",
                ],
            ),
            (
                Tokenizer::Qwen2,
                &["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"],
            ),
            (
                Tokenizer::DeepSeekV3,
                &[
                    "<｜begin▁of▁sentence｜>",
                    "<｜end▁of▁sentence｜>",
                    "<｜Assistant｜>",
                    "<｜tool▁calls▁begin｜>",
                    "<｜tool▁call▁begin｜>",
                    "<｜tool▁sep｜>",
                    "<｜tool▁call▁end｜>",
                    "<｜tool▁calls▁end｜>",
                    "<｜tool▁outputs▁begin｜>",
                    "<｜tool▁output▁begin｜>",
                    "<｜tool▁output▁end｜>",
                    "<｜tool▁outputs▁end｜>",
                ],
            ),
            (
                Tokenizer::Tekken,
                &[
                    "<s>",
                    "[INST]",
                    "[/INST]",
                    "[TOOL_CALLS]",
                    "[TOOL_RESULTS]",
                    "[/TOOL_RESULTS]",
                ],
            ),
            (
                Tokenizer::KimiK2,
                &[
                    "<|im_user|>",
                    "<|im_assistant|>",
                    "<|im_middle|>",
                    "<|im_end|>",
                    "<|tool_calls_section_begin|>",
                    "<|tool_call_begin|>",
                    "<|tool_call_argument_begin|>",
                    "<|tool_call_end|>",
                    "<|tool_calls_section_end|>",
                ],
            ),
            (
                Tokenizer::Glm4,
                &[
                    "[gMASK]",
                    "<sop>",
                    "<|assistant|>",
                    "<|observation|>",
                    "<tool_call>",
                    "</tool_call>",
                    "<tool_response>",
                    "</tool_response>",
                ],
            ),
            (
                Tokenizer::MinimaxM2,
                &[
                    "]~!b[",
                    "]~b]",
                    "[e~[",
                    "<think>",
                    "<minimax:tool_call>",
                    "</minimax:tool_call>",
                ],
            ),
        ];
        for (tokenizer, markers) in markers {
            let template = tokenizer.template().expect("an open-weight tokenizer");
            let bpe = tiktoken::get_encoding(template.encoding).expect("compiled in");
            let framing = [template.message, template.call, template.priming].concat();
            for marker in markers {
                assert!(
                    framing.contains(marker),
                    "{marker} is not in {}'s template",
                    template.encoding
                );
                assert_eq!(
                    bpe.count_with_special_tokens(marker),
                    1,
                    "{marker} in {}",
                    template.encoding
                );
            }
        }
    }

    #[test]
    fn a_template_s_framing_is_what_its_conversation_costs_beyond_the_recipe_s_text() {
        let conversation = crate::format::parse_value(
            serde_json::json!([
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                    "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Cargo.toml\nsrc"}
            ]),
            None,
        )
        .expect("a valid conversation");
        for tokenizer in Tokenizer::OPEN_WEIGHT {
            let counter = tokenizer.counter();
            let text: usize = [
                "user",
                "List the files.",
                "assistant",
                "bash",
                "{\"cmd\": \"ls\"}",
                "tool",
                "call_1",
                "Cargo.toml\nsrc",
            ]
            .iter()
            .map(|t| counter.count_text(t))
            .sum();
            let counts = tokenizer.count(&conversation);
            let framing =
                3 * counter.message_overhead() + counter.call_overhead() + counter.reply_priming();
            assert_eq!(counts.total(), text + framing, "{}", tokenizer.as_str());
            assert_eq!(counts.priming(), counter.reply_priming());
            assert!(counter.message_overhead() < 10 && counter.call_overhead() < 40);
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
