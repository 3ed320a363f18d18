//! What survives compaction (issues 10, 26): the task and the current request, removed requests and
//! files through the digest, Claude Code's own summary as a yardstick, and re-compaction.
//!
//! The real recordings in `../shared/corpus` are read when present; without them each test says
//! it skips, on standard error and in its summary line. `data/conversations` is always there.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ctxcompact::lab::bench::{Bench, Contender, Row};
use ctxcompact::lab::{first_chars, searchable};
use ctxcompact::report::Action;
use ctxcompact::{Budget, Conversation, MarkerMode, Options, Role, Tokenizer, compact, format};

/// The OpenAI-format recordings of `../shared/corpus` (its top-level folders, not `raw/` nor
/// `invalid/`), or `None` with a note when the corpus is absent.
fn corpus() -> Option<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !root.is_dir() {
        eprintln!(
            "SKIPPED: {} not found; corpus checks not run",
            root.display()
        );
        return None;
    }
    let mut files = Vec::new();
    for folder in ["claude-code-spotter", "swe-agent", "tau-bench"] {
        files.extend(json_files(&root.join(folder)));
    }
    files.sort();
    Some(files)
}

/// The `.json` files directly in `dir`, sorted.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The project's own seeded conversations.
fn bundled() -> Vec<PathBuf> {
    json_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/conversations"))
}

fn read(path: &Path) -> Conversation {
    format::parse(&std::fs::read(path).unwrap(), None).unwrap()
}

fn options(budget: Budget) -> Options {
    Options {
        tokenizer: Tokenizer::O200k,
        ..Options::with_budget(budget)
    }
}

/// The `default` row of a bench over `paths` at `ratio`.
fn default_row(paths: &[PathBuf], ratio: f64) -> Row {
    let mut bench = Bench::new(Budget::Ratio(ratio), Tokenizer::O200k).unwrap();
    for path in paths {
        let failures = bench.add(&read(path)).unwrap();
        assert!(failures.is_empty(), "{}: {failures:?}", path.display());
    }
    bench
        .rows()
        .into_iter()
        .find(|r| r.strategy == Contender::Default)
        .unwrap()
}

/// The figures of a `default` row, on one line.
fn figures(row: &Row) -> String {
    format!(
        "task kept {:.1}%, current {:.1}%, requests recall {:.1}% (named {:.1}%; {:.1}% with \
         room, {} runs tight), standing instructions {:.1}%, instruction files {:.1}%, \
         identifiers recall {:.1}% (all {:.1}%), files recall {:.1}%, errors recall {:.1}%, \
         utilization {:.3}",
        row.task_kept_pct,
        row.current_kept_pct,
        row.requests_recall_pct,
        row.named_recall_pct,
        row.named_with_room_pct,
        row.tight_runs,
        row.standing_kept_pct,
        row.instruction_files_kept_pct,
        row.identifiers_recall_pct,
        row.all_identifiers_recall_pct,
        row.files_recall_pct,
        row.errors_recall_pct,
        row.utilization
    )
}

// See: #10, #26
#[test]
fn default_keeps_the_task_and_the_current_request_wherever_it_fits() {
    let generated = bundled();
    let real = corpus();
    let mut paths = generated.clone();
    paths.extend(real.iter().flatten().cloned());
    for ratio in [0.5, 0.25] {
        let mut fitted = 0;
        for path in &paths {
            let input = read(path);
            let Ok(out) = compact(input.clone(), &options(Budget::Ratio(ratio))) else {
                continue;
            };
            assert_ne!(out.report.action, Action::CannotFit);
            fitted += 1;
            let text = searchable(&out.conversation);
            let request = |index: Option<usize>| index.map(|i| input.messages[i].text());
            if let Some(task) = request(out.report.task) {
                // A task shortened to fit keeps at least its first 200 characters.
                let kept = match out.report.task_shortened {
                    Some(_) => text.contains(first_chars(&task, 200)),
                    None => text.contains(task.as_str()),
                };
                assert!(kept, "{} at {ratio}: the task was lost", path.display());
            }
            if let Some(current) = request(out.report.current) {
                assert!(
                    text.contains(current.as_str()),
                    "{} at {ratio}: the current request was lost",
                    path.display()
                );
            }
        }
        eprintln!("at {ratio}: {fitted}/{} fit", paths.len());
        // Generated chats are easy for a digest: their figures are printed apart, never pooled
        // with the real recordings', and only these are held to the goals.
        let row = default_row(&generated, ratio);
        eprintln!("data/conversations at {ratio}: {}", figures(&row));
        assert!(
            (row.current_kept_pct - 100.0).abs() < f64::EPSILON,
            "{row:?}"
        );
        let Some(real) = &real else {
            eprintln!("SKIPPED: the corpus figures at {ratio}");
            continue;
        };
        // Recall is over the compactions that fit: one that cannot fit removes nothing.
        let row = default_row(real, ratio);
        eprintln!("corpus at {ratio}: {}", figures(&row));
        assert!(
            (row.current_kept_pct - 100.0).abs() < f64::EPSILON,
            "{row:?}"
        );
        assert!(row.files_recall_pct >= 95.0, "{row:?}");
        // The goals (#26, #33): named 98% wherever the budget less the pinned tokens leaves 14
        // tokens per removed request (100% reached at both ratios; the tight runs, 2 at 0.5 and
        // 1 at 0.25, are tau-bench sessions whose pinned units leave 38 to 275 tokens for 4 to
        // 24 requests); standing instructions 90% at 0.5 (100% of 13 reached) and 75% at 0.25
        // (1 of 2, the other in the tight run, whose 38 tokens of room cannot hold a marker's
        // frame and the 20-token sentence); identifiers a person or a tool call wrote 80% / 50%
        // (83.3% of 54 and 72.5% of 40 reached; the misses are tau-bench digests of 66 to 260
        // tokens the requests fill, and words such as `base64` the bench's scan counts); the
        // identifiers of every removed text, tool results too, 41.9% and 49.8% (most of the
        // rest: disassembly addresses and base64 lines of CTF tool output), since the code names
        // a call wrote come before the identifiers only outputs hold, the latest seen first
        // (#38: what the agent uses next), 41.9% and 30.4%.
        // Instruction files: the recordings hold none (the tests of `instructions` carry them).
        // These floors sit a little under what is reached, to catch a regression.
        assert!(row.named_with_room_pct >= 98.0, "{row:?}");
        assert!(
            (row.instruction_files_kept_pct - 100.0).abs() < f64::EPSILON,
            "{row:?}"
        );
        if ratio >= 0.5 {
            assert!(row.requests_recall_pct >= 55.0, "{row:?}");
            assert!(row.named_recall_pct >= 83.0, "{row:?}");
            assert!(row.standing_kept_pct >= 95.0, "{row:?}");
            assert!(row.identifiers_recall_pct >= 80.0, "{row:?}");
            assert!(row.all_identifiers_recall_pct >= 40.0, "{row:?}");
        } else {
            assert!(row.named_recall_pct >= 60.0, "{row:?}");
            assert!(row.standing_kept_pct >= 45.0, "{row:?}");
            assert!(row.identifiers_recall_pct >= 70.0, "{row:?}");
            assert!(row.all_identifiers_recall_pct >= 28.0, "{row:?}");
        }
        assert!(row.named_recall_pct >= row.requests_recall_pct, "{row:?}");
    }
}

// See: #10
#[test]
fn agent_sessions_keep_their_removed_requests_in_the_digest() {
    let Some(files) = corpus() else {
        eprintln!("SKIPPED: agent_sessions_keep_their_removed_requests_in_the_digest");
        return;
    };
    let sessions: Vec<PathBuf> = files
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("claude-code-spotter"))
        .collect();
    for ratio in [0.5, 0.25] {
        let row = default_row(&sessions, ratio);
        eprintln!("Claude Code sessions at {ratio}: {}", figures(&row));
        assert!(row.requests_recall_pct >= 95.0, "{row:?}");
        assert!(row.named_recall_pct >= 98.0, "{row:?}");
    }
}

/// Whether a word names a file: a last path segment with a short lowercase extension, not a
/// module's function (`Enum.take`) nor a function's arity (`render/2`).
fn is_file_name(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && !stem.starts_with(|c: char| c.is_ascii_uppercase())
        && (1..=5).contains(&extension.len())
        && extension
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && extension.chars().any(|c| c.is_ascii_lowercase())
}

/// The file names a text names, without repeats.
fn file_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .split(|c: char| c.is_whitespace() || "`'\"()[]{}<>,;:*".contains(c))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| w.len() > 3 && is_file_name(w))
        .map(String::from)
        .collect();
    names.sort();
    names.dedup();
    names
}

// See: #10
#[test]
fn claude_code_auto_compaction_summaries_name_what_the_digest_kept() {
    let Some(files) = corpus() else {
        eprintln!("SKIPPED: claude_code_auto_compaction_summaries_name_what_the_digest_kept");
        return;
    };
    let mut sessions = 0;
    for path in files.iter().filter(|p| !p.to_string_lossy().contains("__")) {
        let conversation = read(path);
        let Some(at) = conversation.messages.iter().position(|m| {
            m.role == Role::User && m.text().starts_with("This session is being continued")
        }) else {
            continue;
        };
        sessions += 1;
        let summary = conversation.messages[at].text();
        let mut history = conversation.clone();
        history.messages.truncate(at);
        let history_text = searchable(&history);
        let named: Vec<String> = file_names(&summary)
            .into_iter()
            .filter(|name| history_text.contains(name.as_str()))
            .collect();
        let requests: Vec<String> = history
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(ctxcompact::Message::text)
            .filter(|t| {
                let t = t.trim_start();
                !t.is_empty()
                    && !t.starts_with('<')
                    && !t.starts_with("[Request interrupted")
                    && !t.starts_with("Base directory for this skill")
            })
            .collect();
        let out = [0.1, 0.15, 0.2].into_iter().find_map(|ratio| {
            compact(history.clone(), &options(Budget::Ratio(ratio)))
                .ok()
                .map(|out| (ratio, out))
        });
        let (ratio, out) = out.unwrap_or_else(|| panic!("{}: nothing fits", path.display()));
        let text = searchable(&out.conversation);
        let kept = named.iter().filter(|n| text.contains(n.as_str())).count();
        let missing: Vec<&String> = named
            .iter()
            .filter(|n| !text.contains(n.as_str()))
            .collect();
        eprintln!(
            "{} at {ratio}: {kept}/{} file names of the summary kept, {} markers; missing {missing:?}",
            path.file_name().unwrap().to_string_lossy(),
            named.len(),
            out.report.markers.len()
        );
        // A fixed budget clears the recent rounds' outputs before it removes history (issue 26:
        // no undershoot), so a file named only inside one of them goes with it: 14 of 15 on one
        // session, where keeping those outputs whole meant removing more of the history.
        assert!(
            kept * 100 >= named.len() * 90,
            "{}: {missing:?}",
            path.display()
        );
        for request in &requests {
            assert!(
                text.contains(first_chars(request, 200)),
                "{}: request {:?} lost",
                path.display(),
                first_chars(request, 80)
            );
        }
    }
    assert_eq!(
        sessions, 5,
        "the corpus holds five sessions with an auto-compaction"
    );
}

/// The markers of a conversation: user messages that are a ctxcompact removal marker.
fn markers(conversation: &Conversation) -> Vec<String> {
    conversation
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(ctxcompact::Message::text)
        .filter(|t| t.starts_with("[ctxcompact: ") && t.contains(" removed here"))
        .collect()
}

/// The count of messages a marker says it replaces.
fn replaced(marker: &str) -> usize {
    let count = marker
        .strip_prefix("[ctxcompact: ")
        .and_then(|r| r.split_once(' '))
        .map(|(n, _)| n.replace(',', ""))
        .unwrap();
    count.parse().unwrap()
}

// See: #10
#[test]
fn recompaction_folds_old_markers_and_never_takes_one_for_the_task() {
    let mut checked = 0;
    for path in bundled()
        .iter()
        .filter(|p| p.to_string_lossy().contains("openai-"))
    {
        let input = read(path);
        let total = ctxcompact::count_with(&input, Tokenizer::O200k.counter()).total();
        let Ok(first) = compact(input.clone(), &options(Budget::Ratio(0.5))) else {
            continue;
        };
        if first.report.removed.is_empty() {
            continue;
        }
        let bytes = crate::rendered(&first.conversation);
        let reread = format::parse(&bytes, None).unwrap();
        let Ok(second) = compact(reread.clone(), &options(Budget::Tokens(total / 4))) else {
            continue;
        };
        checked += 1;
        let report = &second.report;
        // One marker per removed span, and every marker of the output is one of them or an old
        // one that was kept.
        assert_eq!(
            report.markers.len(),
            report.removed.len(),
            "{}",
            path.display()
        );
        // The task is never a marker.
        if let Some(task) = report.task {
            let text = reread.messages[task].text();
            assert!(!text.starts_with("[ctxcompact:"), "{}", path.display());
        }
        // Cumulative counts: the markers account for every input message no longer there.
        let left = markers(&second.conversation);
        let replaced_total: usize = left.iter().map(|m| replaced(m)).sum();
        let originals = second.conversation.messages.len() - left.len();
        assert_eq!(
            replaced_total,
            input.messages.len() - originals,
            "{}: markers {left:?}",
            path.display()
        );
        // Same input twice, same bytes.
        let again = compact(reread, &options(Budget::Tokens(total / 4))).unwrap();
        assert_eq!(
            crate::rendered(&again.conversation),
            crate::rendered(&second.conversation)
        );
    }
    assert!(
        checked >= 5,
        "only {checked} conversations were re-compacted"
    );
}

// See: #10
#[test]
fn brief_and_no_markers_are_honoured_and_the_digest_cap_holds() {
    let path = bundled()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("openai-coding-rust-60"))
        .unwrap();
    let input = read(&path);
    for (mode, cap) in [
        (MarkerMode::Digest, Some(40)),
        (MarkerMode::Digest, None),
        (MarkerMode::Brief, None),
        (MarkerMode::None, None),
    ] {
        let options = Options {
            marker: mode,
            digest_tokens: cap,
            ..options(Budget::Ratio(0.25))
        };
        let out = compact(input.clone(), &options).unwrap();
        let found = markers(&out.conversation);
        match mode {
            MarkerMode::None => assert!(found.is_empty()),
            MarkerMode::Brief => assert!(found.iter().all(|m| !m.contains('\n')), "{found:?}"),
            MarkerMode::Digest => {
                assert!(!found.is_empty());
                let limit = cap.unwrap_or(out.report.budget / 2);
                for marker in &found {
                    let body = marker
                        .split_once('\n')
                        .map_or("", |(_, b)| b)
                        .trim_end_matches("[ctxcompact: end of digest]")
                        .trim_end();
                    let tokens = Tokenizer::O200k.counter().count_text(body);
                    assert!(tokens <= limit, "{tokens} > {limit}: {body}");
                }
            }
        }
    }
}

/// A span removed after the current request (rounds of the current turn) leaves a marker that is
/// itself a later user message: its header says the request is above it, never that it is the
/// last user message.
#[test]
fn a_marker_after_the_current_request_says_the_request_is_above_it() {
    let mut messages = vec![
        serde_json::json!({"role": "system", "content": "You are a coding agent."}),
        serde_json::json!({"role": "user", "content": "Fix the parser bug in src/parse.rs."}),
        serde_json::json!({"role": "assistant", "content": "I will look at it."}),
        serde_json::json!({"role": "user", "content": "Now run the full test suite and fix what fails."}),
    ];
    for i in 0..12 {
        let arguments = serde_json::json!({"command": format!("cargo test part{i}")}).to_string();
        messages.push(
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function",
             "function": {"name": "bash", "arguments": arguments}}]}),
        );
        let output = format!("test output line {i} ok\n").repeat(40);
        messages.push(
            serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": output}),
        );
    }
    messages.push(serde_json::json!({"role": "assistant", "content": "All tests pass now."}));
    let body = serde_json::json!({ "messages": messages }).to_string();
    let input = format::parse(body.as_bytes(), None).unwrap();
    let mut options = Options::with_budget(Budget::Tokens(1500));
    options.tools.mode = ctxcompact::ToolMode::Off;
    let out = compact(input, &options).unwrap();
    let texts: Vec<String> = out
        .conversation
        .messages
        .iter()
        .map(ctxcompact::Message::text)
        .collect();
    let current = texts
        .iter()
        .position(|t| t.starts_with("Now run the full test suite"))
        .expect("the current request is kept");
    let markers: Vec<(usize, &String)> = texts
        .iter()
        .enumerate()
        .filter(|(_, t)| t.starts_with("[ctxcompact:") && t.contains("removed here"))
        .collect();
    assert!(
        markers.iter().any(|(at, _)| *at > current),
        "a span after the current request is removed: {texts:#?}"
    );
    for (at, text) in markers {
        let first = text.lines().next().unwrap_or_default();
        if at > current {
            assert!(first.ends_with("the current request is above]"), "{first}");
        } else {
            assert!(
                first.contains("the current request is the last user message"),
                "{first}"
            );
        }
    }
}

/// A session whose task and round in progress alone exceed the budget: the round's output is
/// cut, and it leaves room for the history it would remove, whole or as the marker that names
/// the files the removed rounds read (issue 38). Without that room the cut took every token and
/// no marker stood where the history was.
#[test]
fn a_round_in_progress_cut_to_fit_leaves_room_for_the_marker_of_what_was_removed() {
    let read = |id: &str, path: &str| {
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": id, "type": "function",
            "function": {"name": "read_file", "arguments": format!("{{\"path\":\"{path}\"}}")},
        }]})
    };
    let output = |id: &str, path: &str, lines: usize| {
        let mut text = String::new();
        for i in 0..lines {
            writeln!(text, "{i}: let value_{i} = parse(\"{path}\", {i});").unwrap();
        }
        serde_json::json!({"role": "tool", "tool_call_id": id, "content": text})
    };
    for (rounds, lines) in [(3, 30), (6, 60), (12, 20)] {
        let mut messages = vec![
            serde_json::json!({"role": "system", "content": "You are a coding agent."}),
            serde_json::json!({"role": "user", "content": "The parser drops the last field; fix it."}),
        ];
        for round in 0..rounds {
            let (id, path) = (
                format!("read_{round}"),
                format!("src/parser_step_{round}.rs"),
            );
            messages.push(read(&id, &path));
            messages.push(output(&id, &path, lines));
        }
        messages.push(read("read_last", "src/parser.rs"));
        messages.push(output("read_last", "src/parser.rs", 1500));
        let input = format::parse_value(serde_json::json!({ "messages": messages }), None).unwrap();
        let mut tail = input.clone();
        tail.messages.drain(..tail.messages.len() - 2);
        let pinned = Tokenizer::O200k.count(&tail).total() + 40;
        for budget in [pinned / 2, pinned / 4] {
            let out = compact(input.clone(), &options(Budget::Tokens(budget))).unwrap();
            let report = &out.report;
            assert!(
                report.tokens_after <= budget,
                "{rounds} rounds, budget {budget}"
            );
            assert!(
                !report.outputs_cut.is_empty(),
                "{rounds} rounds, budget {budget}"
            );
            assert!(
                report.removed.is_empty() || report.marker,
                "{rounds} rounds, budget {budget}: history removed without a marker"
            );
            let text = searchable(&out.conversation);
            let named = (0..rounds)
                .filter(|r| text.contains(&format!("src/parser_step_{r}.rs")))
                .count();
            assert!(
                named > 0,
                "{rounds} rounds, budget {budget}: no earlier file kept or named in\n{text}"
            );
        }
    }
}

/// A plan that removes whole units leaves room no unit fits; its digest takes that room past
/// its default cap, naming identifiers of the removed lookups that the cap (asked here as
/// `digest_tokens`, which still holds) leaves out (issue 38). Under the asked cap, the room its
/// digest leaves goes to the removed units instead: the first lookup is kept whole (issue 54).
#[test]
fn a_digest_takes_the_room_its_plan_leaves_under_the_budget() {
    let ids = |round: usize| -> Vec<String> {
        (0..8)
            .map(|i| format!("ORD{round}{i}Q{}", 7 * round + i))
            .collect()
    };
    let mut messages = vec![
        serde_json::json!({"role": "system", "content": "You are a support agent."}),
        serde_json::json!({"role": "user", "content": "List every order on my account, please."}),
    ];
    for round in 0..4 {
        let id = format!("lookup_{round}");
        messages.push(
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": id, "type": "function",
                "function": {"name": "lookup_orders", "arguments": format!("{{\"page\":{round}}}")},
            }]}),
        );
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": id,
            "content": serde_json::json!({"page": round, "orders": ids(round)}).to_string()}));
        messages.push(serde_json::json!({"role": "assistant",
            "content": format!("Page {round} read. ") + &"The orders on this page look as \
                expected, with nothing unusual about their dates or their totals so far. ".repeat(12)}));
    }
    let question = "Before you go on, tell me how returns work for an order that shipped in two \
                    parcels, one of them late, and whether the refund waits for both. "
        .repeat(12);
    messages.push(serde_json::json!({"role": "user", "content": question}));
    let input = format::parse_value(serde_json::json!({ "messages": messages }), None).unwrap();
    let mut pinned = input.clone();
    pinned.messages.drain(2..pinned.messages.len() - 1);
    let budget = Tokenizer::O200k.count(&pinned).total() + 260;
    let all: Vec<String> = (0..4).flat_map(ids).collect();
    // Identifiers named in the markers' digests.
    let named = |out: &Conversation| {
        let digests = markers(out).concat();
        all.iter()
            .filter(|id| digests.contains(id.as_str()))
            .count()
    };
    let fuller = compact(input.clone(), &options(Budget::Tokens(budget))).unwrap();
    assert!(fuller.report.tokens_after <= budget);
    assert!(!fuller.report.removed.is_empty() && fuller.report.marker);
    let capped = compact(
        input,
        &Options {
            digest_tokens: Some(budget / 10),
            ..options(Budget::Tokens(budget))
        },
    )
    .unwrap();
    assert!(capped.report.tokens_after <= budget);
    assert!(
        named(&fuller.conversation) >= named(&capped.conversation) + 8,
        "{} named, {} under the cap: {:#?}",
        named(&fuller.conversation),
        named(&capped.conversation),
        fuller.conversation.messages
    );
    let kept = searchable(&capped.conversation);
    assert!(
        ids(0).iter().all(|id| kept.contains(id.as_str())),
        "under the cap, the first lookup is kept: {:?}",
        capped.report.removed
    );
    assert!(capped.report.messages_after > fuller.report.messages_after);
}
