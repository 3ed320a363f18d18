//! The one integration test binary (one link, one BPE build per process).

// Test helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

/// The archive: output and archive files give back the input (issue 26).
mod archive;
/// Malformed input through the CLI: exit codes, messages, nothing written.
mod bad_input;
/// `calibrate`, calibrated and anchored counts, `--overhead` (issue 15).
mod calibrate;
/// The `ctxcompact` binary: exit codes, output files, reports, error text.
mod cli;
/// The real recorded conversations in `../shared/corpus`, when present.
mod corpus;
/// The exact o200k / cl100k counter against tiktoken-rs, the reference; the open-weight vocabularies.
mod counter;
/// Snapshots of the selector's decisions over data/conversations.
mod decisions;
/// Hand-written fixtures in both formats: round trips and independent token counts.
mod formats;
/// Instruction files pinned, standing instructions kept verbatim (issue 33).
mod instructions;
/// The library's structure: no import cycle, short modules, a short README (issue 24).
mod layers;
/// The next-step measure against Claude Code's own summary (issue 38).
mod next;
/// Property tests of the invariants over generated conversations.
mod properties;
/// `ctxcompact proxy` between scripted clients and a scripted upstream, and its faults (issue 22).
#[cfg(feature = "proxy")]
mod proxy;
/// A request naming an early fact keeps the turn that states it (issue 57).
mod relevance;
/// Session logs read as the agent sent them: repairs, `--strict`, harness text (issue 23).
mod repairs;
/// `ctxcompact replay` and the library's replay over recorded sessions (issue 13).
mod replay;
/// The report's JSON, whole, against a snapshot (issue 42).
mod report;
/// `Session` across an agent's calls: append-only between compactions, same as `compact` (issue 13).
mod session;
/// What survives compaction: task, requests, files, markers and re-compaction (issue 10).
mod survival;
/// `ctxcompact wrap -- AGENT` with scripts for agents: exit status, signals, no proxy left (issue 55).
#[cfg(feature = "proxy")]
mod wrap;

/// A conversation as `format::write` writes it, in memory.
fn rendered(conversation: &ctxcompact::Conversation) -> Vec<u8> {
    let mut bytes = Vec::new();
    ctxcompact::format::write(conversation, &mut bytes).unwrap();
    bytes
}
