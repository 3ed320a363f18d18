//! The pipeline: count → check → budget → trim tools → group → measure → select → apply → check.
//!
//! Guards: a conversation already within budget comes back unchanged; the output never has more
//! tokens than the input; the output is validated before it is returned; when even the pinned
//! units exceed the budget, nothing is returned but [`Error::BudgetTooSmall`].

use crate::budget::Budget;
use crate::catalog::{Catalog, Profile};
use crate::conversation::{Conversation, Message, Role};
use crate::error::{Error, Result};
use crate::features::{Features, Thresholds};
use crate::format::RecordedUsage;
use crate::marker;
use crate::report::{Action, Report};
use crate::select::{self, Policy};
use crate::strategy::tools::{self, ToolOptions, ToolTrim};
use crate::strategy::{self, Applied, Limits, Strategy};
use crate::tokens::{self, REPLY_PRIMING, Tokenizer};
use crate::units;
use crate::validate;

/// Middle removal keeps this many non-system units at the head (DESIGN §6: the task and what
/// answered it).
pub const PRESERVE_START: usize = 2;
/// Units kept at the tail while the budget allows (DESIGN §6).
pub const PRESERVE_END: usize = 4;
/// Tokens added to the marker's reserve, so a marker with smaller numbers never costs more
/// than reserved (digit groups tokenize differently).
const MARKER_SLACK: usize = 2;

/// Everything a run needs besides the conversation.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the budget comes from.
    pub budget: Budget,
    /// A forced strategy; `None` lets the selector decide.
    pub strategy: Option<Strategy>,
    /// Whether to leave a marker where history was removed.
    pub marker: bool,
    /// Non-system units middle removal keeps at the head.
    pub preserve_start: usize,
    /// Units kept at the tail while the budget allows.
    pub preserve_end: usize,
    /// Feature thresholds.
    pub thresholds: Thresholds,
    /// Selector settings.
    pub policy: Policy,
    /// The model profile (the generic one when no model is named).
    pub profile: Profile,
    /// The model name asked for, as given.
    pub model: Option<String>,
    /// How that name matched its catalog profile ([`Catalog::resolve`]).
    pub model_match: Option<String>,
    /// The tokenizer that counts.
    pub tokenizer: Tokenizer,
    /// Tool-round trimming settings.
    pub tools: ToolOptions,
    /// Tokens every request carries that the conversation does not hold (an agent's system
    /// prompt and tool definitions): added to the count of what is outside the messages.
    pub overhead: usize,
    /// The size a provider reported for an earlier call on this conversation (the request
    /// held the messages before `anchor.message`): counts are then that figure plus the
    /// estimate of the messages added since, and `overhead` is not added.
    pub anchor: Option<RecordedUsage>,
}

impl Options {
    /// Options for a model of the built-in catalog: its profile and tokenizer, and a window
    /// budget that compacts at 70% of its context window down to 50%.
    ///
    /// # Errors
    /// [`Error::UnknownModel`] when the catalog does not know the name.
    ///
    /// # Example
    /// ```
    /// let options = ctxcompact::Options::for_model("gpt-4o-2024-08-06")?;
    /// assert_eq!(options.profile.context_window, 128_000);
    /// # Ok::<(), ctxcompact::Error>(())
    /// ```
    pub fn for_model(name: &str) -> Result<Self> {
        Self::for_model_in(&Catalog::builtin(), name)
    }

    /// As [`Options::for_model`], with the profile looked up in `catalog`.
    ///
    /// # Errors
    /// [`Error::UnknownModel`] when the catalog does not know the name.
    pub fn for_model_in(catalog: &Catalog, name: &str) -> Result<Self> {
        let (profile, how) = catalog.resolve(name)?;
        Ok(Self {
            tokenizer: profile.tokenizer,
            model: Some(name.to_string()),
            model_match: Some(how),
            profile: profile.clone(),
            ..Self::with_budget(Budget::window())
        })
    }

    /// Options with `budget` and every other setting at its default (no model: the generic
    /// profile, counted with `o200k`).
    pub fn with_budget(budget: Budget) -> Self {
        Self {
            budget,
            strategy: None,
            marker: true,
            preserve_start: PRESERVE_START,
            preserve_end: PRESERVE_END,
            thresholds: Thresholds::default(),
            policy: Policy::default(),
            profile: Profile::generic(Tokenizer::O200k),
            model: None,
            model_match: None,
            tokenizer: Tokenizer::O200k,
            tools: ToolOptions::default(),
            overhead: 0,
            anchor: None,
        }
    }

    /// Counts a conversation's messages once with the tokenizer. What lies outside the
    /// messages is then adjusted: with an anchor (within the conversation), so that the
    /// messages before it total the reported size; else by adding the overhead.
    pub fn count(&self, conversation: &Conversation) -> tokens::Counts {
        let mut counts = self.tokenizer.count(conversation);
        match &self.anchor {
            Some(anchor) if anchor.message <= counts.messages.len() => {
                let before: usize = counts.messages[..anchor.message].iter().sum();
                let estimated = counts.system + before;
                let signed = |n: usize| isize::try_from(n).unwrap_or(isize::MAX);
                let offset = signed(anchor.input_tokens).saturating_sub(signed(estimated));
                counts.system = counts.system.saturating_add_signed(offset);
            }
            _ => counts.system += self.overhead,
        }
        counts
    }
}

/// A compacted conversation and the account of how.
#[derive(Debug, Clone)]
pub struct Compacted {
    /// The output conversation (the input, unchanged, when within budget).
    pub conversation: Conversation,
    /// What was done and why.
    pub report: Report,
}

/// Compacts a conversation to its budget. The conversation is taken by value: the pipeline
/// edits it in place rather than copy it.
///
/// # Errors
/// [`Error::Invalid`] when the input breaks tool pairing, [`Error::BadBudget`] for an unusable
/// budget, [`Error::BudgetTooSmall`] when even the pinned units exceed it.
pub fn compact(conversation: Conversation, options: &Options) -> Result<Compacted> {
    compact_counted(conversation, None, options)
}

/// [`compact`] for a conversation whose counts under `options.tokenizer` are already known (a
/// [`crate::Session`] keeps them), so that it is not tokenized again.
pub(crate) fn compact_counted(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<Compacted> {
    let (report, output) = run(conversation, counts, options)?;
    match output {
        Some(conversation) => Ok(Compacted {
            conversation,
            report,
        }),
        None => Err(Error::BudgetTooSmall {
            pinned: report.pinned_tokens,
            budget: report.budget,
        }),
    }
}

/// Reports what [`compact`] would do, including `cannot_fit`, without producing output.
///
/// # Errors
/// As [`compact`], except that a budget too small is reported, not an error.
pub fn analyze(conversation: &Conversation, options: &Options) -> Result<Report> {
    run(conversation.clone(), None, options).map(|(report, _)| report)
}

/// Trims tool rounds alone, with no budget (for use on every turn).
///
/// # Errors
/// [`Error::Invalid`] when the input breaks tool pairing.
pub fn trim_tools(conversation: Conversation, options: &Options) -> Result<Compacted> {
    trim_tools_counted(conversation, None, options)
}

/// [`trim_tools`] for a conversation whose counts are already known, as [`compact_counted`].
pub(crate) fn trim_tools_counted(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<Compacted> {
    let (input, start) = checked_start(conversation, counts, options)?;
    let budget = input.tokens;
    let features = start.measure(budget, &options.thresholds);
    let (trimmed, tool_trim) =
        tools::trim(start, &options.tools, None, options.tokenizer.counter());
    let changed = tool_trim.cleared + tool_trim.dropped + tool_trim.truncated > 0;
    let action = if changed {
        Action::Compacted
    } else {
        Action::WithinBudget
    };
    let outcome = Outcome::new(action, budget, tool_trim, features);
    finish(&input, trimmed, outcome, options)
}

/// Plans `strategy` for a conversation whose counts are already known, without applying it:
/// grouping and planning only, no tokenizing (what runs on every turn once counts are cached).
pub fn plan(
    conversation: &Conversation,
    counts: &tokens::Counts,
    strategy: Strategy,
    budget: usize,
    options: &Options,
) -> strategy::Plan {
    let units = units::group(conversation, counts);
    let limits = Limits {
        budget,
        fixed: counts.system + REPLY_PRIMING,
        marker: 0,
        preserve_start: options.preserve_start,
        preserve_end: options.preserve_end,
    };
    strategy::plan(strategy, &units, &limits)
}

/// What the report needs to know of the input once the pipeline owns its working copy.
struct Input {
    format: crate::format::Format,
    messages: usize,
    tokens: usize,
}

/// Checks the input's pairing and counts it: the starting point of every run.
fn checked_start(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<(Input, Applied)> {
    let problems = validate::check(&conversation);
    if let Some(first) = problems.first() {
        return Err(Error::Invalid {
            first: first.clone(),
            count: problems.len(),
        });
    }
    let counts = counts.unwrap_or_else(|| options.count(&conversation));
    let input = Input {
        format: conversation.format,
        messages: conversation.messages.len(),
        tokens: counts.total(),
    };
    Ok((input, Applied::unchanged(conversation, counts)))
}

/// The shared run of [`compact`] and [`analyze`]: the report, and the output unless it cannot fit.
fn run(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<(Report, Option<Conversation>)> {
    let counter = options.tokenizer.counter();
    let (input, start) = checked_start(conversation, counts, options)?;
    let resolved = options
        .budget
        .resolve(input.tokens, options.profile.context_window)?;
    let budget = resolved.tokens;
    // Nothing can be removed from an empty conversation: it is within any budget.
    let needed = resolved.compact && input.messages > 0;
    // The input's features; the selector measures again after tool trimming.
    let features = start.measure(budget, &options.thresholds);
    if !needed {
        let outcome = Outcome::new(Action::WithinBudget, budget, ToolTrim::default(), features);
        return finish(&input, start, outcome, options).map(|c| (c.report, Some(c.conversation)));
    }
    let tool_options = select::tool_options(&options.policy, &options.tools, input.tokens);
    let (trimmed, tool_trim) = tools::trim(start, &tool_options, Some(budget), counter);
    if trimmed.counts.total() <= budget {
        let outcome = Outcome::new(Action::Compacted, budget, tool_trim, features);
        return finish(&input, trimmed, outcome, options).map(|c| (c.report, Some(c.conversation)));
    }
    let units = units::group(&trimmed.conversation, &trimmed.counts);
    let features = trimmed.measure(budget, &options.thresholds);
    let marker_reserve = if options.marker {
        let worst = marker::removed(trimmed.conversation.messages.len(), input.tokens);
        counter.count_message(&Message::new_text(Role::User, worst)) + MARKER_SLACK
    } else {
        0
    };
    let limits = Limits {
        budget,
        fixed: trimmed.counts.system + REPLY_PRIMING,
        marker: marker_reserve,
        preserve_start: options.preserve_start,
        preserve_end: options.preserve_end,
    };
    let decide = |limits: &Limits| {
        select::decide(
            &options.profile,
            options.strategy,
            &features,
            &options.policy,
            &units,
            limits,
        )
    };
    let (mut decision, mut plan) = decide(&limits);
    let mut marker = options.marker;
    if !plan.fits && limits.marker > 0 {
        // The marker is a courtesy: leave it out rather than fail a budget the units can meet.
        let bare = decide(&Limits {
            marker: 0,
            ..limits
        });
        if bare.1.fits {
            (decision, plan) = bare;
            marker = false;
        }
    }
    let mut outcome = Outcome::new(Action::Compacted, budget, tool_trim, features);
    outcome.decision = Some(decision);
    outcome.relaxed = plan.relaxed;
    if !plan.fits {
        outcome.action = Action::CannotFit;
        outcome.pinned_tokens = Some(plan.tokens_after);
        return Ok((outcome.report(&input, &trimmed, options), None));
    }
    let removed_messages: usize = plan.drop.iter().map(|&u| units[u].messages.len()).sum();
    let removed_tokens: usize = plan.drop.iter().map(|&u| units[u].tokens).sum();
    let text = (marker && !plan.drop.is_empty())
        .then(|| marker::removed(removed_messages, removed_tokens));
    outcome.marker = text.is_some();
    let applied = strategy::apply(trimmed, &units, &plan.drop, text.as_deref(), counter);
    finish(&input, applied, outcome, options).map(|c| (c.report, Some(c.conversation)))
}

/// What a run decided, before it becomes a [`Report`].
struct Outcome {
    action: Action,
    budget: usize,
    tool_trim: ToolTrim,
    features: Features,
    /// The minimum when the plan could not fit; else taken from the output's pinned units.
    pinned_tokens: Option<usize>,
    decision: Option<select::Decision>,
    relaxed: Vec<strategy::Protection>,
    marker: bool,
}

impl Outcome {
    fn new(action: Action, budget: usize, tool_trim: ToolTrim, features: Features) -> Self {
        Self {
            action,
            budget,
            tool_trim,
            features,
            pinned_tokens: None,
            decision: None,
            relaxed: Vec::new(),
            marker: false,
        }
    }

    /// The report of this outcome for `output`, the pipeline's last state.
    fn report(self, input: &Input, output: &Applied, options: &Options) -> Report {
        let finished = self.action != Action::CannotFit;
        let pinned_tokens = self.pinned_tokens.unwrap_or_else(|| {
            let units = units::group(&output.conversation, &output.counts);
            let pinned: usize = units.iter().filter(|u| u.pinned).map(|u| u.tokens).sum();
            pinned + output.counts.system + REPLY_PRIMING
        });
        Report {
            action: self.action,
            format: input.format,
            model: options.model.clone(),
            model_match: options.model_match.clone(),
            tokenizer: options.tokenizer,
            estimator: options.tokenizer.describe(),
            overhead: options.overhead,
            anchor: options.anchor.clone(),
            budget: self.budget,
            tokens_before: input.tokens,
            tokens_after: if finished {
                output.counts.total()
            } else {
                input.tokens
            },
            messages_before: input.messages,
            messages_after: if finished {
                output.conversation.messages.len()
            } else {
                input.messages
            },
            removed: if finished {
                output.removed(input.messages)
            } else {
                Vec::new()
            },
            pinned_tokens,
            features: self.features,
            profile: options.profile.clone(),
            decision: self.decision,
            relaxed: self.relaxed,
            marker: self.marker,
            tool_trim: self.tool_trim,
        }
    }
}

/// The last checks before output — valid pairing, never more tokens than the input nor, when
/// compacted, than the budget — then the report.
fn finish(
    input: &Input,
    output: Applied,
    outcome: Outcome,
    options: &Options,
) -> Result<Compacted> {
    // The input was valid and the budget was planned for: a failure here is the engine's.
    let problems = validate::check(&output.conversation);
    if let Some(first) = problems.first() {
        return Err(Error::Engine {
            what: format!(
                "the output fails validation ({} problems; first, in output indices: {first})",
                problems.len()
            ),
        });
    }
    let after = output.counts.total();
    if after > input.tokens {
        return Err(Error::Engine {
            what: format!(
                "the output has {after} tokens, more than the input's {}",
                input.tokens
            ),
        });
    }
    if outcome.action == Action::Compacted && after > outcome.budget {
        return Err(Error::Engine {
            what: format!(
                "the output has {after} tokens, above the planned budget of {}",
                outcome.budget
            ),
        });
    }
    let report = outcome.report(input, &output, options);
    Ok(Compacted {
        conversation: output.conversation,
        report,
    })
}
