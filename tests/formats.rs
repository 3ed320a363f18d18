//! Hand-written fixtures in both formats: round trips, detection, and token counts checked
//! against numbers computed independently with Python's tiktoken (`fixtures/token_counts.json`,
//! made by `fixtures/tiktoken_reference.py`); and Codex's Responses requests compacted and
//! trimmed through the public API.

use std::path::{Path, PathBuf};

use ctxcompact::format::Format;
use ctxcompact::{Conversation, Message, Part, Role, Tokenizer, format};
use serde_json::{Value, json};

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
        let again = format::parse(&crate::rendered(&conversation), None).unwrap();
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
    let sequential = ctxcompact::count_with(&conversation, Tokenizer::O200k.counter());
    assert_eq!(parallel, sequential);
}

/// One conversation written in each API format, as the library should detect it.
fn one_of_each() -> Vec<(Format, &'static str)> {
    vec![
        (
            Format::OpenAi,
            r#"{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "a", "content": "x"}]}"#,
        ),
        (
            Format::Anthropic,
            r#"{"system": "s", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ls", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}]}"#,
        ),
        (
            Format::Responses,
            r#"{"model": "m", "input": [{"role": "user", "content": "go"}, {"type": "function_call", "call_id": "a", "name": "ls", "arguments": "{}"}, {"type": "function_call_output", "call_id": "a", "output": "x"}]}"#,
        ),
        (
            Format::Gemini,
            r#"{"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]}, {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "x"}}}]}]}"#,
        ),
        (
            Format::Bedrock,
            r#"{"messages": [{"role": "user", "content": [{"text": "go"}]}, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "a", "name": "ls", "input": {}}}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "a", "content": [{"text": "x"}]}}]}]}"#,
        ),
        (
            Format::AiSdk,
            r#"[{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "ls", "input": {}}]}, {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "ls", "output": {"type": "text", "value": "x"}}]}]"#,
        ),
    ]
}

#[test]
fn every_api_format_is_detected_round_trips_and_validates() {
    for (expected, text) in one_of_each() {
        let conversation = format::parse(text.as_bytes(), None).unwrap();
        assert_eq!(conversation.format, expected, "{text}");
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(format::render(&conversation), value, "{text}");
        assert_eq!(ctxcompact::validate(&conversation), Vec::new(), "{text}");
        assert_eq!(conversation.result_window(1), 2..3, "{text}");
    }
}

#[test]
fn every_format_has_a_cli_name_that_reads_back() {
    for &format in Format::ALL {
        assert_eq!(format.as_str().parse::<Format>(), Ok(format));
    }
    assert!(
        "json"
            .parse::<Format>()
            .unwrap_err()
            .contains("claude-code")
    );
}

// See: #9
#[test]
fn null_and_empty_fields_are_no_evidence_of_a_format() {
    let body = r#"{"messages": [{"role": "user", "content": "go", "tool_calls": null},
        {"role": "assistant", "tool_calls": [], "content": [{"type": "tool_use", "id": "a", "name": "ls", "input": {}}]},
        {"role": "user", "tool_calls": null, "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}]}"#;
    let conversation = format::parse(body.as_bytes(), None).unwrap();
    assert_eq!(conversation.format, Format::Anthropic);
    assert_eq!(ctxcompact::validate(&conversation), Vec::new());
}

// See: #9
#[test]
fn a_byte_order_mark_is_skipped() {
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(br#"[{"role": "user", "content": "hi"}]"#);
    let conversation = format::parse(&bytes, None).unwrap();
    assert_eq!(conversation.messages[0].text(), "hi");
}

// See: #9
#[test]
fn numbers_pass_through_byte_for_byte() {
    let body = r#"{"model":"m","seed":123456789012345678901234567890,"tiny":1e-400,"huge":1e400,"x":1.50,"messages":[{"role":"user","content":"hi","n":-0.0}]}"#;
    let conversation = format::parse(body.as_bytes(), None).unwrap();
    let rendered = serde_json::to_string(&format::render(&conversation)).unwrap();
    // serde_json's arbitrary precision keeps every digit, and the reader gives back the
    // spelling it does not keep (`1e400`, not `1e+400`). See: #27
    assert_eq!(rendered, body);
}

// See: #9
#[test]
fn compacting_anthropic_without_a_marker_never_opens_with_the_assistant() {
    let mut messages = Vec::new();
    for i in 0..12 {
        messages.push(
            serde_json::json!({"role": "user", "content": format!("request {i} ").repeat(40)}),
        );
        messages.push(
            serde_json::json!({"role": "assistant", "content": format!("answer {i} ").repeat(40)}),
        );
    }
    let value = serde_json::json!({"system": "s", "messages": messages});
    let conversation = format::parse_value(value, None).unwrap();
    for strategy in [ctxcompact::Strategy::Oldest, ctxcompact::Strategy::Middle] {
        let options = ctxcompact::Options {
            budget: ctxcompact::Budget::Ratio(0.3),
            marker: ctxcompact::MarkerMode::None,
            strategy: Some(strategy),
            ..ctxcompact::Options::with_budget(ctxcompact::Budget::Ratio(0.5))
        };
        let out = ctxcompact::compact(conversation.clone(), &options).unwrap();
        assert!(out.report.messages_after < 24);
        assert_eq!(out.conversation.messages[0].role, ctxcompact::Role::User);
        assert_eq!(ctxcompact::validate(&out.conversation), Vec::new());
    }
}

#[test]
fn jsonl_with_two_values_on_a_line_is_read() {
    let log = concat!(
        r#"{"type": "session", "id": "s", "cwd": "/"}"#,
        "\n",
        r#"{"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}}{"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}}"#,
        "\n",
    );
    let conversation = format::parse(log.as_bytes(), None).unwrap();
    assert_eq!(conversation.format, Format::Anthropic);
    assert_eq!(conversation.messages.len(), 2);
    assert_eq!(conversation.lines, vec![2, 2]);
}

#[test]
fn a_claude_code_compaction_is_honoured_and_the_whole_history_is_an_option() {
    let line = |uuid: &str, parent: Option<&str>, role: &str, text: &str| {
        serde_json::json!({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
            "message": {"role": role, "content": text}})
        .to_string()
    };
    let boundary = serde_json::json!({"type": "system", "subtype": "compact_boundary", "uuid": "b",
        "parentUuid": null, "logicalParentUuid": "a1", "sessionId": "s"});
    let mut summary: serde_json::Map<String, Value> =
        serde_json::from_str(&line("u2", Some("b"), "user", "summary of before")).unwrap();
    summary.insert("isCompactSummary".into(), Value::Bool(true));
    let log = [
        line("u1", None, "user", "first request"),
        line("a1", Some("u1"), "assistant", "first answer"),
        boundary.to_string(),
        Value::Object(summary).to_string(),
        line("a2", Some("u2"), "assistant", "second answer"),
    ]
    .join("\n");
    let current = format::parse(log.as_bytes(), None).unwrap();
    let texts = |c: &ctxcompact::Conversation| {
        c.messages
            .iter()
            .map(ctxcompact::Message::text)
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&current), ["summary of before", "second answer"]);
    let options = format::ReadOptions {
        format: None,
        whole_history: true,
        ..format::ReadOptions::default()
    };
    let (whole, _) = format::parse_with_usage(log.as_bytes(), &options).unwrap();
    assert_eq!(
        texts(&whole),
        [
            "first request",
            "first answer",
            "summary of before",
            "second answer"
        ]
    );
    assert_eq!(whole.lines, vec![1, 2, 4, 5]);
}

#[test]
fn a_pi_tree_session_reads_the_branch_that_leads_to_its_last_entry() {
    let entry = |id: &str, parent: Option<&str>, role: &str, text: &str| {
        serde_json::json!({"type": "message", "id": id, "parentId": parent,
            "message": {"role": role, "content": [{"type": "text", "text": text}]}})
        .to_string()
    };
    let log = [
        serde_json::json!({"type": "session", "version": 3, "id": "s", "cwd": "/"}).to_string(),
        entry("m1", None, "user", "go"),
        entry("m2", Some("m1"), "assistant", "ok"),
        entry("m3", Some("m2"), "user", "abandoned"),
        entry("m4", Some("m2"), "user", "retry"),
        entry("m5", Some("m4"), "assistant", "done"),
    ]
    .join("\n");
    let conversation = format::parse(log.as_bytes(), Some(Format::Pi)).unwrap();
    let texts: Vec<String> = conversation
        .messages
        .iter()
        .map(ctxcompact::Message::text)
        .collect();
    assert_eq!(texts, ["go", "ok", "retry", "done"]);
    assert_eq!(conversation.lines, vec![2, 3, 5, 6]);
}

/// An interrupted Codex call gets the `aborted` output Codex itself sends for it. See: #11
#[test]
fn an_interrupted_codex_call_is_answered_as_codex_answers_it() {
    let log = concat!(
        r#"{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}"#,
        "\n",
        r#"{"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}}"#,
        "\n",
        r#"{"timestamp": "t", "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}}"#,
        "\n",
        r#"{"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "stop, do this instead"}]}}"#,
        "\n",
    );
    let conversation = format::parse(log.as_bytes(), None).unwrap();
    assert!(ctxcompact::validate(&conversation).is_empty());
    let rendered = format::render(&conversation);
    let items = rendered["input"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    assert_eq!(items[2]["type"], "function_call_output");
    assert_eq!(items[2]["call_id"], "c1");
    assert_eq!(items[2]["output"], "aborted");
    assert_eq!(items[3]["role"], "user");
}

/// An interrupted pi call gets the error result pi sends for it, in the next user turn. See: #11
#[test]
fn an_interrupted_pi_call_is_answered_as_pi_answers_it() {
    let log = concat!(
        r#"{"type": "session", "id": "s", "timestamp": "t", "cwd": "/"}"#,
        "\n",
        r#"{"type": "message", "timestamp": "t", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}}"#,
        "\n",
        r#"{"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "t1", "name": "bash", "arguments": {}}]}}"#,
        "\n",
        r#"{"type": "message", "timestamp": "t", "message": {"role": "user", "content": [{"type": "text", "text": "stop"}]}}"#,
        "\n",
    );
    let conversation = format::parse(log.as_bytes(), None).unwrap();
    assert!(ctxcompact::validate(&conversation).is_empty());
    let rendered = format::render(&conversation);
    let messages = rendered["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "t1");
    assert_eq!(messages[2]["content"][0]["is_error"], true);
    assert_eq!(messages[3]["content"][0]["text"], "stop");
}

/// Both ways of writing a conversation, as bytes and as a value, give `expected` with its key
/// order (comparing values alone would not see the order).
fn assert_written_as(conversation: &Conversation, expected: &Value) {
    let mut pretty = serde_json::to_vec_pretty(expected).unwrap();
    pretty.push(b'\n');
    let bytes = crate::rendered(conversation);
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        String::from_utf8(pretty.clone()).unwrap()
    );
    let mut value = serde_json::to_vec_pretty(&format::render(conversation)).unwrap();
    value.push(b'\n');
    assert_eq!(value, pretty);
}

#[test]
fn written_fields_keep_their_place_and_added_ones_come_last() {
    // Every API format with its fields in an unusual order: written back as read.
    let unusual = [
        json!({"messages": [
            {"content": "go", "role": "user"},
            {"tool_calls": [{"function": {"arguments": "{}", "name": "ls"}, "id": "a", "type": "function"}], "role": "assistant", "content": null},
            {"content": "x", "tool_call_id": "a", "role": "tool"}]}),
        json!({"messages": [
            {"role": "user", "content": "go"},
            {"content": [{"id": "a", "name": "ls", "input": {"p": 1}, "type": "tool_use"}], "role": "assistant"},
            {"role": "user", "content": [{"tool_use_id": "a", "type": "tool_result", "is_error": false, "content": "x"}]}],
            "system": "s"}),
        json!({"input": [
            {"content": "go", "role": "user"},
            {"call_id": "a", "arguments": "{}", "type": "function_call", "name": "ls"},
            {"output": "x", "call_id": "a", "type": "function_call_output"}],
            "model": "m"}),
        json!({"contents": [
            {"parts": [{"text": "go"}], "role": "user"},
            {"role": "model", "parts": [{"functionCall": {"args": {}, "name": "ls", "id": "c"}}]},
            {"role": "user", "parts": [{"functionResponse": {"response": {"output": "x"}, "name": "ls", "id": "c"}}]}]}),
        json!({"messages": [
            {"content": [{"text": "go"}], "role": "user"},
            {"role": "assistant", "content": [{"toolUse": {"input": {}, "name": "ls", "toolUseId": "a"}}]},
            {"role": "user", "content": [{"toolResult": {"status": "success", "content": [{"text": "x"}], "toolUseId": "a"}}]}]}),
    ];
    for value in unusual {
        let conversation = format::parse_value(value.clone(), None).unwrap();
        assert_written_as(&conversation, &value);
    }

    // Fields the input lacked are added at the end; a removed field leaves the others in order.
    let value = json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}, "id": "a"}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "assistant", "content": "ok", "tool_calls": [{"id": "b", "type": "function", "function": {"name": "cat", "arguments": "{}"}}], "name": "n", "refusal": null},
        {"role": "tool", "tool_call_id": "b", "content": "y"}]});
    let mut conversation = format::parse_value(value, Some(Format::OpenAi)).unwrap();
    // The second round's calls dropped, its text kept; then a new message.
    conversation.messages[3]
        .parts
        .retain(|part| !matches!(part, Part::ToolCall { .. }));
    conversation.messages.remove(4);
    conversation
        .messages
        .push(Message::new_text(Role::User, "next"));
    assert_written_as(
        &conversation,
        &json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}, "id": "a", "type": "function"}]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "assistant", "content": "ok", "name": "n", "refusal": null},
            {"role": "user", "content": "next"}]}),
    );

    let value = json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}]});
    let mut conversation = format::parse_value(value, Some(Format::Anthropic)).unwrap();
    if let Part::ToolResult { is_error, .. } = &mut conversation.messages[2].parts[0] {
        *is_error = true;
    }
    assert_written_as(
        &conversation,
        &json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x", "is_error": true}]}]}),
    );
}

/// A long session in either format: messages from a few bytes to 200 KB, so that rendering
/// shares them between threads in jobs of uneven size.
fn long_session(messages: usize, format: Format) -> Value {
    let mut out = vec![json!({"role": "user", "content": "Start \"here\"\n\ttab"})];
    let mut call = 0;
    while out.len() < messages {
        let size = [3, 40, 2_000, 70_000, 200_000][out.len() % 5];
        let id = format!("call_{call}");
        let output = "é\"\\\n".repeat(size / 5 + 1);
        call += 1;
        if format == Format::OpenAi {
            out.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
                "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.rs\"}"}}]}));
            out.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
        } else {
            out.push(
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": id,
                "name": "read", "input": {"path": "a.rs"}}]}),
            );
            out.push(json!({"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": id, "content": output}]}));
        }
        out.push(json!({"role": "assistant", "content": format!("step {call}")}));
        out.push(json!({"role": "user", "content": "go on"}));
    }
    json!({"model": "m", "max_tokens": 100, "messages": out})
}

#[test]
fn a_long_session_is_written_as_one_thread_would() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let conversation = format::parse_value(long_session(3_000, format), Some(format)).unwrap();
        assert!(conversation.messages.len() >= 3_000);
        let mut expected = serde_json::to_vec_pretty(&format::render(&conversation)).unwrap();
        expected.push(b'\n');
        assert!(crate::rendered(&conversation) == expected, "{format:?}");
    }
}

/// Accepts `room` bytes, then fails.
struct FailingWriter {
    room: usize,
}

impl std::io::Write for FailingWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::other("disk full"));
        }
        let taken = bytes.len().min(self.room);
        self.room -= taken;
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_write_that_fails_midway_is_the_error() {
    let conversation =
        format::parse_value(long_session(3_000, Format::OpenAi), Some(Format::OpenAi)).unwrap();
    for room in [0, 1, 100_000, 5_000_000] {
        let err = format::write(&conversation, FailingWriter { room }).unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}

/// Codex 0.169's default request (code mode), as the pinned binary sends it, shortened:
/// the tools as an `additional_tools` item, a freeform `exec` call with its output as
/// `input_text` parts, a `configuration_update`, `reasoning.context` and `client_metadata`.
fn codex_code_mode(reads: usize) -> Value {
    let mut input = vec![
        json!({"type": "additional_tools", "id": "at_1", "role": "developer", "tools": [
            {"type": "namespace", "name": "functions", "description": "", "tools": [
                {"type": "custom", "name": "exec", "description": "Run JavaScript code to orchestrate tool calls",
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: SOURCE\nSOURCE: /[\\s\\S]+/\n"}},
                {"type": "function", "name": "wait", "strict": false, "parameters": {"type": "object",
                 "properties": {"cell_id": {"type": "string"}}, "required": ["cell_id"], "additionalProperties": false}}]}]}),
        json!({"type": "message", "id": "msg_1", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]}),
        json!({"type": "message", "id": "msg_2", "role": "user", "content": [{"type": "input_text", "text": "Read every part file here."}],
               "internal_chat_message_metadata_passthrough": {"turn_id": "t1"}}),
        json!({"type": "configuration_update", "reasoning": {"effort": "low"}}),
    ];
    for n in 0..reads {
        let call_id = format!("call_{n}");
        input.push(json!({"type": "custom_tool_call", "id": format!("ctc_{n}"), "status": "completed", "call_id": call_id, "name": "exec",
            "input": format!("const r = await tools.exec_command({{cmd: \"cat part{n}.txt\"}});\ntext(r.output);")}));
        input.push(json!({"type": "custom_tool_call_output", "id": format!("ctco_{n}"), "call_id": call_id, "output": [
            {"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "input_text", "text": format!("part {n}: the quick brown fox jumps over the lazy dog\n").repeat(40)}]}));
    }
    json!({"model": "gpt-6.1-sol", "stream": true, "input": input, "tool_choice": "auto", "parallel_tool_calls": false,
           "reasoning": {"effort": "low", "context": "all_turns"}, "store": false, "include": ["reasoning.encrypted_content"],
           "prompt_cache_key": "k", "client_metadata": {"thread_id": "th", "turn_id": "t1"}})
}

#[test]
fn codex_code_mode_reads_with_its_tools_and_settings_pinned_and_round_trips() {
    use Role::{Assistant, System, Tool, User};
    let value = codex_code_mode(2);
    let conversation = format::parse_value(value.clone(), None).unwrap();
    assert_eq!(conversation.format, Format::Responses);
    assert_eq!(format::render(&conversation), value);
    assert!(ctxcompact::validate(&conversation).is_empty());
    let roles: Vec<Role> = conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            System, System, User, System, Assistant, Tool, Assistant, Tool
        ]
    );
    // Each custom call goes with its output.
    assert_eq!(conversation.result_window(4), 5..6);
    assert_eq!(conversation.result_window(6), 7..8);
    // The tool definitions are counted with the messages.
    let counts =
        ctxcompact::Options::with_budget(ctxcompact::Budget::Ratio(0.5)).count_body(&conversation);
    assert!(counts.messages[0] > 50, "{:?}", counts.messages);
}

#[test]
fn compacting_codex_code_mode_keeps_its_tools_and_settings_and_pairs() {
    let value = codex_code_mode(12);
    let conversation = format::parse_value(value, None).unwrap();
    // Without tool trimming, so that whole rounds are removed.
    let options = ctxcompact::Options {
        tools: ctxcompact::ToolOptions {
            mode: ctxcompact::ToolMode::Off,
            ..ctxcompact::ToolOptions::default()
        },
        ..ctxcompact::Options::with_budget(ctxcompact::Budget::Ratio(0.3))
    };
    let out = ctxcompact::compact(conversation, &options).unwrap();
    assert!(!out.report.removed.is_empty(), "{:?}", out.report.action);
    let rendered = format::render(&out.conversation);
    let items = rendered["input"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["type"].as_str()).collect();
    assert_eq!(kinds[0], "additional_tools");
    assert!(kinds.contains(&"configuration_update"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "custom_tool_call").count(),
        kinds
            .iter()
            .filter(|k| **k == "custom_tool_call_output")
            .count()
    );
    assert!(ctxcompact::validate(&out.conversation).is_empty());
    assert_eq!(
        rendered["reasoning"],
        json!({"effort": "low", "context": "all_turns"})
    );
}

#[test]
fn dropping_a_round_drops_the_reasoning_before_its_call() {
    let value = json!({"input": [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xx"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.rs"},
        {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "done"}
    ]});
    let conversation = format::parse_value(value, None).unwrap();
    let options = ctxcompact::Options {
        tools: ctxcompact::ToolOptions {
            mode: ctxcompact::ToolMode::Drop,
            keep: 0,
            ..ctxcompact::ToolOptions::default()
        },
        ..ctxcompact::Options::with_budget(ctxcompact::Budget::Ratio(1.0))
    };
    let out = ctxcompact::trim_tools(conversation, &options).unwrap();
    let kinds: Vec<Value> = format::render(&out.conversation)["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            item.get("type")
                .cloned()
                .unwrap_or_else(|| item["role"].clone())
        })
        .collect();
    assert_eq!(kinds, [json!("user"), json!("user"), json!("assistant")]);
}
