//! What the person told the agent survives (issue 33): the instruction files agents inject
//! (AGENTS.md, CLAUDE.md, GEMINI.md) are pinned, never removed nor shortened, and listed in the
//! report; a removed request's standing instructions are kept verbatim in the digest.

use proptest::prelude::*;
use serde_json::{Value, json};

use ctxcompact::lab::searchable;
use ctxcompact::{Budget, Conversation, Options, Tokenizer, compact, format};

use crate::cli::ctxcompact;

/// Codex's AGENTS.md message, as `codex-rs/core/src/context/user_instructions.rs` writes it.
const CODEX: &str = "# AGENTS.md instructions for /home/user/ledger\n\n<INSTRUCTIONS>\nNever \
                     push to main. Run cargo fmt before every commit.\n</INSTRUCTIONS>";
/// Codex's project doc before AGENTS.md messages.
const CODEX_OLD: &str =
    "<user_instructions>\n\nAlways run the tests before committing.\n\n</user_instructions>";
/// Claude Code's user context: CLAUDE.md in a `<system-reminder>` block.
const CLAUDE: &str = "<system-reminder>\nAs you answer the user's questions, you can use the \
                      following context:\n# claudeMd\nCodebase and user instructions are shown \
                      below.\n\nContents of /home/user/ledger/CLAUDE.md (project instructions, \
                      checked into the codebase):\n\nUse tabs. Never edit generated files.\n\
                      </system-reminder>\n";
/// Gemini CLI's first message, with GEMINI.md in it.
const GEMINI: &str = "<session_context>\nThis is the Gemini CLI. We are setting up the context \
                      for our chat.\n<loaded_context>\n<project_context>\n--- Context from: \
                      GEMINI.md ---\nPrefer small commits.\n--- End of Context from: GEMINI.md \
                      ---\n</project_context>\n</loaded_context>\n</session_context>";

/// An OpenAI-format agent session: the instruction message at `at` among `rounds` requests,
/// each followed by a tool round with a long output and an answer.
fn session(instructions: &str, at: usize, rounds: usize) -> Value {
    let mut messages = vec![json!({"role": "system", "content": "You are a coding agent."})];
    for round in 0..rounds {
        if round == at {
            messages.push(json!({"role": "user", "content": instructions}));
        }
        messages.push(json!({"role": "user", "content": format!(
            "Request {round}: please fix the failing test number {round} in the ledger module.")}));
        let id = format!("call_{round}");
        messages.push(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
            "type": "function", "function": {"name": "bash",
            "arguments": format!("{{\"command\": \"cargo test ledger_{round}\"}}")}}]}),
        );
        messages.push(json!({"role": "tool", "tool_call_id": id,
            "content": format!("test ledger_{round} ... ok\n").repeat(40)}));
        messages.push(json!({"role": "assistant", "content": format!("Fixed test {round}.")}));
    }
    if at >= rounds {
        messages.push(json!({"role": "user", "content": instructions}));
        messages.push(json!({"role": "assistant", "content": "Noted."}));
    }
    Value::Array(messages)
}

fn parse(value: &Value) -> Conversation {
    format::parse(&serde_json::to_vec(value).unwrap(), None).unwrap()
}

fn options(ratio: f64) -> Options {
    Options {
        tokenizer: Tokenizer::O200k,
        ..Options::with_budget(Budget::Ratio(ratio))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// An instruction file, wherever it sits, survives every compaction verbatim and is listed.
    // See: #33
    #[test]
    fn an_instruction_file_survives_every_compaction_verbatim(
        which in 0..4usize,
        rounds in 3..12usize,
        at in 0..13usize,
        ratio in 0.1..0.7f64,
    ) {
        let text = [CODEX, CODEX_OLD, CLAUDE, GEMINI][which];
        let input = parse(&session(text, at, rounds));
        let index = input.messages.iter().position(|m| m.text() == text).unwrap();
        let Ok(out) = compact(input, &options(ratio)) else {
            return Ok(());
        };
        prop_assert!(searchable(&out.conversation).contains(text));
        let listed: Vec<usize> = out.report.instruction_files.iter().map(|f| f.message).collect();
        prop_assert_eq!(listed, vec![index]);
        for [from, to] in &out.report.removed {
            prop_assert!(!(*from..*to).contains(&index), "removed {:?}", out.report.removed);
        }
    }
}

// See: #33
#[test]
fn the_report_names_each_instruction_file_its_agent_and_its_path() {
    for (text, agent, file, paths) in [
        (CODEX, "codex", "AGENTS.md", vec!["/home/user/ledger"]),
        (CODEX_OLD, "codex", "AGENTS.md", vec![]),
        (
            CLAUDE,
            "claude-code",
            "CLAUDE.md",
            vec!["/home/user/ledger/CLAUDE.md"],
        ),
        (GEMINI, "gemini-cli", "GEMINI.md", vec!["GEMINI.md"]),
    ] {
        let out = compact(parse(&session(text, 0, 6)), &options(0.3)).unwrap();
        let listed = &out.report.instruction_files;
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!(
            (listed[0].agent, listed[0].file, listed[0].paths.clone()),
            (agent, file, paths.iter().map(ToString::to_string).collect()),
        );
        // A harness message too: it holds no person's words.
        assert!(out.report.harness.iter().any(|h| h.message == 1) || text == CLAUDE);
    }
}

// See: #33
#[test]
fn a_task_shortened_to_fit_keeps_the_claude_md_block_beside_it_whole() {
    // Claude Code's first user message: the user context, then the task, as two text blocks.
    let task = format!(
        "Port the ledger to Rust. {}",
        "Keep every API the same. ".repeat(200)
    );
    let body = json!({"system": "You are Claude Code.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": CLAUDE}, {"type": "text", "text": task}]},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": "Done."},
    ]});
    let input = parse(&body);
    let total = ctxcompact::count_with(&input, Tokenizer::O200k.counter()).total();
    let options = Options {
        tokenizer: Tokenizer::O200k,
        ..Options::with_budget(Budget::Tokens(total / 2))
    };
    let out = compact(input, &options).unwrap();
    assert!(
        out.report.task_shortened.is_some(),
        "{}",
        out.report.summary()
    );
    let text = searchable(&out.conversation);
    assert!(text.contains(CLAUDE), "{text}");
    assert!(!text.contains(task.as_str()));
}

// See: #33
#[test]
fn a_codex_rollout_keeps_its_agents_md_message_through_the_cli() {
    let line = |kind: &str, payload: Value| {
        json!({"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": payload})
            .to_string()
    };
    let message = |role: &str, text: &str| {
        let part = if role == "assistant" {
            "output_text"
        } else {
            "input_text"
        };
        line(
            "response_item",
            json!({"type": "message", "role": role, "content": [{"type": part, "text": text}]}),
        )
    };
    let mut lines = vec![
        line(
            "session_meta",
            json!({"id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/home/user/ledger",
                "originator": "codex_cli_rs", "cli_version": "0.169.0"}),
        ),
        message("user", CODEX),
        message(
            "user",
            "<environment_context>\n  <cwd>/home/user/ledger</cwd>\n</environment_context>",
        ),
    ];
    for n in 0..12 {
        lines.push(message(
            "user",
            &format!("Request {n}: explain the ledger's module {n} in detail, please."),
        ));
        lines.push(message(
            "assistant",
            &format!("Module {n} does this. ").repeat(60),
        ));
    }
    let dir = std::env::temp_dir().join(format!("ctxcompact-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("rollout.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = dir.join("out.json");
    let report = dir.join("report.json");
    let run = ctxcompact(
        &[
            "compact",
            log.to_str().unwrap(),
            "--ratio",
            "0.5",
            "-o",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let written = format::parse(&std::fs::read(&out).unwrap(), None).unwrap();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(searchable(&written).contains(CODEX));
    let removed = report["removed"].as_array().unwrap();
    assert!(!removed.is_empty(), "{report}");
    assert!(removed.iter().all(|r| r[0] != 0), "{report}");
    assert_eq!(report["instruction_files"][0]["message"], 0, "{report}");
    assert_eq!(report["instruction_files"][0]["file"], "AGENTS.md");
}

// See: #33
#[test]
fn a_removed_requests_standing_instructions_are_kept_verbatim() {
    // Long enough for a digest with room: at a budget of a few hundred tokens the planner may
    // leave a marker without one (a header alone), which the lead knows of.
    let mut value = session(CODEX, 99, 24);
    let messages = value.as_array_mut().unwrap();
    // Short outputs: removing history, not clearing outputs, is what meets the budget.
    for message in messages.iter_mut().filter(|m| m["role"] == "tool") {
        message["content"] = json!("ok");
    }
    messages[5]["content"] = json!(
        "Fix the ledger tests. Never force-push to main, and don't touch the schema! Make sure \
         every commit passes cargo fmt."
    );
    let input = parse(&value);
    for ratio in [0.5, 0.25] {
        let out = compact(input.clone(), &options(ratio)).unwrap();
        assert!(
            out.report.removed.iter().any(|r| (r[0]..r[1]).contains(&5)),
            "at {ratio}: {:?}",
            out.report.removed
        );
        let text = searchable(&out.conversation);
        for rule in [
            "Never force-push to main, and don't touch the schema!",
            "Make sure every commit passes cargo fmt.",
        ] {
            assert!(text.contains(rule), "at {ratio}: {rule}\n{text}");
        }
    }
}

// See: #33
#[test]
fn a_cleared_output_keeps_the_gemini_md_context_appended_to_it() {
    // Gemini CLI appends a folder's GEMINI.md to the output of the tool that read it
    // (packages/core/src/tools/jit-context.ts).
    let context = "\n\n--- Newly Discovered Project Context ---\n--- Context from: src/GEMINI.md \
                   ---\nNever log secrets.\n--- End of Context from: src/GEMINI.md ---\n--- End \
                   Project Context ---";
    let mut value = session(GEMINI, 0, 8);
    let messages = value.as_array_mut().unwrap();
    let output = format!("{}{context}", messages[4]["content"].as_str().unwrap());
    messages[4]["content"] = json!(output);
    let out = compact(parse(&value), &options(0.5)).unwrap();
    assert!(out.report.tool_trim.cleared > 0, "{}", out.report.summary());
    let text = searchable(&out.conversation);
    assert!(!text.contains(output.as_str()));
    assert!(text.contains(context.trim_start()), "{text}");
}
