//! Snapshots of the selector's decisions over `data/conversations`: for each file and each of
//! `auto`, `middle` and `oldest` at half the tokens (tool trimming off, so the removal strategy
//! does the work), the layer, rule, strategy and removed ranges. A change to the rules or the
//! planner shows its effect here, in review, as a diff of `snapshots/decisions.json`.
//!
//! To accept a change: `UPDATE_SNAPSHOTS=1 cargo test decisions` rewrites the file.

use std::path::Path;

use ctxcompact::{Budget, Options, Strategy, ToolMode, ToolOptions, format};
use serde_json::{Map, Value, json};

const SNAPSHOT: &str = "tests/snapshots/decisions.json";

/// The decision for one file under one strategy, as a JSON value.
fn decision(bytes: &[u8], strategy: Option<Strategy>) -> Value {
    let conversation = format::parse(bytes, None).unwrap();
    let options = Options {
        strategy,
        tools: ToolOptions {
            mode: ToolMode::Off,
            ..ToolOptions::default()
        },
        ..Options::with_budget(Budget::Ratio(0.5))
    };
    let report = ctxcompact::analyze(conversation, &options).unwrap();
    let report = serde_json::to_value(&report).unwrap();
    let pick = |key: &str| report["decision"][key].clone();
    json!({
        "action": report["action"],
        "layer": pick("layer"),
        "rule": pick("rule"),
        "strategy": pick("strategy"),
        "removed": removed(&report["removed"]),
    })
}

/// Removed ranges as one short line: `0..6 10..20`.
fn removed(ranges: &Value) -> String {
    let ranges: Vec<String> = ranges
        .as_array()
        .unwrap()
        .iter()
        .map(|range| format!("{}..{}", range[0], range[1]))
        .collect();
    ranges.join(" ")
}

/// Every decision, keyed by file name, then by strategy.
fn decisions() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "data/conversations looks incomplete");
    let mut all = Map::new();
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let mut by_strategy = Map::new();
        for (name, strategy) in [
            ("auto", None),
            ("middle", Some(Strategy::Middle)),
            ("oldest", Some(Strategy::Oldest)),
        ] {
            by_strategy.insert(name.into(), decision(&bytes, strategy));
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        all.insert(name, Value::Object(by_strategy));
    }
    Value::Object(all)
}

#[test]
fn decisions_match_the_snapshot() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT);
    let now = decisions();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        let mut text = serde_json::to_string_pretty(&now).unwrap();
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        return;
    }
    let saved: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut changed = Vec::new();
    for (file, strategies) in now.as_object().unwrap() {
        for (strategy, decision) in strategies.as_object().unwrap() {
            let before = &saved[file][strategy];
            if before != decision {
                changed.push(format!(
                    "{file} {strategy}:\n  was {before}\n  now {decision}"
                ));
            }
        }
    }
    let gone = saved
        .as_object()
        .unwrap()
        .len()
        .abs_diff(now.as_object().unwrap().len());
    assert!(
        changed.is_empty() && gone == 0,
        "{} decisions changed ({gone} files added or removed); review them and run \
         UPDATE_SNAPSHOTS=1 cargo test decisions to accept:\n{}",
        changed.len(),
        changed.join("\n")
    );
}
