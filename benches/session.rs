//! Criterion bench of `Session` (issue 13): `push` of one message plus `tokens()` on a session
//! holding 10,000 and 100,000 messages, against counting that message alone. The issue asks that
//! the first cost at most twice the second, whatever the history's length.
//!
//! Histories and messages are built outside the measured loops; each sample starts from a copy
//! of the same history and pushes pre-built copies of the message, so only `push` and
//! `tokens()` are timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ctxcompact::format::{self, Format};
use ctxcompact::{Budget, Conversation, Message, Options, Session, Tokenizer};
use serde_json::json;

/// A tool output of a few hundred tokens: what an agent pushes on most turns.
fn pushed() -> Message {
    let text = (0..60)
        .map(|i| {
            format!("src/module_{i}.rs: fn handler_{i}(request: &Request) -> Result<Response>")
        })
        .collect::<Vec<_>>()
        .join("\n");
    Message::new_text(ctxcompact::Role::User, text)
}

/// A session whose history holds `messages` short messages, under a budget it never reaches.
fn session(messages: usize) -> Session {
    let history: Vec<_> = (0..messages)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("message {i} of the history, a few words long")})
        })
        .collect();
    let conversation: Conversation =
        format::parse_value(json!(history), Some(Format::OpenAi)).expect("valid history");
    let options = Options {
        tokenizer: Tokenizer::O200k,
        ..Options::with_budget(Budget::Tokens(usize::MAX))
    };
    Session::new(conversation, options).expect("a token budget")
}

fn push_and_tokens(c: &mut Criterion) {
    let message = pushed();
    let counter = Tokenizer::O200k.counter();
    let mut group = c.benchmark_group("session");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1));
    group.bench_function("count_message_alone", |b| {
        b.iter(|| black_box(counter.count_message(black_box(&message))));
    });
    for size in [10_000, 100_000] {
        let base = session(size);
        group.bench_with_input(
            BenchmarkId::new("push_and_tokens", size),
            &base,
            |b, base| {
                b.iter_custom(|iters| {
                    let mut session = base.clone();
                    // A clone's vectors are exactly full: the first push moves them (amortized
                    // O(1) over an agent's life, not over one short sample), so it is untimed.
                    session.push(message.clone());
                    let copies: Vec<Message> = (0..iters).map(|_| message.clone()).collect();
                    let start = Instant::now();
                    for copy in copies {
                        session.push(black_box(copy));
                        black_box(session.tokens());
                    }
                    start.elapsed()
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, push_and_tokens);
criterion_main!(benches);
