//! Criterion `counter` group (`cargo bench --bench counter`): single-thread throughput of the
//! counters on real agent text, every string the token recipe counts in every conversation of
//! `../shared/corpus` (its `raw/` session logs read by the project's own readers). For `o200k`
//! and `cl100k`, the hand-written encoder side by side with tiktoken-rs, the reference, and with
//! the `tiktoken` crate's `count` called directly; then each open-weight vocabulary (the crate's,
//! through its tokenizer's counter).
//!
//! Each counter is timed warm, over the texts counted one at a time in corpus order. Texts are
//! read and the encoders built outside the measured closures. Without the corpus the group
//! prints a SKIPPED line and measures nothing.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ctxcompact::{Conversation, Part, Tokenizer, format};
use serde_json::Value;

/// Every `.json` / `.jsonl` file under `folder`, recursively, sorted.
fn files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).expect("a readable corpus folder");
        for entry in entries {
            let path = entry.expect("a readable folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "json" || e == "jsonl")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every string the token recipe counts in a conversation, in message order.
fn strings(conversation: &Conversation, out: &mut Vec<String>) {
    fn walk(out: &mut Vec<String>, parts: &[Part]) {
        for part in parts {
            match part {
                Part::Text { text, .. } => out.push(text.clone()),
                Part::ToolCall {
                    name, arguments, ..
                } => {
                    out.push(name.clone());
                    out.push(match arguments {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    });
                }
                Part::ToolResult {
                    call_id, content, ..
                } => {
                    out.push(call_id.clone());
                    walk(out, content);
                }
                Part::Opaque(_) => {}
            }
        }
    }
    for message in conversation.system.iter().chain(&conversation.messages) {
        for value in message.extra.values() {
            if let Value::String(text) = value {
                out.push(text.clone());
            }
        }
        walk(out, &message.parts);
    }
}

/// The strings of every conversation of the shared corpus that the readers accept (files that
/// are not conversations, such as indexes, are left out), or `None` when it is absent.
fn corpus_texts() -> Option<Vec<String>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !folder.is_dir() {
        return None;
    }
    let mut texts = Vec::new();
    for path in files(&folder) {
        let bytes = std::fs::read(&path).expect("a readable corpus file");
        if let Ok(conversation) = format::parse(&bytes, None) {
            strings(&conversation, &mut texts);
        }
    }
    Some(texts)
}

fn counter_group(c: &mut Criterion) {
    let Some(texts) = corpus_texts() else {
        eprintln!("SKIPPED counter group: ../shared/corpus is absent");
        return;
    };
    let bytes: usize = texts.iter().map(String::len).sum();
    eprintln!(
        "counter group: {} texts, {:.2} MB of ../shared/corpus",
        texts.len(),
        bytes as f64 / 1e6
    );
    let mut group = c.benchmark_group("counter");
    group
        .throughput(Throughput::Bytes(bytes as u64))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(8));
    let encodings = [
        (
            "o200k",
            Tokenizer::O200k,
            "o200k_base",
            tiktoken_rs::o200k_base().expect("tiktoken-rs ships o200k"),
        ),
        (
            "cl100k",
            Tokenizer::Cl100k,
            "cl100k_base",
            tiktoken_rs::cl100k_base().expect("tiktoken-rs ships cl100k"),
        ),
    ];
    for (name, tokenizer, crate_name, reference) in &encodings {
        let counter = tokenizer.counter();
        let vocabulary = tiktoken::get_encoding(crate_name).expect("the vocabulary is enabled");
        group.bench_function(BenchmarkId::new("ctxcompact_count_text", name), |b| {
            b.iter(|| {
                black_box(&texts)
                    .iter()
                    .map(|t| counter.count_text(t))
                    .sum::<usize>()
            });
        });
        group.bench_function(BenchmarkId::new("tiktoken_crate_count", name), |b| {
            b.iter(|| {
                black_box(&texts)
                    .iter()
                    .map(|t| vocabulary.count(t))
                    .sum::<usize>()
            });
        });
        group.bench_function(BenchmarkId::new("tiktoken_rs_encode_ordinary", name), |b| {
            b.iter(|| {
                black_box(&texts)
                    .iter()
                    .map(|t| reference.encode_ordinary(t).len())
                    .sum::<usize>()
            });
        });
    }
    for tokenizer in [
        Tokenizer::Llama3,
        Tokenizer::Qwen2,
        Tokenizer::DeepSeekV3,
        Tokenizer::Tekken,
        Tokenizer::KimiK2,
        Tokenizer::Glm4,
        Tokenizer::MinimaxM2,
    ] {
        let counter = tokenizer.counter();
        group.bench_function(
            BenchmarkId::new("ctxcompact_count_text", tokenizer.as_str()),
            |b| {
                b.iter(|| {
                    black_box(&texts)
                        .iter()
                        .map(|t| counter.count_text(t))
                        .sum::<usize>()
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, counter_group);
criterion_main!(benches);
