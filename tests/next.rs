//! The next-step measure on the real Claude Code sessions of `../shared/corpus` that hold
//! Claude Code's own summary: the share of the references the agent used next that the
//! summary keeps, against the share `compact` keeps at the summary's size (issue 38). Elsewhere
//! the test says it skips.

use std::io::Write as _;
use std::path::Path;

use ctxcompact::lab::next::{NEXT_MESSAGES, against_summary};
use ctxcompact::{Budget, Options, Tokenizer, format};

#[test]
fn claude_codes_summary_and_compact_at_its_size_keep_a_share_of_what_is_used_next() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/claude-code-spotter");
    let mut stderr = std::io::stderr();
    if !folder.is_dir() {
        // Straight to stderr, which the harness does not capture: the skip shows.
        let _ = writeln!(
            stderr,
            "SKIPPED next-step test: {} not found",
            folder.display()
        );
        return;
    }
    let mut paths: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let base = Options {
        tokenizer: Tokenizer::O200k,
        ..Options::with_budget(Budget::Ratio(0.5))
    };
    let (mut sessions, mut references, mut by_summary, mut by_compact) = (0, 0, 0, 0);
    for path in &paths {
        let conversation = format::parse(&std::fs::read(path).unwrap(), None).unwrap();
        let Some(comparison) = against_summary(&conversation, &base, NEXT_MESSAGES).unwrap() else {
            continue;
        };
        sessions += 1;
        references += comparison.pending.len();
        by_summary += comparison.summary_kept.iter().filter(|k| **k).count();
        by_compact += comparison.compact_kept.iter().filter(|k| **k).count();
        let _ = writeln!(
            stderr,
            "{}: summary at message {}, {} tokens: {} references",
            path.file_name().unwrap().to_string_lossy(),
            comparison.summary_at,
            comparison.target,
            comparison.pending.len()
        );
    }
    let share = |kept: usize| kept as f64 * 100.0 / references.max(1) as f64;
    let _ = writeln!(
        stderr,
        "next-step references kept over {sessions} sessions ({references} references): \
         Claude Code's summary {:.1}%, compact at its size {:.1}%",
        share(by_summary),
        share(by_compact)
    );
    // Issue 38's target: at least twice the summary's share (70.4% against 31.5% reached,
    // since a digest names what a call wrote before what only outputs hold, the latest first).
    assert!(sessions > 0 && references > 0);
    assert!(
        by_compact >= 2 * by_summary,
        "compact {by_compact}, the summary {by_summary} of {references}"
    );
}
