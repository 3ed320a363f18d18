//! The model catalog: each model's provider, context window, tokenizer and strategy preference.
//!
//! The built-in catalog is `data/models.json`, embedded at build time; another of the same shape
//! can be loaded with [`Catalog::from_json`]. A name is resolved after normalising it: case is
//! ignored, provider prefixes (`openai/`, `models/`, `us.anthropic.`) and runner tags (`:8b`,
//! `@20250219`) are stripped. Then an exact name or alias wins; else the longest catalog name
//! that the name continues after a `-` or `_` (dated and versioned names: `gpt-4o-2024-08-06`
//! finds `gpt-4o`, `gpt-4-turbo` its own entry rather than `gpt-4`).

pub use crate::tokens::Factor;
pub use crate::tokens::calibration::Family;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tokens::Tokenizer;

/// The built-in catalog's JSON. Keep in sync with the providers' published context windows.
const BUILTIN: &str = include_str!("../data/models.json");

/// What a model profile prefers for message removal (the first layer of the selector).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preference {
    /// Always middle removal.
    Middle,
    /// Always oldest removal.
    Oldest,
    /// Let the conversation rules, then scoring, decide.
    Hybrid,
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
    /// The profile used when no model is named: hybrid, with no context window of its own.
    pub fn generic(tokenizer: Tokenizer) -> Self {
        Self {
            name: "generic".into(),
            provider: "none".into(),
            context_window: 0,
            tokenizer,
            strategy: Preference::Hybrid,
            reason: "no model given: let the conversation's shape decide".into(),
            aliases: Vec::new(),
            template: None,
            source: None,
            read: None,
        }
    }
}

/// A list of model profiles.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Catalog {
    /// The profiles, in file order.
    pub models: Vec<Profile>,
}

impl Catalog {
    /// The catalog compiled into the crate.
    ///
    /// # Panics
    /// Never: the built-in catalog is checked by a unit test.
    pub fn builtin() -> Self {
        Self::from_json(BUILTIN).expect("the built-in catalog is valid; a unit test checks it")
    }

    /// Reads a catalog from JSON text of the shape of `data/models.json`.
    ///
    /// # Errors
    /// [`Error::Catalog`] when the text is not such a catalog, or an entry has a context
    /// window of 0 or a name (or alias) used twice.
    pub fn from_json(text: &str) -> Result<Self> {
        let catalog: Self = serde_json::from_str(text).map_err(|err| Error::Catalog {
            problem: "not a catalog of the shape of data/models.json".into(),
            source: Some(err),
        })?;
        let problem = |problem: String| Error::Catalog {
            problem,
            source: None,
        };
        if let Some(bad) = catalog.models.iter().find(|m| m.context_window == 0) {
            return Err(problem(format!(
                "model `{}` has a context window of 0",
                bad.name
            )));
        }
        let mut names = std::collections::BTreeSet::new();
        for model in &catalog.models {
            for name in std::iter::once(&model.name).chain(&model.aliases) {
                if !names.insert(name.to_lowercase()) {
                    return Err(problem(format!("the name `{name}` is used twice")));
                }
            }
        }
        Ok(catalog)
    }

    /// Finds a model's profile; see [`Catalog::resolve`].
    ///
    /// # Errors
    /// [`Error::UnknownModel`] listing the nearest names.
    pub fn lookup(&self, name: &str) -> Result<&Profile> {
        self.resolve(name).map(|(profile, _)| profile)
    }

    /// Finds a model's profile and says how the name matched it: case is ignored, provider
    /// prefixes and runner tags are stripped, then an exact name or alias wins, else the
    /// longest catalog name that `name` continues after a `-` or `_`.
    ///
    /// # Errors
    /// [`Error::UnknownModel`] listing the nearest names.
    ///
    /// # Example
    /// ```
    /// let catalog = ctxcompact::catalog::Catalog::builtin();
    /// let (profile, how) = catalog.resolve("openai/GPT-4o-2024-08-06")?;
    /// assert_eq!(profile.name, "gpt-4o");
    /// assert_eq!(how, "`gpt-4o-2024-08-06` (prefix `openai/` stripped, case ignored) continues catalog name `gpt-4o`");
    /// # Ok::<(), ctxcompact::Error>(())
    /// ```
    pub fn resolve(&self, name: &str) -> Result<(&Profile, String)> {
        let (key, changes) = normalize(name);
        let said = if changes.is_empty() {
            format!("`{key}`")
        } else {
            format!("`{key}` ({})", changes.join(", "))
        };
        for model in &self.models {
            if model.name.eq_ignore_ascii_case(&key) {
                return Ok((model, format!("{said} is catalog name `{}`", model.name)));
            }
            if let Some(alias) = model.aliases.iter().find(|a| a.eq_ignore_ascii_case(&key)) {
                let how = format!("{said} is an alias (`{alias}`) of `{}`", model.name);
                return Ok((model, how));
            }
        }
        let continues = |m: &&Profile| {
            let stem = m.name.to_lowercase();
            key.strip_prefix(stem.as_str())
                .is_some_and(|rest| rest.starts_with(['-', '_']))
        };
        match self
            .models
            .iter()
            .filter(continues)
            .max_by_key(|m| m.name.len())
        {
            Some(model) => Ok((
                model,
                format!("{said} continues catalog name `{}`", model.name),
            )),
            None => Err(Error::UnknownModel {
                name: name.to_string(),
                nearest: self.nearest(&key),
            }),
        }
    }

    /// The three names closest to `name` by edit distance, ties broken by catalog order.
    fn nearest(&self, name: &str) -> Vec<String> {
        let mut scored: Vec<(usize, usize, &str)> = self
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| (edit_distance(name, &m.name), i, m.name.as_str()))
            .collect();
        scored.sort_unstable();
        scored
            .into_iter()
            .take(3)
            .map(|(_, _, n)| n.to_string())
            .collect()
    }
}

/// Provider words that cloud catalogs put before a model name with a dot
/// (`anthropic.claude-…` on Bedrock, optionally after a region: `us.anthropic.claude-…`).
const DOTTED_PROVIDERS: &[&str] = &[
    "anthropic",
    "meta",
    "mistral",
    "amazon",
    "cohere",
    "deepseek",
    "qwen",
    "openai",
    "google",
];

/// The lookup key of a model name, and what was changed to get it: lowercased, everything up
/// to the last `/` dropped, a Bedrock provider prefix dropped, and a runner tag (`:…`) or
/// version (`@…`) dropped.
pub(crate) fn normalize(name: &str) -> (String, Vec<String>) {
    let mut changes = Vec::new();
    let mut key = name.trim();
    if let Some(slash) = key.rfind('/') {
        changes.push(format!("prefix `{}` stripped", &key[..=slash]));
        key = &key[slash + 1..];
    }
    if let Some(cut) = key.find([':', '@']) {
        changes.push(format!("tag `{}` stripped", &key[cut..]));
        key = &key[..cut];
    }
    let lower = key.to_lowercase();
    let mut key = lower.as_str();
    let mut dotted = key.split('.');
    let first = dotted.next().unwrap_or_default();
    let second = dotted.next().unwrap_or_default();
    let provider_at = if DOTTED_PROVIDERS.contains(&first) {
        Some(first.len() + 1)
    } else if first.len() <= 4 && DOTTED_PROVIDERS.contains(&second) {
        Some(first.len() + second.len() + 2)
    } else {
        None
    };
    if let Some(cut) = provider_at.filter(|&cut| cut < key.len()) {
        changes.push(format!("prefix `{}` stripped", &key[..cut]));
        key = &key[cut..];
    }
    if name.chars().any(char::is_uppercase) {
        changes.push("case ignored".into());
    }
    (key.to_string(), changes)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_parses() {
        assert!(Catalog::builtin().models.len() >= 17);
    }

    #[test]
    fn longest_prefix_at_a_separator_wins() {
        let catalog = Catalog::builtin();
        let name = |n| catalog.lookup(n).unwrap().name.clone();
        assert_eq!(name("gpt-4.1-mini-2025-04-14"), "gpt-4.1-mini");
        assert_eq!(name("gpt-4-0613"), "gpt-4");
        assert_eq!(name("gpt-4o-mini-2024-07-18"), "gpt-4o-mini");
        assert_eq!(name("gpt-4-turbo"), "gpt-4-turbo");
        assert_eq!(name("gpt-4-32k"), "gpt-4-32k");
        assert_eq!(name("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
        assert_eq!(name("claude-sonnet-4-20250514"), "claude-sonnet-4");
        // A dot is no separator: gpt-4.5 is not gpt-4.
        assert!(catalog.lookup("gpt-4.5-preview").is_err());
    }

    #[test]
    fn names_are_normalised() {
        let catalog = Catalog::builtin();
        let name = |n| catalog.lookup(n).unwrap().name.clone();
        assert_eq!(name("GPT-4o"), "gpt-4o");
        assert_eq!(name("openai/gpt-4o"), "gpt-4o");
        assert_eq!(name("meta-llama/llama-3.3-70b-instruct"), "llama-3.3");
        assert_eq!(name("llama3.1:8b"), "llama-3.1");
        assert_eq!(
            name("us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
            "claude-3-7-sonnet"
        );
        assert_eq!(name("claude-sonnet-4-5@20250929"), "claude-sonnet-4-5");
        assert_eq!(name("models/gemini-2.0-flash-001"), "gemini-2.0-flash");
    }

    #[test]
    fn every_builtin_entry_has_a_source_and_date() {
        for model in Catalog::builtin().models {
            assert!(
                model
                    .source
                    .as_deref()
                    .is_some_and(|s| s.starts_with("https://"))
            );
            assert!(model.read.as_deref().is_some_and(|d| d.len() == 10));
        }
    }

    #[test]
    fn open_weight_models_count_with_their_own_vocabulary_and_cite_its_template() {
        let catalog = Catalog::builtin();
        let cases = [
            ("llama-3.1-8b", Tokenizer::Llama3),
            ("meta-llama/Llama-3.3-70B-Instruct", Tokenizer::Llama3),
            ("qwen2.5-coder", Tokenizer::Qwen2),
            ("qwen3:32b", Tokenizer::Qwen2),
            ("deepseek-chat", Tokenizer::DeepSeekV3),
            ("deepseek-r1", Tokenizer::DeepSeekV3),
            ("mistral-large", Tokenizer::Tekken),
            ("kimi-k2", Tokenizer::KimiK2),
            ("glm-4.6", Tokenizer::Glm4),
            ("minimax-m2", Tokenizer::MinimaxM2),
        ];
        for (name, tokenizer) in cases {
            let profile = catalog.lookup(name).unwrap();
            assert_eq!(profile.tokenizer, tokenizer, "{name}");
        }
        for model in &catalog.models {
            let open = Tokenizer::OPEN_WEIGHT.contains(&model.tokenizer);
            let cited = model
                .template
                .as_deref()
                .is_some_and(|t| t.starts_with("https://huggingface.co/"));
            assert_eq!(
                open, cited,
                "{}: a template exactly where a vocabulary is",
                model.name
            );
        }
    }

    #[test]
    fn unknown_model_lists_nearest() {
        let err = Catalog::builtin().lookup("gtp-4o").unwrap_err().to_string();
        assert!(
            err.starts_with("unknown model `gtp-4o`; nearest: gpt-4o"),
            "{err}"
        );
    }
}
