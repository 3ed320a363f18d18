//! The options of a run: where the budget comes from, what may be removed and how, and how
//! tokens are counted. [`Options::with_budget`] and [`Options::for_model`] give the documented
//! defaults; the CLI and the Python package fill the same fields from their settings.

use std::path::PathBuf;

use crate::account::MarkerMode;
use crate::account::Strategy;
use crate::budget::Budget;
use crate::catalog::{Catalog, Profile, WindowSource};
use crate::conversation::Conversation;
use crate::error::Result;
use crate::features::FeatureThresholds;
use crate::format::RecordedUsage;
use crate::select::SelectorTuning;
use crate::strategy::tools::ToolOptions;
use crate::tokens::{self, Tokenizer};

/// Middle removal keeps this many non-system units at the head (docs/decisions.md: the task and what
/// answered it).
pub(crate) const PRESERVE_START: usize = 2;
/// Units kept at the tail while the budget allows (docs/decisions.md).
pub(crate) const PRESERVE_END: usize = 4;

/// Everything a run needs besides the conversation.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the budget comes from.
    pub budget: Budget,
    /// A forced strategy; `None` lets the selector decide.
    pub strategy: Option<Strategy>,
    /// What each removed span leaves at its place.
    pub marker: MarkerMode,
    /// The digest's cap in tokens, the removed requests first; `None` for half the budget, of
    /// which the sections after the requests share the smaller of 2,000 tokens and 10%.
    pub digest_tokens: Option<usize>,
    /// Non-system units middle removal keeps at the head.
    pub preserve_start: usize,
    /// Units kept at the tail while the budget allows.
    pub preserve_end: usize,
    /// What the conversation's features are measured against (long messages, severity).
    pub thresholds: FeatureThresholds,
    /// The selector's rule constants and what it optimizes.
    pub selector: SelectorTuning,
    /// The model profile (the generic one when no model is named).
    pub profile: Profile,
    /// The model name asked for, as given.
    pub model: Option<String>,
    /// How that name matched its catalog profile ([`Catalog::resolve`]).
    pub model_match: Option<String>,
    /// Where the profile's context window came from (`None` without a model or window).
    pub window_source: Option<WindowSource>,
    /// The tokenizer that counts.
    pub tokenizer: Tokenizer,
    /// Tool-round trimming settings.
    pub tools: ToolOptions,
    /// The unlogged part of what lies outside the messages, given (the `overhead` setting and
    /// `--overhead`): tokens every body carries that the conversation does not hold (an
    /// agent's own system prompt and tool definitions). When given (not 0), `anchor` is not
    /// used.
    pub overhead: usize,
    /// The size a provider reported for an earlier call on this conversation (the body held
    /// the messages before `anchor.message`): what it held beyond the estimate of those
    /// messages (never less than 0) is then the unlogged part, counted like `overhead` — in
    /// the input, the budget, the report and so in every output, which carries no anchor of
    /// its own. Not used when `overhead` is given.
    pub anchor: Option<RecordedUsage>,
    /// The folder removed history is archived in (`None`: no archive). Each removed span and
    /// each message whose tool output was cleared is returned in [`Compacted::archive`] as a
    /// file of that folder, one JSON message a line in the output's wire format, and its
    /// marker or placeholder names the file and the lines.
    ///
    /// [`Compacted::archive`]: crate::Compacted::archive
    pub archive: Option<PathBuf>,
    /// Without an `archive` folder: name a handle in every marker and placeholder all the
    /// same (`[ctxcompact: handle …]`), for a caller that keeps the history whole and gives
    /// back what a handle names from it ([`request::Compactor::recall`]); the files are
    /// returned in [`Compacted::archive`] named by their handles, and never written.
    ///
    /// [`request::Compactor::recall`]: crate::request::Compactor::recall
    /// [`Compacted::archive`]: crate::Compacted::archive
    pub handles: bool,
    /// Whether an agent loop ([`Session`](crate::Session), and the proxy through it) under a
    /// [`Budget::Window`] compacts as deep as its recent traffic allows rather than to the
    /// budget's target exactly: down to what its last calls take, between a fifth of the
    /// window and the target, leaving room for a call at least (docs/decisions.md). False
    /// when a target was given; one-off runs ([`compact`](crate::compact())) always take the
    /// target.
    pub traffic_depth: bool,
}

impl Options {
    /// Options for a model of the built-in catalog: its profile and tokenizer, and a window
    /// budget that compacts at 70% of its context window down to 50%. A name the catalog does
    /// not list resolves by its family's naming rule ([`Catalog::resolve`]).
    ///
    /// # Errors
    /// [`Error::UnknownModel`](crate::Error::UnknownModel) when no rule reads the name.
    ///
    /// # Example
    /// ```
    /// let options = ctxcompact::Options::for_model("gpt-4o-2024-08-06")?;
    /// assert_eq!(options.profile.context_window, 128_000);
    /// // Not listed: the newest listed opus at or below 5.7.
    /// let unseen = ctxcompact::Options::for_model("claude-opus-5-7-20270101")?;
    /// assert_eq!(unseen.profile.name, "claude-opus-5-5");
    /// # Ok::<(), ctxcompact::Error>(())
    /// ```
    pub fn for_model(name: &str) -> Result<Self> {
        Self::for_model_in(Catalog::builtin(), name)
    }

    /// As [`Options::for_model`], with the profile looked up in `catalog`.
    ///
    /// # Errors
    /// [`Error::UnknownModel`](crate::Error::UnknownModel) when no rule reads the name.
    pub fn for_model_in(catalog: &Catalog, name: &str) -> Result<Self> {
        let resolved = catalog.resolve(name)?;
        Ok(Self {
            tokenizer: resolved.profile.tokenizer,
            model: Some(name.to_string()),
            model_match: Some(resolved.how),
            window_source: Some(resolved.window_source),
            profile: resolved.profile,
            ..Self::with_budget(Budget::window())
        })
    }

    /// Options with `budget` and every other setting at its default (no model: the generic
    /// profile, counted with `o200k`).
    pub fn with_budget(budget: Budget) -> Self {
        Self {
            budget,
            strategy: None,
            marker: MarkerMode::Digest,
            digest_tokens: None,
            preserve_start: PRESERVE_START,
            preserve_end: PRESERVE_END,
            thresholds: FeatureThresholds::default(),
            selector: SelectorTuning::default(),
            profile: Profile::generic(Tokenizer::O200k),
            model: None,
            model_match: None,
            window_source: None,
            tokenizer: Tokenizer::O200k,
            tools: ToolOptions::default(),
            overhead: 0,
            anchor: None,
            archive: None,
            handles: false,
            traffic_depth: true,
        }
    }

    /// The tokens of a provider body holding `conversation`, as `ctxcompact count` prints them:
    /// its messages counted once with the tokenizer ([`Tokenizer::count`](crate::Tokenizer::count)),
    /// and what lies outside them — the conversation's own system prompt and tool definitions,
    /// and the unlogged part ([`Options::overhead`], or what the anchor measured: see
    /// [`Options::anchor`]).
    pub fn count_body(&self, conversation: &Conversation) -> tokens::Counts {
        self.add_unlogged(self.tokenizer.count(conversation)).0
    }

    /// The count of `conversation` as `ctxcompact count --json` prints it and the bindings'
    /// `count` return it: [`Options::count_body`]'s figures, then what counted them — the
    /// tokenizer, its estimator, and the model with how its name matched, when one is known.
    ///
    /// # Panics
    /// Never: counts are numbers, and always serialize.
    #[must_use]
    pub fn count_json(&self, conversation: &Conversation) -> serde_json::Value {
        let mut value =
            serde_json::to_value(self.count_body(conversation)).expect("counts always serialize");
        if let serde_json::Value::Object(object) = &mut value {
            object.insert("tokenizer".into(), self.tokenizer.as_str().into());
            object.insert("estimator".into(), self.tokenizer.describe().into());
            if let Some(model) = &self.model {
                object.insert("model".into(), model.as_str().into());
                object.insert("model_match".into(), self.model_match.clone().into());
            }
        }
        value
    }

    /// `counts` (the tokenizer's, of a conversation) with the unlogged part added to what lies
    /// outside the messages, and that part: the one count of `count`, `compact`, a
    /// [`Session`](crate::Session) and a request compactor.
    pub(crate) fn add_unlogged(&self, mut counts: tokens::Counts) -> (tokens::Counts, usize) {
        let unlogged = self.unlogged(&counts);
        counts.outside += unlogged;
        (counts, unlogged)
    }

    /// The unlogged part of what lies outside the messages of `counts` (the tokenizer's, before
    /// it is added): the overhead given, else the tokens the anchor's reported size holds
    /// beyond the estimate of what it held.
    fn unlogged(&self, counts: &tokens::Counts) -> usize {
        match &self.anchor {
            Some(anchor) if self.overhead == 0 && anchor.message <= counts.messages.len() => {
                let before: usize = counts.messages[..anchor.message].iter().sum();
                anchor.input_tokens.saturating_sub(counts.outside + before)
            }
            _ => self.overhead,
        }
    }

    /// The anchor the counts use, if any.
    pub(crate) fn used_anchor(&self) -> Option<&RecordedUsage> {
        self.anchor.as_ref().filter(|_| self.overhead == 0)
    }

    /// With an anchor (within the conversation), the unlogged part of `counts` (from
    /// [`Options::count_body`]): what lies outside the messages beyond the conversation's own
    /// system prompt and tool definitions. `None` without an anchor.
    pub(crate) fn anchored_unlogged(
        &self,
        conversation: &Conversation,
        counts: &tokens::Counts,
    ) -> Option<usize> {
        let anchor = self.anchor.as_ref()?;
        if anchor.message > counts.messages.len() {
            return None;
        }
        let own = tokens::count_outside(conversation, self.tokenizer.counter());
        Some(counts.outside.saturating_sub(own))
    }
}
