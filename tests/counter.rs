//! The exact counter against its reference: ctxcompact's o200k and cl100k counter
//! must count what tiktoken-rs's `encode_ordinary(text).len()` counts, on every string.

use std::path::Path;
use std::sync::LazyLock;

use ctxcompact::{Conversation, Part, TokenCounter, Tokenizer, format};
use proptest::prelude::*;
use serde_json::Value;
use tiktoken_rs::CoreBPE;

static O200K: LazyLock<(&'static dyn TokenCounter, CoreBPE)> = LazyLock::new(|| {
    (
        Tokenizer::O200k.counter(),
        tiktoken_rs::o200k_base().unwrap(),
    )
});
static CL100K: LazyLock<(&'static dyn TokenCounter, CoreBPE)> = LazyLock::new(|| {
    (
        Tokenizer::Cl100k.counter(),
        tiktoken_rs::cl100k_base().unwrap(),
    )
});

/// Asserts both counters agree with tiktoken-rs on `text`; `what` names it in the failure.
fn assert_exact(text: &str, what: &str) {
    for (name, (ours, reference)) in [("o200k", &*O200K), ("cl100k", &*CL100K)] {
        let expected = reference.encode_ordinary(text).len();
        let counted = ours.count_text(text);
        assert_eq!(
            counted,
            expected,
            "{name} on {what} ({} bytes): {:?}",
            text.len(),
            text.chars().take(80).collect::<String>()
        );
    }
}

/// Every string the token recipe counts in a conversation.
fn strings(conversation: &Conversation) -> Vec<String> {
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
                Part::Opaque(value) => out.push(value.to_string()),
            }
        }
    }
    let mut out = Vec::new();
    for message in conversation.system.iter().chain(&conversation.messages) {
        for value in message.extra.values() {
            if let Value::String(text) = value {
                out.push(text.clone());
            }
        }
        walk(&mut out, &message.parts);
    }
    out
}

/// Every `.json` / `.jsonl` file under `folder`, recursively, sorted.
fn files(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
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

/// Compares the counters on every string of every conversation under `folder`, and on the
/// whole text of files that are not conversations; returns how many strings were compared.
fn assert_exact_on_folder(folder: &Path) -> usize {
    let mut compared = 0;
    for path in files(folder) {
        let bytes = std::fs::read(&path).unwrap();
        let what = path.display().to_string();
        match format::parse(&bytes, None) {
            Ok(conversation) => {
                for text in strings(&conversation) {
                    assert_exact(&text, &what);
                    compared += 1;
                }
            }
            // Files that are not conversations (raw logs, indexes, invalid inputs): whole.
            Err(_) => {
                if let Ok(text) = std::str::from_utf8(&bytes) {
                    assert_exact(text, &what);
                    compared += 1;
                }
            }
        }
    }
    compared
}

#[test]
fn counter_matches_tiktoken_on_every_data_conversation() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations");
    let compared = assert_exact_on_folder(&folder);
    assert!(
        compared > 1000,
        "only {compared} strings in data/conversations"
    );
}

#[test]
fn counter_matches_tiktoken_on_the_shared_corpus_or_says_it_skipped() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !folder.is_dir() {
        eprintln!(
            "SKIPPED counter_matches_tiktoken_on_the_shared_corpus: ../shared/corpus is absent"
        );
        return;
    }
    let compared = assert_exact_on_folder(&folder);
    eprintln!("compared {compared} strings of ../shared/corpus (raw logs included)");
    assert!(compared > 0);
}

#[test]
fn counter_matches_tiktoken_on_adversarial_inputs() {
    let cases: Vec<(&str, String)> = vec![
        ("spaces", " ".repeat(1000)),
        ("spaces then word", format!("{}word", " ".repeat(37))),
        ("spaces then digits", format!("{}123", " ".repeat(5))),
        ("spaces at the end", format!("word{}", " ".repeat(9))),
        ("digits", "1234567890".repeat(50)),
        ("newlines", "\n".repeat(300)),
        ("blank lines", "a\n\n\n  \n\t\nb \n c\r\n\r\n d".repeat(20)),
        (
            "crlf",
            "line one\r\nline two\r\n\r\n  indented\r\n".repeat(10),
        ),
        (
            "tabs",
            "\tfn main() {\n\t\tlet x = 1;\t// tab\n\t}\n".repeat(10),
        ),
        (
            "unicode spaces",
            "a\u{a0}b\u{3000}c \u{a0} d\u{2003}\u{2003}e\u{85}f\u{2028}g\u{202f}\u{3000}".into(),
        ),
        (
            "contractions",
            "I'm you're we've they'll she'd it's don't I'M YOU'RE WE'VE 'S 's' 'll'".into(),
        ),
        ("contraction at the start", "'s".into()),
        ("contraction at the end", "dog's".into()),
        ("lone apostrophes", "'''' ' ' x' 'x ''s".into()),
        ("long s", "it'ſ ſ 'ſ WHAT'ſ ſtraße".into()),
        (
            "mixed scripts",
            "Hello мир 世界 مرحبا שלום नमस्ते こんにちは 안녕하세요 Γειά σου".repeat(5),
        ),
        ("emoji with modifiers", "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷🇩🇪 ✋🏿x👍🏻y".repeat(5)),
        (
            "combining marks",
            "e\u{301}\u{301} \u{301}a Ä a\u{308}\u{308}\u{308}b".into(),
        ),
        ("title case letters", "ǅemal ǈubljana ǋ ǲ".into()),
        ("modifier letters", "ʰʲʷ aʰb ʰA Aʰ ʰʰʰ xʼs ˈstress".into()),
        (
            "punctuation runs",
            "!!!???... --- === *** /// \\\\\\ ```".repeat(10),
        ),
        ("slashes and newlines", "a/\n/b //\n\n/ \n/".into()),
        (
            "json",
            r#"{"path": "src/lib.rs", "n": 12345, "ok": true}"#.repeat(10),
        ),
        (
            "code",
            "fn parse(x: &str) -> Result<u32, Error> { x.parse()?; }\n".repeat(10),
        ),
        (
            "numbers in words",
            "abc123def4567ghi89 1a2b3c ١٢٣ ⅷ ²³".into(),
        ),
        (
            "camel case",
            "parseHTTPResponse XMLHttpRequest getURLForID iOS".into(),
        ),
        (
            "control characters",
            "a\u{0}b\u{7}c\u{1b}[0m\u{b}\u{c}".into(),
        ),
        ("word then newlines", "word\n\n\nword \n\n".into()),
    ];
    for (what, text) in &cases {
        assert_exact(text, what);
    }
}

// See: #14 — a single huge pre-token (one repeated character) is merged in windows; the count
// must be the same as tiktoken-rs merging it whole.
#[test]
fn counter_matches_tiktoken_on_pieces_longer_than_a_window() {
    let cases = [
        ("letter a", "a".repeat(200_000)),
        ("equals signs", "=".repeat(150_000)),
        ("spaces", " ".repeat(140_000) + "x"),
        ("accented letter", "é".repeat(70_000)),
        ("pattern", "abcdefghij".repeat(15_000)),
        ("random letters", random_letters(200_000)),
    ];
    for (what, text) in &cases {
        assert_exact(text, what);
    }
}

/// `len` lowercase letters from a fixed-seed generator: one piece whose windows all differ.
fn random_letters(len: usize) -> String {
    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + u8::try_from(state % 26).unwrap())
        })
        .collect()
}

#[test]
fn parallel_counting_gives_the_single_thread_counts() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/conversations/openai-coding-rust-2000.json");
    let conversation = format::parse(&std::fs::read(path).unwrap(), None).unwrap();
    let mut large = conversation.clone();
    for _ in 0..3 {
        large.messages.extend(conversation.messages.iter().cloned());
    }
    let parallel = Tokenizer::O200k.count(&large);
    let single = ctxcompact::count_with(&large, Tokenizer::O200k.counter());
    assert_eq!(parallel, single);
    for index in [0, 1, large.messages.len() - 1] {
        assert_eq!(parallel.message_parts(index), single.message_parts(index));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn counter_matches_tiktoken_on_arbitrary_unicode(text in "\\PC{0,200}") {
        assert_exact(&text, "arbitrary text");
    }

    #[test]
    fn counter_matches_tiktoken_on_arbitrary_chars(text in any::<String>()) {
        assert_exact(&text, "arbitrary chars");
    }

    #[test]
    fn counter_matches_tiktoken_on_text_made_of_tricky_pieces(
        pieces in prop::collection::vec(
            prop::sample::select(vec![
                " ", "  ", "\n", "\r\n", "\t", "\u{a0}", "\u{3000}", "'s", "'S", "'ll", "'", "a",
                "Z", "é", "e\u{301}", "\u{301}", "ʰ", "ǅ", "世", "1", "22", "333", "١", "!", "/",
                "...", "👍", "🏽", "\u{200d}", "x", "Hello", "WORLD", "ſ", "-", "_", "\u{85}",
            ]),
            0..40,
        )
    ) {
        assert_exact(&pieces.concat(), "tricky pieces");
    }
}

// See: #25 — open-weight models count with their own vocabulary, not an OpenAI one.
#[test]
fn open_weight_models_count_with_their_own_vocabulary() {
    let text = "fn parse(line: &str) -> Result<Entry, Error> { // 解析 the ledger line\n";
    let cases = [
        ("llama-3.1-8b", Tokenizer::Llama3, "llama3"),
        ("qwen2.5-coder", Tokenizer::Qwen2, "qwen2"),
        ("deepseek-chat", Tokenizer::DeepSeekV3, "deepseek_v3"),
        ("mistral-large", Tokenizer::Tekken, "mistral_v3"),
        ("kimi-k2", Tokenizer::KimiK2, "kimi_k2"),
        ("glm-4.6", Tokenizer::Glm4, "glm4"),
    ];
    for (model, expected, encoding) in cases {
        let tokenizer = ctxcompact::Options::for_model(model).unwrap().tokenizer;
        assert_eq!(tokenizer, expected, "{model}");
        let vocabulary = tiktoken::get_encoding(encoding).unwrap();
        assert_eq!(
            tokenizer.counter().count_text(text),
            vocabulary.count(text),
            "{model}"
        );
        assert!(tokenizer.describe().starts_with(encoding), "{model}");
    }
    // The vocabularies differ: they do not all count this text as o200k does.
    let counts: std::collections::BTreeSet<usize> = cases
        .iter()
        .map(|case| case.1)
        .chain([Tokenizer::MinimaxM2, Tokenizer::O200k])
        .map(|t| t.counter().count_text(&text.repeat(20)))
        .collect();
    assert!(counts.len() > 1, "{counts:?}");
}
