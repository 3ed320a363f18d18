//! A model's profile, as the catalog gives it and the report echoes it: its context window
//! (and where that window came from), the tokenizer that counts for it (for a calibrated
//! estimate, its family's factor) and its removal preference. Only the names and values are
//! here, below every module that reads or uses them (the catalog's lookup, the counting), so
//! that the report, and the error carrying one, can hold them.

use serde::{Deserialize, Serialize};

/// Which tokenizer counts the text. Written in JSON (the catalog, the report) by its name:
/// `o200k`, `cl100k`, `chars`, an open-weight vocabulary's name (`llama3`, `qwen2`, …), or a
/// model family's name (`claude-opus`, …) for the calibrated estimator, which reads back with
/// that family's shipped factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Tokenizer {
    /// `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series).
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5-turbo).
    Cl100k,
    /// ceil(chars ÷ 4): a rough estimate for models whose tokenizer is not public.
    Chars,
    /// Meta's Llama 3 vocabulary (Llama 3, 3.1, 3.2, 3.3), with the Llama 3.1 chat template.
    Llama3,
    /// Alibaba's Qwen2 vocabulary (Qwen 2.5, Qwen 3, `QwQ`), with the Qwen 2.5 chat template.
    Qwen2,
    /// The `DeepSeek` V3 vocabulary (V3, V3.1, R1, and the `deepseek-chat` / `deepseek-reasoner`
    /// API models), with the V3 chat template.
    DeepSeekV3,
    /// Mistral's Tekken vocabulary (Mistral Nemo, Small 3, Large 3, Devstral, …), with the
    /// Mistral Nemo chat template.
    Tekken,
    /// Moonshot's Kimi K2 vocabulary, with the Kimi K2 chat template.
    KimiK2,
    /// Zhipu's GLM-4.5 vocabulary (GLM-4.5, 4.6, 4.7), with the GLM-4.6 chat template.
    Glm4,
    /// The `MiniMax` M2 vocabulary (M2, M2.1, M2.5), with the M2 chat template.
    MinimaxM2,
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

/// A model family: models that share a tokenizer, and so a calibrated factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Claude Opus models.
    ClaudeOpus,
    /// Claude Sonnet models.
    ClaudeSonnet,
    /// Claude Haiku models.
    ClaudeHaiku,
    /// Gemini models.
    Gemini,
}

impl Family {
    /// Every family, in the order reports list them.
    pub const ALL: [Self; 4] = [
        Self::ClaudeOpus,
        Self::ClaudeSonnet,
        Self::ClaudeHaiku,
        Self::Gemini,
    ];

    /// The family's name (`claude-opus`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeOpus => "claude-opus",
            Self::ClaudeSonnet => "claude-sonnet",
            Self::ClaudeHaiku => "claude-haiku",
            Self::Gemini => "gemini",
        }
    }

    /// The family named `name` (as [`Family::as_str`] spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

/// What a model profile prefers for message removal (the first layer of the selector).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preference {
    /// Always middle removal.
    Middle,
    /// Always oldest removal.
    Oldest,
    /// Let the conversation rules, then scoring, decide (`auto`, as `--strategy auto`;
    /// catalogs may still spell it `hybrid`).
    #[serde(alias = "hybrid")]
    Auto,
}

/// One model's profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The model name, matched exactly or as a prefix.
    pub name: String,
    /// Who serves it (`openai`, `anthropic`, `google`, `local`).
    pub provider: String,
    /// Its context window in tokens.
    pub context_window: usize,
    /// The tokenizer that counts for it.
    pub tokenizer: Tokenizer,
    /// Its strategy preference.
    pub strategy: Preference,
    /// Why that preference, in one line.
    pub reason: String,
    /// Other names of the same model, matched exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Its price family in `data/prices.json` (`None`: unpriced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<String>,
    /// Where the chat template was published whose framing an open-weight model's tokenizer
    /// counts (`None` for the other tokenizers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Where the context window was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When the figure was entered from that source (YYYY-MM-DD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<String>,
}

impl Profile {
    /// The profile used when no model is named: `auto`, with no context window of its own.
    pub fn generic(tokenizer: Tokenizer) -> Self {
        Self {
            name: "generic".into(),
            provider: "none".into(),
            context_window: 0,
            tokenizer,
            strategy: Preference::Auto,
            reason: "no model given: let the conversation's shape decide".into(),
            aliases: Vec::new(),
            price: None,
            template: None,
            source: None,
            read: None,
        }
    }
}

/// Where the context window a run used came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowSource {
    /// Given for every model (the proxy's `--window`).
    Flag,
    /// The catalog's entry for the model (by its name, an alias, or its family's naming rule
    /// at the listed version).
    Catalog,
    /// The newest listed model of the name's line, by its family's naming rule: a guess until
    /// the catalog lists the model.
    Family,
}

impl WindowSource {
    /// The source's name, as the ledger and the report spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::Catalog => "catalog",
            Self::Family => "family",
        }
    }
}
