//! Prices and prompt caching: what an input token costs with each provider, and the expected
//! cost of a compaction over the calls that follow it (`--optimize cost`, `replay`).
//!
//! Prices are `data/prices.json`, one entry per price family; a model's catalog profile names
//! its family (`price` in `data/models.json`), so a name is priced as the catalog resolves it
//! — an alias, a dated or prefixed name, a name read by its family's rule alike. A user's own
//! table of the same shape is read with [`Prices::from_json`].

// Without the `lab` feature the price table is public through the lab only (the proxy's ledger
// uses it within the crate).
#![cfg_attr(not(feature = "lab"), allow(unreachable_pub))]

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::catalog::Profile;
use crate::error::{Error, Location, Result};

/// The prices compiled into the crate (`data/prices.json`).
const BUILTIN: &str = include_str!("../data/prices.json");
/// Tokens in a million: prices are per million tokens.
pub(crate) const MILLION: f64 = 1_000_000.0;

/// How a provider caches prompt prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Caching {
    /// The request marks a breakpoint; new prefix tokens are billed as cache writes (Anthropic).
    Explicit,
    /// Prefixes are cached for free; new tokens are billed as plain input (OpenAI).
    Automatic,
}

/// Prices of one model family, in US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceFamily {
    /// The family's name.
    pub family: String,
    /// Who serves it.
    pub provider: String,
    /// Uncached input.
    pub input: f64,
    /// Input written to the cache.
    pub cache_write: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Output.
    pub output: f64,
    /// The shortest prefix the provider caches, in tokens.
    pub min_cacheable: usize,
    /// How the provider caches.
    pub caching: Caching,
    /// Where the prices were published.
    pub source: String,
    /// When that page was read.
    pub read: String,
}

impl PriceFamily {
    /// What a call's reported tokens cost at these prices, in dollars: its uncached input, the
    /// input read from and written to the cache, and its output (the proxy's ledger).
    #[cfg(feature = "proxy")]
    pub(crate) fn dollars(
        &self,
        uncached: u64,
        cache_read: u64,
        cache_write: u64,
        output: u64,
    ) -> f64 {
        (uncached as f64 * self.input
            + cache_read as f64 * self.cache_read
            + cache_write as f64 * self.cache_write
            + output as f64 * self.output)
            / MILLION
    }
}

/// A price list: model families and their prices.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Prices {
    /// What the file says about itself.
    #[serde(rename = "_comment", default)]
    pub comment: String,
    /// The families, in file order.
    pub families: Vec<PriceFamily>,
}

impl Prices {
    /// The prices compiled into the crate, parsed once per process.
    ///
    /// # Panics
    /// Never: the built-in price list is checked by a unit test.
    pub fn builtin() -> &'static Self {
        static BUILT: OnceLock<Prices> = OnceLock::new();
        BUILT.get_or_init(|| {
            Self::from_json(BUILTIN).expect("the built-in prices are valid; a unit test checks it")
        })
    }

    /// Reads a price list from JSON text of the shape of `data/prices.json`.
    ///
    /// # Errors
    /// [`Error::Malformed`] naming the family and field when the text is not such a list, or a
    /// price is negative or not a number.
    pub fn from_json(text: &str) -> Result<Self> {
        let prices: Self = serde_json::from_str(text).map_err(|err| Error::Malformed {
            at: Location::top("prices"),
            problem: err.to_string(),
        })?;
        for (index, family) in prices.families.iter().enumerate() {
            let fields = [
                ("input", family.input),
                ("cache_write", family.cache_write),
                ("cache_read", family.cache_read),
                ("output", family.output),
            ];
            if let Some((field, value)) = fields.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
                return Err(Error::Malformed {
                    at: Location::top(format!("prices: families[{index}].{field}")),
                    problem: format!("expected a price of 0 or more, got {value}"),
                });
            }
        }
        Ok(prices)
    }

    /// The family named `name` (a catalog profile's `price`), if the list has it.
    pub fn family(&self, name: &str) -> Option<&PriceFamily> {
        self.families.iter().find(|f| f.family == name)
    }

    /// The price family of a model the catalog resolved: the one its profile names.
    ///
    /// # Errors
    /// [`Error::Unpriced`] when the profile names no family, or one this list does not have.
    pub fn for_profile(&self, profile: &Profile) -> Result<&PriceFamily> {
        profile
            .price
            .as_deref()
            .and_then(|name| self.family(name))
            .ok_or_else(|| Error::Unpriced {
                model: profile.name.clone(),
                families: self.families.iter().map(|f| f.family.clone()).collect(),
            })
    }
}

/// Calls over which `--optimize cost` weighs a compaction (issue 13: "the next K calls, default
/// 20"): about the calls between two compactions when the trigger and target are 20 points of
/// the window apart and each call adds 1% of it.
pub(crate) const COST_HORIZON: usize = 20;

/// Input prices and caching of one model, for `--optimize cost`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// Calls over which a compaction is weighed.
    pub calls: usize,
    /// Dollars per million uncached input tokens.
    pub input: f64,
    /// Dollars per million tokens entering the cache (the input price under automatic caching).
    pub cache_write: f64,
    /// Dollars per million tokens read from the cache.
    pub cache_read: f64,
    /// The shortest prefix the provider caches.
    pub min_cacheable: usize,
}

impl CostModel {
    /// The cost model of a model the catalog resolved, at the built-in prices
    /// (`data/prices.json`), over the next 20 calls (`COST_HORIZON`).
    ///
    /// # Errors
    /// [`Error::Unpriced`] when no price family covers the model.
    pub fn for_profile(profile: &Profile) -> Result<Self> {
        Ok(Self::new(
            Prices::builtin().for_profile(profile)?,
            COST_HORIZON,
        ))
    }

    /// The cost model of a price family over `calls` calls.
    pub(crate) fn new(family: &PriceFamily, calls: usize) -> Self {
        Self {
            calls,
            input: family.input,
            cache_write: match family.caching {
                Caching::Explicit => family.cache_write,
                Caching::Automatic => family.input,
            },
            cache_read: family.cache_read,
            min_cacheable: family.min_cacheable,
        }
    }

    /// Expected input cost, in dollars, of the next `calls` calls after a compaction that
    /// leaves `after` tokens of which the first `prefix` are unchanged (still cached): the
    /// first call reads the prefix and writes the rest, the others read all of it. Growth
    /// between calls is the same whatever was chosen, so it is left out.
    pub fn expected(&self, prefix: usize, after: usize) -> f64 {
        let cached = |tokens: usize| tokens >= self.min_cacheable;
        let prefix = if cached(prefix) { prefix.min(after) } else { 0 };
        let (write, read) = if cached(after) {
            (self.cache_write, self.cache_read)
        } else {
            (self.input, self.input)
        };
        let first = prefix as f64 * self.cache_read + (after - prefix) as f64 * write;
        let rest = self.calls.saturating_sub(1) as f64 * after as f64 * read;
        (first + rest) / MILLION
    }

    /// The fewest tokens a tool-clearing batch must free in a conversation of `total` tokens to
    /// repay its cache write within `calls` calls: clearing rewrites the cache from the first
    /// cleared result on (at most `total` tokens, at `cache_write − cache_read` more than a
    /// read), and saves a read of the freed tokens on each call.
    pub fn min_clearing(&self, total: usize) -> usize {
        let extra = (self.cache_write - self.cache_read).max(0.0) * total as f64;
        let saved_per_token = self.cache_read * self.calls as f64;
        if saved_per_token <= 0.0 {
            return 0;
        }
        // Rounding up to a whole token is intended; the value is finite and non-negative.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let tokens = (extra / saved_per_token).ceil() as usize;
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn priced(model: &str) -> Option<String> {
        let profile = Catalog::builtin().resolve(model).unwrap().profile;
        Prices::builtin()
            .for_profile(&profile)
            .ok()
            .map(|f| f.family.clone())
    }

    // See: #31
    #[test]
    fn a_name_is_priced_as_the_catalog_resolves_it() {
        assert_eq!(
            priced("gpt-4.1-mini-2025-04-14").as_deref(),
            Some("gpt-4.1-mini")
        );
        assert_eq!(priced("gpt-4.1").as_deref(), Some("gpt-4.1"));
        assert_eq!(
            priced("claude-sonnet-4-5-20250929").as_deref(),
            Some("claude-sonnet")
        );
        assert_eq!(
            priced("claude-opus-5-5").as_deref(),
            Some("claude-opus-5.5")
        );
        // A family rule's model is priced as the listed model it resolved to.
        assert_eq!(
            priced("claude-opus-5-7-20270101").as_deref(),
            Some("claude-opus-5.5")
        );
        assert_eq!(
            priced("anthropic.claude-sonnet-5-1-v1:0").as_deref(),
            Some("claude-sonnet-5")
        );
        assert_eq!(priced("llama-3"), None);
        assert_eq!(priced("gpt-6.1-sol"), None);
    }

    #[test]
    fn every_price_the_catalog_names_is_listed() {
        let prices = Prices::builtin();
        for model in &Catalog::builtin().models {
            if let Some(name) = &model.price {
                assert!(
                    prices.families.iter().any(|f| &f.family == name),
                    "{}: {name}",
                    model.name
                );
            }
        }
    }

    #[test]
    fn a_negative_price_names_its_family_and_field() {
        let text = BUILTIN.replacen("\"input\": 4.0", "\"input\": -4.0", 1);
        let err = Prices::from_json(&text).unwrap_err().to_string();
        assert!(err.starts_with("prices: families[0].input:"), "{err}");
    }
}
