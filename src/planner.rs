//! The planner: a plan and its markers fitted to the budget together.
//!
//! Which units go decides how many removal markers there are and what their digests say, and the
//! markers' tokens count against the budget; so a plan is made with a reserve for its markers,
//! the markers are built, and the plan is made again with their actual size until the two agree;
//! where the digests then leave room, removed units at a span's end are kept in it.
//! When the asked marker cannot fit, a digest gives way to a brief marker and a brief marker to
//! none; when nothing fits, the protections are relaxed and, last, the task is shortened.

use crate::account::MarkerMode;
use crate::account::{Decision, MarkerNote, Shortened, Strategy};
use crate::archive::{Archive, SpanFile};
use crate::budget::Budget;
use crate::classify;
use crate::conversation::{Layout, Message, Part, Role};
use crate::digest::{self, ClearedNames, DigestCap};
use crate::instructions;
use crate::note::{self, Place};
use crate::options::Options;
use crate::select::Selector;
use crate::state::{Applied, CountedInput};
use crate::strategy::relevant::Scored;
use crate::strategy::{self, Limits, Plan};
use crate::tokens::{Memo, TokenCounter};
use crate::units::Unit;

/// Tokens added to the markers' reserve: an Anthropic marker merged into the next message is
/// recounted with that message, which may differ from its count alone by a few tokens.
pub(crate) const MARKER_SLACK: usize = 4;
/// A shortened task keeps at least this many characters: with fewer, it no longer states the
/// task (the bench's requests recall reads the first 200 characters too).
const MIN_TASK_CHARS: usize = 200;
/// Times a plan is redone with the markers' actual size as its reserve (the size depends on
/// which units go; two or three rounds settle it).
const MARKER_ROUNDS: usize = 4;
/// A plan leaving at least this share of its budget (in percent) gives it to its digests
/// ([`Planner::with_fuller_digests`]); less is not worth planning again.
const FULLER_DIGESTS_PCT: usize = 2;
/// Tries at giving the digests that room, each with less by what the last ran over.
const FULLER_TRIES: usize = 3;

/// One plan of a state, with its markers.
pub(crate) struct Attempt {
    pub(crate) units: Vec<Unit>,
    pub(crate) decision: Decision,
    pub(crate) plan: Plan,
    /// One marker per removed span, in order (none in [`MarkerMode::None`]).
    pub(crate) markers: Vec<String>,
    /// What each marker stands for, for the report.
    pub(crate) notes: Vec<MarkerNote>,
    /// The archive file each marker names, in order, when archived.
    pub(crate) archive: Vec<SpanFile>,
    /// The marker mode the markers were built in (a lesser one when the asked one cannot fit).
    pub(crate) mode: MarkerMode,
    /// The cap each digest was built within.
    pub(crate) cap: DigestCap,
    /// Tokens the plan set aside for the digests together.
    pub(crate) allowance: usize,
    /// Tokens after removal, the markers included.
    pub(crate) tokens_after: usize,
    /// Tokens the digests took beyond their headers' reserve.
    pub(crate) digest_tokens: usize,
    /// Tokens of the kept units alone, without the markers.
    pub(crate) kept_tokens: usize,
    /// Removed requests the markers do not name.
    pub(crate) unnamed: usize,
    /// Files named in the removed units' calls that the markers do not name.
    pub(crate) unnamed_files: usize,
    pub(crate) fits: bool,
}

impl Attempt {
    /// `added` tokens of outputs given back in the messages the plan keeps.
    pub(crate) fn add_restored(&mut self, added: usize) {
        self.tokens_after += added;
        self.kept_tokens += added;
    }
}

/// Whether an attempt may give up the head and tail protections to fit the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protections {
    /// Keep them: a plan that cannot fit with them does not fit.
    Keep,
    /// Give them up, the head first, then the tail unit by unit, where the plan needs to.
    Relax,
}

/// How an attempt's plans remove units: whether they may give up the protections, and whether
/// units holding a request go only after the others of their region.
#[derive(Debug, Clone, Copy)]
struct Order<'r> {
    protections: Protections,
    requests_last: bool,
    /// The message before which bare tool rounds are removed, fitting or not ([`Limits`]).
    fold_before: usize,
    /// What the units share with the current request, when relevant removal may be planned.
    relevance: &'r Scored,
}

/// One state's units, grouped once, and their relevance, measured once: every plan over the
/// state starts from them.
pub(crate) struct Grouped<'p, 'a> {
    planner: &'p Planner<'a>,
    state: &'p Applied,
    pub(crate) units: Vec<Unit>,
    relevance: Scored,
}

impl Grouped<'_, '_> {
    /// Plans the grouped state (relaxing protections or not) with real markers. Each removed span costs
    /// its marker's header, and the digests together an allowance: first one cap, then what the
    /// digests of the last plan actually took, until the two agree (each digest stays within
    /// the cap). When the asked marker cannot fit, a digest gives way to a brief marker, and a
    /// brief marker to none: the units come first.
    ///
    /// Requests are kept whole where they can be: a plan that removes units around the requests
    /// and none of them is taken when it fits, unless the plain plan (removal oldest first, the
    /// removed requests in the digest) names them all with fewer markers.
    pub(crate) fn attempt(&self, protections: Protections) -> Attempt {
        self.attempt_folding(protections, 0)
    }

    /// [`Grouped::attempt`] for a state that fits, whose oldest tool rounds, up to message
    /// `before`, trimming cleared bare for want of room: they are removed into a digest, which
    /// names the files and names of their outputs that the bare placeholders lost, in the room
    /// their calls and placeholders took.
    pub(crate) fn fold(&self, before: usize) -> Attempt {
        self.attempt_folding(Protections::Keep, before)
    }

    /// [`Grouped::attempt`], removing the bare rounds before message `fold_before` too.
    fn attempt_folding(&self, protections: Protections, fold_before: usize) -> Attempt {
        let Self {
            planner,
            state,
            units,
            relevance,
        } = self;
        let order = |requests_last| Order {
            protections,
            requests_last,
            fold_before,
            relevance,
        };
        let around = planner.attempt_with(state, units, order(true));
        let spares_requests = around
            .plan
            .drop
            .iter()
            .all(|&u| !around.units[u].has_request);
        let plain = planner.attempt_with(state, units, order(false));
        // Kept whole is better than named in a digest, unless the plain plan names every
        // removed request with fewer markers: one digest reads better than a note in every gap.
        let plain_reads_better = plain.fits
            && plain.unnamed == 0
            && plain.unnamed_files <= around.unnamed_files
            && plain.markers.len() < around.markers.len();
        let chosen = if around.fits && spares_requests && !plain_reads_better {
            around
        } else {
            plain
        };
        let mut chosen = planner.with_span_ends_kept(state, units, order(false), chosen);
        if chosen.plan.strategy == Strategy::Relevant {
            chosen.decision.kept_for = relevance.kept_for(state, &chosen.units, &chosen.plan);
        }
        chosen
    }
}

/// What every attempt of one run shares.
pub(crate) struct Planner<'a> {
    pub(crate) options: &'a Options,
    pub(crate) budget: usize,
    /// Whether the budget is room the caller gives to fill (any budget but a window's target,
    /// which is headroom until the next compaction): the degrade order and the digests' default
    /// cap follow it.
    pub(crate) fill: bool,
    pub(crate) cap: DigestCap,
    pub(crate) input: &'a CountedInput,
    /// Where removed history goes, when it is archived.
    pub(crate) archive: Option<&'a Archive>,
    /// The run's selector, its limit-independent layers decided once: every attempt plans
    /// with it.
    pub(crate) selector: &'a Selector<'a>,
    /// The tokenizer's counter, remembering what it counted: attempts count the same digest
    /// items and markers again, and each is tokenized once.
    pub(crate) counter: Memo<'a>,
}

impl<'a> Planner<'a> {
    /// The planner of one run with `options`, `budget` tokens and, when removed history is
    /// archived, `archive`, over `input`, choosing with `selector`, its digests capped by
    /// [`Options::digest_tokens`] (or the default cap for the run's budget, a loop's under a
    /// window whose depth follows the traffic).
    pub(crate) fn new(
        options: &'a Options,
        budget: usize,
        archive: Option<&'a Archive>,
        input: &'a CountedInput,
        selector: &'a Selector<'a>,
    ) -> Self {
        let fill = !matches!(options.budget, Budget::Window { .. });
        let in_loop = options.traffic_depth && !fill;
        let cap = options
            .digest_tokens
            .map_or_else(|| DigestCap::default_for(budget, in_loop), DigestCap::fixed);
        Self {
            options,
            budget,
            fill,
            cap,
            input,
            archive,
            selector,
            counter: Memo::new(options.tokenizer.counter()),
        }
    }

    /// [`Grouped::attempt`] over `state`, grouped for this plan alone.
    pub(crate) fn attempt(&self, state: &Applied, protections: Protections) -> Attempt {
        self.group(state).attempt(protections)
    }

    /// `state`'s units, grouped once for every plan over it.
    pub(crate) fn group<'p>(&'p self, state: &'p Applied) -> Grouped<'p, 'a> {
        let units = state.units(self.input);
        let relevance = if self.selector.may_plan_relevant() {
            Scored::measure(state, &units)
        } else {
            Scored::default()
        };
        Grouped {
            planner: self,
            state,
            units,
            relevance,
        }
    }

    /// [`Grouped::attempt`] with requests removed last or not.
    fn attempt_with(&self, state: &Applied, units: &[Unit], order: Order<'_>) -> Attempt {
        let modes: &[MarkerMode] = match self.options.marker {
            MarkerMode::Digest => &[MarkerMode::Digest, MarkerMode::Brief, MarkerMode::None],
            MarkerMode::Brief => &[MarkerMode::Brief, MarkerMode::None],
            MarkerMode::None => &[MarkerMode::None],
        };
        let mut last = None;
        let mut found = None;
        for &mode in modes {
            // The removed requests' share of the digests is not known before the plan: start
            // from the other sections' cap, and follow what the digests take.
            let cap = (self.cap, self.cap.rest);
            let Some(best) = self.settle(state, units, order, mode, cap, &mut last) else {
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
                        self.settle(state, units, order, MarkerMode::Digest, cap, &mut None)
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
        // Relevant removal keeps what the current request names: the digests never take the
        // room its units need.
        if found.unnamed + found.unnamed_files == 0
            || self.options.marker != MarkerMode::Digest
            || found.plan.strategy == Strategy::Relevant
        {
            return self.with_fuller_digests(state, units, order, found);
        }
        // Some removed requests or files went unnamed: removing more units, to give the digest
        // the room they need, is better than losing them (requests first).
        // The protected head and tail may go too: their requests are named in the digest.
        let unnamed = |a: &Attempt| (a.unnamed, a.unnamed_files);
        let relaxed = Order {
            protections: Protections::Relax,
            ..order
        };
        match self.roomier(state, units, relaxed) {
            Some(roomier) if unnamed(&roomier) < unnamed(&found) => {
                self.with_fuller_digests(state, units, relaxed, roomier)
            }
            _ => self.with_fuller_digests(state, units, order, found),
        }
    }

    /// `found` with its digests given the room it leaves under the budget, above the default
    /// cap: the same units removed, the digests naming more of what their spans held (the
    /// identifiers and names past the cap, which a later step may write). A unit is atomic,
    /// so a plan often leaves room no unit fits; an asked cap (`--digest-tokens`) is kept.
    fn with_fuller_digests(
        &self,
        state: &Applied,
        units: &[Unit],
        order: Order<'_>,
        found: Attempt,
    ) -> Attempt {
        let spare = self.budget.saturating_sub(found.tokens_after);
        // Bare rounds fold only where the budget is used as fully: any room goes to the digest.
        let worth = if order.fold_before > 0 {
            MARKER_SLACK + 1
        } else {
            digest::percent(self.budget, FULLER_DIGESTS_PCT).max(MARKER_SLACK * 4)
        };
        if found.mode != MarkerMode::Digest
            || found.markers.is_empty()
            || self.options.digest_tokens.is_some()
            || spare < worth
        {
            return found;
        }
        // Past the cap the plan was found with (the default, or a roomier one). A digest's
        // count in its message may run a few tokens past its cap: a plan over the budget by
        // those is tried again with that much less.
        let mut more = (spare - MARKER_SLACK) / found.markers.len();
        for _ in 0..FULLER_TRIES {
            let cap = DigestCap {
                total: found.cap.total + more,
                rest: found.cap.rest + more,
            };
            let start = found.digest_tokens + more * found.markers.len();
            let mut over = None;
            match self.settle(
                state,
                units,
                order,
                MarkerMode::Digest,
                (cap, start),
                &mut over,
            ) {
                Some(fuller)
                    if fuller.plan.drop == found.plan.drop && fuller.unnamed <= found.unnamed =>
                {
                    // A digest fills less than its cap (its items are counted apart): a fold
                    // gives it the room left again, until it takes no more.
                    let grew = fuller.tokens_after > found.tokens_after;
                    return if order.fold_before > 0 && grew {
                        self.with_fuller_digests(state, units, order, fuller)
                    } else {
                        fuller
                    };
                }
                Some(_) => return found,
                None => {
                    let Some(over) = over else { return found };
                    let excess = over.tokens_after.saturating_sub(self.budget) + MARKER_SLACK;
                    more = more.saturating_sub(excess.div_ceil(found.markers.len()));
                    if more == 0 {
                        return found;
                    }
                }
            }
        }
        found
    }

    /// `found`, once its markers are built, with the removed units at either end of a span
    /// kept, the newest first, while it uses less than [`strategy::REFILL_UNDER_TENTHS`] of the
    /// budget: the plan priced each marker at its reserve, and the digests, given the room
    /// left, took less. A unit is kept where the plan with its markers built again fits and
    /// names every request and file it named; never the last one removed, which would leave
    /// nothing to remove. `order` is only read for the plan's limits.
    fn with_span_ends_kept(
        &self,
        state: &Applied,
        units: &[Unit],
        order: Order<'_>,
        mut found: Attempt,
    ) -> Attempt {
        let limits = self.limits(state, order, found.allowance, self.marker_each(found.mode));
        let mut tried = Vec::new();
        while found.fits
            && found.plan.drop.len() > 1
            && found.tokens_after * 10 < self.budget * strategy::REFILL_UNDER_TENTHS
        {
            let room = self.budget - found.tokens_after;
            let mut ends: Vec<usize> = strategy::spans(&found.plan.drop)
                .into_iter()
                .flat_map(|span| [span.start, span.end - 1])
                .filter(|&u| units[u].tokens <= room && !tried.contains(&u))
                .collect();
            ends.sort_unstable_by(|a, b| b.cmp(a));
            ends.dedup();
            let kept = ends.into_iter().find_map(|u| {
                tried.push(u);
                let plan = strategy::keep(&found.plan, units, &limits, u);
                let decision = found.decision.clone();
                let kept = self.marked(
                    state,
                    units,
                    (found.mode, found.cap),
                    &limits,
                    (decision, plan),
                );
                (kept.fits
                    && kept.unnamed <= found.unnamed
                    && kept.unnamed_files <= found.unnamed_files)
                    .then_some(kept)
            });
            let Some(kept) = kept else { break };
            found = kept;
        }
        found
    }

    /// The plan that gives the digests the most room the budget allows (within the cap):
    /// every unit that may go goes. `None` when there is no room for a digest at all.
    fn roomier(&self, state: &Applied, units: &[Unit], order: Order<'_>) -> Option<Attempt> {
        let each = self.header_tokens(MarkerMode::Digest);
        let probe = self.once(
            state,
            units,
            order,
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
        self.settle(state, units, order, MarkerMode::Digest, cap, &mut None)
    }

    /// Plans with markers of `mode` whose digests stay within `cap`, reserving for the digests
    /// first one cap, then what the digests of the last plan took, until the two agree; the best
    /// plan that fits, if any (the last that did not is kept in `last`).
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &self,
        state: &Applied,
        units: &[Unit],
        order: Order<'_>,
        mode: MarkerMode,
        (cap, start): (DigestCap, usize),
        last: &mut Option<Attempt>,
    ) -> Option<Attempt> {
        let mut allowance = if mode == MarkerMode::Digest { start } else { 0 };
        let mut best: Option<Attempt> = None;
        for _ in 0..MARKER_ROUNDS {
            let attempt = self.once(state, units, order, (mode, cap), allowance);
            let used = attempt.digest_tokens;
            let fits = attempt.fits;
            if fits {
                // Fewer requests left unnamed (but for relevant removal, whose units come
                // first), fewer units removed, then more of the budget used.
                let key = |a: &Attempt| {
                    let unnamed = if a.plan.strategy == Strategy::Relevant {
                        0
                    } else {
                        a.unnamed
                    };
                    (
                        std::cmp::Reverse(unnamed),
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

    /// Tokens of the longest marker without its digest this run could write. With an archive
    /// every marker names its file, the least one being that line alone: a span is never
    /// removed without it, so that nothing removed is out of reach.
    fn header_tokens(&self, mode: MarkerMode) -> usize {
        let mut worst = note::worst_header(
            self.input.messages,
            self.input.tokens,
            mode == MarkerMode::Digest,
        );
        if let Some(archive) = self.archive {
            let line = archive.line(&archive.longest_path(), self.input.messages);
            worst = match mode {
                MarkerMode::None => line,
                _ => note::with_archive_line(&worst, &line),
            };
        }
        self.counter
            .count_message(&Message::new_text(Role::User, worst))
            + MARKER_SLACK
    }

    /// What a plan of `state` in `order` must fit into, with `allowance` tokens set aside for
    /// the digests and `each` for every marker's header.
    fn limits(&self, state: &Applied, order: Order<'_>, allowance: usize, each: usize) -> Limits {
        Limits {
            budget: self.budget,
            fixed: state.counts.outside + state.counts.priming(),
            marker: allowance,
            marker_each: each,
            preserve_start: self.options.preserve_start,
            preserve_end: self.options.preserve_end,
            relax: order.protections == Protections::Relax,
            requests_last: order.requests_last,
            fold_before: order.fold_before,
        }
    }

    /// One plan with `allowance` tokens set aside for all digests together, and its markers.
    fn once(
        &self,
        state: &Applied,
        units: &[Unit],
        order: Order<'_>,
        (mode, cap): (MarkerMode, DigestCap),
        allowance: usize,
    ) -> Attempt {
        let limits = self.limits(state, order, allowance, self.marker_each(mode));
        let (decision, plan) = self.selector.decide(units, &order.relevance.units, &limits);
        let planned = plan.fits;
        let mut attempt = self.marked(state, units, (mode, cap), &limits, (decision, plan));
        attempt.fits &= planned;
        attempt
    }

    /// Tokens each marker of `mode` costs besides its digest: none without markers, unless
    /// every removed span names its archive file.
    fn marker_each(&self, mode: MarkerMode) -> usize {
        match mode {
            MarkerMode::None if self.archive.is_none() => 0,
            _ => self.header_tokens(mode),
        }
    }

    /// The attempt of `plan`, made within `limits`, with its markers of `mode` built (each
    /// digest within `cap`): it fits when the units it keeps and the markers as built do.
    fn marked(
        &self,
        state: &Applied,
        units: &[Unit],
        (mode, cap): (MarkerMode, DigestCap),
        limits: &Limits,
        (decision, plan): (Decision, Plan),
    ) -> Attempt {
        let archive = self.archive;
        let (allowance, each) = (limits.marker, limits.marker_each);
        let spans = strategy::spans(&plan.drop);
        let caps = digest_caps(&plan, units, &spans, cap, allowance);
        let mut markers = Vec::new();
        let mut notes = Vec::new();
        let mut archived_files = Vec::new();
        let mut digest_tokens = 0;
        let mut unnamed = 0;
        let mut unnamed_files = 0;
        for (span, &cap) in spans.iter().zip(&caps) {
            let messages = units[span.start].messages.start..units[span.end - 1].messages.end;
            let input_tokens: Vec<Option<usize>> = state.origin[messages.clone()]
                .iter()
                .map(|o| o.input().map(|i| self.input.counts[i]))
                .collect();
            let cleared = cleared_names(state, messages.clone());
            let place = if units[..span.start].iter().any(|u| u.is_current) {
                Place::AfterCurrent
            } else {
                Place::BeforeCurrent
            };
            let built = digest::build(
                mode,
                place,
                (&state.conversation.messages[messages.clone()], &cleared),
                &input_tokens,
                cap,
                &self.counter,
            );
            let (mut text, left_out) = built.unwrap_or_else(|| {
                let requests = units[span.clone()].iter().filter(|u| u.has_request);
                (String::new(), [requests.count(), 0])
            });
            if text.is_empty() && archive.is_none() {
                unnamed += left_out[0];
                continue;
            }
            unnamed += left_out[0];
            unnamed_files += left_out[1];
            if let Some(archive) = archive {
                let file = Self::span_file(archive, state, units, span);
                text = note::with_archive_line(&text, &archive.line(&file.path, file.inputs.len()));
                archived_files.push(file);
            }
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
        let fits = tokens_after + slack <= self.budget;
        Attempt {
            units: units.to_vec(),
            decision,
            plan,
            markers,
            notes,
            archive: archived_files,
            mode,
            cap,
            allowance,
            tokens_after,
            digest_tokens,
            kept_tokens,
            unnamed,
            unnamed_files,
            fits,
        }
    }

    /// The archive file of a removed span of units: its input messages and the one after it.
    fn span_file(
        archive: &Archive,
        state: &Applied,
        units: &[Unit],
        span: &std::ops::Range<usize>,
    ) -> SpanFile {
        let messages = units[span.start].messages.start..units[span.end - 1].messages.end;
        let inputs = state.origin[messages]
            .iter()
            .filter_map(|o| o.input())
            .collect();
        let next = units
            .get(span.end)
            .and_then(|u| state.origin[u.messages.start].input());
        archive.span_file(inputs, next)
    }

    /// The state with its task shortened — its head and tail kept, the cut named in the text —
    /// by about what `attempt` is over the budget; `None` when the task cannot be shortened (it
    /// is the current request too, or has no text of its own beside an instruction file). Returns the characters
    /// before and after.
    pub(crate) fn shorten_task(
        &self,
        state: &Applied,
        attempt: &Attempt,
    ) -> Option<(Applied, Shortened)> {
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
                // An instruction file is never shortened: a part holding one is left whole.
                Part::Text { text, .. } if !instructions::holds_instructions(text) => {
                    Some((i, text))
                }
                _ => None,
            })
            .max_by_key(|(i, t)| (t.len(), std::cmp::Reverse(*i)))?;
        let chars = text.chars().count();
        let text_tokens = self.counter.count_text(text).max(1);
        let over = attempt.tokens_after.saturating_sub(self.budget);
        // With an archive, the note names the file the task is archived in whole.
        let reference = self.archive.and_then(|archive| {
            let input = state.origin[index].input()?;
            Some(archive.reference(&archive.message_file(input), 1))
        });
        let cut_note = |cut: usize| match &reference {
            Some(reference) => note::with_reference(&note::shortened(cut, chars), reference),
            None => note::shortened(cut, chars),
        };
        let note = self.counter.count_text(&cut_note(chars));
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
        let shortened = format!("{head}\n{}\n{tail}", cut_note(cut));
        let mut shorter = state.copy();
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

/// The cap of each span's digest: `cap` for every one; but under relevant removal, whose spans
/// between kept turns are many and short, the widest span's digest takes all that the plan set
/// aside for the digests (`allowance`), the others none, so that the digests never take the
/// room of a kept unit and one of them still names what the removed turns asked.
fn digest_caps(
    plan: &Plan,
    units: &[Unit],
    spans: &[std::ops::Range<usize>],
    cap: DigestCap,
    allowance: usize,
) -> Vec<DigestCap> {
    if plan.strategy != Strategy::Relevant {
        return vec![cap; spans.len()];
    }
    let width =
        |s: &std::ops::Range<usize>| units[s.end - 1].messages.end - units[s.start].messages.start;
    let widest = (0..spans.len()).rev().max_by_key(|&i| width(&spans[i]));
    (0..spans.len())
        .map(|i| {
            if Some(i) == widest {
                cap.within(allowance)
            } else {
                DigestCap::fixed(0)
            }
        })
        .collect()
}

/// The names of the outputs cleared from the messages `messages` of `state` before (their
/// placeholders no longer hold them).
fn cleared_names(state: &Applied, messages: std::ops::Range<usize>) -> ClearedNames<'_> {
    let inputs: Vec<usize> = state.origin[messages]
        .iter()
        .filter_map(|o| o.input())
        .collect();
    state.discarded.names_of(&inputs)
}

/// The characters of part `part` of `message`.
fn shorter_chars(message: &Message, part: usize) -> usize {
    match &message.parts[part] {
        Part::Text { text, .. } => text.chars().count(),
        _ => 0,
    }
}
