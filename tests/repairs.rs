//! Session logs read as the agent sent them (issue 23): one fixture per repair kind per log
//! format in `tests/fixtures/logs` (`<format>-<kind>.jsonl`, written to match the real logs of
//! `../shared/corpus/raw`), and the task and current request of real recordings.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use ctxcompact::format::{self, ReadOptions};
use ctxcompact::{Budget, Options, analyze, validate};

/// Every fixture with the format and the repair kind its name says (`clean` for none).
fn fixtures() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|path| {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            let kind = stem
                .rsplit_once('-')
                .map(|(_, kind)| kind.to_string())
                .unwrap();
            (path, kind)
        })
        .collect();
    files.sort();
    files
}

fn read(path: &Path, strict: bool) -> ctxcompact::Result<ctxcompact::Conversation> {
    let options = ReadOptions {
        strict,
        ..ReadOptions::default()
    };
    format::parse_with_usage(&std::fs::read(path).unwrap(), &options).map(|(c, _)| c)
}

#[test]
fn each_repair_kind_is_named_and_the_repaired_log_validates() {
    let files = fixtures();
    assert!(files.len() >= 20, "fixtures missing");
    for (path, kind) in &files {
        let name = path.display();
        let conversation = read(path, false).unwrap_or_else(|err| panic!("{name}: {err}"));
        let kinds: Vec<&str> = conversation.repairs.iter().map(|r| r.kind).collect();
        if kind == "clean" {
            assert!(kinds.is_empty(), "{name}: {kinds:?}");
        } else {
            assert_eq!(kinds, [kind.as_str()], "{name}");
            let repair = &conversation.repairs[0];
            assert!(repair.line >= 1, "{name}: a repair names its log line");
            if kind != "missing_first_request" {
                assert!(repair.call_id.is_some(), "{name}: a repair names its call");
            }
        }
        assert_eq!(validate(&conversation), Vec::new(), "{name}");
    }
}

#[test]
fn strict_refuses_exactly_the_logs_that_needed_a_repair() {
    for (path, _) in fixtures() {
        let name = path.display();
        let repaired = read(&path, false).unwrap();
        let needed = repaired
            .repairs
            .iter()
            .any(ctxcompact::report::Repair::changed);
        match read(&path, true) {
            Ok(strict) => {
                assert!(!needed, "{name}: read as strict though it needed a repair");
                assert_eq!(strict, repaired, "{name}");
            }
            Err(err) => {
                assert!(
                    needed,
                    "{name}: refused as strict though it needed no repair"
                );
                let first = repaired.repairs.iter().find(|r| r.changed()).unwrap();
                let text = err.to_string();
                assert!(
                    text.starts_with(&format!("line {}: {}", first.line, first.kind)),
                    "{name}: {text}"
                );
            }
        }
    }
}

#[test]
fn the_interrupted_call_gets_the_agents_own_result() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
    let claude = read(&root.join("claude-code-interrupted_call.jsonl"), false).unwrap();
    let rendered = format::render(&claude).to_string();
    assert!(
        rendered
            .contains(r#""content":"[Request interrupted by user for tool use]","is_error":true"#),
        "{rendered}"
    );
    let codex = read(&root.join("codex-interrupted_call.jsonl"), false).unwrap();
    let rendered = format::render(&codex).to_string();
    assert!(rendered.contains(r#""output":"aborted""#), "{rendered}");
}

/// The harness patterns of `data/harness.json`: (kind, pattern).
fn harness_patterns() -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/harness.json"))
            .unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["pattern"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Whether `text` is only harness text: nothing left once the pattern tags' blocks are taken
/// out, or what is left starts with a prefix pattern.
fn only_harness(text: &str, patterns: &[(String, String)]) -> bool {
    if text.trim().is_empty() {
        // No text at all (an image, a document): not machine text.
        return false;
    }
    let mut rest = text.to_string();
    for (kind, name) in patterns {
        if kind != "tag" {
            continue;
        }
        let (open, close) = (format!("<{name}>"), format!("</{name}>"));
        while let Some(start) = rest.find(&open) {
            let end = rest[start..]
                .find(&close)
                .map_or(rest.len(), |at| start + at + close.len());
            rest.replace_range(start..end, "");
        }
    }
    let rest = rest.trim();
    rest.is_empty()
        || patterns
            .iter()
            .any(|(kind, p)| kind == "prefix" && rest.starts_with(p.as_str()))
}

#[test]
fn the_task_and_the_current_request_are_never_harness_text() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = manifest.join("../shared/corpus");
    let mut roots = vec![manifest.join("data/conversations")];
    let roots_had_corpus = corpus.is_dir();
    if corpus.is_dir() {
        roots.push(corpus);
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the corpus part of the harness test: {} not found",
            corpus.display()
        );
    }
    let patterns = harness_patterns();
    let mut files = Vec::new();
    while let Some(folder) = roots.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                roots.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "json" || e == "jsonl")
                && !path.ends_with("provenance.json")
                && !path.ends_with("index.json")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut checked = 0;
    let mut metadata = 0;
    for path in &files {
        let Ok(conversation) = format::parse(&std::fs::read(path).unwrap(), None) else {
            continue;
        };
        if !validate(&conversation).is_empty() {
            continue;
        }
        for ratio in [0.5, 0.25] {
            let report = match analyze(
                conversation.clone(),
                &Options::with_budget(Budget::Ratio(ratio)),
            ) {
                Ok(report) => report,
                // A conversation of a few tokens has no budget at a ratio of it.
                Err(ctxcompact::Error::BadBudget { .. }) => continue,
                Err(err) => panic!("{}: {err}", path.display()),
            };
            for index in [report.task, report.current].into_iter().flatten() {
                let text = conversation.messages[index].text();
                assert!(
                    !only_harness(&text, &patterns),
                    "{} at ratio {ratio}: message {index} is harness text: {}",
                    path.display(),
                    text.chars().take(120).collect::<String>()
                );
                // Nor a message the log's own metadata says the harness wrote.
                assert_eq!(
                    conversation.messages[index].harness,
                    None,
                    "{} at ratio {ratio}: message {index}",
                    path.display()
                );
            }
            // Every message the metadata marks is listed by analyze, saying so.
            let listed: Vec<usize> = report
                .harness
                .iter()
                .filter(|h| h.source == "metadata")
                .map(|h| h.message)
                .collect();
            let marked: Vec<usize> = (0..conversation.messages.len())
                .filter(|&i| {
                    let message = &conversation.messages[i];
                    message.harness.is_some() && !message.has_results()
                })
                .collect();
            assert_eq!(listed, marked, "{}", path.display());
            metadata += marked.len();
            checked += 1;
        }
    }
    assert!(checked > 0, "no conversation checked");
    let _ = writeln!(
        std::io::stderr(),
        "{checked} reports checked; {metadata} metadata marks listed by them"
    );
    if roots_had_corpus {
        assert!(metadata > 0, "no log's metadata marked a message");
    }
}

/// Runs the binary on a fixture; returns the exit code and standard error.
fn run(args: &[&str], fixture: &str) -> (i32, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs")
        .join(fixture);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(args)
        .arg(&path)
        .args(["-o", "-"])
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn the_summary_counts_repairs_and_says_what_is_not_in_the_log() {
    let (code, stderr) = run(
        &["compact", "--target", "100000"],
        "claude-code-interrupted_call.jsonl",
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("; 1 repair on reading;"), "{stderr}");
    assert!(stderr.contains("tokens not in the log"), "{stderr}");
    let (code, stderr) = run(
        &["compact", "--strict", "--target", "100000"],
        "claude-code-interrupted_call.jsonl",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("line 2: interrupted_call"), "{stderr}");
    // The usage the log recorded holds 20000 tokens of prompt and tools it does not.
    let (code, stderr) = run(&["compact", "--target", "500"], "claude-code-clean.jsonl");
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("of them are not in the log") && stderr.contains("alone above the budget"),
        "{stderr}"
    );
}

/// The API body fixtures (`tests/fixtures/bodies/<format>-<kind>.json`, written to match real
/// bodies), with the repair kind each name says.
fn body_fixtures() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bodies");
    let mut files: Vec<(PathBuf, String)> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|path| {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            let kind = stem.split_once('-').unwrap().1.to_string();
            (path, kind)
        })
        .collect();
    files.sort();
    files
}

fn read_body(bytes: &[u8], repair: bool) -> ctxcompact::Conversation {
    let options = ReadOptions {
        repair,
        ..ReadOptions::default()
    };
    format::parse_with_usage(bytes, &options).unwrap().0
}

// See: #23
#[test]
fn an_api_body_is_repaired_only_with_repair_each_repair_named_by_message_index() {
    let files = body_fixtures();
    assert_eq!(files.len(), 20, "four kinds for each of five API formats");
    for (path, kind) in &files {
        let name = path.display();
        let bytes = std::fs::read(path).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let plain = read_body(&bytes, false);
        assert!(plain.repairs.is_empty(), "{name}");
        assert!(
            !validate(&plain).is_empty(),
            "{name}: broken without --repair"
        );
        let repaired = read_body(&bytes, true);
        let kinds: Vec<&str> = repaired.repairs.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [kind.as_str()], "{name}");
        assert_eq!(validate(&repaired), Vec::new(), "{name}");
        // `line` is the index of the message in the body's list that holds what was repaired.
        let list = value[repaired.format.list_key()].as_array().unwrap();
        let repair = &repaired.repairs[0];
        let held = list[repair.line].to_string();
        assert!(
            held.contains(repair.call_id.as_deref().unwrap()),
            "{name}: message {} is {held}",
            repair.line
        );
    }
}

// See: #23
#[test]
fn without_repair_a_broken_api_body_exits_2_naming_the_field() {
    // `count` counts a body whatever its pairing; the others refuse it unless repaired.
    let commands: [&[&str]; 4] = [
        &["validate"],
        &["analyze"],
        &["trim-tools"],
        &["compact", "--ratio", "0.9", "-o", "-"],
    ];
    for (path, _) in body_fixtures() {
        let path = path.to_str().unwrap();
        for command in commands {
            let args: Vec<&str> = [command[0], path]
                .into_iter()
                .chain(command[1..].iter().copied())
                .collect();
            let plain = crate::cli::ctxcompact(&args, None);
            assert_eq!(plain.status.code(), Some(2), "{args:?}");
            let said = String::from_utf8_lossy(&plain.stdout).to_string()
                + &String::from_utf8_lossy(&plain.stderr);
            assert!(said.contains(": message "), "{args:?}: {said}");
            let mut args = args;
            args.push("--repair");
            let repaired = crate::cli::ctxcompact(&args, None);
            assert!(
                matches!(repaired.status.code(), Some(0 | 3)),
                "{args:?}: {}",
                String::from_utf8_lossy(&repaired.stderr)
            );
        }
    }
}

/// The results of an API body's message list, as (message index, index in its content list
/// or `None` for a result that is a message of its own).
fn results(list: &[serde_json::Value]) -> Vec<(usize, Option<usize>)> {
    let is_result = |v: &serde_json::Value| {
        v["type"] == "tool_result"
            || v.get("toolResult").is_some()
            || v.get("functionResponse").is_some()
    };
    let mut found = Vec::new();
    for (m, message) in list.iter().enumerate() {
        let own = message["role"] == "tool"
            || message["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("_call_output"));
        if own {
            found.push((m, None));
        }
        for key in ["content", "parts"] {
            if let Some(blocks) = message[key].as_array() {
                for (b, block) in blocks.iter().enumerate() {
                    if is_result(block) {
                        found.push((m, Some(b)));
                    }
                }
            }
        }
    }
    found
}

// See: #23
#[test]
fn every_body_with_results_dropped_or_sent_twice_validates_once_repaired() {
    let mut checked = 0;
    for (path, _) in body_fixtures() {
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let format = read_body(body.to_string().as_bytes(), true).format;
        let key = format.list_key();
        let found = results(body[key].as_array().unwrap());
        // Each result kept, dropped or sent twice: every combination.
        for mut choice in 0..3usize.pow(u32::try_from(found.len()).unwrap()) {
            let mut mutated = body.clone();
            let list = mutated[key].as_array_mut().unwrap();
            let mut plan = Vec::new();
            for &at in &found {
                plan.push((at, choice % 3));
                choice /= 3;
            }
            // From the last, so earlier positions stay where they are.
            for ((m, block), what) in plan.into_iter().rev() {
                match (block, what) {
                    (_, 0) => {}
                    (None, 1) => {
                        list.remove(m);
                    }
                    (None, _) => {
                        let copy = list[m].clone();
                        list.insert(m + 1, copy);
                    }
                    (Some(b), what) => {
                        let blocks_key = if list[m].get("parts").is_some() {
                            "parts"
                        } else {
                            "content"
                        };
                        let blocks = list[m][blocks_key].as_array_mut().unwrap();
                        if what == 1 {
                            blocks.remove(b);
                        } else {
                            let copy = blocks[b].clone();
                            blocks.insert(b + 1, copy);
                        }
                        if blocks.is_empty() {
                            list.remove(m);
                        }
                    }
                }
            }
            let bytes = mutated.to_string();
            let repaired = read_body(bytes.as_bytes(), true);
            assert_eq!(
                validate(&repaired),
                Vec::new(),
                "{}: {bytes}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

// See: #23, #34 (item 2)
#[test]
fn a_log_output_ending_on_a_call_in_progress_reads_back_as_state_and_validate_refuses_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
    for agent in ["claude-code", "codex", "gemini-cli", "pi"] {
        let log = root.join(format!("{agent}-call_in_progress.jsonl"));
        let dir = crate::cli::scratch(&format!("in-progress-{agent}"));
        let out = dir.join("out.json");
        let (log, out) = (log.to_str().unwrap(), out.to_str().unwrap());
        let compacted =
            crate::cli::ctxcompact(&["compact", log, "--target", "100000", "-o", out], None);
        assert!(compacted.status.success(), "{agent}");
        // Read back as a body, the call is in progress as it was in the log: the commands that
        // read session state take it, with --strict too.
        let state: [&[&str]; 4] = [
            &["compact", "--target", "100000", "-o", "-"],
            &["trim-tools"],
            &["count"],
            &["analyze"],
        ];
        for command in state {
            for flags in [&[][..], &["--strict"], &["--repair"]] {
                let mut args = vec![command[0], out];
                args.extend_from_slice(&command[1..]);
                args.extend_from_slice(flags);
                let read = crate::cli::ctxcompact(&args, None);
                let said = String::from_utf8_lossy(&read.stderr).to_string();
                assert!(read.status.success(), "{agent} {args:?}: {said}");
            }
        }
        // As a request, a provider refuses it: validate names the call and its message.
        for flags in [&[][..], &["--strict"], &["--repair"]] {
            let mut args = vec!["validate", out];
            args.extend_from_slice(flags);
            let read = crate::cli::ctxcompact(&args, None);
            let said = String::from_utf8_lossy(&read.stdout).to_string();
            assert_eq!(read.status.code(), Some(2), "{agent} {flags:?}: {said}");
            assert!(
                said.lines().any(|l| l.contains(": message ")
                    && l.contains("is still in progress: no result follows it")),
                "{agent} {flags:?}: {said}"
            );
        }
    }
}

/// The written bytes of `conversation`, read back as ctxcompact reads any input.
fn read_back(
    conversation: &ctxcompact::Conversation,
) -> ctxcompact::Result<ctxcompact::Conversation> {
    let mut bytes = Vec::new();
    format::write(conversation, &mut bytes).unwrap();
    format::parse_with_usage(&bytes, &ReadOptions::default()).map(|(c, _)| c)
}

/// The calls a read names in progress.
fn in_progress(conversation: &ctxcompact::Conversation) -> Vec<String> {
    let kind = ctxcompact::report::Repair::IN_PROGRESS;
    let calls = conversation.repairs.iter().filter(|r| r.kind == kind);
    calls.filter_map(|r| r.call_id.clone()).collect()
}

// See: #34 (item 2)
#[test]
fn every_log_cut_where_a_call_runs_writes_what_it_reads_back() {
    let mut checked: Vec<String> = Vec::new();
    for (path, _) in fixtures() {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for end in 1..=lines.len() {
            let prefix = lines[..end].concat();
            let Ok((input, _)) =
                format::parse_with_usage(prefix.as_bytes(), &ReadOptions::default())
            else {
                continue;
            };
            let running = in_progress(&input);
            if running.is_empty() {
                continue;
            }
            checked.push(format!("{name}:{end}"));
            let options = Options::with_budget(Budget::Ratio(0.5));
            let outputs = [
                ctxcompact::compact(input.clone(), &options),
                ctxcompact::trim_tools(input.clone(), &options),
            ];
            for output in outputs.into_iter().filter_map(Result::ok) {
                let back = read_back(&output.conversation)
                    .unwrap_or_else(|err| panic!("{name}, {end} lines: {err}"));
                assert_eq!(validate(&back), Vec::new(), "{name}, {end} lines");
                assert_eq!(in_progress(&back), running, "{name}, {end} lines");
                for again in [
                    ctxcompact::compact(back.clone(), &options),
                    ctxcompact::trim_tools(back.clone(), &options),
                ] {
                    if let Err(err) = again {
                        assert!(err.is_cannot_fit(), "{name}, {end} lines: {err}");
                    }
                }
            }
        }
    }
    for agent in ["claude-code", "codex", "gemini-cli", "pi"] {
        assert!(
            checked.iter().any(|c| c.starts_with(agent)),
            "{agent}: {checked:?}"
        );
    }
}

/// Every log of `fixtures()` with its first `cut` records left out, while some of it is left.
fn heads_cut() -> Vec<(String, String)> {
    let mut cut = Vec::new();
    for (path, _) in fixtures() {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for start in 1..lines.len() {
            cut.push((
                format!("{name} from line {}", start + 1),
                lines[start..].concat(),
            ));
        }
    }
    cut
}

// See: #34 (item 1)
#[test]
fn every_log_that_opens_with_the_models_message_is_read_named_and_refused_as_strict() {
    let kind = ctxcompact::report::Repair::MISSING_FIRST_REQUEST;
    let mut checked: Vec<String> = Vec::new();
    for (name, log) in heads_cut() {
        let Ok((input, _)) = format::parse_with_usage(log.as_bytes(), &ReadOptions::default())
        else {
            continue;
        };
        let opens_with_model = input
            .messages
            .iter()
            .find(|m| m.role != ctxcompact::Role::System)
            .is_some_and(|m| m.role == ctxcompact::Role::Assistant);
        let named = input.repairs.iter().any(|r| r.kind == kind);
        if !named {
            assert!(
                !opens_with_model,
                "{name}: opens with the model's message, unnamed"
            );
            continue;
        }
        checked.push(name.clone());
        assert_eq!(validate(&input), Vec::new(), "{name}");
        if input.must_open_with_user() {
            let first = input
                .messages
                .iter()
                .find(|m| m.role != ctxcompact::Role::System);
            assert_eq!(
                first.map(|m| m.role),
                Some(ctxcompact::Role::User),
                "{name}"
            );
        }
        let strict = ReadOptions {
            strict: true,
            ..ReadOptions::default()
        };
        // Refused, naming this repair or one the log needed before it.
        let refused = format::parse_with_usage(log.as_bytes(), &strict).unwrap_err();
        assert!(
            refused.to_string().contains("refused as strict"),
            "{name}: {refused}"
        );
        let options = Options::with_budget(Budget::Ratio(0.5));
        for output in [
            ctxcompact::compact(input.clone(), &options),
            ctxcompact::trim_tools(input.clone(), &options),
        ] {
            match output {
                Ok(output) => {
                    let back = read_back(&output.conversation)
                        .unwrap_or_else(|err| panic!("{name}: {err}"));
                    assert_eq!(validate(&back), Vec::new(), "{name}");
                }
                Err(err) => assert!(err.is_cannot_fit(), "{name}: {err}"),
            }
        }
    }
    for agent in ["claude-code", "codex", "gemini-cli", "pi"] {
        assert!(
            checked.iter().any(|c| c.starts_with(agent)),
            "{agent}: {checked:?}"
        );
    }
}
