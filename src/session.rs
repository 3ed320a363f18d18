//! An agent's conversation across its model calls: counted once, compacted with hysteresis.
//!
//! A [`Session`] holds the conversation an agent sends on each call. New messages are counted
//! once, when they are pushed, and grouped into units by looking at the tail only; the running
//! total makes [`Session::tokens`] O(1). [`Session::compact_if_needed`] compacts only when usage
//! passes the trigger, and then down to the target — under a window budget, as deep as the
//! conversation's recent traffic allows ([`Options::traffic_depth`]): the gap between the two
//! keeps compaction from running on every call. Between two compactions the session only appends, so every
//! message already sent is sent again unchanged, in the same place, and a provider's prompt
//! cache keeps hitting. A compaction replaces the session's state with its output (markers
//! included), so the next compaction works on what was kept: compactions are cumulative.

use std::borrow::Cow;
use std::ops::Range;

use crate::account::{Action, LoopDepth, RunDepth};
use crate::budget::{Budget, Traffic};
use crate::compact::{self, Compacted, Run, trim_tools_counted};
use crate::conversation::{Conversation, Message};
use crate::error::Result;
use crate::options::Options;
use crate::report::Report;
use crate::tokens::Counts;
use crate::units;

/// What a session does when usage passes its trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactionScope {
    /// The whole pipeline of [`crate::compact()`]: tool trimming, then unit removal, down to
    /// the target.
    Full,
    /// Tool-round trimming alone, as [`crate::trim_tools`] does; nothing else is removed.
    #[cfg_attr(not(feature = "lab"), allow(dead_code))]
    ToolsOnly,
}

/// A conversation kept across an agent's calls (see the module docs).
#[derive(Clone)]
pub struct Session {
    options: Options,
    compaction: CompactionScope,
    /// Tokens above which the session compacts.
    trigger: usize,
    conversation: Conversation,
    counts: Counts,
    /// `counts.total()`, kept up to date on every push.
    total: usize,
    /// The units of the conversation, as message ranges; only the last one is ever regrouped.
    units: Vec<Range<usize>>,
    compactions: usize,
    /// The provider's last reported size less the estimate of the same conversation
    /// ([`Session::observe_usage`]); 0 until one is observed.
    offset: isize,
    /// The archive files of the compactions since [`Session::write_archive`] last wrote them.
    archive: Vec<(String, String)>,
}

impl Session {
    /// The budgets to try, lowest first, for a session's compaction whose target the pinned
    /// units (`pinned` tokens) exceed. When they fit the trigger: an eighth of the way from
    /// them to the trigger (as far down as they allow, with a margin for the marker), then
    /// halfway, then the trigger itself; else the whole window. A budget at the trigger would
    /// leave no room, so the next call passes the trigger again and every call compacts
    /// (rewriting what the provider's prompt cache holds): the low budgets keep the calls that
    /// follow appending.
    pub fn fallback_budgets(pinned: usize, trigger: usize, options: &Options) -> Vec<usize> {
        if pinned > trigger {
            return vec![options.profile.context_window];
        }
        let room = trigger - pinned;
        let mut budgets = vec![pinned + room / 8, pinned + room / 2, trigger];
        budgets.dedup();
        budgets
    }

    /// Starts a session from `conversation` (its format, envelope and system prompt, and any
    /// messages it already holds, which are counted here).
    ///
    /// The budget must say when to compact: [`Budget::Window`] (with a profile that has a
    /// context window) or [`Budget::Tokens`] (trigger and target both that number).
    ///
    /// # Errors
    /// [`crate::Error::BadBudget`] for a [`Budget::Ratio`], a trigger or target that is not a
    /// share above 0, a target above the trigger, or a window-based budget without a window.
    pub fn new(conversation: Conversation, options: Options) -> Result<Self> {
        Self::with_compaction(conversation, options, CompactionScope::Full)
    }

    /// As [`Session::new`], with the kind of compaction to run at the trigger.
    ///
    /// # Errors
    /// As [`Session::new`].
    pub(crate) fn with_compaction(
        conversation: Conversation,
        options: Options,
        compaction: CompactionScope,
    ) -> Result<Self> {
        let trigger = trigger_tokens(&options)?;
        let counts = options.count_body(&conversation);
        let mut session = Self {
            options,
            compaction,
            trigger,
            total: counts.total(),
            conversation,
            counts,
            units: Vec::new(),
            compactions: 0,
            offset: 0,
            archive: Vec::new(),
        };
        session.regroup_tail();
        Ok(session)
    }

    /// Appends one message, counting it (once) and regrouping only the last unit.
    pub fn push(&mut self, message: Message) {
        let tokens = self.options.tokenizer.counter().count_message(&message);
        self.push_counted(message, tokens);
    }

    /// Appends messages in order, as [`Session::push`] does for each.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        let counter = self.options.tokenizer.counter();
        for message in messages {
            let tokens = counter.count_message(&message);
            self.append(message, tokens);
        }
        self.regroup_tail();
    }

    /// Appends one message whose count under the session's tokenizer is already known (a
    /// replay counts each recorded message once for all its policies).
    pub(crate) fn push_counted(&mut self, message: Message, tokens: usize) {
        self.append(message, tokens);
        self.regroup_tail();
    }

    fn append(&mut self, message: Message, tokens: usize) {
        self.conversation.messages.push(message);
        self.counts.messages.push(tokens);
        self.total += tokens;
    }

    /// The tokens the conversation would cost now, reply priming included: O(1). Once a
    /// reported size has been observed ([`Session::observe_usage`]), that size plus the
    /// estimate of what was added since.
    pub fn tokens(&self) -> usize {
        self.total.saturating_add_signed(self.offset)
    }

    /// The tokens estimated from the messages alone, whatever was observed.
    pub fn estimated_tokens(&self) -> usize {
        self.total
    }

    /// Records the input size the provider reported (e.g. Anthropic's `input_tokens +
    /// cache_read_input_tokens + cache_creation_input_tokens`) for the call that sent the
    /// conversation as the session holds it now: call it before pushing the reply. From then
    /// on [`Session::tokens`] is that figure plus the estimate of what is added, so the
    /// estimator's error no longer grows with the history, and what the request carries that
    /// the conversation does not hold (system prompt, tool definitions) is counted. The
    /// difference is kept through compactions, until the next observation.
    pub fn observe_usage(&mut self, input_tokens: usize) {
        let signed = |n: usize| isize::try_from(n).unwrap_or(isize::MAX);
        self.offset = signed(input_tokens).saturating_sub(signed(self.total));
    }

    /// The token count above which [`Session::compact_if_needed`] compacts.
    pub fn trigger(&self) -> usize {
        self.trigger
    }

    /// The conversation as it would be sent now.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// `read` of the session's messages in `shell` (a request's format, system prompt and
    /// envelope, its own messages set aside): what would be sent now in another request's
    /// envelope, read without copying the messages, which come back to the session after.
    pub(crate) fn lend_messages<T>(
        &mut self,
        shell: &mut Conversation,
        read: impl FnOnce(&Conversation) -> T,
    ) -> T {
        std::mem::swap(&mut shell.messages, &mut self.conversation.messages);
        let result = read(shell);
        std::mem::swap(&mut shell.messages, &mut self.conversation.messages);
        result
    }

    /// The cached count of each message and of the system prompt.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// How many units the conversation holds.
    pub fn units(&self) -> usize {
        self.units.len()
    }

    /// How many times the session has compacted.
    pub fn compactions(&self) -> usize {
        self.compactions
    }

    /// Whether the last unit is a tool round still waiting for some of its results: no cut,
    /// and no request, may be made before they arrive.
    pub fn is_waiting_for_results(&self) -> bool {
        let Some(last) = self.units.last() else {
            return false;
        };
        let messages = &self.conversation.messages[last.clone()];
        let Some((caller, carriers)) = messages.split_first() else {
            return false;
        };
        caller
            .call_ids()
            .any(|id| !carriers.iter().any(|m| m.result_ids().any(|r| r == id)))
    }

    /// Compacts when usage is above the trigger (and no tool round is waiting for results),
    /// down to the target; returns what to send. With a window budget, when the pinned units
    /// alone exceed the target, it compacts as far below the trigger as they allow, or else to
    /// the window, instead ([`Session::fallback_budgets`]; the report's budget says which).
    /// Returns the compaction's report, or `None` when this call only appended; what to send
    /// is then [`Session::conversation`].
    ///
    /// # Errors
    /// As [`crate::compact()`]: then the session is left as it was, over its trigger.
    pub fn compact_if_needed(&mut self) -> Result<Option<Report>> {
        if self.tokens() <= self.trigger || self.is_waiting_for_results() {
            return Ok(None);
        }
        let depth = self.depth();
        let options = match depth {
            Some(depth) => Cow::Owned(self.at_depth(depth)),
            None => Cow::Borrowed(&self.options),
        };
        let depth = depth.map(|depth| RunDepth {
            depth,
            trigger: self.trigger,
        });
        let compacted = match self.run(&options, depth)? {
            // The pinned units alone exceed the target, with the round in progress cut: rather
            // than send everything (and fail past the window), compact down to the trigger, or
            // the window, that they fit.
            Run::CannotFit(report)
                if report.pinned_tokens <= self.options.profile.context_window
                    && matches!(self.options.budget, Budget::Window { .. }) =>
            {
                self.run_fallback(report.pinned_tokens, depth)?
            }
            run => run.compacted()?,
        };
        if compacted.report.action != Action::Compacted {
            // Tool trimming found nothing to trim: the conversation is unchanged.
            return Ok(None);
        }
        self.counts = self.recount(&compacted.conversation, &compacted.unchanged);
        self.conversation = compacted.conversation;
        self.total = self.counts.total();
        self.units.clear();
        self.regroup_tail();
        self.compactions += 1;
        self.archive.extend(compacted.archive);
        Ok(Some(compacted.report))
    }

    /// With [`Options::archive`]: writes the archive files of the compactions since the last
    /// call that wrote them, as [`crate::Compacted::write_archive`] does, and returns the files
    /// it created. Files that could not be written are kept for the next call.
    ///
    /// # Errors
    /// As [`crate::Compacted::write_archive`].
    pub fn write_archive(&mut self) -> std::io::Result<Vec<std::path::PathBuf>> {
        let created = crate::archive::write(&self.archive)?;
        self.archive.clear();
        Ok(created)
    }

    /// The archive files of the compactions since [`Session::write_archive`] last ran: path
    /// (or handle, with [`Options::handles`] alone) and content.
    pub(crate) fn archived(&self) -> &[(String, String)] {
        &self.archive
    }

    /// How deep this compaction goes when its depth follows the traffic
    /// ([`Options::traffic_depth`], under a window budget): `None` otherwise, or before the
    /// conversation's first model call.
    fn depth(&self) -> Option<LoopDepth> {
        let Budget::Window { target, .. } = self.options.budget else {
            return None;
        };
        if !self.options.traffic_depth {
            return None;
        }
        let window = self.options.profile.context_window;
        let traffic = Traffic::measure(&self.conversation, &self.counts)?;
        Some(traffic.depth(window, self.trigger, target))
    }

    /// The options with the window budget's target at `depth`'s.
    fn at_depth(&self, depth: LoopDepth) -> Options {
        let Budget::Window { trigger, .. } = self.options.budget else {
            unreachable!("a depth is chosen under a window budget only")
        };
        let window = self.options.profile.context_window as f64;
        Options {
            budget: Budget::Window {
                trigger,
                target: depth.target as f64 / window,
            },
            ..self.options.clone()
        }
    }

    /// The compaction at the lowest of [`Session::fallback_budgets`] that fits.
    fn run_fallback(&self, pinned: usize, depth: Option<RunDepth>) -> Result<Compacted> {
        let budgets = Self::fallback_budgets(pinned, self.trigger, &self.options);
        let mut fallback = self.options.clone();
        let mut last = None;
        for budget in budgets {
            fallback.budget = Budget::Tokens(budget);
            match self.run(&fallback, depth)? {
                cannot @ Run::CannotFit(_) => last = Some(cannot),
                done => return done.compacted(),
            }
        }
        last.expect("at least one fallback budget").compacted()
    }

    /// One compaction of the session's conversation under `options`, from its cached counts,
    /// its report giving `depth`; an observed excess over the estimate counts as part of what
    /// lies outside the messages. The run takes a copy of the conversation and its counts, since
    /// the pipeline consumes its input: the session stays as it was when the run fails or cannot
    /// fit, and each fallback budget runs from the same conversation.
    fn run(&self, options: &Options, depth: Option<RunDepth>) -> Result<Run> {
        let input = self.conversation.clone();
        let mut counts = self.counts.clone();
        counts.outside = counts.outside.saturating_add_signed(self.offset.max(0));
        let counts = Some(counts);
        match self.compaction {
            CompactionScope::Full => compact::run(input, counts, options, depth),
            CompactionScope::ToolsOnly => {
                trim_tools_counted(input, counts, options, depth).map(|c| Run::Done(Box::new(c)))
            }
        }
    }

    /// The counts of `output`, just compacted from the session's conversation: a message the
    /// compaction left unchanged (`unchanged`, see [`crate::Compacted::unchanged`]) keeps its
    /// cached count, and only messages compaction wrote (markers, cleared results) are counted.
    fn recount(&self, output: &Conversation, unchanged: &[Option<usize>]) -> Counts {
        let counter = self.options.tokenizer.counter();
        let messages = output
            .messages
            .iter()
            .zip(unchanged)
            .map(|(message, source)| match source {
                Some(source) => self.counts.messages[*source],
                None => counter.count_message(message),
            })
            .collect();
        Counts::from_totals(messages, self.counts.outside).with_priming_of(&self.counts)
    }

    /// Groups the messages from the start of the last unit on: the only unit a new message can
    /// join (as a result of its calls).
    fn regroup_tail(&mut self) {
        let start = self.units.pop().map_or(0, |last| last.start);
        let tail = units::spans(&self.conversation, start).map(|(unit, _)| unit);
        self.units.extend(tail);
    }
}

/// The token count above which a session compacts, from its budget.
fn trigger_tokens(options: &Options) -> Result<usize> {
    options
        .budget
        .trigger_tokens(options.profile.context_window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Profile;
    use crate::conversation::Role;
    use crate::format::parse_value;
    use crate::tokens::{CharEstimate, TokenCounter, Tokenizer};
    use serde_json::json;

    fn session(budget: Budget) -> Session {
        session_with_system("be brief", budget)
    }

    /// A session of window 400 counted in characters, with `system` as its system prompt.
    fn session_with_system(system: &str, budget: Budget) -> Session {
        let conversation =
            parse_value(json!([{"role": "system", "content": system}]), None).expect("valid");
        let mut profile = Profile::generic(Tokenizer::Chars);
        profile.context_window = 400;
        let options = Options {
            tokenizer: Tokenizer::Chars,
            profile,
            ..Options::with_budget(budget)
        };
        Session::new(conversation, options).expect("valid budget")
    }

    fn user(text: &str) -> Message {
        Message::new_text(Role::User, text)
    }

    #[test]
    fn tokens_are_the_running_total_of_pushed_messages() {
        let mut s = session(Budget::Tokens(1000));
        let before = s.tokens();
        let message = user("hello there");
        let expected = CharEstimate.count_message(&message);
        s.push(message);
        assert_eq!(s.tokens(), before + expected);
        assert_eq!(s.tokens(), s.counts().total());
    }

    // See: #15
    #[test]
    fn observed_usage_anchors_later_counts() {
        let mut s = session(Budget::Tokens(1000));
        s.push(user("hello there"));
        let estimated = s.tokens();
        // The provider saw 120 more tokens than estimated (its system prompt, say).
        s.observe_usage(estimated + 120);
        assert_eq!(s.tokens(), estimated + 120);
        let reply = Message::new_text(Role::Assistant, "general kenobi");
        let added = CharEstimate.count_message(&reply);
        s.push(reply);
        assert_eq!(s.tokens(), estimated + 120 + added);
        assert_eq!(s.estimated_tokens(), estimated + added);
        // An estimate above the reported size is corrected down as well.
        s.observe_usage(10);
        assert_eq!(s.tokens(), 10);
        s.push(user("again"));
        assert_eq!(s.tokens(), 10 + CharEstimate.count_message(&user("again")));
    }

    // See: #15
    #[test]
    fn an_observed_excess_brings_compaction_forward_and_counts_in_its_budget() {
        let mut s = session(Budget::Tokens(300));
        for turn in 0..8 {
            s.push(user(&format!("turn {turn}: {}", "word ".repeat(20))));
        }
        assert!(s.tokens() <= 300, "within budget on the estimate alone");
        assert!(
            s.tokens() + 100 > 300,
            "over it with what the provider reports"
        );
        let mut unanchored = s.clone();
        s.observe_usage(s.tokens() + 100);
        assert!(unanchored.compact_if_needed().unwrap().is_none());
        let report = s.compact_if_needed().unwrap().expect("compacted");
        assert!(report.tokens_after <= 300, "{report:?}");
        assert!(s.tokens() <= 300);
        assert_eq!(s.tokens(), s.estimated_tokens() + 100);
    }

    #[test]
    fn a_ratio_budget_is_refused() {
        let conversation = parse_value(json!([]), None).expect("valid");
        let options = Options::with_budget(Budget::Ratio(0.5));
        let err = Session::new(conversation, options).err().expect("refused");
        assert!(err.to_string().starts_with("budget ratio = 0.5:"), "{err}");
    }

    #[test]
    fn results_join_the_round_of_their_call() {
        let mut s = session(Budget::Tokens(1000));
        s.push(user("list files"));
        let call = parse_value(
            json!([{"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "pwd", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "x.rs"},
                {"role": "tool", "tool_call_id": "b", "content": "/"}]),
            None,
        )
        .expect("valid")
        .messages;
        let mut messages = call.into_iter();
        s.push(messages.next().expect("call"));
        assert!(s.is_waiting_for_results());
        s.push(messages.next().expect("first result"));
        assert!(s.is_waiting_for_results());
        s.push(messages.next().expect("second result"));
        assert!(!s.is_waiting_for_results());
        // system, request, one round of three messages.
        assert_eq!(s.units(), 3);
    }

    // See: #41 (defect 1).
    #[test]
    fn pinned_units_above_the_target_compact_below_the_trigger_and_then_append() {
        let mut s = session(Budget::Window {
            trigger: 0.7,
            target: 0.5,
        });
        for i in 0..6 {
            s.push(user(&format!("request {i} ").repeat(8)));
            s.push(Message::new_text(Role::Assistant, format!("answer {i}")));
        }
        // The current request alone is about 220 tokens: above the target of 200, below the
        // trigger of 280.
        s.push(user(&"x".repeat(880)));
        assert!(s.tokens() > s.trigger());
        let report = s
            .compact_if_needed()
            .expect("fits below the trigger")
            .expect("compacted");
        assert!(report.budget < 280, "{}", report.budget);
        assert!(s.tokens() <= report.budget, "{}", s.tokens());
        // The counts kept through the compaction are those of the output.
        let recounted = crate::tokens::count_with(s.conversation(), &CharEstimate);
        assert_eq!(s.counts(), &recounted);
    }

    // See: #41 (defect 1).
    #[test]
    fn a_fixed_part_above_the_target_leaves_room_so_the_calls_after_a_compaction_append() {
        // A system prompt of about 220 tokens: above the target of 200, below the trigger of
        // 280, as an agent's instructions and tools can be.
        let mut s = session_with_system(
            &"rule ".repeat(176),
            Budget::Window {
                trigger: 0.7,
                target: 0.5,
            },
        );
        s.push(user("the task"));
        let (mut calls, mut compacted) = (0, 0);
        for i in 0..40 {
            s.push(Message::new_text(Role::Assistant, format!("answer {i}")));
            s.push(user(&format!("next {i}")));
            if let Some(report) = s.compact_if_needed().expect("fits below the trigger") {
                assert!(report.budget < s.trigger(), "{}", report.budget);
                compacted += 1;
            }
            assert!(s.tokens() <= s.trigger(), "{}", s.tokens());
            if compacted > 0 {
                calls += 1;
            }
        }
        assert!(compacted > 1, "{compacted}");
        // The first compaction's call and those after it: at most one compaction in two.
        assert!(
            2 * compacted <= calls,
            "{compacted} compactions in {calls} calls"
        );
    }

    /// The compactions of a loop of 60 tool calls, each reading a result of about 100
    /// characters, in a window of 2,000 (the trigger at 1,400), with the depth following the
    /// traffic or at the target; each compaction's report.
    fn reading_loop(traffic_depth: bool) -> Vec<Report> {
        let conversation =
            parse_value(json!([{"role": "system", "content": "read"}]), None).expect("valid");
        let mut profile = Profile::generic(Tokenizer::Chars);
        profile.context_window = 2_000;
        let options = Options {
            tokenizer: Tokenizer::Chars,
            profile,
            traffic_depth,
            ..Options::with_budget(Budget::window())
        };
        let mut s = Session::new(conversation, options).expect("valid budget");
        s.push(user("read every part"));
        let mut reports = Vec::new();
        for i in 0..60 {
            let round = parse_value(
                json!([{"role": "assistant", "content": null, "tool_calls": [
                    {"id": format!("c{i}"), "type": "function",
                     "function": {"name": "read", "arguments": format!("{{\"part\": {i}}}")}}]},
                    {"role": "tool", "tool_call_id": format!("c{i}"),
                     "content": format!("part {i}: {}", "text of the part ".repeat(6))}]),
                None,
            )
            .expect("valid")
            .messages;
            s.extend(round);
            if let Some(report) = s.compact_if_needed().expect("fits") {
                assert!(s.tokens() < s.trigger(), "{}", s.tokens());
                reports.push(report);
            }
        }
        reports
    }

    #[test]
    fn a_loop_compacts_as_deep_as_its_traffic_allows_and_so_less_often() {
        let deep = reading_loop(true);
        let fixed = reading_loop(false);
        assert!(!deep.is_empty());
        assert!(
            2 * deep.len() <= fixed.len(),
            "{} compactions at the traffic's depth, {} at the target",
            deep.len(),
            fixed.len()
        );
        for report in &deep {
            let depth = report.depth.expect("the depth is reported");
            assert_eq!(depth.calls_measured, crate::budget::RECENT_CALLS);
            assert!((400..=1_000).contains(&depth.target), "{depth:?}");
            assert!(report.tokens_after <= depth.target, "{depth:?}");
            assert!(
                depth.room_calls.expect("after the compaction") >= 1,
                "{depth:?}"
            );
        }
        assert!(fixed.iter().all(|report| report.depth.is_none()));
    }

    // See: #31 (item 5).
    #[test]
    fn a_round_in_progress_over_the_window_is_cut_to_fit_the_target() {
        let mut s = session(Budget::Window {
            trigger: 0.7,
            target: 0.5,
        });
        s.push(user("read the log"));
        let output: String = (0..200)
            .map(|i| ["log line ", &i.to_string(), "\n"].concat())
            .collect();
        let round = parse_value(
            json!([{"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": output}]),
            None,
        )
        .expect("valid")
        .messages;
        s.extend(round);
        // The round alone is over the window of 400.
        assert!(s.tokens() > 400, "{}", s.tokens());
        let report = s
            .compact_if_needed()
            .expect("the round is cut")
            .expect("compacted");
        assert_eq!(report.budget, 200);
        assert_eq!(report.outputs_cut.len(), 1);
        assert!(s.tokens() <= 200, "{}", s.tokens());
        let last = s.conversation().messages.last().expect("the result");
        let Some(crate::conversation::Part::ToolResult { content, .. }) = last.parts.first() else {
            panic!("the result stays: {last:?}");
        };
        let text = crate::conversation::joined_text(content);
        assert!(
            text.starts_with("log line 0\n") && text.ends_with("log line 199\n"),
            "{text}"
        );
    }

    #[test]
    fn below_the_trigger_nothing_changes() {
        let mut s = session(Budget::Window {
            trigger: 0.7,
            target: 0.5,
        });
        assert_eq!(s.trigger(), 280);
        s.push(user("short"));
        assert!(s.compact_if_needed().expect("fine").is_none());
        assert_eq!(s.compactions(), 0);
    }
}
