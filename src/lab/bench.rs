//! The bench: every way of compacting, run over a set of conversations, scored the same way.
//!
//! A [`Bench`] takes conversations one at a time. For each, it resolves one token budget and
//! runs every [`Contender`] against it: the two strategies forced (`oldest`, `middle`), the
//! selector (`auto`), tool trimming alone (`tools`), the default pipeline (`default`: tool
//! trimming, then the selector), and `naive`, the baseline that drops the oldest messages one
//! by one as simple trimmers do. Each output is recounted and checked with [`check`]
//! independently of what the engine reports, and the bench keeps one [`Row`] of figures per
//! contender. A result that cannot fit counts as the input unchanged: valid, but not fitting.
//! Conversations may be added from named sources (real recordings, generated data): the rows
//! are kept per source as well as over all of them, so that figures of different kinds of data
//! need not be pooled.
//!
//! Each conversation is also cut before model calls ([`next::cuts`]), and every contender
//! compacts each prefix at the same budget rule: the `next %` figure is the share of the
//! references the next assistant messages use, held only in the prefix's removable history,
//! that the output still holds ([`next::pending`]).
//!
//! Every figure is deterministic except the timings, which are the only reason this module reads
//! a clock; they never influence an output.

use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::catalog::Profile;
use crate::digest;
use crate::note::Place;
use crate::select::efficiency;
use crate::{
    Budget, Compacted, Conversation, Counts, Error, MarkerMode, Options, Result, Role, Strategy,
    Tokenizer, ToolMode, ToolOptions, compact, trim_tools, validate as check,
};

use super::next::{self, NEXT_MESSAGES, Pending};
use super::recall::{
    LookedFor, NAMED_CHARS, RECALL_CHARS, Recall, first_chars, removed_evidence, searchable,
};

/// One of the six ways of compacting that the bench compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Contender {
    /// Oldest removal, forced; tool trimming off.
    Oldest,
    /// Middle removal, forced; tool trimming off.
    Middle,
    /// The selector's choice; tool trimming off.
    Auto,
    /// Tool trimming alone ([`trim_tools`]), default tool options.
    Tools,
    /// The default pipeline ([`compact`]): tool trimming, then the selector.
    Default,
    /// The `naive` baseline: oldest messages first, ignoring units.
    Naive,
}

impl Contender {
    /// Every contender, in the order the bench reports them.
    pub const ALL: [Self; 6] = [
        Self::Oldest,
        Self::Middle,
        Self::Auto,
        Self::Tools,
        Self::Default,
        Self::Naive,
    ];

    /// The contender's name as the bench prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Oldest => "oldest",
            Self::Middle => "middle",
            Self::Auto => "auto",
            Self::Tools => "tools",
            Self::Default => "default",
            Self::Naive => "naive",
        }
    }

    /// The library options this contender runs with (not used by [`Contender::Naive`]):
    /// `base` at `budget` tokens; `oldest`, `middle` and `auto` turn tool trimming off, the first
    /// two force their strategy, and `auto` lets the selector choose.
    fn options(self, budget: usize, base: &Options) -> Options {
        let base = Options {
            budget: Budget::Tokens(budget),
            ..base.clone()
        };
        let off = ToolOptions {
            mode: ToolMode::Off,
            ..ToolOptions::default()
        };
        match self {
            Self::Oldest | Self::Middle => Options {
                strategy: Some(if self == Self::Oldest {
                    Strategy::Oldest
                } else {
                    Strategy::Middle
                }),
                tools: off,
                ..base
            },
            Self::Auto => Options {
                strategy: None,
                tools: off,
                ..base
            },
            Self::Tools | Self::Default | Self::Naive => base,
        }
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The output of the `naive` baseline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Naive {
    /// What is left: the input less the dropped messages, which may break tool pairing.
    pub conversation: Conversation,
    /// For each input message, whether it was kept.
    pub kept: Vec<bool>,
    /// Tokens of what is left, from the cached counts.
    pub tokens: usize,
}

/// The baseline: drops the oldest non-system messages one at a time, ignoring units, until the
/// count fits `budget` or nothing but system messages is left.
///
/// This is what simple trimmers do, and why they fail: it drops a tool call and keeps its
/// results, or the other way round. It exists to be compared against, never to be used.
pub(crate) fn naive(conversation: &Conversation, counts: &Counts, budget: usize) -> Naive {
    let messages = &conversation.messages;
    let mut kept = vec![true; messages.len()];
    let mut tokens = counts.total();
    for (index, message) in messages.iter().enumerate() {
        if tokens <= budget {
            break;
        }
        if message.role != Role::System {
            kept[index] = false;
            tokens -= counts.messages[index];
        }
    }
    let mut output = conversation.clone();
    output.messages = messages
        .iter()
        .zip(&kept)
        .filter(|(_, keep)| **keep)
        .map(|(message, _)| message.clone())
        .collect();
    Naive {
        conversation: output,
        kept,
        tokens,
    }
}

/// Something a contender did that the bench did not expect of a valid input.
#[derive(Debug)]
pub enum ContenderFault {
    /// The engine returned an error other than "cannot fit".
    Error {
        /// Who failed.
        contender: Contender,
        /// The error.
        error: Error,
    },
    /// The report's token count differs from a recount of the output.
    Miscounted {
        /// Whose report.
        contender: Contender,
        /// Tokens after, as reported.
        reported: usize,
        /// Tokens after, recounted.
        measured: usize,
    },
}

impl fmt::Display for ContenderFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Error { contender, error } => write!(f, "{contender}: {error}"),
            Self::Miscounted {
                contender,
                reported,
                measured,
            } => write!(
                f,
                "{contender}: the report says {reported} tokens after, the output counts {measured}"
            ),
        }
    }
}

/// One contender's figures over the conversations the bench has seen from one source, or from
/// all of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The contender.
    pub strategy: Contender,
    /// The source the conversations came from, as given to [`Bench::add_from`]; `all` for the
    /// rows over every source.
    pub source: String,
    /// Conversations run.
    pub conversations: usize,
    /// Percentage of outputs within the budget.
    pub fit_pct: f64,
    /// Percentage of outputs with no pairing or placement problem.
    pub valid_pct: f64,
    /// Mean efficiency score (see `efficiency`).
    pub efficiency: f64,
    /// Mean tokens after ÷ budget, over the outputs within the budget (those of `fit_pct`):
    /// how much of the room given is used where the budget is met.
    pub utilization: f64,
    /// Mean percentage of user turns kept.
    pub user_kept_pct: f64,
    /// Percentage of conversations whose task (the first request) survives verbatim.
    pub task_kept_pct: f64,
    /// Percentage of conversations whose current request (the last request) survives verbatim.
    pub current_kept_pct: f64,
    /// Percentage of removed requests whose first 200 characters are in the output.
    pub requests_recall_pct: f64,
    /// Percentage of removed requests whose first 40 characters are in the output: those still
    /// named.
    pub named_recall_pct: f64,
    /// [`Row::named_recall_pct`] over the runs with room: those whose budget, less the pinned
    /// tokens, leaves at least [`ROOM_PER_REQUEST`] tokens per removed request.
    pub named_with_room_pct: f64,
    /// Runs without that room (tight), counted apart.
    pub tight_runs: usize,
    /// Percentage of the imperative sentences of removed requests (must, never, always, don't,
    /// do not, make sure, avoid: see `imperatives`) found verbatim in the output.
    pub standing_kept_pct: f64,
    /// Percentage of the user messages carrying an instruction file (AGENTS.md, CLAUDE.md,
    /// GEMINI.md: see `is_instruction_file`) found verbatim in the output.
    pub instruction_files_kept_pct: f64,
    /// Percentage of the identifiers a person or a tool call wrote in removed messages (in the
    /// requests, harness blocks left out, and the tool calls' arguments: words mixing letters
    /// and digits, long numbers, e-mail addresses, versions; see `identifier_words`) that appear
    /// in the output: the figure.
    pub identifiers_recall_pct: f64,
    /// [`Row::identifiers_recall_pct`] over every removed text: harness messages and tool
    /// results too.
    pub all_identifiers_recall_pct: f64,
    /// Percentage of the paths named in removed tool calls that appear in the output.
    pub files_recall_pct: f64,
    /// Percentage of the removed results' error lines that appear in the output.
    pub errors_recall_pct: f64,
    /// Percentage of the references the next assistant messages after each cut use, held only
    /// in removable history before it ([`next::pending`]), that the compacted prefix holds:
    /// pooled over the cuts whose compaction fits, as the other recall figures count the
    /// compactions that fit; `None` when no reference was looked up (no cut, or none that fit).
    pub next_pct: Option<f64>,
    /// Cuts made ([`next::cuts`]).
    pub next_cuts: usize,
    /// References to look up over those cuts.
    pub next_references: usize,
    /// Those the outputs hold: `next_pct` of the references of the cuts that fit, and of all
    /// `next_references` when a cut that cannot fit counts as losing its references.
    pub next_found: usize,
    /// Cuts holding references whose prefix could not be compacted to its budget: left out of
    /// `next_pct`.
    pub next_unfit: usize,
    /// Mean wall time per conversation, in milliseconds.
    pub ms_per_conversation: f64,
}

/// Tokens per removed request a run needs, besides the pinned tokens, to name each one in its
/// digest (the figure: a 40-character short form is about 10 tokens, its bullet and
/// line break 2, the marker's frame the rest).
pub const ROOM_PER_REQUEST: usize = 14;

/// Adds `other`'s counts to `mine`.
fn merge_recall(mine: &mut Recall, other: Recall) {
    mine.found += other.found;
    mine.removed += other.removed;
}

/// Running sums for one contender.
#[derive(Debug, Clone, Default)]
struct Tally {
    conversations: usize,
    fit: usize,
    valid: usize,
    efficiency: f64,
    utilization: f64,
    user_kept: f64,
    task_kept: usize,
    current_kept: usize,
    requests: Recall,
    named: Recall,
    named_with_room: Recall,
    tight: usize,
    standing: Recall,
    instruction_files: Recall,
    identifiers: Recall,
    all_identifiers: Recall,
    files: Recall,
    errors: Recall,
    next: Recall,
    next_cuts: usize,
    next_references: usize,
    next_unfit: usize,
    elapsed: Duration,
}

impl Tally {
    /// Adds `other`'s sums to these.
    fn merge(&mut self, other: &Self) {
        self.conversations += other.conversations;
        self.fit += other.fit;
        self.valid += other.valid;
        self.efficiency += other.efficiency;
        self.utilization += other.utilization;
        self.user_kept += other.user_kept;
        self.task_kept += other.task_kept;
        self.current_kept += other.current_kept;
        self.tight += other.tight;
        self.next_cuts += other.next_cuts;
        self.next_references += other.next_references;
        self.next_unfit += other.next_unfit;
        for (mine, theirs) in [
            (&mut self.requests, other.requests),
            (&mut self.named, other.named),
            (&mut self.named_with_room, other.named_with_room),
            (&mut self.standing, other.standing),
            (&mut self.instruction_files, other.instruction_files),
            (&mut self.identifiers, other.identifiers),
            (&mut self.all_identifiers, other.all_identifiers),
            (&mut self.files, other.files),
            (&mut self.errors, other.errors),
            (&mut self.next, other.next),
        ] {
            merge_recall(mine, theirs);
        }
        self.elapsed += other.elapsed;
    }

    /// The row of these sums.
    fn row(&self, strategy: Contender, source: &str) -> Row {
        let n = self.conversations.max(1) as f64;
        let pct = |count: usize| count as f64 * 100.0 / n;
        Row {
            strategy,
            source: source.to_string(),
            conversations: self.conversations,
            fit_pct: pct(self.fit),
            valid_pct: pct(self.valid),
            efficiency: self.efficiency / n,
            utilization: self.utilization / self.fit.max(1) as f64,
            user_kept_pct: self.user_kept / n,
            task_kept_pct: pct(self.task_kept),
            current_kept_pct: pct(self.current_kept),
            requests_recall_pct: self.requests.pct(),
            named_recall_pct: self.named.pct(),
            named_with_room_pct: self.named_with_room.pct(),
            tight_runs: self.tight,
            standing_kept_pct: self.standing.pct(),
            instruction_files_kept_pct: self.instruction_files.pct(),
            identifiers_recall_pct: self.identifiers.pct(),
            all_identifiers_recall_pct: self.all_identifiers.pct(),
            files_recall_pct: self.files.pct(),
            errors_recall_pct: self.errors.pct(),
            next_pct: (self.next.removed > 0).then(|| self.next.pct()),
            next_cuts: self.next_cuts,
            next_references: self.next_references,
            next_found: self.next.found,
            next_unfit: self.next_unfit,
            ms_per_conversation: self.elapsed.as_secs_f64() * 1000.0 / n,
        }
    }
}

/// What one contender made of one conversation.
struct Trial {
    /// The output, or `None` when it is the input unchanged (cannot fit, or an error).
    output: Option<Conversation>,
    /// For each input message, whether the output still has it.
    kept: Vec<bool>,
    /// Whether the output is trustworthy at all (false after an unexpected error).
    sound: bool,
    /// The budget less the pinned tokens, as the engine reported them (none for `naive`).
    room: Option<usize>,
    elapsed: Duration,
}

/// A conversation cut before a model call, compacted by every contender for `next %`.
struct CutRun {
    /// The messages before the cut.
    prefix: Conversation,
    /// The prefix's budget, by the bench's rule.
    budget: usize,
    /// The references the next steps use that only the prefix's removable history holds.
    pending: Vec<Pending>,
}

/// The budget of every conversation: fixed, or a share of its own total.
#[derive(Debug, Clone, Copy)]
enum Target {
    Tokens(usize),
    Ratio(f64),
}

/// Runs every contender over conversations, one at a time, and keeps their figures.
#[derive(Debug, Clone)]
pub struct Bench {
    target: Target,
    base: Options,
    /// Assistant messages after each cut whose references are looked up.
    next: usize,
    /// Over every source.
    tallies: [Tally; 6],
    /// Per source, in the order first added.
    sources: Vec<(String, [Tally; 6])>,
}

impl Bench {
    /// A bench whose budget is `budget` for every conversation (a token count, or a ratio of
    /// each conversation's own total), counted with `tokenizer`.
    ///
    /// # Errors
    /// [`Error::BadBudget`] for a ratio that is not a number above 0, a budget of 0 tokens, or
    /// a window budget (the bench has no model).
    pub fn new(budget: Budget, tokenizer: Tokenizer) -> Result<Self> {
        let base = Options {
            tokenizer,
            profile: Profile::generic(tokenizer),
            ..Options::with_budget(budget)
        };
        Self::with_options(budget, base)
    }

    /// A bench as [`Bench::new`] whose contenders start from `base`: its tokenizer and model
    /// profile for all, its tool options for `tools` and `default`, its forced strategy (if
    /// any) for `default`.
    ///
    /// # Errors
    /// As [`Bench::new`].
    pub fn with_options(budget: Budget, base: Options) -> Result<Self> {
        budget.check()?;
        let target = match budget {
            Budget::Tokens(tokens) => Target::Tokens(tokens),
            Budget::Ratio(ratio) => Target::Ratio(ratio),
            Budget::Window { .. } => {
                return Err(Error::bad_budget(
                    "context_window",
                    "none",
                    "the bench takes a ratio or a token budget, not a model's window",
                ));
            }
        };
        Ok(Self {
            target,
            base,
            next: NEXT_MESSAGES,
            tallies: Default::default(),
            sources: Vec::new(),
        })
    }

    /// This bench, looking up the references of the `next` assistant messages after each cut
    /// instead of [`NEXT_MESSAGES`]; 0 looks up none and makes no cut runs.
    #[must_use]
    pub fn with_next(self, next: usize) -> Self {
        Self { next, ..self }
    }

    /// Runs every contender over one conversation and adds their figures; returns what went
    /// unexpectedly wrong (nothing, for a sound engine). The conversation counts in the rows
    /// over all sources only; [`Bench::add_from`] names its source.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the input itself breaks tool pairing: it is not run.
    pub fn add(&mut self, conversation: &Conversation) -> Result<Vec<ContenderFault>> {
        let (tallies, failures) = self.trials(conversation)?;
        for (all, one) in self.tallies.iter_mut().zip(&tallies) {
            all.merge(one);
        }
        Ok(failures)
    }

    /// [`Bench::add`], counting the conversation in the rows of `source` too
    /// ([`Bench::source_rows`]).
    ///
    /// # Errors
    /// As [`Bench::add`].
    pub fn add_from(
        &mut self,
        source: &str,
        conversation: &Conversation,
    ) -> Result<Vec<ContenderFault>> {
        let (tallies, failures) = self.trials(conversation)?;
        for (all, one) in self.tallies.iter_mut().zip(&tallies) {
            all.merge(one);
        }
        let at = if let Some(at) = self.sources.iter().position(|(name, _)| name == source) {
            at
        } else {
            self.sources.push((source.to_string(), Default::default()));
            self.sources.len() - 1
        };
        for (mine, one) in self.sources[at].1.iter_mut().zip(&tallies) {
            mine.merge(one);
        }
        Ok(failures)
    }

    /// Every contender's sums over one conversation.
    fn trials(&self, conversation: &Conversation) -> Result<([Tally; 6], Vec<ContenderFault>)> {
        let mut tallies: [Tally; 6] = Default::default();
        let problems = check(conversation);
        Error::unless_valid(&problems)?;
        let before = self.base.tokenizer.count(conversation).total();
        let budget = self.resolve(before);
        let total = conversation.messages.len();
        let users: Vec<usize> = (0..total)
            .filter(|&i| is_user_turn(conversation, i))
            .collect();
        let looked_for = LookedFor::of(conversation);
        let mut failures = Vec::new();
        let cuts = next::cuts(conversation);
        let cut_runs = self.cut_runs(conversation, &cuts);
        for (contender, tally) in Contender::ALL.into_iter().zip(&mut tallies) {
            let trial = run(contender, conversation, budget, &self.base, &mut failures);
            let output = trial.output.as_ref().unwrap_or(conversation);
            let after = if trial.output.is_some() {
                self.base.tokenizer.count(output).total()
            } else {
                before
            };
            let kept = trial.kept.iter().filter(|k| **k).count();
            let users_kept = users.iter().filter(|&&u| trial.kept[u]).count();
            tally.conversations += 1;
            let fits = trial.sound && after <= budget;
            tally.fit += usize::from(fits);
            tally.valid += usize::from(trial.sound && check(output).is_empty());
            tally.efficiency += efficiency(before, after, kept, total);
            if fits {
                tally.utilization += after as f64 / budget as f64;
            }
            tally.user_kept += if users.is_empty() {
                100.0
            } else {
                users_kept as f64 * 100.0 / users.len() as f64
            };
            let text = searchable(output);
            let verbatim = |k: Option<&String>| k.is_none_or(|t| text.contains(t.as_str()));
            tally.task_kept += usize::from(verbatim(looked_for.texts.first()));
            tally.current_kept += usize::from(verbatim(looked_for.texts.last()));
            let mut named = Recall::default();
            let removed_requests = looked_for.requests.iter().zip(&looked_for.texts);
            let removed_requests = removed_requests.zip(&looked_for.imperatives);
            for ((&index, request), imperatives) in removed_requests {
                if !trial.kept[index] {
                    tally
                        .requests
                        .add(text.contains(first_chars(request, RECALL_CHARS)));
                    named.add(text.contains(first_chars(request, NAMED_CHARS)));
                    for sentence in imperatives {
                        tally.standing.add(text.contains(sentence.as_str()));
                    }
                }
            }
            merge_recall(&mut tally.named, named);
            let tight = trial
                .room
                .is_some_and(|room| room < ROOM_PER_REQUEST * named.removed);
            if tight {
                tally.tight += 1;
            } else {
                merge_recall(&mut tally.named_with_room, named);
            }
            for file in &looked_for.instruction_files {
                tally.instruction_files.add(text.contains(file.as_str()));
            }
            let removed = removed_evidence(conversation, &trial.kept, &looked_for.requests);
            for path in &removed.paths {
                tally.files.add(text.contains(path.as_str()));
            }
            for error in &removed.errors {
                tally.errors.add(text.contains(error.as_str()));
            }
            for id in &removed.written {
                tally.identifiers.add(text.contains(id.as_str()));
            }
            for id in &removed.identifiers {
                tally.all_identifiers.add(text.contains(id.as_str()));
            }
            tally.elapsed += trial.elapsed;
            tally.next_cuts += cuts.len();
            look_ahead(contender, &cut_runs, &self.base, tally, &mut failures);
        }
        Ok((tallies, failures))
    }

    /// The runs of the `next %` figure: each of `cuts` whose next steps use references that
    /// only its removable history holds, with its prefix and the prefix's budget.
    fn cut_runs(&self, conversation: &Conversation, cuts: &[usize]) -> Vec<CutRun> {
        cuts.iter()
            .filter(|_| self.next > 0)
            .map(|&cut| (cut, next::pending(conversation, cut, self.next)))
            .filter(|(_, pending)| !pending.is_empty())
            .map(|(cut, pending)| {
                let prefix = next::prefix(conversation, cut);
                let budget = self.resolve(self.base.tokenizer.count(&prefix).total());
                CutRun {
                    prefix,
                    budget,
                    pending,
                }
            })
            .collect()
    }

    /// Conversations run so far.
    pub fn conversations(&self) -> usize {
        self.tallies[0].conversations
    }

    /// One row per contender over every conversation, in [`Contender::ALL`] order.
    pub fn rows(&self) -> Vec<Row> {
        Contender::ALL
            .into_iter()
            .zip(&self.tallies)
            .map(|(strategy, t)| t.row(strategy, "all"))
            .collect()
    }

    /// For each source given to [`Bench::add_from`], in the order first added, one row per
    /// contender over its conversations alone.
    pub fn source_rows(&self) -> Vec<Vec<Row>> {
        self.sources
            .iter()
            .map(|(source, tallies)| {
                Contender::ALL
                    .into_iter()
                    .zip(tallies)
                    .map(|(strategy, t)| t.row(strategy, source))
                    .collect()
            })
            .collect()
    }

    /// The budget for a conversation of `total` tokens (rounded down, at least 1).
    fn resolve(&self, total: usize) -> usize {
        match self.target {
            Target::Tokens(n) => n,
            // Truncation is intended: a budget is a whole number of tokens, rounded down, as
            // `compact` does for `Budget::Ratio`.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Target::Ratio(ratio) => ((total as f64 * ratio).floor() as usize).max(1),
        }
    }
}

/// Runs `contender` over each cut's prefix and adds to `tally` which references its outputs
/// still hold; a cut whose prefix cannot fit its budget counts apart (`next_unfit`).
fn look_ahead(
    contender: Contender,
    cut_runs: &[CutRun],
    base: &Options,
    tally: &mut Tally,
    failures: &mut Vec<ContenderFault>,
) {
    for cut in cut_runs {
        tally.next_references += cut.pending.len();
        let trial = run(contender, &cut.prefix, cut.budget, base, failures);
        let Some(output) = trial.output else {
            tally.next_unfit += 1;
            continue;
        };
        for found in next::kept(&cut.pending, &output) {
            tally.next.add(found);
        }
    }
}

/// Runs one contender, timing it; records unexpected errors and miscounts in `failures`.
fn run(
    contender: Contender,
    conversation: &Conversation,
    budget: usize,
    base: &Options,
    failures: &mut Vec<ContenderFault>,
) -> Trial {
    let tokenizer = base.tokenizer;
    let all = vec![true; conversation.messages.len()];
    if contender == Contender::Naive {
        let start = Instant::now();
        let counts = tokenizer.count(conversation);
        let naive = naive(conversation, &counts, budget);
        let elapsed = start.elapsed();
        return Trial {
            output: Some(naive.conversation),
            kept: naive.kept,
            sound: true,
            room: None,
            elapsed,
        };
    }
    let options = contender.options(budget, base);
    let input = conversation.clone();
    let start = Instant::now();
    let result = if contender == Contender::Tools {
        trim_tools(input, &options)
    } else {
        compact(input, &options)
    };
    let elapsed = start.elapsed();
    match result {
        Ok(Compacted {
            conversation: output,
            report,
            ..
        }) => {
            let measured = tokenizer.count(&output).total();
            if measured != report.tokens_after {
                failures.push(ContenderFault::Miscounted {
                    contender,
                    reported: report.tokens_after,
                    measured,
                });
            }
            let mut kept = all;
            for [from, to] in &report.removed {
                kept[*from..*to].fill(false);
            }
            Trial {
                output: Some(output),
                kept,
                sound: true,
                room: Some(report.budget.saturating_sub(report.pinned_tokens)),
                elapsed,
            }
        }
        Err(error) => {
            let sound = error.is_cannot_fit();
            if !sound {
                failures.push(ContenderFault::Error { contender, error });
            }
            Trial {
                output: None,
                kept: all,
                sound,
                room: None,
                elapsed,
            }
        }
    }
}

/// The marker [`compact`] would leave for the messages `span` of a conversation, its digest
/// capped at `cap` tokens and counted with `tokenizer`; `counts` are the conversation's, for the
/// input tokens the marker names. What the criterion bench times on a long span.
///
/// # Panics
/// When `span` or `counts` do not fit the conversation.
pub fn span_marker(
    conversation: &Conversation,
    counts: &Counts,
    span: std::ops::Range<usize>,
    cap: usize,
    tokenizer: Tokenizer,
) -> String {
    let input_tokens: Vec<Option<usize>> = counts.messages[span.clone()]
        .iter()
        .copied()
        .map(Some)
        .collect();
    digest::build(
        MarkerMode::Digest,
        Place::BeforeCurrent,
        (
            &conversation.messages[span],
            &digest::ClearedNames::default(),
        ),
        &input_tokens,
        digest::DigestCap::fixed(cap),
        tokenizer.counter(),
    )
    .map(|(text, _)| text)
    .unwrap_or_default()
}

/// Whether message `index` is a user turn (what the `user_kept` and `task_kept` figures count).
fn is_user_turn(conversation: &Conversation, index: usize) -> bool {
    crate::classify::is_user_turn(&conversation.messages[index])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::parse_value;
    use crate::tokens::{CharEstimate, count_with};

    fn call(id: &str) -> serde_json::Value {
        json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}})
    }

    /// A task, a tool round with a long output, and a last question.
    fn agent() -> Conversation {
        parse_value(
            json!([
                {"role": "system", "content": "You are an agent."},
                {"role": "user", "content": "Fix the failing test in the ledger module please."},
                {"role": "assistant", "content": null, "tool_calls": [call("a")]},
                {"role": "tool", "tool_call_id": "a", "content": "x ".repeat(400)},
                {"role": "assistant", "content": "The ledger test is fixed now."},
                {"role": "user", "content": "Thanks!"}
            ]),
            None,
        )
        .unwrap()
    }

    #[test]
    fn naive_drops_a_call_and_keeps_its_result() {
        let conversation = agent();
        let counts = count_with(&conversation, &CharEstimate);
        // Enough to keep the tool output, not the call before it.
        let budget = counts.total() - counts.messages[1] - counts.messages[2];
        let naive = naive(&conversation, &counts, budget);
        assert_eq!(naive.kept, vec![true, false, false, true, true, true]);
        assert!(naive.tokens <= budget);
        let problems = check(&naive.conversation);
        assert!(
            problems.iter().any(
                |p| matches!(&p.kind, crate::report::ProblemKind::Orphan { call_id } if call_id == "a")
            ),
            "{problems:?}"
        );
    }

    #[test]
    fn the_table_has_one_row_per_contender_and_only_naive_breaks_pairing() {
        let conversation = agent();
        let counts = count_with(&conversation, &CharEstimate);
        // Tight enough that naive drops the call, loose enough that it keeps the result.
        let budget = counts.total() - counts.messages[1] - counts.messages[2];
        let mut bench = Bench::new(Budget::Tokens(budget), Tokenizer::Chars).unwrap();
        let failures = bench.add(&conversation).unwrap();
        assert!(failures.is_empty(), "{failures:?}");
        let rows = bench.rows();
        let names: Vec<&str> = rows.iter().map(|r| r.strategy.as_str()).collect();
        assert_eq!(
            names,
            ["oldest", "middle", "auto", "tools", "default", "naive"]
        );
        for row in &rows {
            assert_eq!(row.conversations, 1);
            let expected_valid = if row.strategy == Contender::Naive {
                0.0
            } else {
                100.0
            };
            assert!(
                (row.valid_pct - expected_valid).abs() < f64::EPSILON,
                "{row:?}"
            );
        }
    }

    #[test]
    fn invalid_input_is_refused_and_not_counted() {
        let broken = parse_value(
            json!([{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "z", "content": "1"}]),
            None,
        )
        .unwrap();
        let mut bench = Bench::new(Budget::Tokens(10), Tokenizer::Chars).unwrap();
        assert!(matches!(bench.add(&broken), Err(Error::Invalid { .. })));
        assert_eq!(bench.conversations(), 0);
    }

    #[test]
    fn a_window_budget_is_refused() {
        let window = Budget::Window {
            trigger: 0.7,
            target: 0.5,
        };
        assert!(matches!(
            Bench::new(window, Tokenizer::Chars),
            Err(Error::BadBudget { .. })
        ));
    }
}
