//! The real recorded agent conversations in `../shared/corpus` (Claude Code, SWE-agent,
//! tau-bench). CI has them; elsewhere each test says it skips.

use std::path::{Path, PathBuf};

use ctxcompact::{
    Action, Budget, Conversation, Options, Part, Role, Tokenizer, ToolMode, ToolOptions, check,
    compact, format, trim_tools,
};

/// The corpus's valid and invalid files, or `None` (with a note) when it is absent.
fn corpus() -> Option<(Vec<PathBuf>, Vec<PathBuf>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !root.is_dir() {
        eprintln!("skipping: {} not found", root.display());
        return None;
    }
    let (mut valid, mut invalid) = (Vec::new(), Vec::new());
    for source in std::fs::read_dir(&root).unwrap() {
        let source = source.unwrap().path();
        // `raw/` holds the native formats.
        if !source.is_dir() || source.ends_with("raw") {
            continue;
        }
        for entry in std::fs::read_dir(&source).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                invalid.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            } else if path.extension().is_some_and(|e| e == "json") {
                valid.push(path);
            }
        }
    }
    valid.sort();
    invalid.sort();
    assert!(valid.len() >= 50, "the corpus looks incomplete");
    Some((valid, invalid))
}

fn read(path: &Path) -> Conversation {
    format::parse(&std::fs::read(path).unwrap(), None).unwrap()
}

fn options(budget: Budget) -> Options {
    Options {
        budget,
        tokenizer: Tokenizer::O200k,
        ..Options::default()
    }
}

#[test]
fn every_recording_validates_and_every_invalid_one_is_rejected() {
    let Some((valid, invalid)) = corpus() else {
        return;
    };
    for path in &valid {
        assert_eq!(check(&read(path)), Vec::new(), "{}", path.display());
    }
    assert!(!invalid.is_empty());
    for path in &invalid {
        assert!(!check(&read(path)).is_empty(), "{}", path.display());
        let err = compact(read(path), &options(Budget::Ratio(0.5))).unwrap_err();
        assert!(
            err.to_string().contains("message "),
            "{}: {err}",
            path.display()
        );
    }
}

#[test]
fn breaking_a_real_recording_names_the_right_message() {
    let Some((valid, _)) = corpus() else { return };
    let path = valid
        .iter()
        .find(|p| p.ends_with("tool_heavy.json"))
        .unwrap();
    let original = read(path);
    let rounds: Vec<usize> = (0..original.messages.len())
        .filter(|&i| original.messages[i].has_calls())
        .collect();
    let round = rounds[rounds.len() / 2];
    let window = original.result_window(round);

    // A call left unanswered mid-conversation: its results are removed.
    let mut broken = original.clone();
    broken.messages.drain(window.clone());
    let problems = check(&broken);
    assert_eq!(problems[0].at.message, Some(round), "{problems:?}");

    // A result without its call: the calling message is removed.
    let mut broken = original.clone();
    broken.messages.remove(round);
    assert_eq!(check(&broken)[0].at.message, Some(round));

    // A duplicated call id: an earlier round's id reused.
    let mut broken = original.clone();
    let first_id = original.messages[rounds[0]]
        .call_ids()
        .next()
        .unwrap()
        .to_string();
    let mut renamed = 0;
    for message in &mut broken.messages[round..window.end] {
        for part in &mut message.parts {
            match part {
                Part::ToolCall { id, .. } if renamed == 0 => {
                    *id = first_id.clone();
                    renamed = 1;
                }
                Part::ToolResult { call_id, .. } if renamed == 1 => {
                    *call_id = first_id.clone();
                    renamed = 2;
                }
                _ => {}
            }
        }
    }
    let problems = check(&broken);
    assert!(
        problems.iter().any(|p| p.at.message == Some(round)),
        "{problems:?}"
    );

    // A tool message first.
    let mut broken = original.clone();
    broken
        .messages
        .insert(0, original.messages[window.start].clone());
    let problems = check(&broken);
    assert_eq!(problems[0].at.message, Some(0));
    assert_eq!(problems[0].kind, ctxcompact::ProblemKind::ToolFirst);
}

#[test]
fn compacting_to_half_is_valid_within_budget_and_keeps_what_is_pinned() {
    let Some((valid, _)) = corpus() else { return };
    let (mut compacted, mut cannot_fit) = (0, 0);
    for path in &valid {
        let input = read(path);
        for tools in [ToolMode::Clear, ToolMode::Off] {
            let mut options = options(Budget::Ratio(0.5));
            options.tools = ToolOptions {
                mode: tools,
                ..ToolOptions::default()
            };
            let result = match compact(input.clone(), &options) {
                Ok(result) => result,
                Err(err) if err.is_cannot_fit() => {
                    cannot_fit += 1;
                    continue;
                }
                Err(err) => panic!("{}: {err}", path.display()),
            };
            compacted += 1;
            let (output, report) = (&result.conversation, &result.report);
            let name = path.display();
            assert_eq!(check(output), Vec::new(), "{name}");
            assert_eq!(report.action, Action::Compacted, "{name}");
            assert!(report.tokens_after <= report.budget, "{name}");
            assert_eq!(
                report.tokens_after,
                ctxcompact::count(output, Tokenizer::O200k.counter()).total(),
                "{name}"
            );
            assert_eq!(report.messages_after, output.messages.len(), "{name}");
            let systems = |c: &Conversation| {
                c.messages
                    .iter()
                    .filter(|m| m.role == Role::System)
                    .cloned()
                    .collect::<Vec<_>>()
            };
            assert_eq!(systems(output), systems(&input), "{name}");
            let last_user = input
                .messages
                .iter()
                .rposition(|m| m.role == Role::User)
                .unwrap();
            assert!(
                output.messages.contains(&input.messages[last_user]),
                "{name}"
            );
            // Removed ranges are exactly the input messages missing from the output (in
            // clear-off mode, where kept messages are unchanged).
            if tools == ToolMode::Off {
                let removed: Vec<usize> = report.removed.iter().flat_map(|[a, b]| *a..*b).collect();
                // A task shortened to fit (issue 10) is the one kept message that changes.
                let shortened = report.task_shortened.as_ref().and_then(|s| s.message);
                let kept: Vec<_> = (0..input.messages.len())
                    .filter(|i| !removed.contains(i) && Some(*i) != shortened)
                    .map(|i| &input.messages[i])
                    .collect();
                let unmarked: Vec<_> = output
                    .messages
                    .iter()
                    .filter(|m| !m.text().starts_with("[ctxcompact: "))
                    .filter(|m| !m.text().contains("[… ctxcompact shortened the task"))
                    .collect();
                assert_eq!(unmarked, kept, "{name}");
            }
        }
    }
    eprintln!("corpus at ratio 0.5: {compacted} compacted, {cannot_fit} cannot fit");
    assert!(compacted > cannot_fit);
}

#[test]
fn a_budget_above_the_total_returns_every_recording_unchanged() {
    let Some((valid, _)) = corpus() else { return };
    for path in &valid {
        let value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let input = format::parse_value(value.clone(), None).unwrap();
        let result = compact(input.clone(), &options(Budget::Ratio(1.01))).unwrap();
        assert_eq!(
            result.report.action,
            Action::WithinBudget,
            "{}",
            path.display()
        );
        assert_eq!(
            format::render(&result.conversation),
            value,
            "{}",
            path.display()
        );
    }
}

#[test]
fn trimming_tools_keeps_pairs_and_frees_most_tool_tokens_of_long_sessions() {
    let Some((valid, _)) = corpus() else { return };
    let (mut tool_tokens, mut freed) = (0, 0);
    for path in &valid {
        let input = read(path);
        let result = trim_tools(input.clone(), &options(Budget::Ratio(1.0))).unwrap();
        assert_eq!(
            check(&result.conversation),
            Vec::new(),
            "{}",
            path.display()
        );
        assert_eq!(
            result.conversation.messages.len(),
            input.messages.len(),
            "{}",
            path.display()
        );
        let trim = &result.report.tool_trim;
        assert_eq!(
            trim.cleared,
            trim.rounds.saturating_sub(3).min(trim.cleared),
            "{}",
            path.display()
        );
        if input.messages.len() > 250 {
            let counts = Tokenizer::O200k.count(&input);
            tool_tokens += input
                .messages
                .iter()
                .zip(&counts.messages)
                .filter(|(m, _)| m.has_results())
                .map(|(_, t)| t)
                .sum::<usize>();
            freed += trim.tokens_freed;
        }
    }
    eprintln!("long sessions: tool trimming freed {freed} of {tool_tokens} tool-result tokens");
    assert!(freed * 2 > tool_tokens, "freed {freed} of {tool_tokens}");
}

#[test]
fn clearing_alone_meets_the_budget_where_it_suffices() {
    let Some((valid, _)) = corpus() else { return };
    let mut by_clearing = 0;
    for path in &valid {
        let input = read(path);
        let Ok(result) = compact(input.clone(), &options(Budget::Ratio(0.5))) else {
            continue;
        };
        if result.report.tool_trim.cleared > 0 && result.report.decision.is_none() {
            by_clearing += 1;
            assert!(result.report.removed.is_empty(), "{}", path.display());
            assert_eq!(result.conversation.messages.len(), input.messages.len());
        }
    }
    eprintln!("{by_clearing} recordings met the budget by clearing alone");
    assert!(by_clearing >= 5);
}
