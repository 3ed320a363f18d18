//! The `ctxcompact` binary: exit codes, output files, reports, error text.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::formats::fixtures;

/// Runs the binary with `args`, feeding `stdin` when given.
pub(crate) fn ctxcompact(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A run refused before it reads its input closes the pipe early; that is its answer.
    match pipe.write_all(stdin.unwrap_or_default()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {}
        written => written.unwrap(),
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// A fresh, empty scratch folder for one test. Its path has the same length in every run (the
/// process id padded to ten digits): an archive's paths are in its markers, and so in the counts
/// a snapshot holds.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("ctxcompact-cli-{name}-{id:010}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_json(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(value).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}})
}

#[test]
fn count_json_equals_the_independent_recipe_total() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let reference: Value =
        serde_json::from_slice(&std::fs::read(root.join("token_counts.json")).unwrap()).unwrap();
    for (file, by_tokenizer) in reference.as_object().unwrap() {
        let path = root.join("openai").join(file);
        for tokenizer in ["o200k", "cl100k"] {
            let output = ctxcompact(
                &[
                    "count",
                    path.to_str().unwrap(),
                    "--tokenizer",
                    tokenizer,
                    "--json",
                ],
                None,
            );
            assert!(output.status.success(), "{}", stderr(&output));
            let mut printed: Value = serde_json::from_slice(&output.stdout).unwrap();
            // OpenAI input has no top-level system prompt.
            assert_eq!(printed["system"], 0, "{file} {tokenizer}");
            assert_eq!(printed["tokenizer"], tokenizer, "{file}");
            let printed_object = printed.as_object_mut().unwrap();
            for key in ["system", "tokenizer", "estimator", "model", "model_match"] {
                printed_object.remove(key);
            }
            assert_eq!(printed, by_tokenizer[tokenizer], "{file} {tokenizer}");
        }
    }
}

#[test]
fn count_reads_standard_input_and_the_model_picks_the_tokenizer() {
    let input = br#"[{"role": "user", "content": "hello world"}]"#;
    let output = ctxcompact(&["count", "-", "--model", "gpt-4", "--json"], Some(input));
    assert!(output.status.success(), "{}", stderr(&output));
    // cl100k: 3 + "user" (1) + "hello world" (2), plus 3 reply tokens.
    assert_eq!(
        serde_json::from_slice::<Value>(&output.stdout).unwrap(),
        json!({"total": 9, "system": 0, "messages": [6], "tokenizer": "cl100k",
            "estimator": "tiktoken cl100k_base: exact for the models that use it",
            "model": "gpt-4", "model_match": "`gpt-4` is catalog name `gpt-4`"})
    );
}

// See: #25
#[test]
fn count_says_exact_only_where_the_count_is() {
    const TEMPLATE: &str = "estimated from its chat template";
    let input = br#"[{"role": "user", "content": "hello world"}]"#;
    let cases = [
        ("gpt-4o", "o200k", "exact for the models that use it"),
        ("llama-3.1-8b", "llama3", TEMPLATE),
        ("qwen2.5-coder", "qwen2", TEMPLATE),
        ("deepseek-chat", "deepseek-v3", TEMPLATE),
        ("mistral-large", "tekken", TEMPLATE),
        ("kimi-k2", "kimi-k2", TEMPLATE),
        ("glm-4.6", "glm4", TEMPLATE),
        ("claude-sonnet-4-5", "claude-sonnet", "calibrated estimate"),
        ("gemma-3", "chars", "rough estimate"),
    ];
    for (model, tokenizer, estimator) in cases {
        let output = ctxcompact(&["count", "-", "--model", model], Some(input));
        assert!(output.status.success(), "{model}: {}", stderr(&output));
        let text = String::from_utf8(output.stdout).unwrap();
        assert!(
            text.contains(&format!("total ({tokenizer}, with ")),
            "{model}: {text}"
        );
        let line = text.lines().find(|l| l.starts_with("estimator: ")).unwrap();
        assert!(line.contains(estimator), "{model}: {line}");
        let open_weight = estimator.contains("chat template");
        assert_eq!(line.contains("exact text tokens"), open_weight, "{model}");
        if !open_weight && tokenizer != "o200k" {
            assert!(!line.contains("exact"), "{model}: {line}");
        }
    }
}

#[test]
fn validate_accepts_every_fixture() {
    for (path, _) in fixtures() {
        let output = ctxcompact(&["validate", path.to_str().unwrap()], None);
        assert!(
            output.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

#[test]
fn validate_names_the_message_of_each_breakage() {
    let dir = scratch("validate");
    let user = json!({"role": "user", "content": "go"});
    let answer = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
    let cases = [
        (
            "unanswered",
            json!([user, {"role": "assistant", "tool_calls": [call("a")]}, {"role": "user", "content": "hm?"}, {"role": "assistant", "content": "ok"}]),
            "message 1: tool_calls[0].id: tool call `a` is never answered",
        ),
        (
            "orphan",
            json!([user, answer("ghost"), {"role": "assistant", "content": "ok"}]),
            "message 1: tool_call_id: tool result refers to unknown call id `ghost`",
        ),
        (
            "duplicate",
            json!([user, {"role": "assistant", "tool_calls": [call("a")]}, answer("a"), {"role": "assistant", "tool_calls": [call("a")]}, answer("a")]),
            "message 3: tool_calls[0].id: call id `a` is already used by message 1",
        ),
        (
            "tool_first",
            json!([answer("a"), user]),
            "message 0: role: the conversation opens with a tool result",
        ),
    ];
    for (name, value, expected) in cases {
        let path = write_json(&dir, &format!("{name}.json"), &value);
        let output = ctxcompact(&["validate", &path], None);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(
            printed.contains(&format!("{path}: {expected}")),
            "{name}: {printed}"
        );
    }
}

#[test]
fn compact_within_budget_returns_the_input_unchanged() {
    for (path, _) in fixtures() {
        let output = ctxcompact(&["compact", path.to_str().unwrap(), "--ratio", "1.5"], None);
        assert!(
            output.status.success(),
            "{}: {}",
            path.display(),
            stderr(&output)
        );
        let input: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&output.stdout).unwrap(),
            input,
            "{}",
            path.display()
        );
        assert!(
            stderr(&output).contains("within budget"),
            "{}",
            stderr(&output)
        );
    }
}

// A string where a call's input object belongs, and fields the wire left out (a content's
// `role`, a call's `args` or `input`), come back as they were read. See: #27
#[test]
fn within_budget_strings_for_inputs_and_absent_fields_round_trip() {
    let dir = scratch("absent-fields");
    let gemini = json!({"contents": [
        {"parts": [{"text": "list the files"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "ls", "args": "just a string"}},
            {"functionCall": {"name": "pwd"}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "ls", "response": {"output": "a.rs"}}},
            {"functionResponse": {"name": "pwd", "response": {"output": "/src"}}}]},
        {"parts": [{"functionCall": {"name": "cat"}}], "role": "model"},
        {"parts": [{"functionResponse": {"name": "cat", "response": {"output": "fn main() {}"}}}]},
        {"role": "model", "parts": [{"text": "done"}]}
    ]});
    let bedrock = json!({"messages": [
        {"role": "user", "content": [{"text": "list the files"}]},
        {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "t1", "name": "ls", "input": "a string"}},
            {"toolUse": {"toolUseId": "t2", "name": "pwd"}}]},
        {"role": "user", "content": [
            {"toolResult": {"toolUseId": "t1", "content": [{"text": "a.rs"}]}},
            {"toolResult": {"toolUseId": "t2", "content": [{"text": "/src"}]}}]},
        {"role": "assistant", "content": [{"text": "done"}]}
    ], "toolConfig": {"tools": []}});
    // A Responses `input` of text stays a string while it is the whole conversation.
    let responses = json!({"model": "m", "input": "list the files", "instructions": "be brief"});
    let inputs = [
        ("gemini.json", gemini),
        ("bedrock.json", bedrock),
        ("responses.json", responses),
    ];
    for (name, value) in inputs {
        let path = write_json(&dir, name, &value);
        let output = ctxcompact(&["compact", &path, "--ratio", "1"], None);
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("within budget"),
            "{}",
            stderr(&output)
        );
        let written: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(written, value, "{name}");
    }
}

// Capping recognises its own cap: run on its output it changes nothing, even when the cap is
// smaller than the omission note. See: #27
#[test]
fn trim_tools_capping_is_idempotent_and_never_adds_tokens() {
    let dir = scratch("cap-twice");
    // An output of one long line is cut by characters, and its note is one line again.
    let one_line = write_json(
        &dir,
        "one-line.json",
        &json!([{"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": "word ".repeat(300)},
            {"role": "assistant", "content": "ok"}]),
    );
    // Four rounds: the oldest is cleared, and its placeholder is not capped on the next run.
    let mut rounds = vec![json!({"role": "user", "content": "go"})];
    for i in 0..4 {
        let id = format!("c{i}");
        rounds.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id)]}));
        rounds.push(json!({"role": "tool", "tool_call_id": id, "content": "line\n".repeat(200)}));
    }
    rounds.push(json!({"role": "assistant", "content": "ok"}));
    let rounds = write_json(&dir, "rounds.json", &Value::Array(rounds));
    let fixtures = fixtures()
        .into_iter()
        .map(|(path, _)| path.to_str().unwrap().to_string());
    for path in [one_line, rounds].into_iter().chain(fixtures) {
        let path = path.as_str();
        for cap in ["1", "20"] {
            let once = dir.join("once.json");
            let first = ctxcompact(
                &[
                    "trim-tools",
                    path,
                    "--max-tool-output",
                    cap,
                    "--report",
                    "-",
                    "-o",
                    once.to_str().unwrap(),
                ],
                None,
            );
            assert!(first.status.success(), "{path}: {}", stderr(&first));
            let report: Value = serde_json::from_slice(&first.stderr).unwrap();
            assert!(
                report["tokens_after"].as_u64() <= report["tokens_before"].as_u64(),
                "{path} at {cap}: {report}"
            );
            let twice = ctxcompact(
                &[
                    "trim-tools",
                    once.to_str().unwrap(),
                    "--max-tool-output",
                    cap,
                    "-o",
                    "-",
                ],
                None,
            );
            assert!(twice.status.success(), "{path}: {}", stderr(&twice));
            assert_eq!(
                String::from_utf8_lossy(&twice.stdout),
                String::from_utf8_lossy(&std::fs::read(&once).unwrap()),
                "{path} at cap {cap}"
            );
        }
    }
}

/// `count --json` of `path` with `extra` arguments: its total.
fn total(path: &str, extra: &[&str]) -> u64 {
    let mut args = vec!["count", path, "--json"];
    args.extend_from_slice(extra);
    let output = ctxcompact(&args, None);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice::<Value>(&output.stdout).unwrap()["total"]
        .as_u64()
        .unwrap()
}

// An anchored log's report counts the overhead as `count` counts it: the one given, or the
// one the anchor measured (the report's `overhead`), so the output, which carries no anchor,
// counts what the report says. See: #27
#[test]
fn an_anchored_log_and_its_output_count_as_the_report_says() {
    let dir = scratch("anchor-overhead");
    let log = dir.join("session.jsonl");
    std::fs::write(&log, crate::calibrate::claude_log(20_000, 20_050)).unwrap();
    let log = log.to_str().unwrap();
    let out = dir.join("out.json");
    let out = out.to_str().unwrap();
    for extra in [&[][..], &["--overhead", "100000"][..]] {
        let mut args = vec!["compact", log, "--ratio", "1", "-o", out, "--report", "-"];
        args.extend_from_slice(extra);
        let output = ctxcompact(&args, None);
        assert!(output.status.success(), "{}", stderr(&output));
        let report: Value = serde_json::from_slice(&output.stderr).unwrap();
        assert_eq!(
            report["tokens_before"].as_u64().unwrap(),
            total(log, extra),
            "{extra:?}"
        );
        let overhead = report["overhead"].as_u64().unwrap().to_string();
        if let [_, given] = extra {
            assert_eq!(&overhead, given);
        }
        assert_eq!(
            report["tokens_after"].as_u64().unwrap(),
            total(out, &["--overhead", &overhead]),
            "{extra:?}: {report}"
        );
    }
}

// Numbers come back spelled as they were: `serde_json` alone writes `1E5` as `1e+5`.
// See: #27
#[test]
fn within_budget_numbers_keep_their_spelling_byte_for_byte() {
    let dir = scratch("spelling");
    let text = concat!(
        "{\n",
        "  \"messages\": [\n",
        "    {\n",
        "      \"role\": \"user\",\n",
        "      \"content\": \"say 1E5\",\n",
        "      \"n\": [\n        1E5,\n        1e400,\n        2E-7,\n        1.50,\n        -0\n      ]\n",
        "    }\n",
        "  ],\n",
        "  \"temperature\": 1E+2\n",
        "}\n"
    );
    let path = dir.join("chat.json");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    for (args, stdin) in [
        (vec!["compact", path, "--ratio", "1"], None),
        (vec!["compact", "-", "--ratio", "1"], Some(text.as_bytes())),
    ] {
        let output = ctxcompact(&args, stdin);
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(String::from_utf8_lossy(&output.stdout), text, "{args:?}");
    }
}

// The report counts the output as `count` reads it back: a Gemini content written with a role
// it was read without, or a Bedrock string input written as `{}`, counted otherwise. See: #27
#[test]
fn the_reports_tokens_after_is_the_count_of_the_output() {
    let dir = scratch("report-count");
    let mut gemini = vec![json!({"parts": [{"text": "task: list the files please"}]})];
    let mut bedrock =
        vec![json!({"role": "user", "content": [{"text": "task: list the files please"}]})];
    for i in 0..6 {
        let output = "file\n".repeat(40);
        gemini.push(
            json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {"p": i}}}]}),
        );
        gemini.push(json!({"parts": [{"functionResponse": {"name": "ls", "response": {"output": output}}}]}));
        let id = format!("t{i}");
        bedrock.push(json!({"role": "assistant", "content": [{"toolUse": {"toolUseId": id, "name": "ls", "input": format!("p={i}")}}]}));
        bedrock.push(json!({"role": "user", "content": [{"toolResult": {"toolUseId": id, "content": [{"text": output}]}}]}));
    }
    gemini.push(json!({"role": "model", "parts": [{"text": "done"}]}));
    bedrock.push(json!({"role": "assistant", "content": [{"text": "done"}]}));
    let inputs = [
        ("gemini.json", json!({"contents": gemini})),
        ("bedrock.json", json!({"messages": bedrock})),
    ];
    for (name, value) in inputs {
        let path = write_json(&dir, name, &value);
        let out = dir.join(format!("out-{name}"));
        let out = out.to_str().unwrap();
        let output = ctxcompact(
            &[
                "compact", &path, "--ratio", "0.6", "-o", out, "--report", "-",
            ],
            None,
        );
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let report: Value = serde_json::from_slice(&output.stderr).unwrap();
        assert_eq!(report["action"], "compacted", "{name}");
        assert_eq!(
            report["tokens_after"].as_u64().unwrap(),
            total(out, &[]),
            "{name}"
        );
    }
}

#[test]
fn compact_writes_output_and_report_files_and_leaves_the_input_alone() {
    let dir = scratch("compact");
    let mut messages = vec![json!({"role": "system", "content": "Be brief."})];
    for i in 0..30 {
        messages.push(
            json!({"role": "user", "content": format!("Question {i}: {}", "why ".repeat(40))}),
        );
        messages.push(json!({"role": "assistant", "content": format!("Answer {i}: {}", "because ".repeat(40))}));
    }
    let input = write_json(
        &dir,
        "in.json",
        &json!({"model": "gpt-4o", "messages": messages}),
    );
    let before = std::fs::read(&input).unwrap();
    let out = dir.join("out.json");
    let report = dir.join("report.json");
    let output = ctxcompact(
        &[
            "compact",
            &input,
            "--target",
            "1000",
            "-o",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let compacted: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(report["action"], "compacted");
    assert!(report["tokens_after"].as_u64().unwrap() <= 1000);
    assert_eq!(
        report["messages_after"],
        compacted["messages"].as_array().unwrap().len()
    );
    for key in [
        "format",
        "tokenizer",
        "budget",
        "tokens_before",
        "messages_before",
        "removed",
        "features",
        "relaxed",
        "tool_trim",
    ] {
        assert!(report.get(key).is_some(), "report lacks {key}");
    }
    assert_eq!(report["decision"]["layer"], "rule");
    // The system prompt, the task (pinned), then the marker where the removed span was.
    assert!(
        compacted["messages"][1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Question 0:")
    );
    let marker = &compacted["messages"][2]["content"];
    assert!(
        marker.as_str().unwrap().starts_with("[ctxcompact: "),
        "{marker}"
    );
    // The output's own count agrees with the report.
    let counted = ctxcompact(&["count", out.to_str().unwrap(), "--json"], None);
    let counted: Value = serde_json::from_slice(&counted.stdout).unwrap();
    assert_eq!(counted["total"], report["tokens_after"]);
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 3, "{leftovers:?}");
}

#[test]
fn cannot_fit_exits_3_and_writes_nothing() {
    let dir = scratch("cannot-fit");
    let input = write_json(
        &dir,
        "in.json",
        &json!([{"role": "system", "content": "rules ".repeat(300)}, {"role": "user", "content": "hi"}]),
    );
    let out = dir.join("out.json");
    let output = ctxcompact(
        &[
            "compact",
            &input,
            "--target",
            "50",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr(&output).contains("cannot fit: the pinned minimum"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
}

#[test]
fn analyze_reports_rules_and_candidates_without_writing() {
    let dir = scratch("analyze");
    let messages: Vec<Value> = (0..25)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("turn {i} {}", "word ".repeat(20))}))
        .collect();
    let input = write_json(&dir, "in.json", &Value::Array(messages));
    let output = ctxcompact(&["analyze", &input, "--ratio", "0.7", "--json"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["rules"].as_array().unwrap().len(), 6);
    assert_eq!(report["decision"]["layer"], "scored");
    assert_eq!(
        report["decision"]["candidates"].as_array().unwrap().len(),
        3
    );
    let text = ctxcompact(&["analyze", &input, "--ratio", "0.7"], None);
    assert!(String::from_utf8_lossy(&text.stdout).contains("candidate middle"));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn trim_tools_clears_old_rounds_and_keeps_the_last_ones() {
    let mut messages = vec![json!({"role": "user", "content": "inspect"})];
    for i in 0..5 {
        let id = format!("c{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id)]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("file{i}.txt\n").repeat(50)}));
    }
    messages.push(json!({"role": "assistant", "content": "done"}));
    let input = serde_json::to_vec(&messages).unwrap();
    let output = ctxcompact(
        &[
            "trim-tools",
            "-",
            "--keep-tool-rounds",
            "2",
            "--report",
            "-",
        ],
        Some(&input),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let trimmed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(trimmed.len(), messages.len());
    for i in 0..5 {
        let content = trimmed[2 + 2 * i]["content"].as_str().unwrap();
        assert_eq!(
            content.starts_with("[ctxcompact: output of shell cleared"),
            i < 3,
            "round {i}: {content}"
        );
    }
    assert!(
        stderr(&output).contains("\"cleared\": 3"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn errors_name_the_file_message_and_field() {
    let dir = scratch("errors");
    let input = write_json(
        &dir,
        "bad.json",
        &json!([{"role": "user", "content": "hi"}, {"role": "wizard", "content": "x"}]),
    );
    let output = ctxcompact(&["compact", &input, "--target", "100"], None);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output).trim(),
        format!(
            "ctxcompact: error: {input}: message 1: role: unknown role `wizard` (expected system, developer, user, assistant or tool)"
        )
    );
    let output = ctxcompact(
        &["count", "-"],
        Some(b"{\"messages\": [\n  {\"role\": }\n]}"),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("-: malformed JSON: expected value at line 2 column 12"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn output_to_a_device_or_a_symlink_writes_through_it() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("write-through");
    let input = write_json(&dir, "in.json", &json!([{"role": "user", "content": "hi"}]));
    // Renaming a temporary file over /dev/null would replace the device with a regular file.
    let output = ctxcompact(
        &["compact", &input, "--target", "100", "-o", "/dev/null"],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // A symlink stays a symlink; its target gets the output.
    let target = dir.join("real.json");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let output = ctxcompact(
        &[
            "compact",
            &input,
            "--target",
            "100",
            "-o",
            link.to_str().unwrap(),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();
    assert_eq!(written, json!([{"role": "user", "content": "hi"}]));
}

/// A conversation that must be compacted at `--target 60`: a long middle, a short tail.
fn long_chat() -> Value {
    let long = "word ".repeat(200);
    json!({"messages": [
        {"role": "user", "content": "Write the report."},
        {"role": "assistant", "content": long},
        {"role": "user", "content": "Shorter, please."},
        {"role": "assistant", "content": long},
        {"role": "user", "content": "Thanks."}
    ]})
}

// See: #9
#[test]
fn output_over_the_input_is_refused_unless_in_place() {
    let dir = scratch("in-place");
    let input = write_json(&dir, "chat.json", &long_chat());
    let before = std::fs::read(&input).unwrap();
    let refused = ctxcompact(&["compact", &input, "--target", "300", "-o", &input], None);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--in-place"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read(&input).unwrap(), before);
    // The same file by another spelling is refused too.
    let dotted = dir.join(".").join("chat.json");
    let refused = ctxcompact(
        &[
            "compact",
            &input,
            "--target",
            "300",
            "-o",
            dotted.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let done = ctxcompact(&["compact", &input, "--target", "300", "--in-place"], None);
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(done.stdout.is_empty());
    assert!(std::fs::read(&input).unwrap().len() < before.len());
}

// See: #9
#[test]
fn report_and_output_may_not_share_a_path_with_each_other_or_the_input() {
    let dir = scratch("same-path");
    let input = write_json(&dir, "chat.json", &long_chat());
    let out = dir.join("out.json");
    let out = out.to_str().unwrap();
    let both = ctxcompact(
        &[
            "compact", &input, "--target", "300", "-o", out, "--report", out,
        ],
        None,
    );
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    assert!(!Path::new(out).exists());
    let before = std::fs::read(&input).unwrap();
    let over_input = ctxcompact(
        &["compact", &input, "--target", "300", "--report", &input],
        None,
    );
    assert_eq!(over_input.status.code(), Some(2), "{}", stderr(&over_input));
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

// See: #9
#[test]
fn a_report_that_cannot_be_written_leaves_no_output() {
    let dir = scratch("report-fails");
    let input = write_json(&dir, "chat.json", &long_chat());
    let out = dir.join("out.json");
    // A report path inside a file (not a folder) cannot be created.
    let report = dir.join("chat.json").join("report.json");
    let failed = ctxcompact(
        &[
            "compact",
            &input,
            "--target",
            "300",
            "-o",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    assert!(
        !out.exists(),
        "the output was written although the report failed"
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "temporary files were left: {left:?}");
}

// See: #9
#[test]
fn an_unwritable_standard_error_is_no_panic() {
    let dir = scratch("dev-full");
    let input = write_json(&dir, "chat.json", &long_chat());
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let ok = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(["compact", &input, "--target", "300"])
        .stdout(Stdio::null())
        .stderr(full.try_clone().unwrap())
        .status()
        .unwrap();
    assert_eq!(ok.code(), Some(0));
    let bad = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(["compact", "no-such-file.json", "--target", "300"])
        .stdout(Stdio::null())
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(bad.code(), Some(2));
}

// See: #27
#[test]
fn a_report_to_an_unwritable_standard_error_exits_2_and_writes_no_output() {
    let dir = scratch("report-dev-full");
    let input = write_json(&dir, "chat.json", &long_chat());
    let out = dir.join("out.json");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(["compact", &input, "--target", "300", "--report", "-", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(
        !out.exists(),
        "the output was written although the report was lost"
    );
}

// See: #9
#[test]
fn an_existing_output_keeps_its_mode_and_its_hard_links() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = scratch("keep-mode");
    let input = write_json(&dir, "chat.json", &long_chat());
    let out = dir.join("out.json");
    std::fs::write(&out, b"old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.join("link.json");
    std::fs::hard_link(&out, &link).unwrap();
    let done = ctxcompact(
        &[
            "compact",
            &input,
            "--target",
            "300",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(done.status.success(), "{}", stderr(&done));
    let meta = std::fs::metadata(&out).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.nlink(), 2, "the hard link was split");
    assert_eq!(std::fs::read(&link).unwrap(), std::fs::read(&out).unwrap());
    let written: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(written["messages"].is_array());
}

// See: #9
#[test]
fn report_to_standard_error_is_parseable_and_dash_output_is_standard_output() {
    let dir = scratch("report-dash");
    let input = write_json(&dir, "chat.json", &long_chat());
    let run = ctxcompact(
        &[
            "compact", &input, "--target", "300", "-o", "-", "--report", "-",
        ],
        None,
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let report: Value = serde_json::from_slice(&run.stderr).expect("stderr is the JSON report");
    assert_eq!(report["action"], "compacted");
    let output: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert!(output["messages"].is_array());
    assert!(!dir.join("-").exists(), "-o - wrote a file named -");
    let quiet = ctxcompact(&["compact", &input, "--target", "300", "--quiet"], None);
    assert!(quiet.status.success());
    assert!(quiet.stderr.is_empty(), "{}", stderr(&quiet));
}

// See: #9
#[test]
fn an_empty_conversation_is_within_budget() {
    let run = ctxcompact(
        &["compact", "-", "--ratio", "0.5", "--report", "-"],
        Some(br#"{"messages": []}"#),
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let report: Value = serde_json::from_slice(&run.stderr).unwrap();
    assert_eq!(report["action"], "within_budget");
}

// See: #9
#[test]
fn analyze_resolves_real_model_names_to_their_windows() {
    let cases = [
        ("GPT-4o", 128_000),
        ("openai/gpt-4o", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4-32k", 32_768),
        ("gpt-4.1", 1_047_576),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("claude-haiku-4-5", 200_000),
        ("claude-3-7-sonnet", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("gemini-2.0-flash", 1_048_576),
        ("gemini-2.5-pro", 1_048_576),
        ("llama3.1", 131_072),
        ("meta-llama/llama-3.3-70b-instruct", 131_072),
        ("mistral-large", 131_072),
        ("qwen2.5-coder", 131_072),
        ("deepseek-chat", 131_072),
    ];
    for (name, window) in cases {
        let run = ctxcompact(
            &["analyze", "-", "--model", name, "--json"],
            Some(br#"[{"role": "user", "content": "hi"}]"#),
        );
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let report: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(report["profile"]["context_window"], window, "{name}");
        assert!(report["model_match"].is_string(), "{name}: no explanation");
    }
    let sonnet = ctxcompact(
        &["analyze", "-", "--model", "claude-sonnet-4-5", "--json"],
        Some(br#"[{"role": "user", "content": "hi"}]"#),
    );
    let report: Value = serde_json::from_slice(&sonnet.stdout).unwrap();
    assert_eq!(report["profile"]["name"], "claude-sonnet-4-5");
}

// See: #31
#[test]
fn count_and_analyze_take_the_agents_models_and_unseen_names_of_their_families() {
    let input = br#"[{"role": "user", "content": "hi"}]"#;
    let cases = [
        ("claude-opus-5-5", "claude-opus-5-5", 1_000_000, "catalog"),
        ("gpt-6.1-sol", "gpt-6.1-sol", 272_000, "catalog"),
        (
            "gemini-3.5-flash-lite",
            "gemini-3.5-flash-lite",
            1_048_576,
            "catalog",
        ),
        (
            "claude-opus-5-7-20270101",
            "claude-opus-5-5",
            1_000_000,
            "family",
        ),
        ("gpt-6.2-codex", "gpt-5-codex", 400_000, "family"),
        (
            "gemini-4-flash-preview",
            "gemini-3.8-flash",
            1_048_576,
            "family",
        ),
        (
            "anthropic.claude-sonnet-5-1-v1:0",
            "claude-sonnet-5",
            1_000_000,
            "family",
        ),
    ];
    for (name, profile, window, source) in cases {
        let run = ctxcompact(&["analyze", "-", "--model", name, "--json"], Some(input));
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let report: Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(report["profile"]["name"], profile, "{name}");
        assert_eq!(
            (&report["window"], &report["window_source"]),
            (&json!(window), &json!(source))
        );
        let listed = ctxcompact(&["count", "-", "--model", profile, "--json"], Some(input));
        let named = ctxcompact(&["count", "-", "--model", name, "--json"], Some(input));
        assert!(named.status.success(), "{name}: {}", stderr(&named));
        let counts = |output: &Output| {
            let value: Value = serde_json::from_slice(&output.stdout).unwrap();
            (value["total"].clone(), value["tokenizer"].clone())
        };
        assert_eq!(
            counts(&named),
            counts(&listed),
            "{name}: counted as {profile}"
        );
    }
    for command in ["analyze", "count"] {
        let run = ctxcompact(&[command, "-", "--model", "foo-1"], Some(input));
        assert_eq!(run.status.code(), Some(2));
        assert!(
            stderr(&run).contains("unknown model `foo-1`"),
            "{}",
            stderr(&run)
        );
    }
}

// See: #9
#[test]
fn a_tiny_output_cap_still_keeps_the_head_of_each_output() {
    let long_line = "x".repeat(1_044);
    let input = json!({"messages": [
        {"role": "user", "content": "Run it."},
        {"role": "assistant", "content": null, "tool_calls": [call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": format!("START {long_line} END")},
        {"role": "assistant", "content": "Done."}
    ]});
    let bytes = serde_json::to_vec(&input).unwrap();
    let zero = ctxcompact(&["trim-tools", "-", "--max-tool-output", "0"], Some(&bytes));
    assert_eq!(zero.status.code(), Some(2), "{}", stderr(&zero));
    for cap in ["30", "60"] {
        let run = ctxcompact(
            &["trim-tools", "-", "--max-tool-output", cap, "--quiet"],
            Some(&bytes),
        );
        assert!(run.status.success(), "{cap}: {}", stderr(&run));
        let output: Value = serde_json::from_slice(&run.stdout).unwrap();
        let result = output["messages"][2]["content"].as_str().unwrap();
        assert!(result.starts_with("START"), "cap {cap}: {result}");
        assert!(
            result.len() < 1_044,
            "cap {cap} did not cut: {}",
            result.len()
        );
    }
}

// See: #9
#[test]
fn analyze_runs_without_a_budget_and_always_shows_rules_and_rounds() {
    let dir = scratch("analyze-always");
    let mut messages = vec![json!({"role": "user", "content": "Fix the build."})];
    for i in 0..8 {
        let id = format!("c{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id)]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "line\n".repeat(200)}));
    }
    messages.push(json!({"role": "assistant", "content": "Fixed."}));
    let input = write_json(&dir, "tools.json", &json!({ "messages": messages }));
    // No budget: analyze assumes half the tokens instead of refusing.
    let plain = ctxcompact(&["analyze", &input], None);
    assert!(plain.status.success(), "{}", stderr(&plain));
    // Tool clearing alone fits half: the rules are still listed.
    let half = ctxcompact(&["analyze", &input, "--ratio", "0.5", "--json"], None);
    let report: Value = serde_json::from_slice(&half.stdout).unwrap();
    assert!(report["decision"].is_null(), "{report}");
    assert_eq!(report["rules"].as_array().unwrap().len(), 6);
    // Within a large model's window nothing is trimmed, but the rounds are counted.
    let big = ctxcompact(&["analyze", &input, "--model", "gpt-5", "--json"], None);
    let report: Value = serde_json::from_slice(&big.stdout).unwrap();
    assert_eq!(report["action"], "within_budget");
    assert_eq!(report["tool_trim"]["rounds"], 8);
    let text = ctxcompact(&["analyze", &input, "--model", "gpt-5"], None);
    assert!(String::from_utf8_lossy(&text.stdout).contains("tool trimming: 8 rounds"));
}

// See: #9
#[test]
fn bench_takes_a_model_a_strategy_and_tool_options() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations/openai-tools-12.json");
    let file = file.to_str().unwrap();
    let table = ctxcompact(&["bench", file, "--model", "claude-sonnet-4-5"], None);
    assert!(table.status.success(), "{}", stderr(&table));
    // Claude counts with its family's calibrated estimate, not o200k.
    assert!(String::from_utf8_lossy(&table.stdout).contains("(claude-sonnet)"));
    let row = |args: &[&str]| -> Value {
        let mut all = vec!["bench", file, "--json"];
        all.extend_from_slice(args);
        let run = ctxcompact(&all, None);
        assert!(run.status.success(), "{args:?}: {}", stderr(&run));
        let rows: Value = serde_json::from_slice(&run.stdout).unwrap();
        rows["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["strategy"] == "tools")
            .unwrap()
            .clone()
    };
    // Keeping no tool round whole lets the `tools` contender clear more: a larger token
    // reduction, every message kept, so a higher efficiency score.
    let kept_3 = row(&[])["efficiency"].as_f64().unwrap();
    let kept_0 = row(&["--keep-tool-rounds", "0"])["efficiency"]
        .as_f64()
        .unwrap();
    assert!(kept_0 > kept_3, "{kept_0} vs {kept_3}");
    let forced = ctxcompact(&["bench", file, "--strategy", "oldest"], None);
    assert!(forced.status.success(), "{}", stderr(&forced));
}

/// The archive files a run's report names, read back.
fn archive_files(report: &Value) -> BTreeMap<String, String> {
    report["archive"]
        .as_array()
        .map(|paths| {
            paths
                .iter()
                .map(|p| {
                    let path = p.as_str().unwrap().to_string();
                    let content = std::fs::read_to_string(&path).unwrap();
                    (path, content)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Compacts `input` with `--archive DIR` and `args`; returns the output and the report.
fn compact_archived(input: &str, dir: &Path, out: &Path, args: &[&str]) -> (Value, Value) {
    let report = out.with_extension("report.json");
    let mut all = vec!["compact", input, "--archive", dir.to_str().unwrap()];
    all.extend([
        "-o",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    all.extend(args);
    let output = ctxcompact(&all, None);
    assert!(output.status.success(), "{}", stderr(&output));
    (read_json(out), read_json(&report))
}

// See: #26
#[test]
fn compact_archive_writes_the_removed_history_that_gives_back_the_input() {
    let dir = scratch("archive-written");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations");
    for name in [
        "anthropic-coding-rust-60.json",
        "openai-coding-python-500.json",
    ] {
        let input = root.join(name);
        let out = dir.join(name);
        let (output, report) = compact_archived(
            input.to_str().unwrap(),
            &dir.join("archive"),
            &out,
            &["--ratio", "0.3"],
        );
        let files = archive_files(&report);
        assert!(!files.is_empty(), "{name}: nothing archived");
        for (path, content) in &files {
            assert!(
                path.starts_with(dir.join("archive").to_str().unwrap()),
                "{path}"
            );
            assert!(Path::new(path).is_absolute(), "{path}");
            for line in content.lines() {
                let message: Value = serde_json::from_str(line).unwrap();
                assert!(message.is_object(), "{path}: {line}");
            }
        }
        let want = read_json(&input)["messages"].as_array().unwrap().clone();
        let got = crate::archive::reassemble(output["messages"].as_array().unwrap(), &files);
        assert_eq!(got, want, "{name}");
    }
}

// See: #26
#[test]
fn recompaction_adds_to_the_same_archive_and_the_chain_gives_back_the_input() {
    let dir = scratch("archive-again");
    let archive = dir.join("archive");
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/conversations/openai-coding-python-500.json");
    let first_out = dir.join("first.json");
    let (first, first_report) = compact_archived(
        input.to_str().unwrap(),
        &archive,
        &first_out,
        &["--ratio", "0.5"],
    );
    let first_files = archive_files(&first_report);
    let second_out = dir.join("second.json");
    let (second, second_report) = compact_archived(
        first_out.to_str().unwrap(),
        &archive,
        &second_out,
        &["--ratio", "0.5"],
    );
    let second_files = archive_files(&second_report);
    assert!(!second_files.is_empty());
    // One folder per conversation: the second run's files sit beside the first run's, which
    // are left as they were.
    let folders: BTreeSet<PathBuf> = first_files
        .keys()
        .chain(second_files.keys())
        .map(|p| Path::new(p).parent().unwrap().to_path_buf())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    for (path, content) in &first_files {
        assert_eq!(&std::fs::read_to_string(path).unwrap(), content);
    }
    // The second output gives back the first; with every file, twice over, the input.
    let second_messages = second["messages"].as_array().unwrap();
    let back = crate::archive::reassemble(second_messages, &second_files);
    assert_eq!(&back, first["messages"].as_array().unwrap());
    let mut all = first_files.clone();
    all.extend(second_files);
    let once = crate::archive::reassemble(second_messages, &all);
    let twice = crate::archive::reassemble(&once, &all);
    assert_eq!(&twice, read_json(&input)["messages"].as_array().unwrap());
    // The same compaction again names the same files and changes none.
    let again_out = dir.join("again.json");
    let (again, again_report) = compact_archived(
        first_out.to_str().unwrap(),
        &archive,
        &again_out,
        &["--ratio", "0.5"],
    );
    assert_eq!(again, second);
    assert_eq!(again_report["archive"], second_report["archive"]);
}

// See: #26
#[test]
fn an_archive_that_cannot_be_written_or_a_run_that_cannot_fit_writes_nothing() {
    let dir = scratch("archive-errors");
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/conversations/openai-coding-python-500.json");
    let input = input.to_str().unwrap();
    let out = dir.join("out.json");
    // A file where the archive folder should be.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    let output = ctxcompact(
        &[
            "compact",
            input,
            "--ratio",
            "0.3",
            "--archive",
            blocked.to_str().unwrap(),
        ]
        .into_iter()
        .chain(["-o", out.to_str().unwrap()])
        .collect::<Vec<_>>(),
        None,
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("cannot write the archive"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
    assert_eq!(std::fs::read_to_string(&blocked).unwrap(), "not a folder");
    // Cannot fit: exit 3, no archive folder.
    let archive = dir.join("archive");
    let output = ctxcompact(
        &[
            "compact",
            input,
            "--target",
            "10",
            "--archive",
            archive.to_str().unwrap(),
        ]
        .into_iter()
        .chain(["-o", out.to_str().unwrap()])
        .collect::<Vec<_>>(),
        None,
    );
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(!archive.exists());
    assert!(!out.exists());
}

/// A bench table's lines with the timing column (`ms/conv`, the last) dropped and spacing
/// folded: what the same build prints on any machine.
fn bench_table_without_timings(text: &str) -> Vec<String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out: Vec<String> = lines.next().map(str::to_string).into_iter().collect();
    for line in lines {
        let mut fields: Vec<&str> = line.split_whitespace().collect();
        fields.pop();
        out.push(fields.join(" "));
    }
    out
}

#[test]
fn the_readmes_bench_table_is_what_its_first_command_prints() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // The first code block after the quick start's commands that starts with the table's title.
    let start = readme
        .find("```\ndata/conversations: ")
        .expect("the README shows the bench table")
        + "```\n".len();
    let end = start + readme[start..].find("```").expect("the table's block ends");
    let shown = bench_table_without_timings(&readme[start..end]);
    let output = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(["bench", "data/conversations"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let printed = bench_table_without_timings(&String::from_utf8(output.stdout).unwrap());
    assert_eq!(
        shown, printed,
        "README.md's bench table differs from `cargo run --release -- bench data/conversations`"
    );
}

/// `count` and a request compactor (the proxy's ledger, Python's and Node's `compact_request`)
/// count the same body alike, its tool definitions and system prompt included.
// See: #42
#[test]
fn count_and_compact_request_count_a_body_with_tools_alike() {
    use ctxcompact::format::Format;
    use ctxcompact::request::Compactor;

    let description = "Reads a file of the repository and returns its text with line numbers, \
        so that the model can quote the lines it changes; it refuses paths outside the \
        repository, binary files and files over one megabyte, and says which rule it applied \
        when it refuses, with the path it was given and the size it found on the disk today.";
    assert_eq!(description.split_whitespace().count(), 60);
    let tool = json!({"type": "function", "function": {"name": "read_file",
        "description": description,
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}});
    let openai = json!({"model": "gpt-4o", "tools": [tool],
        "messages": [{"role": "user", "content": "hi"}]});
    let anthropic = json!({"model": "claude-sonnet-4-5", "system": "You are terse.",
        "tools": [{"name": "read_file", "description": description,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "messages": [{"role": "user", "content": "hi"}]});
    let compactor = Compactor::new(&ctxcompact::Settings::default(), None, 0).unwrap();
    for (body, format) in [(openai, Format::OpenAi), (anthropic, Format::Anthropic)] {
        let bytes = serde_json::to_vec(&body).unwrap();
        let model = body["model"].as_str().unwrap();
        let output = ctxcompact(
            &[
                "count",
                "--json",
                "--model",
                model,
                "--format",
                format.as_str(),
                "-",
            ],
            Some(&bytes),
        );
        assert!(output.status.success(), "{output:?}");
        let counted: Value = serde_json::from_slice(&output.stdout).unwrap();
        let forward = compactor.compact(&bytes, format, None, None);
        assert_eq!(
            forward.verdict.tokens_received.map(|total| total as u64),
            counted["total"].as_u64(),
            "{model}"
        );
    }
}

/// A body that names its model is counted, analysed and compacted for that model, as a request
/// compactor (the proxy) reads it, unless `--model` or `--tokenizer` says otherwise; what
/// counted it is named, and a name no catalog rule reads falls back to the generic profile,
/// named too.
// See: #54
#[test]
fn a_body_is_counted_for_the_model_it_names() {
    use ctxcompact::format::Format;
    use ctxcompact::request::Compactor;

    let body = |model: &str| {
        let tool = json!({"name": "read_file", "description": "Reads a file of the repository.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}});
        let mut body = json!({"max_tokens": 1024, "tools": [tool],
            "messages": [{"role": "user", "content": "What does src/main.rs do?"}]});
        if !model.is_empty() {
            body["model"] = model.into();
        }
        serde_json::to_vec(&body).unwrap()
    };
    let count = |bytes: &[u8], flags: &[&str]| -> Value {
        let mut args = vec!["count", "--json", "--format", "anthropic", "-"];
        args.extend(flags);
        let output = ctxcompact(&args, Some(bytes));
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let compactor = Compactor::new(&ctxcompact::Settings::default(), None, 0).unwrap();
    // An exact name, a family's unseen version, a dated name continuing a catalog name.
    for (model, tokenizer) in [
        ("claude-sonnet-4-5", "claude-sonnet"),
        ("claude-opus-5-7-20270101", "claude-opus"),
        ("gpt-4o-2024-08-06", "o200k"),
    ] {
        let bytes = body(model);
        let counted = count(&bytes, &[]);
        let forward = compactor.compact(&bytes, Format::Anthropic, None, None);
        assert_eq!(
            counted["total"].as_u64(),
            forward.verdict.tokens_received.map(|total| total as u64),
            "{model}"
        );
        assert_eq!(counted, count(&bytes, &["--model", model]), "{model}");
        assert_eq!(counted["model"], model, "{counted}");
        assert_eq!(counted["tokenizer"], tokenizer, "{counted}");
        assert!(counted["model_match"].as_str().is_some(), "{counted}");
        // `--tokenizer` counts instead, and says so.
        let o200k = count(&bytes, &["--tokenizer", "o200k"]);
        assert_eq!(o200k["total"], count(&body(""), &[])["total"], "{model}");
        assert_eq!(o200k["tokenizer"], "o200k");
        // `--model` names another model.
        let other = count(&bytes, &["--model", "gpt-4o"]);
        assert_eq!(other["model"], "gpt-4o");
        for command in [
            &["analyze", "--json", "--format", "anthropic", "-"][..],
            &[
                "compact",
                "--target",
                "9999",
                "--format",
                "anthropic",
                "--report",
                "-",
                "-",
            ],
        ] {
            let output = ctxcompact(command, Some(&bytes));
            assert!(output.status.success(), "{}", stderr(&output));
            let report = if command[0] == "analyze" {
                output.stdout
            } else {
                output.stderr
            };
            let report: Value = serde_json::from_slice(&report).unwrap();
            assert_eq!(report["model"], model, "{command:?}");
            assert_eq!(report["tokenizer"], tokenizer, "{command:?}");
            assert_eq!(report["tokens_before"], counted["total"], "{command:?}");
        }
    }
    // A name no catalog rule reads: the generic profile's count, the fallback named.
    let unknown = count(&body("foo-1"), &[]);
    assert_eq!(unknown["total"], count(&body(""), &[])["total"]);
    assert_eq!(unknown["tokenizer"], "o200k");
    let how = unknown["model_match"].as_str().unwrap();
    assert!(how.contains("unknown model `foo-1`"), "{how}");
    assert!(how.contains("generic profile"), "{how}");
}
