//! Criterion benches (`cargo bench`): the exact counter against tiktoken-rs (one thread and
//! every core), a 50 MB run of one character, planning at 1k/10k/100k messages, `compact`
//! against `count` on the largest OpenAI and Anthropic data files (with the parse, render and
//! pairing-check stages apart), and the digest of a
//! 10,000-message removed span.
//!
//! Fixtures, counts and encoders are built outside the measured closures; inputs go through
//! `black_box`. Sample counts and times are kept small so the whole run takes a few minutes on
//! two cores.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ctxcompact::{Budget, Conversation, Options, Part, Tokenizer, compact, count_with, format};
use serde_json::{Value, json};

/// The largest file of `data/conversations` whose name starts with `prefix`, read once.
fn largest_data_file(prefix: &str) -> (PathBuf, Vec<u8>) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations");
    let path = std::fs::read_dir(&folder)
        .expect("data/conversations exists: run `cargo run --release --example generate`")
        .map(|entry| entry.expect("a readable folder entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .filter(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .max_by_key(|path| (std::fs::metadata(path).map_or(0, |m| m.len()), path.clone()))
        .expect("data/conversations holds .json files");
    let bytes = std::fs::read(&path).expect("the data file is readable");
    (path, bytes)
}

/// The strings the counter tokenizes, one per field, in message order: what a bare tokenizer
/// must get through to count the same conversation.
fn texts(conversation: &Conversation) -> Vec<String> {
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
    let mut out = Vec::new();
    for message in conversation.system.iter().chain(&conversation.messages) {
        out.push(message.role.as_str().to_string());
        walk(&mut out, &message.parts);
    }
    out
}

/// Bare tiktoken-rs over the same strings the recipe counts, one at a time: the tokenizer time
/// that the goals compare against.
fn bare_per_field(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    texts: &[String],
    bpe: &tiktoken_rs::CoreBPE,
) {
    group.bench_function(
        BenchmarkId::new("bare_count_ordinary_per_field", name),
        |b| {
            b.iter(|| {
                black_box(texts)
                    .iter()
                    .map(|t| bpe.count_ordinary(t))
                    .sum::<usize>()
            });
        },
    );
}

fn count_group(c: &mut Criterion) {
    let (path, bytes) = largest_data_file("");
    let conversation = format::parse(&bytes, None).expect("data files parse");
    let texts = texts(&conversation);
    let joined = texts.concat();
    let bpe = tiktoken_rs::o200k_base().expect("tiktoken-rs ships o200k");
    let counter = Tokenizer::O200k.counter();
    let mut group = c.benchmark_group("count");
    group.throughput(Throughput::Bytes(joined.len() as u64));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.unwrap_or_default();
    group.bench_function(BenchmarkId::new("ctxcompact_count", &name), |b| {
        b.iter(|| count_with(black_box(&conversation), counter));
    });
    group.bench_function(BenchmarkId::new("tokenizer_count", &name), |b| {
        b.iter(|| Tokenizer::O200k.count(black_box(&conversation)));
    });
    bare_per_field(&mut group, &name, &texts, &bpe);
    group.bench_function(BenchmarkId::new("bare_count_ordinary", &name), |b| {
        b.iter(|| bpe.count_ordinary(black_box(&joined)));
    });
    group.bench_function(BenchmarkId::new("bare_encode_ordinary", &name), |b| {
        b.iter(|| bpe.encode_ordinary(black_box(&joined)).len());
    });
    group.finish();

    // The exact counter against tiktoken-rs, string by string, on one thread.
    let mut group = c.benchmark_group("counter");
    group.throughput(Throughput::Bytes(joined.len() as u64));
    group.bench_function(BenchmarkId::new("ctxcompact_count_text", &name), |b| {
        b.iter(|| {
            black_box(&texts)
                .iter()
                .map(|t| counter.count_text(t))
                .sum::<usize>()
        });
    });
    group.bench_function(
        BenchmarkId::new("tiktoken_encode_ordinary_len", &name),
        |b| {
            b.iter(|| {
                black_box(&texts)
                    .iter()
                    .map(|t| bpe.encode_ordinary(t).len())
                    .sum::<usize>()
            });
        },
    );
    group.finish();

    // Scaling over cores: four copies of the file, counted on one thread and on every core, by
    // ctxcompact (one shared counter) and by tiktoken-rs (one encoder per thread, as its regex
    // is contended when shared), each thread taking a contiguous quarter of the strings.
    let mut large = conversation.clone();
    for _ in 0..3 {
        large.messages.extend(conversation.messages.iter().cloned());
    }
    let large_texts: Vec<String> = (0..4).flat_map(|_| texts.iter().cloned()).collect();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let encoders: Vec<tiktoken_rs::CoreBPE> = (0..cores)
        .map(|_| tiktoken_rs::o200k_base().expect("tiktoken-rs ships o200k"))
        .collect();
    let mut group = c.benchmark_group("count_cores");
    group.throughput(Throughput::Bytes(4 * joined.len() as u64));
    group.bench_function(BenchmarkId::new("ctxcompact_one_thread", "4x"), |b| {
        b.iter(|| count_with(black_box(&large), counter));
    });
    group.bench_function(BenchmarkId::new("ctxcompact_every_core", "4x"), |b| {
        b.iter(|| Tokenizer::O200k.count(black_box(&large)));
    });
    group.bench_function(BenchmarkId::new("tiktoken_one_thread", "4x"), |b| {
        b.iter(|| {
            black_box(&large_texts)
                .iter()
                .map(|t| encoders[0].encode_ordinary(t).len())
                .sum::<usize>()
        });
    });
    group.bench_function(BenchmarkId::new("tiktoken_every_core", "4x"), |b| {
        b.iter(|| {
            let share = large_texts.len().div_ceil(cores);
            std::thread::scope(|scope| {
                let workers: Vec<_> = large_texts
                    .chunks(share)
                    .zip(&encoders)
                    .map(|(slice, bpe)| {
                        scope.spawn(move || {
                            slice
                                .iter()
                                .map(|t| bpe.encode_ordinary(t).len())
                                .sum::<usize>()
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().expect("no panic"))
                    .sum::<usize>()
            })
        });
    });
    group.finish();
}

/// 50 MB of one repeated character: a single pre-token, which the counter merges window by
/// window (tiktoken-rs merges it whole: about 44 s and 2.6 GB here, so it is not run).
fn long_run_group(c: &mut Criterion) {
    let counter = Tokenizer::O200k.counter();
    let text = "a".repeat(50 << 20);
    let mut group = c.benchmark_group("long_run");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function(
        BenchmarkId::new("ctxcompact_count_text", "50MB_of_a"),
        |b| {
            b.iter(|| counter.count_text(black_box(&text)));
        },
    );
    group.finish();
}

/// splitmix64, for the generated planning inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn compact_group(c: &mut Criterion) {
    let options = Options {
        ..Options::with_budget(Budget::Ratio(0.5))
    };
    let mut group = c.benchmark_group("compact_vs_count");
    for prefix in ["openai-", "anthropic-"] {
        let (path, bytes) = largest_data_file(prefix);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        let conversation = format::parse(&bytes, None).expect("data files parse");
        let compacted = compact(conversation, &options).expect("the data file compacts");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(BenchmarkId::new("parse_count", &name), |b| {
            b.iter(|| {
                let conversation = format::parse(black_box(&bytes), None).expect("parses");
                Tokenizer::O200k.count(&conversation)
            });
        });
        group.bench_function(BenchmarkId::new("parse_compact_render", &name), |b| {
            b.iter(|| {
                let conversation = format::parse(black_box(&bytes), None).expect("parses");
                let compacted = compact(conversation, &options).expect("compacts");
                rendered(&compacted.conversation)
            });
        });
        // Parsing and rendering apart: where the pipeline's time goes besides counting.
        group.bench_function(BenchmarkId::new("stage_parse", &name), |b| {
            b.iter(|| format::parse(black_box(&bytes), None).expect("parses"));
        });
        group.bench_function(BenchmarkId::new("stage_render", &name), |b| {
            b.iter(|| rendered(black_box(&compacted.conversation)));
        });
        // The pairing check compact runs on its input and again on its output.
        let input = format::parse(&bytes, None).expect("parses");
        group.bench_function(BenchmarkId::new("stage_validate", &name), |b| {
            b.iter(|| ctxcompact::validate(black_box(&input)));
        });
    }
    group.finish();
}

/// A coding session of `messages` OpenAI messages with what a digest extracts: requests,
/// reads, edits and creations of many files, shell commands with exit codes, and errors.
fn coding_session(messages: usize, seed: u64) -> Conversation {
    let mut rng = Rng(seed);
    let mut out = vec![json!({"role": "system", "content": "You are a coding agent."})];
    let mut call = 0;
    let tools = ["Read", "Edit", "Write", "Bash"];
    while out.len() + 2 < messages {
        if rng.below(25) == 0 {
            let n = rng.below(1000);
            out.push(json!({"role": "user", "content": format!("Now make module {n} handle retries, and keep the ledger tests green.")}));
            continue;
        }
        call += 1;
        let id = format!("call_{call}");
        let tool = tools[usize::try_from(rng.below(4)).unwrap_or(0)];
        let path = format!("src/area{}/file{}.rs", rng.below(40), rng.below(200));
        let arguments = if tool == "Bash" {
            json!({"command": format!("cargo test --manifest-path {path} -- --nocapture")})
        } else {
            json!({"file_path": path})
        };
        let output = if rng.below(6) == 0 {
            format!("error[E0308]: mismatched types in {path}\nexit code: 101")
        } else {
            format!("ok: {} lines\nexit code: 0", rng.below(500))
        };
        out.push(json!({"role": "assistant", "content": "Working on it.", "tool_calls": [{"id": id, "type": "function", "function": {"name": tool, "arguments": arguments.to_string()}}]}));
        out.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
    }
    out.push(
        json!({"role": "assistant", "content": "Done: the retries are in and the tests pass."}),
    );
    format::parse_value(Value::Array(out), None).expect("generated conversations parse")
}

/// Building the digest marker of a removed span of 10,000 messages (issue 10: under 5 ms).
fn digest_group(c: &mut Criterion) {
    let conversation = coding_session(10_001, 0x00D1_6E57);
    let counts = Tokenizer::O200k.count(&conversation);
    let span = 1..conversation.messages.len();
    let mut group = c.benchmark_group("digest");
    group.throughput(Throughput::Elements(span.len() as u64));
    group.bench_function(BenchmarkId::new("span_marker", span.len()), |b| {
        b.iter(|| {
            ctxcompact::lab::bench::span_marker(
                black_box(&conversation),
                &counts,
                span.clone(),
                2000,
                Tokenizer::O200k,
            )
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = count_group, long_run_group, compact_group, digest_group
}
criterion_main!(benches);

/// A conversation as `format::write` writes it, in memory.
fn rendered(conversation: &ctxcompact::Conversation) -> Vec<u8> {
    let mut bytes = Vec::new();
    format::write(conversation, &mut bytes).expect("writing to a Vec cannot fail");
    bytes
}
