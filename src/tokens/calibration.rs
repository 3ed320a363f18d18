//! Calibrated estimates: the factors a model family's provider counts per `o200k` token, and
//! the shipped fit of them.
//!
//! Claude and Gemini tokenizers are not public, so their counts are estimates: the text's
//! `o200k` tokens times a factor per model family, plus a cost per tool call. The factors are
//! fitted on the input sizes providers reported in recorded session logs (`ctxcompact
//! calibrate`); `o200k` tokens rather than characters because both are byte-pair encodings that
//! split text alike, so the ratio varies far less across kinds of text than tokens per
//! character do. The shipped factors are `data/calibration.json`; a user's own fit of the same
//! shape is read with [`Calibration::from_json`].

// Without the `lab` feature the calibration types are public through the lab only.
#![cfg_attr(not(feature = "lab"), allow(unreachable_pub))]

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use crate::profile::Family;
use crate::profile::{Factor, Tokenizer};

const BUILTIN: &str = include_str!("../../data/calibration.json");

/// One family's fit (or, from `ctxcompact calibrate --evaluate`, one family's measured error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyFit {
    /// The model family.
    pub family: Family,
    /// Recorded calls measured.
    pub calls: usize,
    /// Sessions those calls came from.
    pub sessions: usize,
    /// The provider's tokens per `o200k` token of the conversation: the factor the calibrated
    /// estimator counts with. (0 in a calibration written by an older version, which
    /// [`Calibration::from_json`] refuses.)
    #[serde(default)]
    pub tokens_per_o200k: f64,
    /// Tokens each tool call costs beyond its name and arguments (framing, ids, and what the
    /// agent adds to the call and its result without recording it); 0 when not fitted.
    #[serde(default)]
    pub tokens_per_tool_call: f64,
    /// The provider's tokens per character of the fitted conversations, for information (the
    /// factor times their `o200k` tokens per character); not used to count.
    #[serde(default)]
    pub tokens_per_char: f64,
    /// The median over sessions of the fixed tokens each request held beyond its messages
    /// (system prompt and tool definitions); 0 from `ctxcompact calibrate --evaluate`, where the anchor holds it.
    pub fixed_overhead: usize,
    /// The share of the reported sizes' variance the estimates explain.
    pub r2: f64,
    /// Median absolute percentage error of the estimates against the reported sizes.
    pub median_ape_pct: f64,
    /// 95th percentile of the absolute percentage error.
    pub p95_ape_pct: f64,
    /// From `ctxcompact calibrate --evaluate`: the error when every call is anchored on the session's first call
    /// instead of the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call: Option<Spread>,
    /// The error of this factor on sessions the fit did not see, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
}

/// Median and 95th percentile of an absolute percentage error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median absolute percentage error.
    pub median_ape_pct: f64,
    /// 95th percentile of the absolute percentage error.
    pub p95_ape_pct: f64,
}

/// The error of a factor on sessions held out of its fit, measured as `ctxcompact calibrate --evaluate` measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    /// Calls measured (each session's first call excluded).
    pub calls: usize,
    /// Sessions they came from.
    pub sessions: usize,
    /// Median absolute percentage error, each call anchored on the previous one.
    pub median_ape_pct: f64,
    /// 95th percentile of the absolute percentage error, likewise.
    pub p95_ape_pct: f64,
    /// The same, each call anchored on its session's first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_call: Option<Spread>,
}

/// Factors per family: the output of `ctxcompact calibrate --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// One entry per family.
    pub families: Vec<FamilyFit>,
    /// The logs the factors were fitted on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl Calibration {
    /// The calibration compiled into the crate (`data/calibration.json`).
    ///
    /// # Panics
    /// Never: the shipped calibration is checked by a unit test.
    pub fn builtin() -> &'static Self {
        static BUILT: OnceLock<Calibration> = OnceLock::new();
        BUILT.get_or_init(|| {
            Self::from_json(BUILTIN)
                .expect("the shipped calibration is valid; a unit test checks it")
        })
    }

    /// Reads a calibration from a file `ctxcompact calibrate --json` wrote.
    ///
    /// # Errors
    /// [`Error::Calibration`] naming the file, when it cannot be read or as
    /// [`Calibration::from_json`].
    pub fn from_file(path: &std::path::Path) -> Result<Self> {
        let unreadable = |problem| Error::Calibration {
            file: None,
            problem,
            source: None,
        };
        crate::error::read_settings_file(path, unreadable, Self::from_json)
    }

    /// Reads a calibration from JSON of the shape `ctxcompact calibrate --json` writes.
    ///
    /// # Errors
    /// [`Error::Calibration`] when the text is not such a calibration, a family appears twice
    /// or a factor is not a positive number.
    pub fn from_json(text: &str) -> Result<Self> {
        let calibration: Self = serde_json::from_str(text).map_err(|err| Error::Calibration {
            file: None,
            problem: "not of the shape `ctxcompact calibrate --json` writes".into(),
            source: Some(err),
        })?;
        let problem = |problem: String| Error::Calibration {
            file: None,
            problem,
            source: None,
        };
        let mut seen = BTreeSet::new();
        for (index, fit) in calibration.families.iter().enumerate() {
            if !seen.insert(fit.family) {
                return Err(problem(format!(
                    "families[{index}]: family `{}` appears twice",
                    fit.family.as_str()
                )));
            }
            if !(fit.tokens_per_o200k.is_finite() && fit.tokens_per_o200k > 0.0) {
                return Err(problem(format!(
                    "families[{index}].tokens_per_o200k: expected a positive number, found {}{}",
                    fit.tokens_per_o200k,
                    if fit.tokens_per_o200k == 0.0 {
                        " (a fit of tokens per character only, from an older ctxcompact: fit again with `ctxcompact calibrate --json`)"
                    } else {
                        ""
                    }
                )));
            }
            if !(fit.tokens_per_tool_call.is_finite() && fit.tokens_per_tool_call >= 0.0) {
                return Err(problem(format!(
                    "families[{index}].tokens_per_tool_call: expected a number of tokens, 0 or more, found {}",
                    fit.tokens_per_tool_call
                )));
            }
        }
        Ok(calibration)
    }

    /// The factor this calibration gives `family`, if any.
    pub fn factor(&self, family: Family) -> Option<Factor> {
        self.families
            .iter()
            .find(|fit| fit.family == family)
            .map(|fit| {
                Factor::new(family, fit.tokens_per_o200k).with_per_call(fit.tokens_per_tool_call)
            })
    }

    /// `tokenizer` with this calibration's factor when it is a calibrated estimator of a family
    /// the calibration has; any other tokenizer unchanged.
    pub fn apply(&self, tokenizer: Tokenizer) -> Tokenizer {
        match tokenizer {
            Tokenizer::Calibrated(factor) => {
                Tokenizer::Calibrated(self.factor(factor.family).unwrap_or(factor))
            }
            other => other,
        }
    }
}

/// The shipped factor of `family`.
///
/// # Panics
/// Never: a unit test checks that the shipped calibration has every family.
pub(crate) fn shipped(family: Family) -> Factor {
    Calibration::builtin()
        .factor(family)
        .expect("the shipped calibration has every family; a unit test checks it")
}

/// One line naming a calibrated estimator and its known error.
pub(crate) fn describe(factor: Factor) -> String {
    let name = factor.family.as_str();
    let per_token = format!(
        "{} tokens per o200k token and {} per tool call",
        factor.tokens_per_o200k(),
        factor.per_call
    );
    let shipped = Calibration::builtin()
        .families
        .iter()
        .find(|fit| fit.family == factor.family);
    match shipped {
        Some(fit) if Calibration::builtin().factor(fit.family) == Some(factor) => {
            let error = fit.held_out.as_ref().map_or_else(
                || {
                    format!(
                        "fit error median {}%, p95 {}%",
                        fit.median_ape_pct, fit.p95_ape_pct
                    )
                },
                |held| {
                    format!(
                        "error on held-out sessions, anchored on the previous call: median {}%, p95 {}%",
                        held.median_ape_pct, held.p95_ape_pct
                    )
                },
            );
            format!(
                "{name} calibrated estimate: {per_token}, fitted on {} calls in {} sessions; {error}",
                fit.calls, fit.sessions
            )
        }
        _ => format!("{name} calibrated estimate: {per_token} from a user calibration"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_file_names_its_problems() {
        let err = Calibration::from_json(
            r#"{"families": [{"family": "claude-opus", "calls": 1,
            "sessions": 1, "tokens_per_o200k": -1, "fixed_overhead": 0, "r2": 1,
            "median_ape_pct": 0, "p95_ape_pct": 0}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "calibration: families[0].tokens_per_o200k: expected a positive number, found -1"
        );
        // A fit of tokens per character only (an older ctxcompact) is refused, with the fix.
        let err = Calibration::from_json(
            r#"{"families": [{"family": "claude-opus", "calls": 1,
            "sessions": 1, "tokens_per_char": 0.4, "fixed_overhead": 0, "r2": 1,
            "median_ape_pct": 0, "p95_ape_pct": 0}]}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("fit again with `ctxcompact calibrate --json`"),
            "{err}"
        );
    }

    #[test]
    fn a_user_calibration_replaces_only_its_families() {
        let text = r#"{"families": [{"family": "claude-haiku", "calls": 1, "sessions": 1,
            "tokens_per_o200k": 0.5, "fixed_overhead": 0, "r2": 1, "median_ape_pct": 0,
            "p95_ape_pct": 0}]}"#;
        let user = Calibration::from_json(text).unwrap();
        let haiku = Tokenizer::Calibrated(shipped(Family::ClaudeHaiku));
        let opus = Tokenizer::Calibrated(shipped(Family::ClaudeOpus));
        assert_eq!(
            user.apply(haiku),
            Tokenizer::Calibrated(Factor::new(Family::ClaudeHaiku, 0.5))
        );
        assert_eq!(user.apply(opus), opus);
        assert_eq!(user.apply(Tokenizer::O200k), Tokenizer::O200k);
        assert!(describe(Factor::new(Family::ClaudeHaiku, 0.5)).contains("user calibration"));
    }

    #[test]
    fn shipped_calibration_has_every_family() {
        let calibration = Calibration::builtin();
        for family in Family::ALL {
            assert!(calibration.factor(family).is_some(), "{family:?}");
        }
    }
}
