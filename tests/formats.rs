//! Hand-written fixtures in both formats: round trips, detection, and token counts checked
//! against numbers computed independently with Python's tiktoken (`fixtures/token_counts.json`,
//! made by `fixtures/tiktoken_reference.py`).

use std::path::{Path, PathBuf};

use ctxcompact::{Format, Tokenizer, format};
use serde_json::Value;

/// Every fixture file with the format its folder names.
pub(crate) fn fixtures() -> Vec<(PathBuf, Format)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    for (folder, format) in [("openai", Format::OpenAi), ("anthropic", Format::Anthropic)] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(root.join(folder))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        entries.sort();
        files.extend(entries.into_iter().map(|path| (path, format)));
    }
    assert!(files.len() >= 8, "fixtures are missing");
    files
}

fn read_value(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn every_fixture_round_trips_to_an_equal_json_value() {
    for (path, expected) in fixtures() {
        let value = read_value(&path);
        let conversation = format::parse_value(value.clone(), None).unwrap();
        assert_eq!(conversation.format, expected, "{}", path.display());
        assert_eq!(format::render(&conversation), value, "{}", path.display());
        let again = format::parse(&format::render_bytes(&conversation), None).unwrap();
        assert_eq!(again, conversation, "{}", path.display());
    }
}

#[test]
fn rendering_keeps_the_key_order_of_the_input() {
    for (path, _) in fixtures() {
        let value = read_value(&path);
        let rendered = format::render(&format::parse_value(value.clone(), None).unwrap());
        assert_eq!(
            serde_json::to_string(&rendered).unwrap(),
            serde_json::to_string(&value).unwrap(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn counts_equal_the_independent_tiktoken_recipe_for_plain_messages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let reference = read_value(&root.join("token_counts.json"));
    let reference = reference.as_object().unwrap();
    assert_eq!(reference.len(), 4);
    for (file, by_tokenizer) in reference {
        let conversation = format::parse(
            &std::fs::read(root.join("openai").join(file)).unwrap(),
            None,
        )
        .unwrap();
        for (name, tokenizer) in [("o200k", Tokenizer::O200k), ("cl100k", Tokenizer::Cl100k)] {
            let expected = &by_tokenizer[name];
            let counts = tokenizer.count(&conversation);
            let messages: Vec<u64> = counts.messages.iter().map(|&n| n as u64).collect();
            let expected_messages: Vec<u64> = expected["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap())
                .collect();
            assert_eq!(messages, expected_messages, "{file} {name}");
            assert_eq!(
                counts.total() as u64,
                expected["total"].as_u64().unwrap(),
                "{file} {name}"
            );
        }
    }
}

#[test]
fn parallel_counting_equals_counting_on_one_thread() {
    // About 6 MB of varied text: enough for several counting threads.
    let sentence = "The quick brown fox — 速い茶色の狐 — jumps over 13 lazy dogs 🐕‍🦺 in 2026.\n";
    let messages: Vec<Value> = (0..600)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": sentence.repeat(100 + i % 17)})
        })
        .collect();
    let conversation = format::parse_value(Value::Array(messages), None).unwrap();
    let parallel = Tokenizer::O200k.count(&conversation);
    let sequential = ctxcompact::count(&conversation, Tokenizer::O200k.counter());
    assert_eq!(parallel, sequential);
}
