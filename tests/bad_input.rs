//! Malformed input through the CLI: exit codes, messages, nothing written.
//!
//! One table: each row is an input file (or none), the arguments of `compact`, the exit code
//! (2 bad input or usage, 3 cannot fit) and the text stderr must contain to name the problem —
//! `{file}` in it stands for the input's path, so errors about the file must name it. Every row
//! runs `compact FILE … -o OUT` in a fresh scratch folder, and `validate FILE` where the file
//! is the problem; after each, the input is byte-for-byte as written and the folder holds
//! nothing else: no output, no temporary file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Exit code for bad input or usage.
const BAD: i32 = 2;
/// Exit code when the budget cannot be met.
const CANNOT_FIT: i32 = 3;

/// What `validate FILE` should do with a row's file.
#[derive(Clone, Copy)]
enum Validate {
    /// Not run: the problem is in the arguments, not the file.
    Skip,
    /// Exit 0: the file is fine, only the budget is not.
    Valid,
    /// Exit 2, naming the problem like `compact` does (on stdout or stderr).
    Refused,
}

/// One malformed input and what the CLI must say about it.
struct Row {
    name: &'static str,
    /// The input file's bytes; `None` for a file that does not exist.
    input: Option<Vec<u8>>,
    /// Arguments after `compact FILE`; `{dir}` stands for the scratch folder.
    args: Vec<&'static str>,
    code: i32,
    /// What stderr must contain; `{file}` and `{dir}` stand for the input and the folder.
    says: &'static str,
    validate: Validate,
}

fn row(name: &'static str, input: impl Into<Vec<u8>>, code: i32, says: &'static str) -> Row {
    Row {
        name,
        input: Some(input.into()),
        args: vec!["--target", "50"],
        code,
        says,
        validate: Validate::Refused,
    }
}

/// A row whose file is fine and whose arguments are not.
fn usage(name: &'static str, args: &[&'static str], says: &'static str) -> Row {
    Row {
        args: args.to_vec(),
        validate: Validate::Skip,
        ..row(name, VALID, BAD, says)
    }
}

/// A small valid conversation, for the rows whose arguments are the problem.
const VALID: &str =
    r#"[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]"#;

/// An OpenAI call of tool `f` with id `id`.
fn call(id: &str) -> String {
    format!(
        r#"{{"id": "{id}", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}"#
    )
}

/// An OpenAI conversation: a user message, then `rest`.
fn openai(rest: &str) -> String {
    format!(r#"[{{"role": "user", "content": "go"}}, {rest}]"#)
}

/// An Anthropic conversation with a system prompt: a user message, then `rest`.
fn anthropic(rest: &str) -> String {
    format!(
        r#"{{"system": "be brief", "messages": [{{"role": "user", "content": "go"}}, {rest}]}}"#
    )
}

/// An Anthropic assistant message calling tool `f` with id `id`.
fn tool_use(id: &str) -> String {
    format!(
        r#"{{"role": "assistant", "content": [{{"type": "tool_use", "id": "{id}", "name": "f", "input": {{}}}}]}}"#
    )
}

/// An Anthropic user message answering call `id`.
fn tool_result(id: &str) -> String {
    format!(
        r#"{{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "{id}", "content": "ok"}}]}}"#
    )
}

/// An OpenAI body whose one tool round is its only OpenAI evidence beside its system message,
/// with a stray top-level field `key` of JSON `value`.
fn stray_field(key: &str, value: &str) -> String {
    format!(
        r#"{{"{key}": {value}, "messages": [{{"role": "system", "content": "be brief"}}, {{"role": "user", "content": "go"}}, {{"role": "assistant", "content": null, "tool_calls": [{}]}}, {{"role": "tool", "tool_call_id": "a", "content": "{}"}}, {{"role": "user", "content": "and then"}}, {{"role": "assistant", "content": "done"}}]}}"#,
        call("a"),
        "output line\\n".repeat(100)
    )
}

/// `count` alternating short messages, with `replace(i)` standing in for message `i` when it
/// gives one.
fn many(count: usize, replace: impl Fn(usize) -> Option<String>) -> Vec<u8> {
    let mut out = String::with_capacity(count * 40);
    out.push('[');
    for i in 0..count {
        if i > 0 {
            out.push(',');
        }
        if let Some(message) = replace(i) {
            out.push_str(&message);
        } else {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let _ = write!(out, r#"{{"role":"{role}","content":"message {i}"}}"#);
        }
    }
    out.push(']');
    out.into_bytes()
}

/// A system prompt and one user message of 50 MiB: the last user message is pinned, so no
/// small budget can fit it.
fn huge_last_message() -> Vec<u8> {
    let mut out = br#"{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": ""#.to_vec();
    out.resize(out.len() + 50 * 1024 * 1024, b'x');
    out.extend_from_slice(br#""}]}"#);
    out
}

#[allow(
    clippy::too_many_lines,
    reason = "one row per malformed input: the table is the test"
)]
fn rows() -> Vec<Row> {
    let unanswered = format!(
        r#"{{"role": "assistant", "content": null, "tool_calls": [{}]}}, {{"role": "user", "content": "?"}}"#,
        call("a")
    );
    let duplicate = format!(
        r#"{{"role": "assistant", "content": null, "tool_calls": [{}, {}]}}, {{"role": "tool", "tool_call_id": "a", "content": "1"}}, {{"role": "tool", "tool_call_id": "a", "content": "2"}}"#,
        call("a"),
        call("a")
    );
    let no_call_id = format!(
        r#"{{"role": "assistant", "content": null, "tool_calls": [{}]}}, {{"role": "tool", "content": "x"}}"#,
        call("a")
    );
    let answered_twice = format!(
        r#"{{"role": "assistant", "content": null, "tool_calls": [{}]}}, {{"role": "tool", "tool_call_id": "a", "content": "1"}}, {{"role": "tool", "tool_call_id": "a", "content": "1"}}"#,
        call("a")
    );
    vec![
        // Not JSON, or not the JSON we read.
        row(
            "truncated JSON",
            r#"{"messages": [{"role": "user", "content": "hi""#,
            BAD,
            "{file}: malformed JSON: EOF while parsing an object at line 1 column 46",
        ),
        row(
            "an empty file",
            "",
            BAD,
            "{file}: top level: the input is empty: expected a JSON object or array",
        ),
        row(
            "only whitespace",
            " \n\t",
            BAD,
            "{file}: top level: the input is empty: expected a JSON object or array",
        ),
        row(
            "invalid UTF-8",
            b"[{\"role\": \"user\", \"content\": \"caf\xe9 \xff\"}]".to_vec(),
            BAD,
            "{file}: malformed JSON: invalid unicode code point at line 1 column 34",
        ),
        row(
            "trailing garbage",
            format!("{VALID} xx"),
            BAD,
            "{file}: line 1: top level: trailing characters after the JSON value, at column 80",
        ),
        row(
            "NaN is not JSON",
            r#"[{"role": "user", "content": "x", "t": NaN}]"#,
            BAD,
            "{file}: malformed JSON: expected value at line 1 column 40",
        ),
        row(
            "nesting 10k deep",
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            BAD,
            "{file}: malformed JSON: recursion limit exceeded at line 1 column 128",
        ),
        row(
            "nesting 10k deep inside a message",
            format!(
                r#"[{{"role": "user", "content": {}{}}}]"#,
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
            BAD,
            "{file}: malformed JSON: recursion limit exceeded at line 1 column 155",
        ),
        row(
            "a string at the top level",
            r#""hello""#,
            BAD,
            "{file}: top level: expected an object with `messages` or an array of messages, found a string",
        ),
        row(
            "a number at the top level",
            "42",
            BAD,
            "{file}: top level: expected an object with `messages` or an array of messages, found a number",
        ),
        row(
            "an object without messages",
            r#"{"model": "gpt-4o"}"#,
            BAD,
            "{file}: messages: missing: the object has no `messages`",
        ),
        row(
            "messages that are not an array",
            r#"{"messages": {"role": "user"}}"#,
            BAD,
            "{file}: messages: expected an array, found an object",
        ),
        // Messages of the wrong shape.
        row(
            "a message that is a string",
            r#"["hello"]"#,
            BAD,
            "{file}: message 0: message: expected an object, found a string",
        ),
        row(
            "an unknown role",
            r#"[{"role": "wizard", "content": "hi"}]"#,
            BAD,
            "{file}: message 0: role: unknown role `wizard` (expected system, developer, user, assistant or tool)",
        ),
        row(
            "a missing role",
            r#"[{"content": "hi"}]"#,
            BAD,
            "{file}: message 0: role: missing",
        ),
        row(
            "content that is a number",
            r#"[{"role": "user", "content": 5}]"#,
            BAD,
            "{file}: message 0: content: expected a string, null or an array of blocks, found a number",
        ),
        row(
            "a text block without text",
            r#"[{"role": "user", "content": [{"type": "text", "text": 5}]}]"#,
            BAD,
            "{file}: message 0: content[0].text: expected a string, found a number",
        ),
        row(
            "legacy function_call",
            r#"[{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}]"#,
            BAD,
            "{file}: message 0: function_call: legacy `function_call` is not supported; use `tool_calls`",
        ),
        row(
            "an Anthropic message without content",
            r#"{"system": "s", "messages": [{"role": "user"}]}"#,
            BAD,
            "{file}: message 0: content: missing: expected a string or an array of blocks",
        ),
        row(
            "a system prompt that is a number",
            r#"{"system": 5, "messages": [{"role": "user", "content": "x"}]}"#,
            BAD,
            "{file}: system: expected a string or text blocks, found a number",
        ),
        row(
            "clues of both formats",
            r#"[{"role": "tool", "tool_call_id": "a", "content": "x"}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]"#,
            BAD,
            "{file}: cannot tell the format: message 0 (role `tool`) looks like OpenAI but message 1 (a `tool_result` block) looks like Anthropic",
        ),
        // A forced session-log format reads only a log that shows it: its reader skips the
        // records it does not know, so an API body would read as an empty conversation.
        // See: #27
        Row {
            args: vec!["--format", "claude-code", "--ratio", "0.5"],
            ..row(
                "an API body forced as a Claude Code log",
                VALID,
                BAD,
                "{file}: the input is not claude-code: no line has `sessionId` with `uuid` or `parentUuid`",
            )
        },
        Row {
            args: vec!["--format", "codex", "--ratio", "0.5"],
            ..row(
                "an API body forced as a Codex log",
                VALID,
                BAD,
                "{file}: the input is not codex: no line is a Codex record (`type` and `payload`)",
            )
        },
        Row {
            args: vec!["--format", "gemini-cli", "--ratio", "0.5"],
            ..row(
                "an API body forced as a Gemini CLI session",
                r#"{"messages": [{"role": "user", "content": "hello"}]}"#,
                BAD,
                "{file}: the input is not gemini-cli: no value has `sessionId` and `projectHash`",
            )
        },
        Row {
            args: vec!["--format", "pi", "--ratio", "0.5"],
            ..row(
                "an API body forced as a pi log",
                VALID,
                BAD,
                "{file}: the input is not pi: no line is a pi `session` header",
            )
        },
        // An output that would not read back as its input was read is refused: here the
        // dropped tool round was all that showed OpenAI beside a stray top-level field.
        // See: #27
        Row {
            args: vec![
                "--target",
                "60",
                "--tool-mode",
                "drop",
                "--keep-tool-rounds",
                "0",
            ],
            validate: Validate::Valid,
            ..row(
                "an output that would read as another format",
                stray_field("system", "{}"),
                BAD,
                "{file}: the output would not read back as openai: cannot tell the format: message 0 (role `system`) looks like OpenAI but a top-level `system` field looks like Anthropic",
            )
        },
        Row {
            args: vec!["--format", "anthropic", "--target", "50"],
            ..row(
                "a developer role in Anthropic messages",
                r#"{"messages": [{"role": "developer", "content": "go"}]}"#,
                BAD,
                "{file}: message 0: role: unknown role `developer` (expected user, assistant or system)",
            )
        },
        Row {
            args: vec!["--format", "bedrock", "--target", "50"],
            ..row(
                "an unknown role in Bedrock messages",
                r#"{"messages": [{"role": "wizard", "content": [{"text": "hi"}]}]}"#,
                BAD,
                "{file}: message 0: role: unknown role `wizard` (expected user or assistant)",
            )
        },
        Row {
            args: vec!["--format", "gemini", "--target", "50"],
            ..row(
                "an unknown role in Gemini contents",
                r#"{"contents": [{"role": "wizard", "parts": [{"text": "hi"}]}]}"#,
                BAD,
                "{file}: message 0: role: unknown role `wizard` (expected user or model)",
            )
        },
        Row {
            args: vec!["--format", "responses", "--target", "50"],
            ..row(
                "an unknown role in a Responses message item",
                r#"{"input": [{"type": "message", "role": "wizard", "content": "hi"}]}"#,
                BAD,
                "{file}: message 0: role: unknown role `wizard` (expected user, assistant, system or developer)",
            )
        },
        Row {
            args: vec!["--format", "ai-sdk", "--target", "50"],
            ..row(
                "an unknown role in AI SDK messages",
                r#"{"messages": [{"role": "wizard", "content": "hi"}]}"#,
                BAD,
                "{file}: message 0: role: unknown role `wizard` (expected system, user, assistant or tool)",
            )
        },
        // Tool calls and results that do not pair.
        row(
            "a tool message without tool_call_id",
            openai(&no_call_id),
            BAD,
            "{file}: message 2: tool_call_id: missing",
        ),
        row(
            "a result without its call",
            openai(r#"{"role": "tool", "tool_call_id": "zz", "content": "x"}"#),
            BAD,
            "{file}: message 1: tool_call_id: tool result refers to unknown call id `zz`",
        ),
        row(
            "an Anthropic result without its call",
            anthropic(&tool_result("x")),
            BAD,
            "{file}: message 1: content[0].tool_use_id: tool result refers to unknown call id `x`",
        ),
        row(
            "a conversation opening with a tool result",
            r#"[{"role": "tool", "tool_call_id": "a", "content": "x"}]"#,
            BAD,
            "{file}: message 0: role: the conversation opens with a tool result",
        ),
        row(
            "an unanswered call",
            openai(&unanswered),
            BAD,
            "{file}: message 1: tool_calls[0].id: tool call `a` is never answered where the format requires",
        ),
        row(
            "an unanswered Anthropic call",
            anthropic(&format!(
                r#"{}, {{"role": "assistant", "content": "hm"}}"#,
                tool_use("a")
            )),
            BAD,
            "{file}: message 1: content[0].id: tool call `a` is never answered where the format requires",
        ),
        row(
            "a result not placed right after its call",
            anthropic(&format!(
                r#"{}, {{"role": "user", "content": "wait"}}, {{"role": "assistant", "content": "hm"}}, {}"#,
                tool_use("a"),
                tool_result("a")
            )),
            BAD,
            "{file}: message 1: content[0].id: tool call `a` is never answered where the format requires",
        ),
        row(
            "duplicate call ids in one message",
            openai(&duplicate),
            BAD,
            "{file}: message 1: tool_calls[1].id: call id `a` is already used by message 1",
        ),
        row(
            "duplicate call ids across rounds",
            anthropic(&format!(
                "{}, {}, {}, {}",
                tool_use("a"),
                tool_result("a"),
                tool_use("a"),
                tool_result("a")
            )),
            BAD,
            "{file}: message 3: content[0].id: call id `a` is already used by message 1",
        ),
        row(
            "a call answered twice",
            openai(&answered_twice),
            BAD,
            "{file}: message 3: tool_call_id: tool call `a` is answered again (first answered in message 2)",
        ),
        row(
            "arguments that are not a string",
            openai(
                r#"{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]}, {"role": "tool", "tool_call_id": "a", "content": "x"}"#,
            ),
            BAD,
            "{file}: message 1: tool_calls[0].function.arguments: expected a JSON-encoded string, found an object",
        ),
        row(
            "an Anthropic input that is not an object",
            anthropic(&format!(
                r#"{{"role": "assistant", "content": [{{"type": "tool_use", "id": "a", "name": "f", "input": "x"}}]}}, {}"#,
                tool_result("a")
            )),
            BAD,
            "{file}: message 1: content[0].input: expected an object, found a string",
        ),
        row(
            "is_error that is not a boolean",
            anthropic(&format!(
                r#"{}, {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}}]}}"#,
                tool_use("a")
            )),
            BAD,
            "{file}: message 2: content[0].is_error: expected a boolean, found a string",
        ),
        // Size.
        Row {
            args: vec!["--tokenizer", "chars", "--target", "1000"],
            validate: Validate::Valid,
            ..row(
                "a 50 MB last user message",
                huge_last_message(),
                CANNOT_FIT,
                "{file}: cannot fit: the pinned minimum (system messages, the task, the current request and the last unit) is 13107214 tokens, above the budget of 1000",
            )
        },
        Row {
            args: vec!["--tokenizer", "chars", "--target", "1000"],
            ..row(
                "100k messages, the last with an unknown role",
                many(100_000, |i| {
                    (i == 99_999).then(|| r#"{"role":"wizard","content":"x"}"#.to_string())
                }),
                BAD,
                "{file}: message 99999: role: unknown role `wizard`",
            )
        },
        Row {
            args: vec!["--tokenizer", "chars", "--target", "1000"],
            ..row(
                "100k messages, one an orphan result",
                many(100_000, |i| {
                    (i == 50_001).then(|| {
                        r#"{"role":"tool","tool_call_id":"lost","content":"x"}"#.to_string()
                    })
                }),
                BAD,
                "{file}: message 50001: tool_call_id: tool result refers to unknown call id `lost`",
            )
        },
        // Arguments.
        usage(
            "a budget of 0",
            &["--target", "0"],
            "{file}: budget tokens = 0: a budget of 0 tokens fits nothing",
        ),
        usage(
            "a negative budget",
            &["--target", "-5"],
            "invalid value '-5' for '--target <TARGET>': a budget is a number of tokens, 0 or more; got -5",
        ),
        usage(
            "a non-numeric budget",
            &["--target", "abc"],
            "invalid value 'abc' for '--target <TARGET>'",
        ),
        usage(
            "a ratio of 0",
            &["--ratio", "0"],
            "{file}: budget ratio = 0: expected a number above 0",
        ),
        usage(
            "no budget at all",
            &[],
            "no budget: give a target in tokens, a ratio or a model",
        ),
        usage(
            "an unknown model",
            &["--model", "gtp-9"],
            "unknown model `gtp-9`; nearest: ",
        ),
        usage(
            "an output path in a missing folder",
            &["--target", "50", "-o", "{dir}/missing/out.json"],
            "{dir}/missing/out.json: the folder {dir}/missing does not exist",
        ),
        usage(
            "an output path in a missing folder, with a budget that cannot fit",
            &["--target", "1", "-o", "{dir}/missing/out.json"],
            "{dir}/missing/out.json: the folder {dir}/missing does not exist",
        ),
        usage(
            "an output path that is a folder",
            &["--target", "50", "-o", "{dir}"],
            "{dir}: is a folder, not a file",
        ),
        usage(
            "a report path in a missing folder",
            &["--target", "50", "--report", "{dir}/missing/report.json"],
            "{dir}/missing/report.json: the folder {dir}/missing does not exist",
        ),
        usage(
            "a negative ratio",
            &["--ratio", "-0.5"],
            "{file}: budget ratio = -0.5: expected a number above 0",
        ),
        Row {
            input: None,
            validate: Validate::Refused,
            ..usage(
                "a missing file",
                &["--target", "50"],
                "{file}: cannot read: No such file or directory",
            )
        },
        // Every format (issue #11): an unanswered call, a result without its call, mismatched
        // Gemini counts, a broken JSONL line; each named by message (or log line) and field.
        row(
            "responses: an unanswered function call",
            r#"{"input": [{"role": "user", "content": "go"}, {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}, {"role": "user", "content": "?"}]}"#,
            BAD,
            "{file}: message 1: call_id: tool call `c1` is never answered where the format requires",
        ),
        row(
            "responses: an output without its call",
            r#"{"input": [{"role": "user", "content": "go"}, {"type": "function_call_output", "call_id": "zz", "output": "x"}]}"#,
            BAD,
            "{file}: message 1: call_id: tool result refers to unknown call id `zz`",
        ),
        row(
            "gemini: fewer responses than calls (ids)",
            r#"{"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}}, {"functionCall": {"id": "b", "name": "f", "args": {}}}]}, {"role": "user", "parts": [{"functionResponse": {"id": "a", "name": "f", "response": {}}}]}]}"#,
            BAD,
            "{file}: message 1: parts[1].functionCall.id: tool call `b` is never answered where the format requires",
        ),
        row(
            "gemini: fewer responses than calls (by name and order)",
            r#"{"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}, {"functionCall": {"name": "f", "args": {}}}]}, {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}"#,
            BAD,
            "{file}: message 1: parts[1].functionCall.name: tool call `f#000001` is never answered where the format requires",
        ),
        row(
            "gemini: more responses than calls",
            r#"{"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}, {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}, {"functionResponse": {"name": "f", "response": {}}}]}]}"#,
            BAD,
            "{file}: message 2: parts[1].functionResponse.name: tool result refers to unknown call id `f#unpaired-2.1`",
        ),
        row(
            "gemini: a response without its call",
            r#"{"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [{"text": "hi"}]}, {"role": "user", "parts": [{"functionResponse": {"id": "zz", "name": "f", "response": {}}}]}]}"#,
            BAD,
            "{file}: message 2: parts[0].functionResponse.id: tool result refers to unknown call id `zz`",
        ),
        row(
            "bedrock: an unanswered tool use",
            r#"{"messages": [{"role": "user", "content": [{"text": "go"}]}, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}]}, {"role": "user", "content": [{"text": "?"}]}], "inferenceConfig": {}}"#,
            BAD,
            "{file}: message 1: content[0].toolUse.toolUseId: tool call `t1` is never answered where the format requires",
        ),
        row(
            "bedrock: a tool result without its use",
            r#"{"messages": [{"role": "user", "content": [{"text": "go"}]}, {"role": "assistant", "content": [{"text": "hi"}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "zz", "content": [{"text": "x"}]}}]}]}"#,
            BAD,
            "{file}: message 2: content[0].toolResult.toolUseId: tool result refers to unknown call id `zz`",
        ),
        Row {
            args: vec!["--target", "50", "--strict"],
            ..row(
                "claude code: an interrupted tool use, as strict, names its line",
                concat!(
                    r#"{"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s", "message": {"role": "user", "content": "go"}}"#,
                    "\n",
                    r#"{"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}}"#,
                    "\n",
                    r#"{"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "s", "message": {"role": "user", "content": "?"}}"#,
                    "\n",
                ),
                BAD,
                "{file}: line 2: interrupted_call: tool call `t1` needs a repair, refused as strict",
            )
        },
        row(
            "claude code: a broken JSONL line",
            concat!(
                r#"{"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s", "message": {"role": "user", "content": "go"}}"#,
                "\n",
                r#"{"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "message": {"id": "m1", "#,
                "\n",
                r#"{"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "s", "message": {"role": "user", "content": "?"}}"#,
                "\n",
            ),
            BAD,
            "{file}: malformed JSON: key must be a string at line 3 column 1",
        ),
        Row {
            args: vec!["--target", "50", "--strict"],
            ..row(
                "codex: an output without its call, as strict, names its line",
                concat!(
                    r#"{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}"#,
                    "\n",
                    r#"{"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}}"#,
                    "\n",
                    r#"{"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "zz", "output": "x"}}"#,
                    "\n",
                ),
                BAD,
                "{file}: line 3: result_without_call: tool call `zz` needs a repair, refused as strict",
            )
        },
        row(
            "pi: a result without its call names its line",
            concat!(
                r#"{"type": "session", "id": "s", "timestamp": "t", "cwd": "/"}"#,
                "\n",
                r#"{"type": "message", "timestamp": "t", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}}"#,
                "\n",
                r#"{"type": "message", "timestamp": "t", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}}"#,
                "\n",
                r#"{"type": "message", "timestamp": "t", "message": {"role": "toolResult", "toolCallId": "zz", "content": [{"type": "text", "text": "x"}]}}"#,
                "\n",
            ),
            BAD,
            "{file}: line 4 (message 2): content[0].tool_use_id: tool result refers to unknown call id `zz`",
        ),
        Row {
            args: vec!["--target", "50", "--strict"],
            ..row(
                "gemini cli: a tool call without its result, as strict",
                r#"{"sessionId": "s", "projectHash": "h", "messages": [{"id": "1", "type": "user", "content": "go"}, {"id": "2", "type": "gemini", "content": "", "toolCalls": [{"id": "c1", "name": "ls", "args": {}}]}, {"id": "3", "type": "user", "content": "stop"}]}"#,
                BAD,
                "{file}: line 1: interrupted_call: tool call `c1` needs a repair, refused as strict",
            )
        },
        // Issue #9: a forced format refuses input that is clearly another's.
        Row {
            args: vec!["--target", "50", "--format", "openai"],
            ..row(
                "--format openai on an Anthropic body",
                r#"{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}]}"#,
                BAD,
                "{file}: the input is not openai: message 1 (a `tool_use` block) shows it is anthropic",
            )
        },
        // Issue #9: Anthropic requires the first message to be a user message.
        row(
            "anthropic: a conversation opening with the assistant",
            r#"{"system": "s", "messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "go"}]}"#,
            BAD,
            "{file}: message 0: role: the first message must be a user message in this format",
        ),
    ]
}

/// A scratch folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ctxcompact-bad-input-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ctxcompact(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(args)
        .output()
        .unwrap()
}

/// The names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs one row; returns what went wrong, if anything.
fn check(row: &Row) -> Vec<String> {
    let scratch = Scratch::new();
    let dir = scratch.0.to_str().unwrap().to_string();
    let file = format!("{dir}/input.json");
    let out = format!("{dir}/out.json");
    if let Some(bytes) = &row.input {
        std::fs::write(&file, bytes).unwrap();
    }
    let expand = |text: &str| text.replace("{file}", &file).replace("{dir}", &dir);
    let mut args = vec!["compact".to_string(), file.clone()];
    args.extend(row.args.iter().map(|arg| expand(arg)));
    if !row.args.contains(&"-o") {
        args.extend(["-o".to_string(), out]);
    }
    let mut problems = Vec::new();
    let output = ctxcompact(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() != Some(row.code) {
        problems.push(format!(
            "compact exited {:?}, not {}: {stderr}",
            output.status.code(),
            row.code
        ));
    }
    if !stderr.contains(&expand(row.says)) {
        problems.push(format!(
            "compact's stderr lacks {:?}: {stderr}",
            expand(row.says)
        ));
    }
    if !output.stdout.is_empty() {
        problems.push("compact printed to stdout".into());
    }
    if !matches!(row.validate, Validate::Skip) {
        let mut args = vec!["validate".to_string(), file.clone()];
        if let Some(at) = row.args.iter().position(|arg| *arg == "--format") {
            args.extend(row.args[at..=at + 1].iter().map(ToString::to_string));
        }
        if row.args.contains(&"--strict") {
            args.push("--strict".into());
        }
        let output = ctxcompact(&args);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let (code, says) = match row.validate {
            Validate::Valid => (0, format!("{file}: valid (")),
            _ => (BAD, expand(row.says)),
        };
        if output.status.code() != Some(code) {
            problems.push(format!(
                "validate exited {:?}, not {code}: {said}",
                output.status.code()
            ));
        }
        if !said.contains(&says) {
            problems.push(format!("validate's output lacks {says:?}: {said}"));
        }
    }
    match &row.input {
        Some(bytes) => {
            if std::fs::read(&file).ok().as_ref() != Some(bytes) {
                problems.push("the input file changed".into());
            }
            if listing(&scratch.0) != ["input.json"] {
                problems.push(format!(
                    "the folder holds more than the input: {:?}",
                    listing(&scratch.0)
                ));
            }
        }
        None => {
            if !listing(&scratch.0).is_empty() {
                problems.push(format!("files appeared: {:?}", listing(&scratch.0)));
            }
        }
    }
    problems
}

#[test]
fn malformed_input_exits_with_its_code_names_the_problem_and_writes_nothing() {
    let rows = rows();
    assert!(rows.len() >= 25, "the table has {} rows", rows.len());
    // Rows run on a few threads (each row has its own folder): the large inputs take seconds
    // in a debug build, and the small ones can run meanwhile.
    let next = AtomicUsize::new(0);
    let mut found: Vec<(usize, Vec<String>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut found = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(row) = rows.get(index) else { break };
                        found.push((index, check(row)));
                    }
                    found
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    found.sort();
    assert_eq!(found.len(), rows.len());
    let mut failures = String::new();
    for (index, problems) in found {
        for problem in problems {
            let _ = writeln!(failures, "{}: {problem}", rows[index].name);
        }
    }
    assert!(failures.is_empty(), "{failures}");
}
