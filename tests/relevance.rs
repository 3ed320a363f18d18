//! A chat whose last request names a fact from early history keeps the turn that states it
//! (issue 57): the selector's rule 6 picks relevant removal, and the report names the terms; in
//! a `Session` it is chosen at a compaction only, and between compactions the chat only grows.

use ctxcompact::{Budget, Conversation, Options, Session, Strategy, Tokenizer, format};
use serde_json::json;

/// A long chat of everyday turns, its fourth turn stating a fact, its last asking for it.
fn chat() -> Conversation {
    let topics = [
        "the weather turned cold again and the garden needs covering before frost",
        "work was busy, three meetings about the quarterly plan and a long lunch",
        "the kids started a new puzzle with a thousand pieces of a harbour scene",
        "we watched a film about mountaineers and their long climb in winter",
        "dinner was a soup with lentils, carrots and a little too much pepper",
        "the train was late twice this week, so I read more of my novel",
    ];
    let mut messages = vec![json!({"role": "system", "content": "You are a friendly assistant."})];
    for i in 0..240 {
        let text = if i == 3 {
            "By the way, my locker code at the Riverside gym is 4417.".to_owned()
        } else {
            format!("Day {i}: {}.", topics[i % topics.len()])
        };
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        messages.push(json!({"role": role, "content": text}));
    }
    messages.push(json!({
        "role": "user",
        "content": "What was my locker code at the Riverside gym again?",
    }));
    let body = serde_json::to_vec(&json!({ "messages": messages })).unwrap();
    format::parse(&body, None).unwrap()
}

#[test]
fn a_request_naming_an_early_fact_keeps_the_turn_that_states_it() {
    let input = chat();
    let fact = input.messages[4].text();
    let options = Options::with_budget(Budget::Ratio(0.25));
    let out = ctxcompact::compact(input.clone(), &options).unwrap();
    let decision = out.report.decision.as_ref().unwrap();
    assert_eq!(
        (decision.strategy, decision.rule),
        (Strategy::Relevant, Some(6))
    );
    assert!(out.conversation.messages.iter().any(|m| m.text() == fact));
    let kept = decision
        .kept_for
        .iter()
        .find(|k| k.message == Some(4))
        .unwrap();
    for term in ["locker", "code", "riverside", "gym"] {
        assert!(kept.terms.iter().any(|t| t == term), "{:?}", kept.terms);
    }
    // The same input gives the same output.
    let again = ctxcompact::compact(input, &options).unwrap();
    assert_eq!(again.conversation, out.conversation);
    // Middle removal, forced, loses it.
    let middle = Options {
        strategy: Some(Strategy::Middle),
        ..options
    };
    let out = ctxcompact::compact(chat(), &middle).unwrap();
    assert!(!out.conversation.messages.iter().any(|m| m.text() == fact));
}

#[test]
fn in_a_session_relevant_removal_runs_at_compactions_and_the_prefix_stays_between_them() {
    let full = chat();
    let mut profile = ctxcompact::catalog::Profile::generic(Tokenizer::Chars);
    profile.context_window = 3000;
    let options = Options {
        budget: Budget::Window {
            trigger: 0.7,
            target: 0.5,
        },
        tokenizer: Tokenizer::Chars,
        profile,
        ..Options::with_budget(Budget::Ratio(0.5))
    };
    let start = Conversation {
        messages: full.messages[..1].to_vec(),
        ..full.clone()
    };
    let mut session = Session::new(start, options).unwrap();
    let mut relevant = 0;
    for message in &full.messages[1..] {
        let before = session.conversation().messages.clone();
        session.push(message.clone());
        if let Some(report) = session.compact_if_needed().unwrap() {
            let decision = report.decision.as_ref().unwrap();
            relevant += usize::from(decision.strategy == Strategy::Relevant);
        } else {
            let now = &session.conversation().messages;
            assert_eq!(now[..before.len()], before[..], "the prefix changed");
        }
    }
    // Each compaction keeps what the request of its moment names: a turn removed then is not
    // brought back by a later request (the marker, or the archive, is what is left of it).
    assert!(relevant > 0, "no compaction chose relevant removal");
}
