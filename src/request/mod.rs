//! A provider request body in, what to forward out: the proxy's compaction, callable without a
//! socket (a gateway, an SDK hook, the Python package).
//!
//! The body forwarded is a deterministic function of the body received and the
//! [`Compactor`]'s settings. The history is replayed at its own call boundaries (each run of
//! assistant messages ends a call) through a [`Session`]: messages are pushed up to each
//! boundary and the session compacts only when it passes the trigger, down to the target. So
//! between two compactions a forwarded body is the previous one with the new messages appended,
//! and the cut moves only when the trigger is crossed again. Under the trigger (no compaction in
//! the replay) the received bytes are forwarded as they are.
//!
//! Anthropic `cache_control` breakpoints are left out of what the replay sees (a client moves
//! them from call to call) and put back on every marked message that survives unchanged, at most
//! four in the body (Anthropic's limit). Tool definitions are counted as `ctxcompact count` counts
//! them, outside the messages, and nothing removes them. A Responses body naming a
//! `previous_response_id` is forwarded unread: the provider holds its history.
//!
//! Usage reported in responses is not used to anchor counts: it reaches one caller only, and
//! counts that depend on it would make another caller, or a restarted one, send other bytes.
//! Anything that cannot be read, validated, fitted within the window or read back once compacted
//! ([`crate::Compacted::check_reads_back`]'s check) is forwarded unchanged (fail-open), with the
//! reason; a body that breaks a pairing rule but is under the trigger needs no compaction and is
//! forwarded as it came, the rule named.

mod agent;
mod breakpoints;
mod cache;
mod forward;
mod recall;

use serde_json::Value;

use crate::archive::Bound;
use crate::budget::Budget;
use crate::catalog::Tables;
use crate::conversation::{Conversation, Message, Role, named_model};
use crate::error::{Error, Result};
use crate::format::{self, Format};
use crate::options::Options;
use crate::session::Session;
use crate::settings::{ModelLookup, Settings};
use crate::tokens;
use cache::{Cache, ReplayKey, ReplayState};

pub use agent::Agent;
pub use forward::{CompactionFacts, Facts, FailOpen, Forward, Handling, LastCompaction, Verdict};

/// Compacts provider request bodies with one set of settings, keeping a bounded cache of
/// replayed conversations (it saves work, never changes a byte).
///
/// # Example
/// ```
/// use ctxcompact::format::Format;
/// use ctxcompact::request::{Compactor, Handling};
///
/// let settings = ctxcompact::Settings::default(); // compact past 70% of the window, to 50%
/// let compactor = Compactor::new(&settings, None, 1024)?;
/// let body = br#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}"#;
/// let forward = compactor.compact(body, Format::OpenAi, None, None);
/// assert_eq!(forward.verdict.action, Handling::Forwarded);
/// let upstream: &[u8] = forward.body.as_deref().unwrap_or(body);
/// assert_eq!(upstream, body);
/// # Ok::<(), ctxcompact::Error>(())
/// ```
pub struct Compactor {
    /// The settings every request's options come from, the archive folder made absolute once;
    /// their trigger and target as given (a target given sets the depth of every compaction:
    /// [`Options::traffic_depth`]).
    settings: Settings,
    /// The settings' catalog and calibration, read once.
    tables: Tables,
    /// The context window for every model, instead of the catalog's.
    window: Option<usize>,
    /// The trigger and target shares (the settings', else the defaults).
    shares: (f64, f64),
    cache: Cache,
    /// The size bound on the archive folder, when there is one ([`Compactor::bound_archive`]).
    archive_bound: Option<Bound>,
}

/// A request read and checked, ready to replay.
struct Request {
    model: Option<String>,
    options: Options,
    facts: Facts,
    conversation: Conversation,
    /// The client's marked messages, whole, by index (Anthropic).
    marked: Vec<(usize, Value)>,
    /// The key of each prefix of the history: `keys[p]` for the first `p` messages.
    keys: Vec<ReplayKey>,
}

impl Compactor {
    /// A compactor for `settings` (a trigger and a target ratio of each model's window, the
    /// engine settings; no model, no fixed budget), models looked up in the settings' catalog,
    /// every window `window` when given, and at most `cache_entries` conversations cached (0
    /// caches none).
    ///
    /// # Errors
    /// [`Error::BadSetting`] for a model, a fixed budget, a window of 0, or settings
    /// [`Settings::options`] refuses; [`Error::BadBudget`] for a trigger or target that is no
    /// share of the window, or a target above the trigger; [`Error::Catalog`] and
    /// [`Error::Calibration`] for their files.
    pub fn new(settings: &Settings, window: Option<usize>, cache_entries: usize) -> Result<Self> {
        if settings.model.is_some() || settings.target.is_some() || settings.ratio.is_some() {
            return Err(Error::bad_setting(
                "a request compactor takes each request's model and compacts by its window: \
                 give a trigger and a target ratio, not a model, target or ratio",
            ));
        }
        let budget = Budget::window_with(settings.trigger, settings.target_ratio);
        budget.check()?;
        let Budget::Window { trigger, target } = budget else {
            unreachable!("a window budget is a trigger and a target")
        };
        if window == Some(0) {
            return Err(Error::bad_setting("a window is a number of tokens above 0"));
        }
        let tables = settings.tables()?;
        // Every setting is checked here, so that no request's options fail on one.
        let (checked, ()) = settings.options_budgeted(
            &ModelLookup {
                catalog: &tables.catalog,
                calibration: tables.calibration.as_ref(),
                model: None,
                window,
            },
            |_| (Some(budget), ()),
        )?;
        let settings = Settings {
            archive: checked.archive,
            ..settings.clone()
        };
        Ok(Self {
            tables,
            window,
            shares: (trigger, target),
            settings,
            cache: Cache::new(cache_entries),
            archive_bound: None,
        })
    }

    /// This compactor with its archive folder (the settings' `archive`, if any) kept under
    /// `max_bytes` bytes: past it, the least recently used files go first.
    #[must_use]
    pub fn bound_archive(mut self, max_bytes: u64) -> Self {
        self.archive_bound = self
            .settings
            .archive
            .clone()
            .map(|dir| Bound::new(dir, max_bytes));
        self
    }

    /// How many replayed conversations the cache holds.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Decides what to forward for `body`, a request in `format`; `path_model` is the model
    /// the request's path names (Gemini), used when the body names none; `client` the agent
    /// the request's headers name and what told it ([`Agent::from_headers`]), else its body's shape is
    /// read for one. A recognised agent's own compaction point, less a margin, lowers the
    /// trigger unless the settings gave one.
    pub fn compact(
        &self,
        body: &[u8],
        format: Format,
        path_model: Option<&str>,
        client: Option<(Agent, &'static str)>,
    ) -> Forward {
        match self.read(format, (path_model, client), body) {
            Ok(request) => self.replay(request),
            Err(forward) => *forward,
        }
    }

    /// The library options for a body naming `model` from the agent `client` (if any): the
    /// settings' options for that model and the compactor's window ([`Settings::options`]'s
    /// one resolution), with the trigger and target below the agent's own compaction point
    /// unless a trigger was given; with what is known of them.
    ///
    /// # Errors
    /// What to forward when no window is known: no model, or one no catalog rule reads,
    /// without a window given.
    fn options(
        &self,
        model: Option<&str>,
        client: Option<(Agent, &'static str)>,
    ) -> std::result::Result<(Options, Facts), Box<Forward>> {
        let failed = |why, reason: String| {
            Box::new(Forward::failed_open(model.map(str::to_string), why, reason))
        };
        if model.is_none() && self.window.is_none() {
            return Err(failed(
                FailOpen::NoModel,
                "the body names no model, and no window was given".into(),
            ));
        }
        let lookup = ModelLookup {
            catalog: &self.tables.catalog,
            calibration: self.tables.calibration.as_ref(),
            model,
            window: self.window,
        };
        let agent = client.map(|(agent, _)| agent);
        // The shares are of the window the lookup finds: the budget is decided there, once.
        let shares = |window| {
            let trigger_given = self.settings.trigger.is_some();
            let ((trigger, target), reason) =
                agent::shares(agent, window, self.shares, trigger_given);
            (Some(Budget::Window { trigger, target }), reason)
        };
        let (options, reason) = match self.settings.options_budgeted(&lookup, shares) {
            Ok(found) => found,
            Err(err @ Error::UnknownModel { .. }) => {
                let mut forward = failed(
                    FailOpen::UnknownModel,
                    format!("{err}; no window is known for it, and none was given"),
                );
                forward.unknown_model = model.map(str::to_string);
                return Err(forward);
            }
            Err(err) => return Err(failed(FailOpen::Options, format!("options: {err}"))),
        };
        let window = options.profile.context_window;
        let facts = Facts {
            window: Some(window),
            window_source: options.window_source,
            client: agent,
            client_by: client.map(|(_, by)| by),
            trigger: None,
            trigger_reason: Some(reason),
            price: options.profile.price.clone(),
        };
        Ok((options, facts))
    }

    /// Reads a body into a checked conversation and its options; what to forward instead when
    /// it cannot be.
    fn read(
        &self,
        format: Format,
        (path_model, client): (Option<&str>, Option<(Agent, &'static str)>),
        body: &[u8],
    ) -> std::result::Result<Request, Box<Forward>> {
        let not_json =
            |reason: String| Box::new(Forward::failed_open(None, FailOpen::NotJson, reason));
        let value: Value = serde_json::from_slice(body)
            .map_err(|err| not_json(format!("the body is not JSON: {err}")))?;
        let Value::Object(mut object) = value else {
            return Err(not_json("the body is not a JSON object".into()));
        };
        let model = named_model(&object).or(path_model).map(str::to_string);
        if format == Format::Responses
            && object
                .get("previous_response_id")
                .is_some_and(|id| !id.is_null())
        {
            let reason = "`previous_response_id`: the provider holds the history".into();
            return Err(Box::new(Forward::unchanged(
                Handling::Forwarded,
                model,
                reason,
            )));
        }
        let client = client.or_else(|| agent::from_body(format, &object));
        let (options, facts) = self.options(model.as_deref(), client)?;
        // Past here the model is known: what fails still names its window and agent.
        let unreadable = |model: &Option<String>, reason: String| {
            Box::new(Forward::failed_with(
                model.clone(),
                FailOpen::Unreadable,
                reason,
                &facts,
            ))
        };
        let Some(Value::Array(messages)) = object.get_mut(format.list_key()) else {
            let reason = format!("the body has no `{}` list", format.list_key());
            return Err(unreadable(&model, reason));
        };
        // The replay reads every message without its breakpoints.
        let marked = if format == Format::Anthropic {
            breakpoints::strip_all(messages)
        } else {
            Vec::new()
        };
        // Each message's part of the keys, as the replay reads it (without breakpoints).
        let hashes: Vec<ReplayKey> = messages.iter().map(cache::hash_value).collect();
        let conversation = format::parse_value(Value::Object(object), Some(format))
            .map_err(|err| unreadable(&model, format!("unreadable: {err}")))?;
        let problems = crate::validate::check(&conversation);
        if let Err(problem) = crate::Error::unless_valid(&problems) {
            let reason = format!("invalid: {problem}");
            return Err(Box::new(invalid(
                conversation,
                options,
                model,
                reason,
                facts,
            )));
        }
        // A replay depends on the options and on what lies outside the messages: the options
        // by what they are made from ([`cache::options_key`]); the system prompt as the format
        // writes it, and the tool definitions, walked as the messages are.
        let mut base = ReplayKey::of(format.as_str().as_bytes())
            .then_hash(cache::options_key(
                model.as_deref(),
                client.map(|(agent, _)| agent),
            ))
            .then_hash(cache::system_hash(&conversation));
        for tools in tokens::tool_definitions(&conversation) {
            base = base.then_hash(cache::hash_value(tools));
        }
        let mut keys = Vec::with_capacity(hashes.len() + 1);
        keys.push(base);
        for hash in hashes {
            let previous = *keys.last().expect("keys start with the base");
            keys.push(previous.then_hash(hash));
        }
        Ok(Request {
            model,
            options,
            facts,
            conversation,
            marked,
            keys,
        })
    }

    /// Replays a request's history at its call boundaries, from the longest prefix the cache
    /// holds, and decides what to forward.
    fn replay(&self, request: Request) -> Forward {
        let Request {
            model,
            options,
            mut facts,
            mut conversation,
            marked,
            keys,
        } = request;
        let format = conversation.format;
        let window = options.profile.context_window;
        let boundaries = call_boundaries(&conversation);
        let resumed = boundaries
            .iter()
            .rev()
            .find_map(|&b| self.cache.take(keys[b]));
        let mut state = match resumed.map_or_else(|| fresh(&conversation, options), Ok) {
            Ok(state) => state,
            Err(err) => {
                let reason = format!("options: {err}");
                return Forward::failed_with(model, FailOpen::Options, reason, &facts);
            }
        };
        let compactions_before = state.session.compactions();
        let messages = std::mem::take(&mut conversation.messages);
        let incoming = messages.into_iter().skip(state.pushed);
        push_calls(&mut state, incoming, &boundaries);
        // Written before the body that names them is sent; a failure fails nothing.
        let archive_error = match (state.session.write_archive(), &self.archive_bound) {
            (Ok(created), Some(bound)) => bound.account(&created).err(),
            (Ok(_), None) => None,
            (Err(err), _) => Some(err),
        }
        .map(|e| e.to_string());
        let received = state.received_tokens;
        let forwarded = state.session.tokens();
        let (trigger, compactions) = (state.session.trigger(), state.session.compactions());
        facts.trigger = Some(trigger);
        let mut forward = Forward::new(Handling::Forwarded, model).with_facts(facts);
        forward.verdict = Verdict {
            tokens_received: Some(received),
            tokens_forwarded: Some(received),
            compactions: Some(compactions),
            compactions_run: compactions - compactions_before,
            ..forward.verdict
        };
        forward.compaction.archive_error = archive_error;
        if forwarded > window {
            let why = state.last_error.as_ref().map(|e| format!(": {e}"));
            forward.fail(
                FailOpen::CannotFit,
                format!(
                    "cannot compact within the window ({forwarded} > {window} tokens){}",
                    why.unwrap_or_default()
                ),
            );
        } else if compactions > 0 {
            // The session's messages in this request's envelope; what is forwarded must read
            // back as the body was read, as what the CLI writes.
            let rendered = state.session.lend_messages(&mut conversation, |output| {
                output
                    .check_reads_back(Some(format))
                    .map(|()| format::render(output))
            });
            match rendered {
                Err(err) => forward.fail(FailOpen::ReadBack, err.to_string()),
                Ok(mut value) => {
                    if format == Format::Anthropic {
                        breakpoints::restore(&mut value, marked);
                    }
                    let body = serde_json::to_vec(&value).expect("a JSON value serializes");
                    forward.body = Some(body);
                    forward.verdict.action = Handling::Compacted;
                    forward.verdict.tokens_forwarded = Some(forwarded);
                    forward.compaction.last.clone_from(&state.last);
                }
            }
        } else if received > trigger {
            forward.verdict.reason = state.last_error.clone().or_else(|| {
                Some("over the trigger, but the last round still waits for its results".into())
            });
        }
        self.cache.put(keys[state.pushed], state);
        forward
    }
}

/// Pushes `incoming`, the history after what `state` holds, up to each call boundary past it,
/// compacting wherever the trigger is passed; what the last compaction reported (or why one
/// failed) is kept for the ledger.
fn push_calls(
    state: &mut ReplayState,
    mut incoming: impl Iterator<Item = Message>,
    boundaries: &[usize],
) {
    let resumed_at = state.pushed;
    for &boundary in boundaries.iter().filter(|&&b| b > resumed_at) {
        let count = boundary - state.pushed;
        state.session.extend(incoming.by_ref().take(count));
        let counts = &state.session.counts().messages;
        state.received_tokens += counts[counts.len() - count..].iter().sum::<usize>();
        state.pushed = boundary;
        match state.session.compact_if_needed() {
            Ok(Some(report)) => state.last = Some(LastCompaction::of(report)),
            Ok(None) => {}
            Err(err) => state.last_error = Some(err.to_string()),
        }
    }
}

/// The state of a replay from the start: a session holding what lies outside the messages
/// alone (the system prompt, and the envelope with the tool definitions), counted as `count`
/// counts it.
fn fresh(conversation: &Conversation, options: Options) -> Result<ReplayState> {
    let session = Session::new(conversation.with_messages(Vec::new()), options)?;
    Ok(ReplayState {
        received_tokens: session.tokens(),
        session,
        pushed: 0,
        last_error: None,
        last: None,
    })
}

/// What to forward for a body that breaks a pairing or placement rule: under the trigger it
/// needs no compaction, and goes as received (`forwarded`, the rule named), as a client's side
/// calls do (Gemini CLI's loop check sends a slice of its history that opens with the model and
/// ends with a call it does not answer); past it, it fails open.
fn invalid(
    conversation: Conversation,
    options: Options,
    model: Option<String>,
    reason: String,
    mut facts: Facts,
) -> Forward {
    match Session::new(conversation, options) {
        Ok(session) if session.tokens() <= session.trigger() => {
            facts.trigger = Some(session.trigger());
            let reason = format!("{reason}; under the trigger: forwarded as received");
            let mut forward = Forward::unchanged(Handling::Forwarded, model, reason);
            forward.verdict.tokens_received = Some(session.tokens());
            forward.verdict.tokens_forwarded = Some(session.tokens());
            forward.verdict.compactions = Some(0);
            forward.with_facts(facts)
        }
        _ => Forward::failed_with(model, FailOpen::Invalid, reason, &facts),
    }
}

/// The history prefixes that were sent as model calls, by length: up to each run of assistant
/// messages (the index of its first message), and the whole history (the call being made).
pub(crate) fn call_boundaries(conversation: &Conversation) -> Vec<usize> {
    let messages = &conversation.messages;
    let mut boundaries: Vec<usize> = (1..messages.len())
        .filter(|&i| messages[i].role == Role::Assistant && messages[i - 1].role != Role::Assistant)
        .collect();
    boundaries.push(messages.len());
    boundaries
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use serde_json::{Value, json};

    use super::*;

    /// A Codex-style Responses body: the AGENTS.md message, the task, `rounds` shell calls
    /// with large outputs, and a last request.
    fn codex_body(rounds: usize) -> Vec<u8> {
        let agents = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nNever push to main. Run cargo fmt before every commit.\n</INSTRUCTIONS>";
        let mut input = vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": agents}]}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the parser bug in src/parse.rs."}]}),
        ];
        for i in 0..rounds {
            input.push(
                json!({"type": "function_call", "call_id": format!("call_{i}"), "name": "shell",
                "arguments": format!("{{\"command\": [\"cat\", \"file{i}.txt\"]}}")}),
            );
            let mut output = String::new();
            for l in 0..120 {
                let _ = writeln!(output, "file {i} line {l}: some text here");
            }
            input.push(json!({"type": "function_call_output", "call_id": format!("call_{i}"), "output": output}));
        }
        input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now run the tests."}]}));
        serde_json::to_vec(&json!({"model": "gpt-6.1-sol", "input": input})).unwrap()
    }

    /// A compactor for [`codex_body`]'s requests: past half of a 20,000-token window, down to
    /// 30%, caching `cache` conversations.
    fn codex_compactor(cache: usize) -> Compactor {
        let settings = Settings {
            trigger: Some(0.5),
            target_ratio: Some(0.3),
            ..Settings::default()
        };
        Compactor::new(&settings, Some(20_000), cache).unwrap()
    }

    #[test]
    fn an_instruction_file_survives_the_proxys_compaction_and_the_agent_is_read_from_the_body() {
        let compactor = codex_compactor(0);
        let body = codex_body(40);
        let forward = compactor.compact(&body, Format::Responses, None, None);
        assert_eq!(
            forward.verdict.action,
            Handling::Compacted,
            "{:?}",
            forward.verdict.reason
        );
        let sent: Value = serde_json::from_slice(forward.body.as_deref().unwrap()).unwrap();
        let text = sent.to_string();
        assert!(text.contains("Never push to main. Run cargo fmt before every commit."));
        assert!(text.contains("Fix the parser bug"));
        let listed: Vec<_> = forward
            .compaction
            .last
            .iter()
            .flat_map(|last| &last.instruction_files)
            .map(|file| (file.message, file.agent, file.file))
            .collect();
        assert_eq!(listed, [(0, "codex", "AGENTS.md")]);
        assert!(forward.verdict.tokens_forwarded < forward.verdict.tokens_received);
        assert_eq!(forward.facts.window, Some(20_000));
        assert_eq!(
            forward.facts.window_source,
            Some(crate::catalog::WindowSource::Flag)
        );
        // Codex's headers name it; its trigger is then still the settings' (given).
        let codex = Agent::from_headers(|name| (name == "originator").then_some("codex_cli_rs"));
        let forward = compactor.compact(&body, Format::Responses, None, codex);
        assert_eq!(forward.facts.client, Some(Agent::Codex));
    }

    /// The proxy's side of a pinned part above the target: an agent whose system prompt is
    /// over the target (under the trigger) gets at most one compaction for every two requests
    /// compacted, each compacted body within the fallback budget the ledger names.
    #[test]
    fn a_system_prompt_above_the_target_leaves_room_so_the_requests_after_a_compaction_append() {
        let settings = Settings {
            trigger: Some(0.1),
            target_ratio: Some(0.05),
            ..Settings::default()
        };
        let compactor = Compactor::new(&settings, Some(40_000), 0).unwrap();
        let system = "Follow the house rules of this repository with care. ".repeat(250);
        let mut messages = vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": "Fix the failing tests."}),
        ];
        let (mut compacted, mut compactions) = (0, 0);
        for i in 0..60 {
            let call = json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "read", "arguments": format!("{{\"path\": \"src/m{i}.rs\"}}")}});
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call]}));
            let output = format!("fn item_{i}() {{ compute(); }}\n").repeat(25);
            messages.push(
                json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": output}),
            );
            let body =
                serde_json::to_vec(&json!({"model": "gpt-4o", "messages": messages})).unwrap();
            let forward = compactor.compact(&body, Format::OpenAi, None, None);
            if forward.verdict.action == Handling::Compacted {
                compacted += 1;
                let budget = forward
                    .compaction
                    .last
                    .as_ref()
                    .expect("a compacted request names its budget")
                    .budget;
                assert!(budget > 2_000, "the fallback is above the target: {budget}");
                assert!(
                    forward.verdict.tokens_forwarded.unwrap() <= forward.facts.trigger.unwrap()
                );
            }
            compactions = forward.verdict.compactions.unwrap_or(compactions);
        }
        assert!(compacted >= 10, "{compacted} requests compacted");
        assert!(
            2 * compactions <= compacted,
            "{compactions} compactions for {compacted}"
        );
    }

    #[test]
    fn a_body_sent_again_resumes_its_replay_from_the_cache_and_forwards_the_same_bytes() {
        let compactor = codex_compactor(4);
        let body = codex_body(40);
        let first = compactor.compact(&body, Format::Responses, None, None);
        assert_eq!(first.verdict.action, Handling::Compacted);
        assert!(first.verdict.compactions_run > 0);
        assert_eq!(compactor.cached(), 1);
        let again = compactor.compact(&body, Format::Responses, None, None);
        assert_eq!(again.verdict.compactions_run, 0, "resumed at its end");
        assert_eq!(again.body, first.body);
        assert_eq!(again.compaction, first.compaction);
        // Another model's options are another replay.
        let other = String::from_utf8(body)
            .unwrap()
            .replace("gpt-6.1-sol", "gpt-4o");
        let other = compactor.compact(other.as_bytes(), Format::Responses, None, None);
        assert!(other.verdict.compactions_run > 0);
    }

    #[test]
    fn an_unknown_model_fails_open_and_is_named_for_the_caller() {
        let compactor = Compactor::new(&Settings::default(), None, 0).unwrap();
        let body = br#"{"model": "foo-1", "messages": [{"role": "user", "content": "hi"}]}"#;
        let forward = compactor.compact(body, Format::OpenAi, None, None);
        assert_eq!(forward.verdict.action, Handling::FailedOpen);
        assert_eq!(forward.unknown_model.as_deref(), Some("foo-1"));
        assert!(forward.body.is_none());
    }
}
