//! Replay: what a compaction policy costs over recorded agent sessions, call by call, under
//! prompt caching.
//!
//! Each run of assistant messages of a recorded session is one model call's answer, whose input
//! is the history before it (the call boundaries the proxy replays at, `request`'s). A policy decides what each call sends: everything (`none`), the history trimmed
//! to the window by dropping the oldest messages on every call (`naive`), or a [`Session`]
//! compacting with hysteresis (`default`, `middle`, `oldest`, `tools`). Each call is billed by a
//! [`PromptCache`]: the longest run of leading messages equal to the previous call's input is a
//! cache read when it reaches the provider's minimum cacheable length; the rest is a cache write
//! (providers with explicit caching) or uncached input (automatic caching). So reads + writes +
//! uncached always equal the call's input. Calls over the window, and calls that break tool
//! pairing, are rejected by providers: they are counted, not billed, and leave the cache as it
//! was. Prices come from [`Prices`] (`data/prices.json`); the cost covers input tokens only,
//! since every policy that answers a call pays the same for its output.
//!
//! Simplifications, all the same for every policy: every call happens within the cache's
//! lifetime; the cache breakpoint sits on the last message; tool definitions are not counted.

use serde::Serialize;

use crate::catalog::Profile;
use crate::classify::is_user_turn;
use crate::cost::{COST_HORIZON, CostModel, MILLION};
pub use crate::cost::{Caching, PriceFamily, Prices};
use crate::parallel;
use crate::session::CompactionScope;
use crate::tuning::Optimize;
use crate::{
    Budget, Conversation, Counts, Error, Message, Options, Result, Session, Strategy, ToolMode,
    validate,
};

use super::next::{self, NEXT_MESSAGES, Pending};

/// How one call's input tokens are billed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bill {
    /// All input tokens of the call.
    pub input: usize,
    /// Tokens read from the cache.
    pub cache_read: usize,
    /// Tokens written to the cache.
    pub cache_write: usize,
    /// Tokens billed as plain input.
    pub uncached: usize,
}

impl Bill {
    /// Adds another bill to this one.
    pub fn add(&mut self, other: Bill) {
        self.input += other.input;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.uncached += other.uncached;
    }

    /// What these tokens cost at `family`'s prices, in dollars.
    pub fn cost(&self, family: &PriceFamily) -> f64 {
        (self.cache_read as f64 * family.cache_read
            + self.cache_write as f64 * family.cache_write
            + self.uncached as f64 * family.input)
            / MILLION
    }
}

/// A provider's prompt cache, seen from one agent: it holds the previous call's input.
#[derive(Debug, Clone)]
pub struct PromptCache<T> {
    caching: Caching,
    min_cacheable: usize,
    previous: Vec<T>,
}

impl<T: PartialEq> PromptCache<T> {
    /// An empty cache for a provider caching as `caching`, prefixes of `min_cacheable` or more.
    pub fn new(caching: Caching, min_cacheable: usize) -> Self {
        Self {
            caching,
            min_cacheable,
            previous: Vec::new(),
        }
    }

    /// Bills a call whose input is `items` (each with its tokens, in order) plus `trailing`
    /// tokens after them (the reply priming), and remembers the input for the next call.
    ///
    /// The cached prefix is the longest run of leading items equal to the previous call's,
    /// read from the cache when it has at least `min_cacheable` tokens.
    pub fn call(&mut self, items: Vec<(T, usize)>, trailing: usize) -> Bill {
        let total = items.iter().map(|(_, t)| t).sum::<usize>() + trailing;
        let prefix: usize = items
            .iter()
            .zip(&self.previous)
            .take_while(|((item, _), previous)| item == *previous)
            .map(|((_, tokens), _)| tokens)
            .sum();
        let cache_read = if prefix >= self.min_cacheable {
            prefix
        } else {
            0
        };
        let rest = total - cache_read;
        let writes = self.caching == Caching::Explicit && total >= self.min_cacheable;
        self.previous = items.into_iter().map(|(item, _)| item).collect();
        Bill {
            input: total,
            cache_read,
            cache_write: if writes { rest } else { 0 },
            uncached: if writes { 0 } else { rest },
        }
    }
}

/// A compaction policy as an agent would run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// No compaction: calls past the window fail.
    None,
    /// Every call drops the oldest messages until the history fits the window, ignoring units
    /// (as `LangChain`'s `trim_messages` is commonly used).
    Naive,
    /// ctxcompact's pipeline through a [`Session`]: tool trimming and the selector, with
    /// hysteresis.
    Default,
    /// A [`Session`] forcing middle removal, no tool trimming.
    Middle,
    /// A [`Session`] forcing oldest removal, no tool trimming.
    Oldest,
    /// A [`Session`] that only clears old tool outputs.
    Tools,
    /// `default` with `--optimize cost`: the strategy with the lowest expected cost over the
    /// next calls, tool outputs cleared only in batches that repay their cache write.
    Cost,
}

impl Policy {
    /// Every policy, in report order.
    pub const ALL: [Policy; 7] = [
        Self::None,
        Self::Naive,
        Self::Default,
        Self::Middle,
        Self::Oldest,
        Self::Tools,
        Self::Cost,
    ];

    /// The policy's name as the CLI and the report spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Naive => "naive",
            Self::Default => "default",
            Self::Middle => "middle",
            Self::Oldest => "oldest",
            Self::Tools => "tools",
            Self::Cost => "cost",
        }
    }
}

/// One policy's figures over every replayed session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyTotals {
    /// The policy.
    pub policy: Policy,
    /// Model calls replayed (assistant messages).
    pub calls: usize,
    /// Input tokens of the calls that were billed.
    pub input_tokens: usize,
    /// Of those, tokens read from the cache.
    pub cache_read_tokens: usize,
    /// Of those, tokens written to the cache.
    pub cache_write_tokens: usize,
    /// Of those, tokens billed as plain input.
    pub uncached_tokens: usize,
    /// The input's cost in dollars.
    pub cost_usd: f64,
    /// Compactions (for `naive`, calls whose history it trimmed).
    pub compactions: usize,
    /// The largest input any call tried to send.
    pub peak_context: usize,
    /// Calls whose input exceeded the window (failed, not billed).
    pub over_window_calls: usize,
    /// Calls whose input broke tool pairing (rejected, not billed).
    pub invalid_calls: usize,
    /// Share of calls whose input held the task (the first user request), in percent.
    pub task_kept_pct: f64,
    /// Share of calls whose input held the current request (the last user request), in percent.
    pub current_kept_pct: f64,
    /// References the next assistant messages after each call that was sent (within the
    /// window, pairing intact) use that the call's whole history held only in removable
    /// history ([`next::pending`]).
    pub next_references: usize,
    /// Share of those that the call's input held, in percent.
    pub next_kept_pct: f64,
    #[serde(skip)]
    bill: Bill,
    #[serde(skip)]
    task: [usize; 2],
    #[serde(skip)]
    current: [usize; 2],
    #[serde(skip)]
    next: [usize; 2],
}

impl PolicyTotals {
    fn new(policy: Policy) -> Self {
        Self {
            policy,
            calls: 0,
            input_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            uncached_tokens: 0,
            cost_usd: 0.0,
            compactions: 0,
            peak_context: 0,
            over_window_calls: 0,
            invalid_calls: 0,
            task_kept_pct: 0.0,
            current_kept_pct: 0.0,
            next_references: 0,
            next_kept_pct: 0.0,
            bill: Bill::default(),
            task: [0; 2],
            current: [0; 2],
            next: [0; 2],
        }
    }

    /// Fills the derived figures from the running sums.
    fn settle(&mut self, family: &PriceFamily) {
        let pct = |[kept, of]: [usize; 2]| {
            if of == 0 {
                100.0
            } else {
                (kept as f64 * 1000.0 / of as f64).round() / 10.0
            }
        };
        self.input_tokens = self.bill.input;
        self.cache_read_tokens = self.bill.cache_read;
        self.cache_write_tokens = self.bill.cache_write;
        self.uncached_tokens = self.bill.uncached;
        self.cost_usd = (self.bill.cost(family) * 10_000.0).round() / 10_000.0;
        self.task_kept_pct = pct(self.task);
        self.current_kept_pct = pct(self.current);
        self.next_references = self.next[1];
        self.next_kept_pct = pct(self.next);
    }
}

/// The figures of a replay: one row of totals per policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// The model priced.
    pub model: String,
    /// The price family it belongs to.
    pub family: String,
    /// The context window calls must fit (0 when each session has its own: `window_share`).
    pub window: usize,
    /// Each session's window as a share of its whole history's tokens, when given so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_share: Option<f64>,
    /// Sessions replayed.
    pub sessions: usize,
    /// One row per policy.
    pub policies: Vec<PolicyTotals>,
}

/// The context window a replay's calls must fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// The same window for every session.
    Tokens(usize),
    /// Each session's own: this share of its whole history's tokens (a session outgrows a
    /// window of a third of its size as it would a model's, at the same point of its work).
    Share(f64),
}

/// Runs policies over recorded sessions, one session at a time.
pub struct Replay {
    model: String,
    family: PriceFamily,
    window: Window,
    options: Options,
    totals: Vec<PolicyTotals>,
    sessions: usize,
}

impl Replay {
    /// A replay of `policies` for `model` (its profile and price family), where calls must fit
    /// `window` and sessions compact at `trigger` of it down to `target` of it, or, without a
    /// target, as deep as their traffic allows ([`Options::traffic_depth`]).
    ///
    /// # Errors
    /// [`Error::BadBudget`] for a window of 0 tokens, a share that is not above 0, or unusable
    /// shares.
    pub fn new(
        model: &str,
        profile: &Profile,
        family: PriceFamily,
        window: Window,
        (trigger, target): (f64, Option<f64>),
        policies: &[Policy],
    ) -> Result<Self> {
        match window {
            Window::Tokens(0) => {
                return Err(Error::bad_budget(
                    "context_window",
                    0,
                    "a window of 0 tokens fits nothing",
                ));
            }
            Window::Share(share) if !(share > 0.0 && share.is_finite()) => {
                return Err(Error::bad_budget(
                    "window_share",
                    share,
                    "a window share must be a number above 0",
                ));
            }
            Window::Tokens(_) | Window::Share(_) => {}
        }
        let mut profile = profile.clone();
        profile.context_window = match window {
            Window::Tokens(tokens) => tokens,
            // Checked with a window of the model's own; each session sets its own.
            Window::Share(_) => profile.context_window.max(1),
        };
        let options = Options {
            tokenizer: profile.tokenizer,
            model: Some(model.to_string()),
            profile,
            traffic_depth: target.is_none(),
            ..Options::with_budget(Budget::window_with(Some(trigger), target))
        };
        let replay = Self {
            model: model.to_string(),
            family,
            window,
            options,
            totals: policies.iter().map(|&p| PolicyTotals::new(p)).collect(),
            sessions: 0,
        };
        // Check the budget once, here, rather than on the first session.
        let empty = Conversation {
            format: crate::format::Format::OpenAi,
            system: None,
            messages: Vec::new(),
            envelope: None,
            lines: Vec::new(),
            repairs: Vec::new(),
        };
        let checked = replay.options.profile.context_window;
        replay.session_for(&empty, (Policy::Default, checked))?;
        Ok(replay)
    }

    /// Replays one recorded session under every policy; with `only_outgrowing`, only when its
    /// whole history exceeds the window (the sessions where policies differ). Returns whether
    /// it was replayed.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the recording itself breaks tool pairing (nothing is added).
    pub fn add(&mut self, conversation: &Conversation, only_outgrowing: bool) -> Result<bool> {
        let problems = validate::check(conversation);
        Error::unless_valid(&problems)?;
        let counts = self.options.count_body(conversation);
        let window = match self.window {
            Window::Tokens(tokens) => tokens,
            // A share above 0 of a count (checked in `new`): rounded up to whole tokens.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Window::Share(share) => ((counts.total() as f64 * share).ceil() as usize).max(1),
        };
        if only_outgrowing && counts.total() <= window {
            return Ok(false);
        }
        // The calls the recording answered: the request module's boundaries, each run of
        // assistant messages being one call's answer (not the call still in progress); and what
        // the next messages after each use that only removable history held.
        let boundaries: Vec<usize> = crate::request::call_boundaries(conversation)
            .into_iter()
            .filter(|&at| at < conversation.messages.len())
            .collect();
        let calls = parallel::in_turn(boundaries.len(), parallel::cores(), |k| Call {
            at: boundaries[k],
            pending: next::pending(conversation, boundaries[k], NEXT_MESSAGES),
        });
        for index in 0..self.totals.len() {
            let policy = self.totals[index].policy;
            let totals = self.run(conversation, &counts, &calls, (policy, window))?;
            let sum = &mut self.totals[index];
            sum.calls += totals.calls;
            sum.bill.add(totals.bill);
            sum.compactions += totals.compactions;
            sum.peak_context = sum.peak_context.max(totals.peak_context);
            sum.over_window_calls += totals.over_window_calls;
            sum.invalid_calls += totals.invalid_calls;
            for (into, from) in [
                (&mut sum.task, totals.task),
                (&mut sum.current, totals.current),
                (&mut sum.next, totals.next),
            ] {
                into[0] += from[0];
                into[1] += from[1];
            }
        }
        self.sessions += 1;
        Ok(true)
    }

    /// The figures so far.
    pub fn figures(&self) -> Figures {
        let mut policies = self.totals.clone();
        for totals in &mut policies {
            totals.settle(&self.family);
        }
        let (window, window_share) = match self.window {
            Window::Tokens(tokens) => (tokens, None),
            Window::Share(share) => (0, Some(share)),
        };
        Figures {
            model: self.model.clone(),
            family: self.family.family.clone(),
            window,
            window_share,
            sessions: self.sessions,
            policies,
        }
    }

    /// A fresh session for a policy and a window, holding what `recording` has besides its
    /// messages.
    fn session_for(
        &self,
        recording: &Conversation,
        (policy, window): (Policy, usize),
    ) -> Result<Session> {
        let mut options = self.options.clone();
        options.profile.context_window = window;
        let mut compaction = CompactionScope::Full;
        match policy {
            Policy::Middle | Policy::Oldest => {
                options.strategy = Some(if policy == Policy::Middle {
                    Strategy::Middle
                } else {
                    Strategy::Oldest
                });
                options.tools.mode = ToolMode::Off;
            }
            Policy::Tools => compaction = CompactionScope::ToolsOnly,
            Policy::Cost => {
                options.selector.optimize =
                    Optimize::Cost(CostModel::new(&self.family, COST_HORIZON));
            }
            Policy::None | Policy::Naive | Policy::Default => {}
        }
        let start = Conversation {
            format: recording.format,
            system: recording.system.clone(),
            messages: Vec::new(),
            envelope: None,
            lines: Vec::new(),
            repairs: Vec::new(),
        };
        Session::with_compaction(start, options, compaction)
    }

    /// One policy over one session, whose model calls are `calls`, within `window`.
    fn run(
        &self,
        recording: &Conversation,
        counts: &Counts,
        calls: &[Call],
        (policy, window): (Policy, usize),
    ) -> Result<PolicyTotals> {
        let messages = &recording.messages;
        let mut totals = PolicyTotals::new(policy);
        let mut cache = PromptCache::new(self.family.caching, self.family.min_cacheable);
        let mut session = match policy {
            Policy::None | Policy::Naive => None,
            _ => Some(self.session_for(recording, (policy, window))?),
        };
        // The task and the current request as compaction pins them: requests, not harness text
        // (the last user turn stands in when a recording has no request at all).
        let requests = crate::classify::requests(recording);
        let task = requests
            .first()
            .copied()
            .or_else(|| messages.iter().position(is_user_turn));
        // Counts of the messages sent, as totals, with the recording's system and reply priming.
        let cut = |totals: Vec<usize>| {
            Counts::from_totals(totals, counts.outside).with_priming_of(counts)
        };
        let mut fed = 0;
        for &Call {
            at: call,
            ref pending,
        } in calls
        {
            let history = empty(recording.format, recording.system.clone());
            let (sent, sent_counts) = match (&mut session, policy) {
                (Some(session), _) => {
                    let new = messages[fed..call].iter().zip(&counts.messages[fed..call]);
                    for (message, &tokens) in new {
                        session.push_counted(message.clone(), tokens);
                    }
                    fed = call;
                    let before = session.compactions();
                    // A compaction that cannot fit leaves the session over its trigger; the call
                    // then fails if it is over the window, which is counted below.
                    let _ = session.compact_if_needed();
                    totals.compactions += session.compactions() - before;
                    (session.conversation().clone(), session.counts().clone())
                }
                (None, Policy::Naive) => {
                    let whole = Conversation {
                        messages: messages[..call].to_vec(),
                        ..history
                    };
                    let whole_counts = cut(counts.messages[..call].to_vec());
                    let trimmed = crate::lab::bench::naive(&whole, &whole_counts, window);
                    if trimmed.kept.contains(&false) {
                        totals.compactions += 1;
                    }
                    let kept_counts = whole_counts
                        .messages
                        .iter()
                        .zip(&trimmed.kept)
                        .filter(|(_, kept)| **kept)
                        .map(|(tokens, _)| *tokens)
                        .collect();
                    (trimmed.conversation, cut(kept_counts))
                }
                (None, _) => {
                    let whole = Conversation {
                        messages: messages[..call].to_vec(),
                        ..history
                    };
                    (whole, cut(counts.messages[..call].to_vec()))
                }
            };
            totals.calls += 1;
            let tokens = sent_counts.total();
            totals.peak_context = totals.peak_context.max(tokens);
            let current = requests[..requests.partition_point(|&r| r < call)]
                .last()
                .copied()
                .or_else(|| messages[..call].iter().rposition(is_user_turn));
            let over = tokens > window;
            let invalid = !over && !validate::check(&sent).is_empty();
            for (kept, request) in [(&mut totals.task, task), (&mut totals.current, current)] {
                if let Some(request) = request {
                    kept[1] += 1;
                    if !over && !invalid && holds(&sent, &messages[request]) {
                        kept[0] += 1;
                    }
                }
            }
            if !over && !invalid {
                let kept = next::kept(pending, &sent);
                totals.next[0] += kept.iter().filter(|&&k| k).count();
                totals.next[1] += pending.len();
            }
            if over {
                totals.over_window_calls += 1;
                continue;
            }
            if invalid {
                totals.invalid_calls += 1;
                continue;
            }
            let priming = sent_counts.priming();
            let system = sent.system.clone().map(|s| (s, sent_counts.outside));
            let items = system
                .into_iter()
                .chain(sent.messages.into_iter().zip(sent_counts.messages))
                .collect();
            totals.bill.add(cache.call(items, priming));
        }
        Ok(totals)
    }
}

/// One model call of a recording: where its input ends, and the references the next assistant
/// messages use that only removable history before it held.
struct Call {
    at: usize,
    pending: Vec<Pending>,
}

/// Whether `conversation` still holds `request`: a message of its role whose text contains the
/// request's text (a marker may have been merged in front of it), or, for a request without
/// text, an equal message.
fn holds(conversation: &Conversation, request: &Message) -> bool {
    let text = request.text();
    let text = text.trim();
    conversation.messages.iter().any(|message| {
        message.role == request.role
            && if text.is_empty() {
                message == request
            } else {
                // Part by part: a marker merged in front of the request is a part of its own or
                // a prefix of the request's own text part.
                message.parts.iter().any(|part| match part {
                    crate::conversation::Part::Text { text: own, .. } => own.contains(text),
                    _ => false,
                })
            }
    })
}

/// A conversation with no messages, in `format`, with `system` outside the list.
fn empty(format: crate::format::Format, system: Option<crate::Message>) -> Conversation {
    Conversation {
        format,
        system,
        messages: Vec::new(),
        envelope: None,
        lines: Vec::new(),
        repairs: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family(caching: Caching) -> PriceFamily {
        let model = match caching {
            Caching::Explicit => "claude-sonnet-4-5",
            Caching::Automatic => "gpt-4.1",
        };
        let profile = crate::catalog::Catalog::builtin()
            .resolve(model)
            .expect("listed")
            .profile;
        Prices::builtin()
            .for_profile(&profile)
            .expect("priced")
            .clone()
    }

    /// Six calls, worked out by hand. Messages are letters with their tokens; the provider
    /// caches prefixes of 1,024 tokens or more.
    ///
    /// | call | input (tokens)              | common prefix | read | write | uncached |
    /// |------|-----------------------------|---------------|------|-------|----------|
    /// | 1    | A600 B500          = 1,100  | none          | 0    | 1,100 | 0        |
    /// | 2    | A B C300           = 1,400  | A B = 1,100   | 1,100| 300   | 0        |
    /// | 3    | A B C D200         = 1,600  | A B C = 1,400 | 1,400| 200   | 0        |
    /// | 4    | A M50 C D E100     = 1,250  | A = 600 < 1,024 | 0  | 1,250 | 0        |
    /// | 5    | A M C D E F100     = 1,350  | A M C D E = 1,250 | 1,250 | 100 | 0     |
    /// | 6    | F G200             = 300    | none, and 300 < 1,024 | 0 | 0 | 300     |
    ///
    /// Totals: input 1,100 + 1,400 + 1,600 + 1,250 + 1,350 + 300 = 7,000; reads 3,750, writes
    /// 2,950, uncached 300, and 3,750 + 2,950 + 300 = 7,000. At Sonnet's prices ($0.30 read, $3.75 write, $3 input per million):
    /// 3,750 × 0.30 + 2,950 × 3.75 + 300 × 3 = 1,125 + 11,062.5 + 900 = $13,087.5 per million
    /// calls like these, so $0.0130875. With automatic caching (gpt-4.1: $0.50 read, $2 input)
    /// the writes are uncached input: 3,750 × 0.50 + 3,250 × 2 = 1,875 + 6,500 → $0.008375.
    fn six_calls(caching: Caching) -> Vec<Bill> {
        let mut cache = PromptCache::new(caching, 1024);
        let calls: [&[(char, usize)]; 6] = [
            &[('A', 600), ('B', 500)],
            &[('A', 600), ('B', 500), ('C', 300)],
            &[('A', 600), ('B', 500), ('C', 300), ('D', 200)],
            &[('A', 600), ('M', 50), ('C', 300), ('D', 200), ('E', 100)],
            &[
                ('A', 600),
                ('M', 50),
                ('C', 300),
                ('D', 200),
                ('E', 100),
                ('F', 100),
            ],
            &[('F', 100), ('G', 200)],
        ];
        calls
            .iter()
            .map(|items| cache.call(items.to_vec(), 0))
            .collect()
    }

    fn bill(input: usize, cache_read: usize, cache_write: usize, uncached: usize) -> Bill {
        Bill {
            input,
            cache_read,
            cache_write,
            uncached,
        }
    }

    #[test]
    fn explicit_caching_bills_the_six_calls_as_worked_out() {
        let bills = six_calls(Caching::Explicit);
        assert_eq!(
            bills,
            vec![
                bill(1100, 0, 1100, 0),
                bill(1400, 1100, 300, 0),
                bill(1600, 1400, 200, 0),
                bill(1250, 0, 1250, 0),
                bill(1350, 1250, 100, 0),
                bill(300, 0, 0, 300),
            ]
        );
        let mut total = Bill::default();
        for b in bills {
            total.add(b);
        }
        assert_eq!(total, bill(7000, 3750, 2950, 300));
        let cost = total.cost(&family(Caching::Explicit));
        assert!((cost - 0.013_087_5).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn automatic_caching_bills_new_tokens_as_plain_input() {
        let mut total = Bill::default();
        for b in six_calls(Caching::Automatic) {
            total.add(b);
        }
        assert_eq!(total, bill(7000, 3750, 0, 3250));
        let cost = total.cost(&family(Caching::Automatic));
        assert!((cost - 0.008_375).abs() < 1e-12, "{cost}");
    }
}
