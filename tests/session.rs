//! `Session` as an agent uses it: push messages, compact when needed, send (issue 13).
//!
//! The properties run over generated agent sessions in both formats — requests, answers and
//! tool rounds of one to three parallel calls — pushed one message at a time, asking
//! `compact_if_needed` at every point an agent would call the model:
//! - between compactions the rendered conversation only grows at its end;
//! - a compaction's output equals `compact` of the same history at the same point (the full
//!   history for the first compaction; what the session kept plus what came since for later
//!   ones, since compactions are cumulative); with a window budget whose target the pinned
//!   units exceed, it equals `compact` down to the trigger or the window; and a compaction
//!   that cannot fit fails as `compact` does and leaves the session as it was.

use ctxcompact::format::{self, Format};
use ctxcompact::{Budget, Conversation, Message, Options, Session, Tokenizer, compact};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Value, json};

/// One step of a generated agent session.
#[derive(Debug, Clone)]
enum Step {
    /// A user request.
    Request(String),
    /// An assistant answer in text.
    Answer(String),
    /// An assistant message with parallel tool calls, then each call's output.
    Round(Vec<String>),
}

fn words() -> impl Strategy<Value = String> {
    vec(
        prop_oneof!["[a-z]{1,8}", Just("ünïcode ✓".to_string())],
        1..30,
    )
    .prop_map(|words| words.join(" "))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => words().prop_map(Step::Request),
        2 => words().prop_map(Step::Answer),
        3 => vec(words(), 1..4).prop_map(Step::Round),
    ]
}

/// The session's messages as the wire would carry them, after a system prompt.
fn build(format: Format, steps: &[Step]) -> Conversation {
    let mut messages = Vec::new();
    let mut next_id = 0;
    for step in steps {
        match step {
            Step::Request(text) => messages.push(json!({"role": "user", "content": text})),
            Step::Answer(text) => messages.push(json!({"role": "assistant", "content": text})),
            Step::Round(outputs) => {
                let ids: Vec<String> = outputs
                    .iter()
                    .map(|_| {
                        next_id += 1;
                        format!("call_{next_id}")
                    })
                    .collect();
                if format == Format::OpenAi {
                    let calls: Vec<Value> = ids
                        .iter()
                        .map(|id| {
                            json!({"id": id, "type": "function",
                                "function": {"name": "read", "arguments": "{\"path\": \"a.rs\"}"}})
                        })
                        .collect();
                    messages
                        .push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
                    for (id, output) in ids.iter().zip(outputs) {
                        messages
                            .push(json!({"role": "tool", "tool_call_id": id, "content": output}));
                    }
                } else {
                    // The generator makes OpenAI and Anthropic conversations only.
                    let uses: Vec<Value> = ids
                        .iter()
                        .map(|id| {
                            json!({"type": "tool_use", "id": id, "name": "read",
                                "input": {"path": "a.rs"}})
                        })
                        .collect();
                    let results: Vec<Value> = ids
                        .iter()
                        .zip(outputs)
                        .map(|(id, output)| {
                            json!({"type": "tool_result", "tool_use_id": id,
                                "content": output})
                        })
                        .collect();
                    messages.push(json!({"role": "assistant", "content": uses}));
                    messages.push(json!({"role": "user", "content": results}));
                }
            }
        }
    }
    let value = match format {
        Format::OpenAi => json!({"model": "gpt-4o", "messages":
            std::iter::once(json!({"role": "system", "content": "You are a coding agent."}))
                .chain(messages).collect::<Vec<_>>()}),
        // The generator makes OpenAI and Anthropic conversations only.
        _ => {
            json!({"model": "claude-sonnet-4", "system": "You are a coding agent.",
            "messages": messages})
        }
    };
    format::parse_value(value, Some(format)).unwrap()
}

fn session_case() -> impl Strategy<Value = (Format, Vec<Step>, Options)> {
    (
        prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
        vec(step(), 4..40),
        60usize..600,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(format, steps, tokens, window, traffic_depth)| {
            let options = if window {
                Options {
                    traffic_depth,
                    ..window_options(tokens)
                }
            } else {
                options(tokens)
            };
            (format, steps, options)
        })
}

fn options(budget: usize) -> Options {
    Options {
        tokenizer: Tokenizer::Chars,
        ..Options::with_budget(Budget::Tokens(budget))
    }
}

/// A window of `window` tokens: compact past 70% of it, down to 50% (in a session, as deep as
/// its traffic allows).
fn window_options(window: usize) -> Options {
    let mut profile = ctxcompact::catalog::Profile::generic(Tokenizer::Chars);
    profile.context_window = window;
    Options {
        budget: Budget::Window {
            trigger: 0.7,
            target: 0.5,
        },
        tokenizer: Tokenizer::Chars,
        profile,
        ..Options::with_budget(Budget::Ratio(0.5))
    }
}

/// `options` with their window budget's target at `target` tokens, as a session sets it for a
/// compaction at the depth its traffic chose.
fn at_depth(options: &Options, target: usize) -> Options {
    let Budget::Window { trigger, .. } = options.budget else {
        panic!("a depth is chosen under a window budget only")
    };
    Options {
        budget: Budget::Window {
            trigger,
            target: target as f64 / options.profile.context_window as f64,
        },
        ..options.clone()
    }
}

/// The messages rendered one by one, as bytes: what a provider's cache sees, in order.
fn rendered(conversation: &Conversation) -> Vec<String> {
    match format::render(conversation) {
        Value::Object(mut body) => match body.remove("messages") {
            Some(Value::Array(messages)) => messages.iter().map(Value::to_string).collect(),
            other => panic!("rendered messages are an array, got {other:?}"),
        },
        Value::Array(messages) => messages.iter().map(Value::to_string).collect(),
        other => panic!("a conversation renders as an object or an array, got {other}"),
    }
}

/// Runs a generated session through a `Session` and checks both properties at every call.
fn check_session(
    format: Format,
    steps: &[Step],
    options: &Options,
) -> Result<usize, TestCaseError> {
    let full = build(format, steps);
    let options = options.clone();
    let start = Conversation {
        messages: Vec::new(),
        ..full.clone()
    };
    let mut session = Session::new(start.clone(), options.clone()).unwrap();
    // What the session must hold, kept independently: the last compaction's output plus every
    // message pushed since.
    let mut expected = start;
    let mut sent = rendered(&expected);
    let mut compactions = 0;
    for message in &full.messages {
        session.push(message.clone());
        expected.messages.push(message.clone());
        if session.is_waiting_for_results() {
            continue;
        }
        let outcome = session.compact_if_needed();
        // A session whose depth follows its traffic compacts like `compact` at the target that
        // depth chose.
        let chosen = match &outcome {
            Ok(Some(report)) => report.depth.map(|depth| depth.target),
            _ => None,
        };
        let options = chosen.map_or_else(|| options.clone(), |target| at_depth(&options, target));
        let mut reference = compact(expected.clone(), &options);
        if let (Err(ctxcompact::Error::BudgetTooSmall { pinned, .. }), Budget::Window { .. }) =
            (&reference, options.budget)
        {
            // Pinned units above the target: the session compacts to the lowest of its
            // fallback budgets that fits (below its trigger), or else its window.
            if *pinned <= options.profile.context_window {
                let budgets =
                    ctxcompact::Session::fallback_budgets(*pinned, session.trigger(), &options);
                for budget in budgets {
                    let fallback = Options {
                        budget: Budget::Tokens(budget),
                        ..options.clone()
                    };
                    reference = compact(expected.clone(), &fallback);
                    if !matches!(reference, Err(ctxcompact::Error::BudgetTooSmall { .. })) {
                        break;
                    }
                }
            }
        }
        let (report, conversation) = match outcome {
            Ok(report) => (report, session.conversation().clone()),
            Err(err) => {
                // A compaction that cannot fit fails as `compact` does (at the target: a depth
                // is reported with a compaction done), and changes nothing.
                if !options.traffic_depth || !matches!(options.budget, Budget::Window { .. }) {
                    prop_assert_eq!(
                        reference.err().map(|e| e.to_string()),
                        Some(err.to_string())
                    );
                }
                prop_assert_eq!(session.conversation(), &expected);
                continue;
            }
        };
        let now = rendered(&conversation);
        match report {
            None => {
                prop_assert!(
                    now.starts_with(&sent),
                    "between compactions the output only grows at its end"
                );
                prop_assert_eq!(&conversation, &expected);
            }
            Some(report) => {
                compactions += 1;
                let reference = reference.unwrap();
                prop_assert_eq!(&conversation, &reference.conversation);
                prop_assert_eq!(report.tokens_after, reference.report.tokens_after);
                expected = reference.conversation;
            }
        }
        prop_assert_eq!(session.tokens(), session.counts().total());
        prop_assert_eq!(
            session.tokens(),
            ctxcompact::count_with(session.conversation(), Tokenizer::Chars.counter()).total()
        );
        sent = now;
    }
    Ok(compactions)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn a_session_only_appends_between_compactions_and_compacts_like_compact(
        (format, steps, options) in session_case()
    ) {
        check_session(format, &steps, &options)?;
    }
}

#[test]
fn the_first_compaction_equals_compact_of_the_full_history() {
    let steps: Vec<Step> = (0..30)
        .map(|i| match i % 3 {
            0 => Step::Request(format!("request number {i} with some words in it")),
            1 => Step::Round(vec!["x ".repeat(40), "y ".repeat(30)]),
            _ => Step::Answer(format!("answer number {i}")),
        })
        .collect();
    let full = build(Format::OpenAi, &steps);
    let options = options(400);
    let mut session = Session::new(
        Conversation {
            messages: Vec::new(),
            ..full.clone()
        },
        options.clone(),
    )
    .unwrap();
    for (index, message) in full.messages.iter().enumerate() {
        session.push(message.clone());
        if session.is_waiting_for_results() {
            continue;
        }
        if let Some(report) = session.compact_if_needed().unwrap() {
            let history = Conversation {
                messages: full.messages[..=index].to_vec(),
                ..full.clone()
            };
            let reference = compact(history, &options).unwrap();
            assert_eq!(session.conversation(), &reference.conversation);
            assert_eq!(report.removed, reference.report.removed);
            return;
        }
    }
    panic!("a 30-step session over a 400-token budget compacts at least once");
}

#[test]
fn compactions_are_cumulative_and_rare() {
    let steps: Vec<Step> = (0..120)
        .map(|i| match i % 3 {
            0 => Step::Request(format!("request {i}")),
            1 => Step::Round(vec!["output ".repeat(20)]),
            _ => Step::Answer(format!("done with {i}")),
        })
        .collect();
    let full = build(Format::Anthropic, &steps);
    let mut profile = ctxcompact::catalog::Profile::generic(Tokenizer::Chars);
    profile.context_window = 2000;
    let options = Options {
        budget: Budget::Window {
            trigger: 0.7,
            target: 0.5,
        },
        tokenizer: Tokenizer::Chars,
        profile,
        ..Options::with_budget(Budget::Ratio(0.5))
    };
    let mut session = Session::new(
        Conversation {
            messages: Vec::new(),
            ..full.clone()
        },
        options,
    )
    .unwrap();
    let mut calls = 0;
    for message in full.messages {
        session.push(message);
        if session.is_waiting_for_results() {
            continue;
        }
        session.compact_if_needed().unwrap();
        calls += 1;
        assert!(session.tokens() <= session.trigger());
    }
    // Hysteresis: each compaction frees the gap between trigger and target (400 tokens here),
    // so there are far fewer compactions than calls.
    let compactions = session.compactions();
    assert!(
        compactions > 1,
        "the session outgrew its window several times"
    );
    assert!(
        compactions * 3 < calls,
        "{compactions} compactions in {calls} calls"
    );
    // The compacted state, markers included, is what later calls keep sending.
    let text: String = session
        .conversation()
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert!(
        text.contains("[ctxcompact:"),
        "a marker stands for the removed history"
    );
}
