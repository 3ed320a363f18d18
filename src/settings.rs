//! Run settings by name — what the CLI's flags, the proxy's flags and the Python package's
//! keyword arguments give — and the one place they become [`Options`]: the budget from its
//! parts, the model's profile from the catalog, the tokenizer with its calibration, the anchor
//! on recorded usage, the strategy, the marker, tool trimming and what the selector optimizes. Each field is named as its CLI flag (`target_ratio` for
//! `--target-ratio`) and its Python keyword argument.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::Deserialize;

use crate::account::MarkerMode;
use crate::account::Strategy;
use crate::budget::Budget;
use crate::catalog::{Catalog, Tables, WindowSource};
use crate::conversation::Conversation;
use crate::cost::CostModel;
use crate::error::{Error, Result};
use crate::format::RecordedUsage;
use crate::options::Options;
use crate::select::{Optimize, SelectorTuning};
use crate::strategy::tools::{ToolMode, ToolOptions};
use crate::tokens::Tokenizer;
use crate::tokens::calibration::Calibration;

/// The settings of a run; [`Default`] leaves every one unset (the documented defaults, and no
/// budget). Deserializes from an object of these names (unknown names are refused).
///
/// # Example
/// ```
/// use ctxcompact::{Budget, Settings, Strategy};
///
/// let settings: Settings = serde_json::from_str(r#"{"target": 8000, "strategy": "middle"}"#)?;
/// let options = settings.options()?;
/// assert_eq!(options.budget, Budget::Tokens(8000));
/// assert_eq!(options.strategy, Some(Strategy::Middle));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The model's catalog name: its profile, tokenizer and window budget.
    pub model: Option<String>,
    /// A model catalog file (the shape of `data/models.json`) to look models up in, instead
    /// of the built-in catalog.
    pub catalog: Option<PathBuf>,
    /// The tokenizer, instead of the model's.
    pub tokenizer: Option<Tokenizer>,
    /// A calibration file (what `ctxcompact calibrate --json` writes) whose factors the
    /// calibrated estimators count with, instead of the shipped ones.
    pub calibration: Option<PathBuf>,
    /// The budget in tokens.
    pub target: Option<usize>,
    /// The budget as a share of the conversation's tokens.
    pub ratio: Option<f64>,
    /// With a model: compact when usage passes this share of its window.
    pub trigger: Option<f64>,
    /// With a model: compact down to this share of its window.
    pub target_ratio: Option<f64>,
    /// A forced strategy; `None` lets the selector decide.
    pub strategy: Option<Strategy>,
    /// What each removed span leaves at its place.
    pub marker: MarkerMode,
    /// The digest's cap in tokens ([`Options::digest_tokens`]).
    pub digest_tokens: Option<usize>,
    /// What happens to tool rounds older than the kept ones.
    pub tool_mode: ToolMode,
    /// How many of the latest tool rounds are never touched (default 3).
    pub keep_tool_rounds: Option<usize>,
    /// Tools whose calls and results are never touched; blank names are ignored.
    pub exclude_tools: Vec<String>,
    /// Also clear cleared calls' arguments.
    pub clear_tool_inputs: bool,
    /// Trim no tool round unless at least this many tokens are freed.
    pub clear_at_least: usize,
    /// Cap every single tool result at this many tokens.
    pub max_tool_output: Option<usize>,
    /// Tokens every body carries that the conversation does not hold: the unlogged part of what
    /// lies outside the messages ([`Options::overhead`]).
    pub overhead: usize,
    /// The input size a session log recorded for its last call ([`Options::anchor`]): the
    /// CLI gives the one of the log it reads.
    pub anchor: Option<RecordedUsage>,
    /// Whether the selector picks the lowest expected input cost over the next calls under
    /// prompt caching instead of the efficiency score (`--optimize cost`); needs `model`, whose
    /// price it reads.
    pub optimize_cost: bool,
    /// The folder removed history is archived in ([`Options::archive`]), made absolute: the
    /// markers name its files for an agent that may not run where this did.
    pub archive: Option<PathBuf>,
    /// Name a handle in every note without an archive folder ([`Options::handles`]).
    pub handles: bool,
}

/// How a run looks its model up, beside the settings: the catalog, the calibration
/// read once from the settings' file, the model (a request's own, or the settings'), and a
/// window for every model, when given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelLookup<'a> {
    /// Where the model is looked up.
    pub(crate) catalog: &'a Catalog,
    /// The calibration the tokenizer is calibrated with.
    pub(crate) calibration: Option<&'a Calibration>,
    /// The model's name.
    pub(crate) model: Option<&'a str>,
    /// The context window for every model, instead of the catalog's.
    pub(crate) window: Option<usize>,
}

impl Settings {
    /// The options these settings give, with models looked up in [`Settings::catalog`].
    ///
    /// # Errors
    /// As [`Settings::catalog`] and [`Settings::options_in`].
    pub fn options(&self) -> Result<Options> {
        self.options_from(&self.tables()?)
    }

    /// The catalog and calibration files these settings name, read (the built-in catalog
    /// without one): for [`Settings::options_from`] and [`Settings::options_for_body_from`],
    /// so that resolving options again reads no file again.
    ///
    /// # Errors
    /// As [`Settings::catalog`]; [`Error::Calibration`] naming the file, when it cannot be
    /// read or is no calibration.
    pub fn tables(&self) -> Result<Tables> {
        let catalog = self.catalog()?;
        let calibration = self.calibration()?;
        Ok(Tables {
            catalog,
            calibration,
        })
    }

    /// As [`Settings::options`], with the files `tables` read instead of these settings'.
    ///
    /// # Errors
    /// As [`Settings::options_in`], but for the files.
    pub fn options_from(&self, tables: &Tables) -> Result<Options> {
        self.options_for(&ModelLookup {
            catalog: &tables.catalog,
            calibration: tables.calibration.as_ref(),
            model: self.model.as_deref(),
            window: None,
        })
    }

    /// As [`Settings::options`], for `conversation`, with every model's context window `window`
    /// when given (the Node package's `window`: with no budget given, the window's — compact
    /// past 70% of it, down to 50% — and a model no catalog rule reads counts with the generic
    /// profile). With no `model` given, the model the body names ([`Conversation::model`], the
    /// name the proxy reads) is looked up as `model` would be, so that the body is counted and
    /// compacted for the model it is sent to; a name no catalog rule reads then counts with the
    /// generic profile, `model_match` saying so.
    ///
    /// # Errors
    /// As [`Settings::options`]; with a window, an unknown model and no budget are no errors.
    pub fn options_for_body(
        &self,
        conversation: &Conversation,
        window: Option<usize>,
    ) -> Result<Options> {
        self.options_for_body_from(&self.tables()?, conversation, window)
    }

    /// As [`Settings::options_for_body`], with the files `tables` read instead of these
    /// settings'.
    ///
    /// # Errors
    /// As [`Settings::options_for_body`], but for the files.
    pub fn options_for_body_from(
        &self,
        tables: &Tables,
        conversation: &Conversation,
        window: Option<usize>,
    ) -> Result<Options> {
        let named = conversation.model().filter(|_| self.model.is_none());
        let lookup = ModelLookup {
            catalog: &tables.catalog,
            calibration: tables.calibration.as_ref(),
            model: self.model.as_deref().or(named),
            window,
        };
        match self.options_for(&lookup) {
            Err(err @ Error::UnknownModel { .. }) if named.is_some() => {
                let mut options = self.options_for(&ModelLookup {
                    model: None,
                    ..lookup
                })?;
                options.model = named.map(str::to_string);
                options.model_match = Some(format!(
                    "named by the body: {err}; counted with the generic profile"
                ));
                Ok(options)
            }
            found => found,
        }
    }

    /// The tokenizer these settings count with, its model looked up in `tables`: the
    /// `tokenizer` given, else the model's (without one, the generic profile's), calibrated
    /// with the tables' factors; `None` for a model the catalog does not know. For starting the
    /// tokenizer ([`Tokenizer::prepare`]) before the options can be resolved.
    pub fn tokenizer_from(&self, tables: &Tables) -> Option<Tokenizer> {
        let tokenizer = match (self.tokenizer, &self.model) {
            (Some(tokenizer), _) => tokenizer,
            (None, Some(name)) => tables.catalog.resolve(name).ok()?.profile.tokenizer,
            (None, None) => Options::with_budget(Budget::window()).tokenizer,
        };
        Some(calibrated(tokenizer, tables.calibration.as_ref()))
    }

    /// The catalog models are looked up in: the `catalog` file, else the built-in one.
    ///
    /// # Errors
    /// [`Error::Catalog`] naming the file, when it cannot be read or is no catalog.
    pub fn catalog(&self) -> Result<Cow<'static, Catalog>> {
        match &self.catalog {
            Some(path) => Catalog::from_file(path).map(Cow::Owned),
            None => Ok(Cow::Borrowed(Catalog::builtin())),
        }
    }

    /// The `calibration` file's factors, when given.
    ///
    /// # Errors
    /// [`Error::Calibration`] naming the file, when it cannot be read or is no calibration.
    pub(crate) fn calibration(&self) -> Result<Option<Calibration>> {
        self.calibration
            .as_deref()
            .map(Calibration::from_file)
            .transpose()
    }

    /// These settings with no budget of their own, for what removes nothing for a budget
    /// (counting, tool trimming alone, the bench, which sets a budget per conversation): the
    /// budget is the whole conversation.
    #[must_use]
    pub fn without_budget(&self) -> Self {
        Self {
            target: None,
            ratio: Some(1.0),
            trigger: None,
            target_ratio: None,
            ..self.clone()
        }
    }

    /// The options these settings give, with models looked up in `catalog`.
    ///
    /// # Errors
    /// [`Error::BadSetting`] for settings that cannot go together (`target` with `ratio`,
    /// `trigger` or `target_ratio`; `ratio` with `trigger` or `target_ratio`), for no budget at
    /// all (no `target`, `ratio` or `model`), for `optimize_cost` without `model`, and for an
    /// `archive` folder that has no absolute form;
    /// [`Error::UnknownModel`] for a model the catalog does not know; [`Error::Unpriced`] for
    /// `optimize_cost` with a model the price list does not cover; [`Error::Calibration`] for
    /// a `calibration` file that cannot be read. The `catalog` file is not read: `catalog` is
    /// used instead.
    pub fn options_in(&self, catalog: &Catalog) -> Result<Options> {
        let calibration = self.calibration()?;
        let lookup = ModelLookup {
            catalog,
            calibration: calibration.as_ref(),
            model: self.model.as_deref(),
            window: None,
        };
        self.options_for(&lookup)
    }

    /// The options these settings give for `lookup`: its model instead of `model`,
    /// and its window, when given, instead of the profile's (a model no catalog rule reads
    /// then counts with the generic profile; no budget is the window's). The one resolution of model, profile,
    /// tokenizer, calibration and window, for the CLI, the proxy and the bindings alike.
    ///
    /// # Errors
    /// As [`Settings::options_in`]; with a window, an unknown model and no budget are no errors.
    pub(crate) fn options_for(&self, lookup: &ModelLookup<'_>) -> Result<Options> {
        let budget = Budget::from_parts(self.target, self.ratio, self.trigger, self.target_ratio);
        self.options_budgeted(lookup, |_| (budget, ()))
            .map(|(options, ())| options)
    }

    /// As [`Settings::options_for`], the budget decided by `budget` from the context window
    /// the lookup found (the model's, else the run's window), with what it says beside: a request
    /// compactor's trigger and target below an agent's own compaction point. The window is
    /// found first, so that the budget is decided once, for the window it is a share of; `None`
    /// leaves the model's window budget.
    ///
    /// # Errors
    /// As [`Settings::options_for`].
    pub(crate) fn options_budgeted<T>(
        &self,
        lookup: &ModelLookup<'_>,
        budget: impl FnOnce(usize) -> (Option<Budget>, T),
    ) -> Result<(Options, T)> {
        self.check_exclusive()?;
        let profile = match lookup
            .model
            .map(|name| Options::for_model_in(lookup.catalog, name))
        {
            Some(Err(Error::UnknownModel { .. })) if lookup.window.is_some() => Some(Options {
                model: lookup.model.map(str::to_string),
                ..Options::with_budget(Budget::window())
            }),
            found => found.transpose()?,
        };
        let found = profile.is_some();
        // A model's options hold its window budget; without one, so does a window given.
        let mut options = profile.unwrap_or_else(|| Options::with_budget(Budget::window()));
        if let Some(window) = lookup.window {
            options.profile.context_window = window;
            options.window_source = Some(WindowSource::Flag);
        }
        let (budget, beside) = budget(options.profile.context_window);
        match budget {
            Some(budget) => options.budget = budget,
            None if found || lookup.window.is_some() => {}
            None => {
                return Err(Error::bad_setting(
                    "no budget: give a target in tokens, a ratio or a model",
                ));
            }
        }
        options.tokenizer = calibrated(
            self.tokenizer.unwrap_or(options.tokenizer),
            lookup.calibration,
        );
        options.traffic_depth = self.target_ratio.is_none();
        options.overhead = self.overhead;
        options.anchor.clone_from(&self.anchor);
        options.strategy = self.strategy;
        options.marker = self.marker;
        options.digest_tokens = self.digest_tokens;
        options.tools = self.tool_options();
        if let Some(dir) = &self.archive {
            let absolute = std::path::absolute(dir)
                .map_err(|err| Error::bad_setting(format!("archive {}: {err}", dir.display())))?;
            options.archive = Some(absolute);
        }
        options.handles = self.handles;
        if self.optimize_cost {
            if lookup.model.is_none() {
                return Err(Error::bad_setting(
                    "optimizing for cost needs a model, to price the calls",
                ));
            }
            options.selector = SelectorTuning {
                optimize: Optimize::Cost(CostModel::for_profile(&options.profile)?),
                ..SelectorTuning::default()
            };
        }
        Ok((options, beside))
    }

    /// Refuses budget settings that exclude each other.
    fn check_exclusive(&self) -> Result<()> {
        let given = [
            ("target", self.target.is_some()),
            ("ratio", self.ratio.is_some()),
            ("trigger", self.trigger.is_some()),
            ("target_ratio", self.target_ratio.is_some()),
        ];
        // `target` excludes the three after it, `ratio` the two after it.
        for (first, (name, set)) in given.iter().enumerate().take(2) {
            if let Some((other, _)) = given[first + 1..].iter().find(|(_, s)| *s && *set) {
                return Err(Error::bad_setting(format!(
                    "{name} and {other} cannot be used together"
                )));
            }
        }
        Ok(())
    }

    /// The tool-trimming options.
    fn tool_options(&self) -> ToolOptions {
        ToolOptions {
            mode: self.tool_mode,
            keep: self
                .keep_tool_rounds
                .unwrap_or_else(|| ToolOptions::default().keep),
            exclude: self
                .exclude_tools
                .iter()
                .map(|name| name.trim().to_string())
                .filter(|name| !name.is_empty())
                .collect(),
            clear_inputs: self.clear_tool_inputs,
            clear_at_least: self.clear_at_least,
            max_output: self.max_tool_output,
        }
    }
}

/// `tokenizer` with `calibration`'s factors, when given.
fn calibrated(tokenizer: Tokenizer, calibration: Option<&Calibration>) -> Tokenizer {
    calibration.map_or(tokenizer, |calibration| calibration.apply(tokenizer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: &str) -> Result<Options> {
        serde_json::from_str::<Settings>(json).unwrap().options()
    }

    #[test]
    fn unset_settings_are_the_documented_defaults_with_the_budget_given() {
        let options = settings(r#"{"target": 1000}"#).unwrap();
        let defaults = Options::with_budget(Budget::Tokens(1000));
        assert_eq!(options.budget, defaults.budget);
        assert_eq!(options.marker, defaults.marker);
        assert_eq!(options.tools, defaults.tools);
        assert_eq!(options.strategy, None);
        assert_eq!(options.tokenizer, defaults.tokenizer);
        assert_eq!(options.selector, defaults.selector);
    }

    #[test]
    fn every_setting_reaches_its_option() {
        let options = settings(
            r#"{"model": "gpt-4o", "tokenizer": "cl100k", "trigger": 0.8, "target_ratio": 0.4,
                "strategy": "oldest", "marker": "brief", "digest_tokens": 300,
                "tool_mode": "drop", "keep_tool_rounds": 5, "exclude_tools": [" Read ", ""],
                "clear_tool_inputs": true, "clear_at_least": 50, "max_tool_output": 900,
                "overhead": 12, "optimize_cost": true, "archive": "history"}"#,
        )
        .unwrap();
        assert_eq!(options.model.as_deref(), Some("gpt-4o"));
        assert_eq!(options.tokenizer, Tokenizer::Cl100k);
        assert_eq!(options.budget, Budget::window_with(Some(0.8), Some(0.4)));
        assert_eq!(options.strategy, Some(Strategy::Oldest));
        assert_eq!(options.marker, MarkerMode::Brief);
        assert_eq!(options.digest_tokens, Some(300));
        let tools = ToolOptions {
            mode: ToolMode::Drop,
            keep: 5,
            exclude: vec!["Read".into()],
            clear_inputs: true,
            clear_at_least: 50,
            max_output: Some(900),
        };
        assert_eq!(options.tools, tools);
        assert_eq!(options.overhead, 12);
        assert!(matches!(options.selector.optimize, Optimize::Cost(_)));
        let archive = options.archive.unwrap();
        assert!(
            archive.is_absolute() && archive.ends_with("history"),
            "{archive:?}"
        );
    }

    #[test]
    fn settings_that_cannot_go_together_are_named() {
        for (json, words) in [
            (r#"{"target": 1, "ratio": 0.5}"#, "target and ratio"),
            (
                r#"{"target": 1, "target_ratio": 0.5}"#,
                "target and target_ratio",
            ),
            (r#"{"ratio": 0.5, "trigger": 0.7}"#, "ratio and trigger"),
            ("{}", "no budget"),
            (r#"{"ratio": 0.5, "optimize_cost": true}"#, "needs a model"),
        ] {
            let err = settings(json).unwrap_err();
            assert!(matches!(err, Error::BadSetting { .. }), "{json}: {err:?}");
            assert!(err.to_string().contains(words), "{json}: {err}");
        }
    }

    #[test]
    fn a_model_gives_its_window_budget_and_a_ratio_replaces_it() {
        let window = settings(r#"{"model": "gpt-4o"}"#).unwrap();
        assert_eq!(window.budget, Budget::window());
        assert_eq!(window.profile.context_window, 128_000);
        let ratio = settings(r#"{"model": "gpt-4o", "ratio": 0.5}"#).unwrap();
        assert_eq!(ratio.budget, Budget::Ratio(0.5));
        assert!(matches!(
            settings(r#"{"model": "foo-1"}"#).unwrap_err(),
            Error::UnknownModel { .. }
        ));
    }

    #[test]
    fn a_window_replaces_every_models_and_alone_is_the_budget() {
        let bare = crate::format::parse_value(serde_json::json!([]), None).unwrap();
        let window = |json: &str| {
            serde_json::from_str::<Settings>(json)
                .unwrap()
                .options_for_body(&bare, Some(9_000))
                .unwrap()
        };
        let alone = window("{}");
        assert_eq!(alone.budget, Budget::window());
        assert_eq!(alone.profile.context_window, 9_000);
        assert_eq!(alone.window_source, Some(WindowSource::Flag));
        let known = window(r#"{"model": "gpt-4o", "target": 500}"#);
        assert_eq!(known.budget, Budget::Tokens(500));
        assert_eq!(known.profile.context_window, 9_000);
        assert!(known.model_match.is_some());
        let unknown = window(r#"{"model": "foo-1"}"#);
        assert_eq!(unknown.model.as_deref(), Some("foo-1"));
        assert_eq!(unknown.tokenizer, Tokenizer::O200k);
        assert_eq!(unknown.profile.context_window, 9_000);
    }

    #[test]
    fn a_body_names_the_model_unless_the_settings_do() {
        let body = |model: &str| {
            crate::format::parse_value(
                serde_json::json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}),
                None,
            )
            .unwrap()
        };
        let given = |json: &str, model: &str| {
            serde_json::from_str::<Settings>(json)
                .unwrap()
                .options_for_body(&body(model), None)
                .unwrap()
        };
        let named = given(r#"{"ratio": 0.5}"#, "claude-sonnet-4-5");
        assert_eq!(named.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(named.profile.name, "claude-sonnet-4-5");
        assert_eq!(named.budget, Budget::Ratio(0.5));
        let flag = given(r#"{"model": "gpt-4o"}"#, "claude-sonnet-4-5");
        assert_eq!(flag.profile.name, "gpt-4o");
        let counted = given(r#"{"tokenizer": "o200k"}"#, "claude-sonnet-4-5");
        assert_eq!(counted.tokenizer, Tokenizer::O200k);
        assert_eq!(counted.profile.name, "claude-sonnet-4-5");
        let unknown = given(r#"{"ratio": 0.5}"#, "foo-1");
        assert_eq!(unknown.profile.name, "generic");
        assert_eq!(unknown.model.as_deref(), Some("foo-1"));
        assert!(
            unknown
                .model_match
                .unwrap()
                .contains("unknown model `foo-1`")
        );
    }

    #[test]
    fn unknown_names_are_refused() {
        let err = serde_json::from_str::<Settings>(r#"{"tagret": 5}"#).unwrap_err();
        assert!(err.to_string().contains("tagret"), "{err}");
    }

    /// A file beside the test's others, written once per test name.
    /// A catalog of one model, `house-model`, with a window of 9,000 tokens.
    const HOUSE_CATALOG: &str = r#"{"models": [{"name": "house-model", "provider": "openai",
        "context_window": 9000, "tokenizer": "o200k", "strategy": "middle", "reason": "a test"}]}"#;
    /// A calibration of claude-opus at twice o200k's count.
    const OPUS_CALIBRATION: &str = r#"{"families": [{"family": "claude-opus", "calls": 1,
        "sessions": 1, "tokens_per_o200k": 2.0, "tokens_per_tool_call": 0.0,
        "tokens_per_char": 0.5, "fixed_overhead": 0, "r2": 1.0, "median_ape_pct": 0.0,
        "p95_ape_pct": 0.0}]}"#;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ctxcompact-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_catalog_file_is_where_models_are_looked_up() {
        let path = file("catalog.json", HOUSE_CATALOG);
        let given = Settings {
            model: Some("house-model".into()),
            catalog: Some(path.clone()),
            ..Settings::default()
        };
        assert_eq!(given.options().unwrap().profile.context_window, 9000);
        let builtin = Settings {
            catalog: None,
            ..given.clone()
        };
        assert!(matches!(builtin.options(), Err(Error::UnknownModel { .. })));
        let missing = Settings {
            catalog: Some(path.with_file_name("absent.json")),
            ..given
        };
        let err = missing.options().unwrap_err();
        assert!(matches!(err, Error::Catalog { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("absent.json: model catalog: cannot read"),
            "{err}"
        );
    }

    #[test]
    fn a_calibration_file_sets_the_calibrated_factors_and_names_itself_when_bad() {
        let shipped = settings(r#"{"target": 10, "tokenizer": "claude-opus"}"#).unwrap();
        let Tokenizer::Calibrated(factor) = shipped.tokenizer else {
            panic!(
                "claude-opus is a calibrated estimator: {:?}",
                shipped.tokenizer
            )
        };
        let path = file("calibration.json", OPUS_CALIBRATION);
        let calibrated = Settings {
            target: Some(10),
            tokenizer: shipped_tokenizer(),
            calibration: Some(path.clone()),
            ..Settings::default()
        };
        let Tokenizer::Calibrated(fitted) = calibrated.options().unwrap().tokenizer else {
            panic!("still a calibrated estimator")
        };
        assert_eq!(fitted.family, factor.family);
        assert_ne!(fitted, factor, "the file's factor replaces the shipped one");
        let bad = file("bad-calibration.json", "{}");
        let err = Settings {
            calibration: Some(bad),
            ..calibrated
        }
        .options()
        .unwrap_err();
        assert!(matches!(err, Error::Calibration { .. }), "{err:?}");
        assert!(
            err.to_string()
                .contains("bad-calibration.json: calibration:"),
            "{err}"
        );
    }

    #[test]
    fn tables_read_once_resolve_again_without_their_files() {
        let catalog = file("tables-catalog.json", HOUSE_CATALOG);
        let calibration = file("tables-calibration.json", OPUS_CALIBRATION);
        let settings = Settings {
            ratio: Some(0.5),
            tokenizer: shipped_tokenizer(),
            catalog: Some(catalog.clone()),
            calibration: Some(calibration.clone()),
            ..Settings::default()
        };
        let body = crate::format::parse_value(
            serde_json::json!({"model": "house-model", "messages": [{"role": "user", "content": "hi"}]}),
            None,
        )
        .unwrap();
        let read = settings.options_for_body(&body, None).unwrap();
        let tables = settings.tables().unwrap();
        std::fs::remove_file(&catalog).unwrap();
        std::fs::remove_file(&calibration).unwrap();
        let again = settings
            .options_for_body_from(&tables, &body, None)
            .unwrap();
        assert_eq!(again.profile.context_window, 9000);
        assert_eq!((again.model, again.tokenizer), (read.model, read.tokenizer));
        assert_eq!(
            settings.options_from(&tables).unwrap().tokenizer,
            read.tokenizer
        );
        assert!(matches!(settings.tables(), Err(Error::Catalog { .. })));
    }

    #[test]
    fn the_tokenizer_alone_is_the_one_the_options_count_with() {
        let tables = Settings::default().tables().unwrap();
        for json in [
            r#"{"target": 10}"#,
            r#"{"model": "claude-sonnet-4-5"}"#,
            r#"{"model": "gpt-4o", "tokenizer": "cl100k"}"#,
        ] {
            let given: Settings = serde_json::from_str(json).unwrap();
            let options = given.options().unwrap();
            assert_eq!(
                given.tokenizer_from(&tables),
                Some(options.tokenizer),
                "{json}"
            );
        }
        let unknown: Settings = serde_json::from_str(r#"{"model": "foo-1"}"#).unwrap();
        assert_eq!(unknown.tokenizer_from(&tables), None);
    }

    fn shipped_tokenizer() -> Option<Tokenizer> {
        Tokenizer::from_name("claude-opus")
    }

    #[test]
    fn an_anchor_reaches_the_options() {
        let anchor: RecordedUsage = serde_json::from_str(
            r#"{"message": 2, "input_tokens": 900, "model": "claude-opus-4-1", "line": 7}"#,
        )
        .unwrap();
        let anchored = Settings {
            target: Some(100),
            anchor: Some(anchor.clone()),
            ..Settings::default()
        };
        assert_eq!(anchored.options().unwrap().anchor, Some(anchor));
        assert_eq!(
            anchored.without_budget().options().unwrap().anchor,
            anchored.anchor
        );
    }
}
