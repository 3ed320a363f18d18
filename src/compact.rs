//! The pipeline: count → check → budget → trim tools → group → measure → select → apply → check.
//!
//! Guards: a conversation already within budget comes back unchanged; the output never has more
//! tokens than the input; the output is validated before it is returned; when even the pinned
//! units exceed the budget, nothing is returned but [`Error::BudgetTooSmall`].

use crate::budget::Budget;
use crate::catalog::{Catalog, Profile};
use crate::classify;
use crate::conversation::{Conversation, Layout, Message, Part, Role};
use crate::error::{Error, Result};
use crate::features::{Features, Thresholds};
use crate::format::RecordedUsage;
pub use crate::marker::MarkerMode;
use crate::marker::{self, DigestCap};
use crate::parallel;
use crate::report::{Action, HarnessMessage, MarkerNote, Report, Shortened, Step};
use crate::select::{self, Policy};
use crate::strategy::tools::{self, ToolMode, ToolOptions, ToolTrim};
use crate::strategy::{self, Applied, Discarded, Limits, Plan, Source, Strategy};
use crate::tokens::{self, Memo, REPLY_PRIMING, TokenCounter, Tokenizer};
use crate::units::{self, Unit};
use crate::validate;

/// Middle removal keeps this many non-system units at the head (DESIGN §6: the task and what
/// answered it).
pub(crate) const PRESERVE_START: usize = 2;
/// Units kept at the tail while the budget allows (DESIGN §6).
pub(crate) const PRESERVE_END: usize = 4;
/// Tokens added to the markers' reserve: an Anthropic marker merged into the next message is
/// recounted with that message, which may differ from its count alone by a few tokens.
const MARKER_SLACK: usize = 4;
/// A shortened task keeps at least this many characters: with fewer, it no longer states the
/// task (the bench's requests recall reads the first 200 characters too).
const MIN_TASK_CHARS: usize = 200;
/// Messages from which a conversation's pairing check runs on a thread of its own, beside the
/// classification of the input's requests or the making of the output's report (each takes
/// about 0.3 µs a message).
const PARALLEL_CHECK_MESSAGES: usize = 1_000;
/// Times a plan is redone with the markers' actual size as its reserve (the size depends on
/// which units go; two or three rounds settle it).
const MARKER_ROUNDS: usize = 4;

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
    /// When given (not 0), it is what is outside the messages, and `anchor` is not used.
    pub overhead: usize,
    /// The size a provider reported for an earlier call on this conversation (the request
    /// held the messages before `anchor.message`): what it held beyond the estimate of those
    /// messages (never less than 0) is then the overhead, counted like `overhead` — in the
    /// input, the budget, the report and so in every output, which carries no anchor of its
    /// own. Not used when `overhead` is given.
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
            marker: MarkerMode::Digest,
            digest_tokens: None,
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

    /// Counts a conversation's messages once with the tokenizer, then adds the overhead
    /// ([`Options::overhead`], or what the anchor measured: see [`Options::anchor`]).
    pub fn count(&self, conversation: &Conversation) -> tokens::Counts {
        let mut counts = self.tokenizer.count(conversation);
        counts.system += self.outside(&counts);
        counts
    }

    /// The overhead added to `counts` (the tokenizer's, before any is added): the one given,
    /// else the tokens the anchor's reported size holds beyond the estimate of what it held.
    fn outside(&self, counts: &tokens::Counts) -> usize {
        match &self.anchor {
            Some(anchor) if self.overhead == 0 && anchor.message <= counts.messages.len() => {
                let before: usize = counts.messages[..anchor.message].iter().sum();
                anchor.input_tokens.saturating_sub(counts.system + before)
            }
            _ => self.overhead,
        }
    }

    /// The anchor the counts use, if any.
    fn used_anchor(&self) -> Option<&RecordedUsage> {
        self.anchor.as_ref().filter(|_| self.overhead == 0)
    }
}

/// A compacted conversation and the account of how.
#[derive(Debug, Clone)]
pub struct Compacted {
    /// The output conversation (the input, unchanged, when within budget).
    pub conversation: Conversation,
    /// What was done and why.
    pub report: Report,
    /// For each output message, the index of the input message it is, exactly as read; `None`
    /// for a marker or a message that was changed. A caller holding the input's own data can
    /// reuse it for these messages instead of rendering them again.
    pub unchanged: Vec<Option<usize>>,
    /// What compaction took out of the input: held only to be freed with this result.
    _discarded: Discarded,
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
    match run(conversation, counts, options)? {
        Run::Done(compacted) => Ok(*compacted),
        Run::CannotFit(report) => Err(Error::BudgetTooSmall {
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
    run(conversation.clone(), None, options).map(|run| match run {
        Run::Done(compacted) => compacted.report,
        Run::CannotFit(report) => *report,
    })
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
    let (trimmed, tool_trim) = tools::trim(start, &options.tools, None, options.tokenizer);
    let changed = tool_trim.cleared + tool_trim.dropped + tool_trim.truncated > 0;
    let action = if changed {
        Action::Compacted
    } else {
        Action::WithinBudget
    };
    let outcome = Outcome::new(action, budget, tool_trim, features);
    finish(&input, trimmed, outcome, options)
}

/// What the report needs to know of the input once the pipeline owns its working copy.
struct Input {
    format: crate::format::Format,
    /// The overhead counted in: the one given, or what the anchor measured.
    overhead: usize,
    messages: usize,
    tokens: usize,
    /// Each input message's tokens: markers count what they replace in these.
    counts: Vec<usize>,
    /// The input messages that are harness text.
    harness: Vec<HarnessMessage>,
    /// The input index of the task (the first request).
    task: Option<usize>,
    /// The input index of the current request (the last request).
    current: Option<usize>,
}

/// Counts the input and checks its pairing: the starting point of every run. The check and
/// the classification of requests follow the count, beside each other: run beside the count
/// instead, their walk through the whole conversation slowed the tokenizer by more than they
/// took (10k messages: +10 ms against +4 ms after it, medians of 21).
fn checked_start(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<(Input, Applied)> {
    let (counts, overhead) = if let Some(counts) = counts {
        (counts, options.overhead)
    } else {
        let mut counts = options.tokenizer.count(&conversation);
        let overhead = options.outside(&counts);
        counts.system += overhead;
        (counts, overhead)
    };
    let apart = conversation.messages.len() >= PARALLEL_CHECK_MESSAGES;
    let (problems, (requests, harness)) = parallel::beside(
        apart,
        || validate::check(&conversation),
        || {
            (
                classify::requests(&conversation),
                classify::harness(&conversation),
            )
        },
    );
    if let Some(first) = problems.first() {
        return Err(Error::Invalid {
            first: first.clone(),
            count: problems.len(),
        });
    }
    let input = Input {
        format: conversation.format,
        overhead,
        messages: conversation.messages.len(),
        tokens: counts.total(),
        counts: counts.messages.clone(),
        harness: harness
            .into_iter()
            .map(|(message, agent, pattern)| HarnessMessage {
                message,
                agent,
                pattern,
            })
            .collect(),
        task: requests.first().copied(),
        current: requests.last().copied(),
    };
    Ok((input, Applied::unchanged(conversation, counts)))
}

/// How a run of the pipeline ended.
enum Run {
    /// Within budget, or compacted to it.
    Done(Box<Compacted>),
    /// Even the pinned units exceed the budget: the report of what was tried.
    CannotFit(Box<Report>),
}

/// The shared run of [`compact`] and [`analyze`]: the output, or the report when it cannot fit.
///
/// Under a tight budget it degrades in a fixed order, naming each step in the report: clear old
/// rounds' outputs → remove units by the chosen strategy → clear outputs inside the protected
/// recent rounds (not the last round) → relax the head, then the tail → shorten the task →
/// cannot fit.
fn run(
    conversation: Conversation,
    counts: Option<tokens::Counts>,
    options: &Options,
) -> Result<Run> {
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
        let rounds = tools::count_rounds(&start.conversation, &options.tools);
        let outcome = Outcome::new(Action::WithinBudget, budget, rounds, features);
        return finish(&input, start, outcome, options)
            .map(|compacted| Run::Done(Box::new(compacted)));
    }
    let tool_options = select::tool_options(&options.policy, &options.tools, input.tokens);
    let (mut state, mut tool_trim) =
        tools::trim(start, &tool_options, Some(budget), options.tokenizer);
    let mut steps = Vec::new();
    if tool_trim.cleared + tool_trim.dropped + tool_trim.truncated > 0 {
        steps.push(Step::ClearOldOutputs);
    }
    if state.counts.total() <= budget {
        let mut outcome = Outcome::new(Action::Compacted, budget, tool_trim, features);
        outcome.steps = steps;
        return finish(&input, state, outcome, options)
            .map(|compacted| Run::Done(Box::new(compacted)));
    }
    let cap = options
        .digest_tokens
        .map_or_else(|| DigestCap::default_for(budget), DigestCap::fixed);
    let planner = Planner {
        options,
        budget,
        cap,
        input: &input,
        counter: Memo::new(options.tokenizer.counter()),
    };
    let mut attempt = planner.attempt(&state, false);
    steps.push(Step::RemoveUnits);
    if !attempt.fits && options.tools.mode != ToolMode::Off {
        let recent = ToolOptions {
            mode: ToolMode::Clear,
            keep: 1,
            ..options.tools.clone()
        };
        let (cleared, more) = tools::trim(state, &recent, None, options.tokenizer);
        state = cleared;
        if more.cleared > 0 {
            steps.push(Step::ClearRecentOutputs);
            tool_trim.cleared += more.cleared;
            tool_trim.tokens_freed += more.tokens_freed;
            attempt = planner.attempt(&state, false);
        }
    }
    if !attempt.fits {
        attempt = planner.attempt(&state, true);
    }
    let mut shortened = None;
    if !attempt.fits {
        if let Some((shorter, cut)) = planner.shorten_task(&state, &attempt) {
            let retry = planner.attempt(&shorter, true);
            if retry.fits {
                state = shorter;
                attempt = retry;
                shortened = Some(cut);
            }
        }
    }
    for protection in &attempt.plan.relaxed {
        steps.push(match protection {
            strategy::Protection::Head => Step::RelaxHead,
            strategy::Protection::Tail => Step::RelaxTail,
        });
    }
    if shortened.is_some() {
        steps.push(Step::ShortenTask);
    }
    let mut outcome = Outcome::new(Action::Compacted, budget, tool_trim, attempt.features);
    outcome.decision = Some(attempt.decision);
    outcome.relaxed.clone_from(&attempt.plan.relaxed);
    outcome.steps = steps;
    outcome.shortened = shortened;
    if !attempt.fits {
        outcome.action = Action::CannotFit;
        outcome.steps.push(Step::CannotFit);
        outcome.pinned_tokens = Some(attempt.tokens_after);
        return Ok(Run::CannotFit(Box::new(
            outcome.report(&input, &state, options),
        )));
    }
    outcome.marker = !attempt.markers.is_empty();
    outcome.marker_mode = attempt.mode;
    outcome.markers = attempt.notes;
    let applied = strategy::apply(
        state,
        &attempt.units,
        &attempt.plan.drop,
        &attempt.markers,
        &planner.counter,
    );
    finish(&input, applied, outcome, options).map(|compacted| Run::Done(Box::new(compacted)))
}

/// One plan of a state, with its markers.
struct Attempt {
    units: Vec<Unit>,
    features: Features,
    decision: select::Decision,
    plan: Plan,
    /// One marker per removed span, in order (none in [`MarkerMode::None`]).
    markers: Vec<String>,
    /// What each marker stands for, for the report.
    notes: Vec<MarkerNote>,
    /// The marker mode the markers were built in (a lesser one when the asked one cannot fit).
    mode: MarkerMode,
    /// Tokens after removal, the markers included.
    tokens_after: usize,
    /// Tokens the digests took beyond their headers' reserve.
    digest_tokens: usize,
    /// Tokens of the kept units alone, without the markers.
    kept_tokens: usize,
    /// Removed requests the markers do not name.
    unnamed: usize,
    /// Files named in the removed units' calls that the markers do not name.
    unnamed_files: usize,
    fits: bool,
}

/// What every attempt of one run shares.
struct Planner<'a> {
    options: &'a Options,
    budget: usize,
    cap: DigestCap,
    input: &'a Input,
    /// The tokenizer's counter, remembering what it counted: attempts count the same digest
    /// items and markers again, and each is tokenized once.
    counter: Memo<'a>,
}

impl Planner<'_> {
    /// Plans `state` (relaxing protections or not) with real markers. Each removed span costs
    /// its marker's header, and the digests together an allowance: first one cap, then what the
    /// digests of the last plan actually took, until the two agree (each digest stays within
    /// the cap). When the asked marker cannot fit, a digest gives way to a brief marker, and a
    /// brief marker to none: the units come first.
    ///
    /// Requests are kept whole where they can be: a plan that removes units around the requests
    /// and none of them is taken when it fits, unless the plain plan (removal oldest first, the
    /// removed requests in the digest) names them all with fewer markers.
    fn attempt(&self, state: &Applied, relax: bool) -> Attempt {
        let units = units::group(&state.conversation, &state.counts);
        let features = state.measure(self.budget, &self.options.thresholds);
        let around = self.attempt_with(state, &units, &features, relax, true);
        let spares_requests = around
            .plan
            .drop
            .iter()
            .all(|&u| !around.units[u].has_request);
        let plain = self.attempt_with(state, &units, &features, relax, false);
        // Kept whole is better than named in a digest, unless the plain plan names every
        // removed request with fewer markers: one digest reads better than a note in every gap.
        let plain_reads_better = plain.fits
            && plain.unnamed == 0
            && plain.unnamed_files <= around.unnamed_files
            && plain.markers.len() < around.markers.len();
        if around.fits && spares_requests && !plain_reads_better {
            return around;
        }
        plain
    }

    /// [`Planner::attempt`] with requests removed last or not.
    fn attempt_with(
        &self,
        state: &Applied,
        units: &[Unit],
        features: &Features,
        relax: bool,
        requests_last: bool,
    ) -> Attempt {
        let modes: &[MarkerMode] = match self.options.marker {
            MarkerMode::Digest => &[MarkerMode::Digest, MarkerMode::Brief, MarkerMode::None],
            MarkerMode::Brief => &[MarkerMode::Brief, MarkerMode::None],
            MarkerMode::None => &[MarkerMode::None],
        };
        let flags = (relax, requests_last);
        let mut last = None;
        let mut found = None;
        for &mode in modes {
            // The removed requests' share of the digests is not known before the plan: start
            // from the other sections' cap, and follow what the digests take.
            let cap = (self.cap, self.cap.rest);
            let Some(best) = self.settle(state, units, features, flags, mode, cap, &mut last)
            else {
                continue;
            };
            if mode == MarkerMode::Brief && self.options.marker == MarkerMode::Digest {
                // The digest did not fit at its cap: give it the room the brief markers leave.
                let spare = self.budget.saturating_sub(best.tokens_after);
                let extra = self.header_tokens(MarkerMode::Digest) - self.header_tokens(mode);
                let cap =
                    spare.saturating_sub(extra * best.markers.len()) / best.markers.len().max(1);
                let smaller = (cap > 0)
                    .then(|| {
                        let cap = (DigestCap::fixed(cap), cap);
                        self.settle(
                            state,
                            units,
                            features,
                            flags,
                            MarkerMode::Digest,
                            cap,
                            &mut None,
                        )
                    })
                    .flatten();
                if let Some(smaller) = smaller.filter(|s| s.plan.drop.len() <= best.plan.drop.len())
                {
                    found = Some(smaller);
                    break;
                }
            }
            found = Some(best);
            break;
        }
        let Some(found) = found else {
            return last.expect("at least one marker mode is tried");
        };
        if found.unnamed == 0 || self.options.marker != MarkerMode::Digest {
            return found;
        }
        // Some removed requests went unnamed: removing more units, to give the digest the room
        // they need, is better than losing them.
        // The protected head and tail may go too: their requests are named in the digest.
        match self.roomier(state, units, features, (true, flags.1)) {
            Some(roomier) if roomier.unnamed < found.unnamed => roomier,
            _ => found,
        }
    }

    /// The plan that gives the digests the most room the budget allows (within the cap):
    /// every unit that may go goes. `None` when there is no room for a digest at all.
    fn roomier(
        &self,
        state: &Applied,
        units: &[Unit],
        features: &Features,
        flags: (bool, bool),
    ) -> Option<Attempt> {
        let each = self.header_tokens(MarkerMode::Digest);
        let probe = self.once(
            state,
            units,
            features,
            flags,
            (MarkerMode::Digest, DigestCap::fixed(0)),
            self.budget,
        );
        let room = self
            .budget
            .checked_sub(probe.kept_tokens + probe.markers.len() * each + MARKER_SLACK)?
            / probe.markers.len().max(1);
        if room == 0 {
            return None;
        }
        let room = room.min(self.cap.total);
        let cap = (DigestCap::fixed(room), room * probe.markers.len());
        self.settle(
            state,
            units,
            features,
            flags,
            MarkerMode::Digest,
            cap,
            &mut None,
        )
    }

    /// Plans with markers of `mode` whose digests stay within `cap`, reserving for the digests
    /// first one cap, then what the digests of the last plan took, until the two agree; the best
    /// plan that fits, if any (the last that did not is kept in `last`).
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &self,
        state: &Applied,
        units: &[Unit],
        features: &Features,
        (relax, requests_last): (bool, bool),
        mode: MarkerMode,
        (cap, start): (DigestCap, usize),
        last: &mut Option<Attempt>,
    ) -> Option<Attempt> {
        let mut allowance = if mode == MarkerMode::Digest { start } else { 0 };
        let mut best: Option<Attempt> = None;
        for _ in 0..MARKER_ROUNDS {
            let attempt = self.once(
                state,
                units,
                features,
                (relax, requests_last),
                (mode, cap),
                allowance,
            );
            let used = attempt.digest_tokens;
            let fits = attempt.fits;
            if fits {
                // Fewer requests left unnamed, fewer units removed, then more of the budget used.
                let key = |a: &Attempt| {
                    (
                        std::cmp::Reverse(a.unnamed),
                        std::cmp::Reverse(a.plan.drop.len()),
                        a.tokens_after,
                    )
                };
                if best.as_ref().is_none_or(|b| key(&attempt) > key(b)) {
                    best = Some(attempt);
                }
            } else {
                *last = Some(attempt);
            }
            if used == allowance {
                break;
            }
            // Growing digests (more units removed, more requests to name) are met a little
            // ahead, so that the rounds settle on a plan that fits.
            allowance = if used > allowance && !fits {
                used + (used - allowance) / 2
            } else {
                used
            };
        }
        best
    }

    /// Tokens of the longest marker without its digest this run could write.
    fn header_tokens(&self, mode: MarkerMode) -> usize {
        let worst = marker::worst_header(
            self.input.messages,
            self.input.tokens,
            mode == MarkerMode::Digest,
        );
        self.counter
            .count_message(&Message::new_text(Role::User, worst))
            + MARKER_SLACK
    }

    /// One plan with `allowance` tokens set aside for all digests together, and its markers.
    fn once(
        &self,
        state: &Applied,
        units: &[Unit],
        features: &Features,
        (relax, requests_last): (bool, bool),
        (mode, cap): (MarkerMode, DigestCap),
        allowance: usize,
    ) -> Attempt {
        let each = match mode {
            MarkerMode::None => 0,
            _ => self.header_tokens(mode),
        };
        let limits = Limits {
            budget: self.budget,
            fixed: state.counts.system + REPLY_PRIMING,
            marker: allowance,
            marker_each: each,
            preserve_start: self.options.preserve_start,
            preserve_end: self.options.preserve_end,
            relax,
            requests_last,
        };
        let (decision, plan) = select::decide(
            &self.options.profile,
            self.options.strategy,
            features,
            &self.options.policy,
            units,
            &limits,
        );
        let spans = strategy::spans(&plan.drop);
        let mut markers = Vec::new();
        let mut notes = Vec::new();
        let mut digest_tokens = 0;
        let mut unnamed = 0;
        let mut unnamed_files = 0;
        for span in &spans {
            let messages = units[span.start].messages.start..units[span.end - 1].messages.end;
            let input_tokens: Vec<Option<usize>> = state.origin[messages.clone()]
                .iter()
                .map(|o| o.input().map(|i| self.input.counts[i]))
                .collect();
            let Some((text, left_out)) = marker::build(
                mode,
                &state.conversation.messages[messages.clone()],
                &input_tokens,
                cap,
                &self.counter,
            ) else {
                unnamed += units[span.clone()].iter().filter(|u| u.has_request).count();
                continue;
            };
            unnamed += left_out[0];
            unnamed_files += left_out[1];
            let tokens = self
                .counter
                .count_message(&Message::new_text(Role::User, text.as_str()));
            digest_tokens += (tokens + MARKER_SLACK).saturating_sub(each);
            notes.push(MarkerNote {
                removed: messages.len(),
                tokens,
            });
            markers.push(text);
        }
        let reserved = if spans.is_empty() {
            0
        } else {
            spans.len() * each + allowance
        };
        let marker_tokens: usize = notes.iter().map(|n| n.tokens).sum();
        let kept_tokens = plan.tokens_after - reserved;
        let tokens_after = kept_tokens + marker_tokens;
        let slack = MARKER_SLACK.min(marker_tokens);
        let fits = plan.fits && tokens_after + slack <= self.budget;
        Attempt {
            units: units.to_vec(),
            features: features.clone(),
            decision,
            plan,
            markers,
            notes,
            mode,
            tokens_after,
            digest_tokens,
            kept_tokens,
            unnamed,
            unnamed_files,
            fits,
        }
    }

    /// The state with its task shortened — its head and tail kept, the cut named in the text —
    /// by about what `attempt` is over the budget; `None` when the task cannot be shortened (it
    /// is the current request too, or has no text of its own). Returns the characters
    /// before and after.
    fn shorten_task(&self, state: &Applied, attempt: &Attempt) -> Option<(Applied, Shortened)> {
        let unit = attempt.units.iter().find(|u| u.is_task && !u.is_current)?;
        let index = unit
            .messages
            .clone()
            .find(|&i| classify::author(&state.conversation.messages[i]).is_some())?;
        let message = &state.conversation.messages[index];
        let (part, text) = message
            .parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Part::Text { text, .. } => Some((i, text)),
                _ => None,
            })
            .max_by_key(|(i, t)| (t.len(), std::cmp::Reverse(*i)))?;
        let chars = text.chars().count();
        let text_tokens = self.counter.count_text(text).max(1);
        let over = attempt.tokens_after.saturating_sub(self.budget);
        let note = self.counter.count_text(&marker::shortened(chars, chars));
        let need = over + note + MARKER_SLACK;
        if need >= text_tokens {
            return None;
        }
        // Characters per token of this text, rounded up, and a little more than needed.
        let cut = (need * chars).div_ceil(text_tokens) * 11 / 10 + 1;
        if cut + MIN_TASK_CHARS > chars {
            return None;
        }
        let keep = chars - cut;
        // Two thirds head, one third tail, and never fewer than the first MIN_TASK_CHARS.
        let head_len = (keep * 2 / 3).max(MIN_TASK_CHARS).min(keep);
        let head: String = text.chars().take(head_len).collect();
        let tail: String = text.chars().skip(chars - (keep - head_len)).collect();
        let shortened = format!("{head}\n{}\n{tail}", marker::shortened(cut, chars));
        let mut shorter = Applied {
            conversation: state.conversation.clone(),
            counts: state.counts.clone(),
            origin: state.origin.clone(),
            discarded: Discarded::default(),
        };
        let target = &mut shorter.conversation.messages[index];
        if let Part::Text { text, .. } = &mut target.parts[part] {
            *text = shortened;
        }
        if target.layout == Layout::Null || target.layout == Layout::Absent {
            target.layout = Layout::Text;
        }
        shorter.counts.messages[index] = self.counter.count_message(target);
        shorter.origin[index] = shorter.origin[index].edited();
        let report = Shortened {
            message: state.origin[index].input(),
            chars_before: chars,
            chars_after: shorter_chars(&shorter.conversation.messages[index], part),
        };
        Some((shorter, report))
    }
}

/// The characters of part `part` of `message`.
fn shorter_chars(message: &Message, part: usize) -> usize {
    match &message.parts[part] {
        Part::Text { text, .. } => text.chars().count(),
        _ => 0,
    }
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
    marker_mode: MarkerMode,
    markers: Vec<MarkerNote>,
    steps: Vec<Step>,
    shortened: Option<Shortened>,
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
            marker_mode: MarkerMode::None,
            markers: Vec::new(),
            steps: Vec::new(),
            shortened: None,
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
            overhead: input.overhead,
            anchor: options.used_anchor().cloned(),
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
            rules: select::verdicts(&self.features, &options.policy),
            features: self.features,
            profile: options.profile.clone(),
            decision: self.decision,
            relaxed: self.relaxed,
            marker: self.marker,
            marker_mode: self.marker_mode,
            markers: self.markers,
            steps: self.steps,
            task_shortened: self.shortened,
            task: input.task,
            current: input.current,
            harness: input.harness.clone(),
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
    // The input was valid and the budget was planned for: a failure here is the engine's. The
    // report is made meanwhile: both read the output alone.
    let apart = output.conversation.messages.len() >= PARALLEL_CHECK_MESSAGES;
    let (problems, report) = parallel::beside(
        apart,
        || validate::check(&output.conversation),
        || outcome.report(input, &output, options),
    );
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
    if report.action == Action::Compacted && after > report.budget {
        return Err(Error::Engine {
            what: format!(
                "the output has {after} tokens, above the planned budget of {}",
                report.budget
            ),
        });
    }
    let unchanged = output
        .origin
        .iter()
        .map(|source| match source {
            Source::Input(index) => Some(*index),
            Source::Edited(_) | Source::Marker => None,
        })
        .collect();
    Ok(Compacted {
        conversation: output.conversation,
        report,
        unchanged,
        _discarded: output.discarded,
    })
}
