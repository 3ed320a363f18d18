//! The model catalog: each model's provider, context window, tokenizer and strategy preference.
//!
//! The built-in catalog is `data/models.json`, embedded at build time; `--catalog FILE` loads
//! another of the same shape. A name resolves by exact match first, then by the longest catalog
//! name it starts with (`gpt-4.1-mini` finds `gpt-4.1`, not `gpt-4`).

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
    /// [`Error::Catalog`] when the text is not such a catalog.
    pub fn from_json(text: &str) -> Result<Self> {
        let catalog: Self = serde_json::from_str(text).map_err(|err| Error::Catalog {
            problem: err.to_string(),
        })?;
        if let Some(bad) = catalog.models.iter().find(|m| m.context_window == 0) {
            return Err(Error::Catalog {
                problem: format!("model `{}` has a context window of 0", bad.name),
            });
        }
        Ok(catalog)
    }

    /// Finds a model by exact name, then by the longest catalog name it starts with.
    ///
    /// # Errors
    /// [`Error::UnknownModel`] listing the nearest names.
    pub fn lookup(&self, name: &str) -> Result<&Profile> {
        if let Some(exact) = self.models.iter().find(|m| m.name == name) {
            return Ok(exact);
        }
        let prefix = self
            .models
            .iter()
            .filter(|m| name.starts_with(m.name.as_str()))
            .max_by_key(|m| m.name.len());
        prefix.ok_or_else(|| Error::UnknownModel {
            name: name.to_string(),
            nearest: self.nearest(name),
        })
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
    fn longest_prefix_wins() {
        let catalog = Catalog::builtin();
        assert_eq!(catalog.lookup("gpt-4.1-mini").unwrap().name, "gpt-4.1");
        assert_eq!(catalog.lookup("gpt-4-0613").unwrap().name, "gpt-4");
        assert_eq!(
            catalog.lookup("gpt-4o-mini-2024").unwrap().name,
            "gpt-4o-mini"
        );
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
