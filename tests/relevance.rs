//! A chat whose last request names a fact from early history keeps the turn that states it
//! (issue 57): the selector's rule 6 picks relevant removal, and the report names the terms.

use ctxcompact::{Budget, Conversation, Options, Strategy, format};
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
