//! The model catalog, and the one lookup of a model name: the profile a name resolves to gives
//! its context window, its tokenizer (and so its calibrated-estimate family) and its price
//! family; the proxy, `count --model`, [`Options::for_model`](crate::Options::for_model),
//! the Python package and the prices all resolve names here.
//!
//! The built-in catalog is `data/models.json`, embedded at build time; another of the same shape
//! can be loaded with [`Catalog::from_json`]. A name is first keyed: case is ignored, provider
//! prefixes (`openai/`, `models/`, `us.anthropic.`), runner tags (`:8b`, `@20250219`),
//! Claude Code's `[1m]` tag and the suffixes `-latest` and `-v1` are stripped. Then, in order:
//! 1. an exact name or alias wins;
//! 2. a name of a family with a naming rule (`claude-…`, `gpt-…`, `gemini-…`) is read as a line
//!    and a version: the listed model of that line and version, else the newest listed model
//!    of the line at or below that version (else the line's oldest) — an unseen
//!    `claude-opus-5-7-20270101` gets `claude-opus-5-5`'s window, tokenizer and price;
//! 3. else the longest catalog name that the name continues after a `-` or `_` (dated and
//!    versioned names: `gpt-4o-2024-08-06` finds `gpt-4o`, `llama-3.3-70b` finds `llama-3.3`).
//!
//! Every resolution says how it matched, and whether the window is the listed model's
//! ([`WindowSource::Catalog`]) or a family rule's guess ([`WindowSource::Family`]).

mod name;

use std::borrow::Cow;
use std::sync::OnceLock;

pub use crate::profile::{Factor, Family, Preference, Profile, WindowSource};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::tokens::calibration::Calibration;

/// The built-in catalog's JSON. Keep in sync with the providers' published context windows and
/// the agent CLIs' bundled catalogs it cites.
const BUILTIN: &str = include_str!("../../data/models.json");

/// The window Claude Code's `[1m]` tag asks for (its catalog's `context.window` of the 1M
/// models).
const ONE_MILLION: usize = 1_000_000;

/// A model name resolved to its profile ([`Catalog::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The profile: window, tokenizer, strategy preference, price family.
    pub profile: Profile,
    /// How the name matched it, in one line.
    pub how: String,
    /// Whether the window is the listed model's or a family rule's guess.
    pub window_source: WindowSource,
}

/// What run settings look models and factors up in, each read once: the catalog (the built-in
/// one or a catalog file) and a calibration file's factors, when one is given. A caller that
/// resolves options more than once in one run (the CLI: the tokenizer before its input is read,
/// then the options for the body it read) reads each file once
/// ([`Settings::tables`](crate::Settings::tables)).
#[derive(Debug, Clone)]
pub struct Tables {
    /// Where models are looked up: the built-in catalog, shared, or a file's.
    pub(crate) catalog: Cow<'static, Catalog>,
    /// The factors the calibrated estimators count with, instead of the shipped ones.
    pub(crate) calibration: Option<Calibration>,
}

/// A list of model profiles.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Catalog {
    /// The profiles, in file order.
    pub models: Vec<Profile>,
}

impl Catalog {
    /// The catalog compiled into the crate, parsed once per process.
    ///
    /// # Panics
    /// Never: the built-in catalog is checked by a unit test.
    pub fn builtin() -> &'static Self {
        static BUILT: OnceLock<Catalog> = OnceLock::new();
        BUILT.get_or_init(|| {
            Self::from_json(BUILTIN).expect("the built-in catalog is valid; a unit test checks it")
        })
    }

    /// Reads a catalog from a file of the shape of `data/models.json`.
    ///
    /// # Errors
    /// [`Error::Catalog`] naming the file, when it cannot be read or as [`Catalog::from_json`].
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let unreadable = |problem| Error::Catalog {
            file: None,
            problem,
            source: None,
        };
        crate::error::read_settings_file(path, unreadable, Self::from_json)
    }

    /// Reads a catalog from JSON text of the shape of `data/models.json`.
    ///
    /// # Errors
    /// [`Error::Catalog`] when the text is not such a catalog, or an entry has a context
    /// window of 0 or a name (or alias) used twice.
    pub fn from_json(text: &str) -> Result<Self> {
        let catalog: Self = serde_json::from_str(text).map_err(|err| Error::Catalog {
            file: None,
            problem: "not a catalog of the shape of data/models.json".into(),
            source: Some(err),
        })?;
        let problem = |problem: String| Error::Catalog {
            file: None,
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

    /// Finds a model's profile and says how the name matched it (see the module's docs for
    /// the order: an exact name or alias, a family's naming rule, a continued catalog name).
    ///
    /// # Errors
    /// [`Error::UnknownModel`] listing the nearest names, when no rule reads the name.
    ///
    /// # Example
    /// ```
    /// use ctxcompact::catalog::{Catalog, WindowSource};
    ///
    /// let catalog = Catalog::builtin();
    /// let dated = catalog.resolve("openai/GPT-4o-2024-08-06")?;
    /// assert_eq!(dated.profile.name, "gpt-4o");
    /// assert_eq!(dated.how, "`gpt-4o-2024-08-06` (prefix `openai/` stripped, case ignored) continues catalog name `gpt-4o`");
    /// let unseen = catalog.resolve("claude-opus-5-7-20270101")?;
    /// assert_eq!(unseen.profile.name, "claude-opus-5-5");
    /// assert_eq!(unseen.window_source, WindowSource::Family);
    /// # Ok::<(), ctxcompact::Error>(())
    /// ```
    pub fn resolve(&self, name: &str) -> Result<Resolved> {
        let key = name::ModelKey::of(name);
        let found = self
            .exact(&key)
            .or_else(|| self.by_rule(&key))
            .or_else(|| self.continued(&key));
        let Some((model, how, window_source)) = found else {
            return Err(Error::UnknownModel {
                name: name.to_string(),
                nearest: self.nearest(&key.full),
            });
        };
        let mut profile = model.clone();
        let mut how = how;
        if key.one_million && profile.context_window < ONE_MILLION {
            profile.context_window = ONE_MILLION;
            how.push_str("; its window 1,000,000 for the `[1m]` tag");
        }
        Ok(Resolved {
            profile,
            how,
            window_source,
        })
    }

    /// The model named exactly (or by an alias) by the key, or by the key without its suffixes.
    fn exact(&self, key: &name::ModelKey) -> Option<(&Profile, String, WindowSource)> {
        let said = key.said();
        let spellings = [key.full.as_str(), key.bare.as_str()];
        spellings.iter().enumerate().find_map(|(i, spelling)| {
            let bare = if i == 0 {
                String::new()
            } else {
                format!(" without its suffix `{}`", &key.full[key.bare.len()..])
            };
            self.models.iter().find_map(|model| {
                let how = if model.name.eq_ignore_ascii_case(spelling) {
                    format!("{said}{bare} is catalog name `{}`", model.name)
                } else {
                    let alias = model
                        .aliases
                        .iter()
                        .find(|a| a.eq_ignore_ascii_case(spelling))?;
                    format!("{said}{bare} is an alias (`{alias}`) of `{}`", model.name)
                };
                Some((model, how, WindowSource::Catalog))
            })
        })
    }

    /// The model a family's naming rule gives the key: the listed one of its line and version,
    /// else the newest of its line at or below its version, else the line's oldest.
    fn by_rule(&self, key: &name::ModelKey) -> Option<(&Profile, String, WindowSource)> {
        let wanted = name::parse(&key.bare)?;
        let listed: Vec<(usize, name::Parsed)> = self
            .models
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((i, name::parse(&m.name.to_lowercase())?)))
            .filter(|(_, parsed)| parsed.rule == wanted.rule)
            .collect();
        let line = listed
            .iter()
            .map(|(_, parsed)| &parsed.words)
            .filter(|words| wanted.words.starts_with(words))
            .max_by_key(|words| words.len())?
            .clone();
        let of_line = || listed.iter().filter(|(_, parsed)| parsed.words == line);
        let family = wanted.rule.as_str();
        let line_name = if line.is_empty() {
            format!("{family} (no line word)")
        } else {
            format!("{family} {}", line.join("-"))
        };
        let mut beyond: Vec<&str> = wanted.words[line.len()..]
            .iter()
            .map(String::as_str)
            .collect();
        beyond.extend(wanted.qualifiers.iter().map(String::as_str));
        let ignored = if beyond.is_empty() {
            String::new()
        } else {
            format!("; `{}` ignored", beyond.join("-"))
        };
        let said = key.said();
        let version = wanted.version();
        if let Some((index, _)) = of_line().find(|(_, parsed)| parsed.version == wanted.version) {
            let model = &self.models[*index];
            let how = format!(
                "{said} is {line_name} {version} by the {family} naming rule{ignored}: catalog name `{}`",
                model.name
            );
            return Some((model, how, WindowSource::Catalog));
        }
        let below = of_line()
            .filter(|(_, parsed)| parsed.version < wanted.version)
            .max_by_key(|(index, parsed)| (parsed.version, std::cmp::Reverse(*index)));
        let (index, how) = if let Some((index, parsed)) = below {
            (
                *index,
                format!(
                    "the newest listed of that line at or below it is `{}` ({})",
                    self.models[*index].name,
                    parsed.version()
                ),
            )
        } else {
            let (index, parsed) =
                of_line().min_by_key(|(index, parsed)| (parsed.version, *index))?;
            (
                *index,
                format!(
                    "every listed one of that line is newer; the oldest is `{}` ({})",
                    self.models[*index].name,
                    parsed.version()
                ),
            )
        };
        let how = format!(
            "{said} is not listed; by the {family} naming rule it is {line_name} {version}{ignored}: {how}"
        );
        Some((&self.models[index], how, WindowSource::Family))
    }

    /// The longest catalog name that the key continues after a `-` or `_`.
    fn continued(&self, key: &name::ModelKey) -> Option<(&Profile, String, WindowSource)> {
        let continues = |m: &&Profile| {
            let stem = m.name.to_lowercase();
            key.full
                .strip_prefix(stem.as_str())
                .is_some_and(|rest| rest.starts_with(['-', '_']))
        };
        let model = self
            .models
            .iter()
            .filter(continues)
            .max_by_key(|m| m.name.len())?;
        let how = format!("{} continues catalog name `{}`", key.said(), model.name);
        Some((model, how, WindowSource::Catalog))
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
    use crate::tokens::Tokenizer;

    #[test]
    fn builtin_catalog_parses() {
        assert!(Catalog::builtin().models.len() >= 17);
    }

    #[test]
    fn the_selectors_choice_is_auto_and_an_older_catalogs_hybrid_still_reads() {
        let entry = |strategy: &str| {
            format!(
                r#"{{"models": [{{"name": "m-1", "provider": "openai", "context_window": 10,
                    "tokenizer": "o200k", "strategy": "{strategy}", "reason": "r"}}]}}"#
            )
        };
        for spelling in ["auto", "hybrid"] {
            let catalog = Catalog::from_json(&entry(spelling)).unwrap();
            assert_eq!(catalog.models[0].strategy, Preference::Auto, "{spelling}");
        }
        let written = serde_json::to_value(Preference::Auto).unwrap();
        assert_eq!(written, "auto");
    }

    #[test]
    fn longest_prefix_at_a_separator_wins() {
        let catalog = Catalog::builtin();
        let name = |n| catalog.resolve(n).unwrap().profile.name;
        assert_eq!(name("gpt-4.1-mini-2025-04-14"), "gpt-4.1-mini");
        assert_eq!(name("gpt-4-0613"), "gpt-4");
        assert_eq!(name("gpt-4o-mini-2024-07-18"), "gpt-4o-mini");
        assert_eq!(name("gpt-4-turbo"), "gpt-4-turbo");
        assert_eq!(name("gpt-4-32k"), "gpt-4-32k");
        assert_eq!(name("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
        assert_eq!(name("claude-sonnet-4-20250514"), "claude-sonnet-4");
        // A dot is no separator: gpt-4.5 is not gpt-4, but the newest gpt below it.
        assert_eq!(name("gpt-4.5-preview"), "gpt-4.1");
    }

    #[test]
    fn names_are_normalised() {
        let catalog = Catalog::builtin();
        let name = |n| catalog.resolve(n).unwrap().profile.name;
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
        for model in &Catalog::builtin().models {
            assert!(
                model
                    .source
                    .as_deref()
                    .is_some_and(|s| s.starts_with("https://")),
                "{}",
                model.name
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
            let profile = catalog.resolve(name).unwrap().profile;
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
        let err = Catalog::builtin()
            .resolve("gtp-4o")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("unknown model `gtp-4o`; nearest: gpt-4o"),
            "{err}"
        );
    }

    /// The resolution of `name`: the profile's name, its window and where that came from.
    fn resolved(catalog: &Catalog, name: &str) -> (String, usize, WindowSource) {
        let found = catalog.resolve(name).unwrap();
        (
            found.profile.name,
            found.profile.context_window,
            found.window_source,
        )
    }

    // See: #31
    #[test]
    fn the_models_the_agent_clients_send_by_default_are_listed() {
        let catalog = Catalog::builtin();
        let cases = [
            ("claude-opus-5-5", 1_000_000),
            ("gpt-6.1-sol", 272_000),
            ("gemini-3.1-pro-preview", 1_048_576),
            ("gemini-3-flash-preview", 1_048_576),
            ("gemini-3.8-flash", 1_048_576),
            ("gemini-3.5-flash-lite", 1_048_576),
        ];
        for (name, window) in cases {
            let listed = (name.to_string(), window, WindowSource::Catalog);
            assert_eq!(resolved(catalog, name), listed);
        }
    }

    // See: #31
    #[test]
    fn an_unseen_name_of_a_known_family_gets_the_newest_listed_of_its_line() {
        let catalog = Catalog::builtin();
        let cases = [
            ("claude-opus-5-7-20270101", "claude-opus-5-5", 1_000_000),
            (
                "anthropic.claude-sonnet-5-1-v1:0",
                "claude-sonnet-5",
                1_000_000,
            ),
            ("gpt-6.2-codex", "gpt-5-codex", 400_000),
            ("gpt-6.2", "gpt-5.5", 272_000),
            ("gemini-4-flash-preview", "gemini-3.8-flash", 1_048_576),
            ("gemini-4-flash-lite", "gemini-3.5-flash-lite", 1_048_576),
            // Older than every listed model of its line: the line's oldest.
            ("claude-haiku-2", "claude-3-haiku", 200_000),
        ];
        for (name, profile, window) in cases {
            let family = (profile.to_string(), window, WindowSource::Family);
            assert_eq!(resolved(catalog, name), family, "{name}");
        }
        // A listed line and version with words the catalog does not name: the listed model.
        assert_eq!(
            resolved(catalog, "claude-opus-4-1-20250805"),
            (
                "claude-opus-4-1".to_string(),
                200_000,
                WindowSource::Catalog
            )
        );
        assert_eq!(
            resolved(catalog, "gemini-3.1-pro-preview-customtools-002"),
            (
                "gemini-3.1-pro-preview-customtools".to_string(),
                1_048_576,
                WindowSource::Catalog
            )
        );
        let how = catalog
            .resolve("us.anthropic.claude-opus-5-7-20270101-v1:0")
            .unwrap()
            .how;
        assert_eq!(
            how,
            "`claude-opus-5-7-20270101-v1` (tag `:0` stripped, prefix `us.anthropic.` stripped) is not listed; \
             by the claude naming rule it is claude opus 5.7; `20270101` ignored: \
             the newest listed of that line at or below it is `claude-opus-5-5` (5.5)"
        );
    }

    #[test]
    fn suffixes_that_name_no_other_model_are_stripped() {
        let catalog = Catalog::builtin();
        assert_eq!(
            resolved(catalog, "claude-3-5-sonnet-latest").0,
            "claude-3-5-sonnet"
        );
        assert_eq!(
            resolved(catalog, "gpt-daybreak-blue-latest").0,
            "gpt-daybreak-blue-latest"
        );
        // Claude Code's 1M tag: the model, with a window of 1,000,000.
        let wide = catalog.resolve("claude-sonnet-4-6[1m]").unwrap();
        assert_eq!(
            (wide.profile.name.as_str(), wide.profile.context_window),
            ("claude-sonnet-4-6", 1_000_000)
        );
        assert!(
            wide.how
                .ends_with("its window 1,000,000 for the `[1m]` tag"),
            "{}",
            wide.how
        );
        assert_eq!(resolved(catalog, "claude-opus-5-5[1m]").1, 1_000_000);
        // Claude Code's aliases.
        assert_eq!(resolved(catalog, "opus").0, "claude-opus-5-5");
        assert_eq!(resolved(catalog, "sonnet").0, "claude-sonnet-5-5");
    }

    #[test]
    fn a_name_of_no_known_family_or_line_is_unknown() {
        let catalog = Catalog::builtin();
        for name in ["foo-1", "claude-poem-6", "gemini-4-ultra", "gemini-3"] {
            assert!(catalog.resolve(name).is_err(), "{name}");
        }
    }

    #[test]
    fn listed_models_of_one_line_and_version_agree_on_window_and_tokenizer() {
        let catalog = Catalog::builtin();
        let parsed: Vec<(&Profile, name::Parsed)> = catalog
            .models
            .iter()
            .filter_map(|m| Some((m, name::parse(&m.name)?)))
            .collect();
        for (a, pa) in &parsed {
            for (b, pb) in &parsed {
                if (pa.rule, &pa.words, pa.version) == (pb.rule, &pb.words, pb.version) {
                    assert_eq!(
                        (a.context_window, a.tokenizer),
                        (b.context_window, b.tokenizer),
                        "{} and {} read alike",
                        a.name,
                        b.name
                    );
                }
            }
        }
    }
}
