//! The one integration test binary (one link, one BPE build per process).

// Test helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

/// Malformed input through the CLI: exit codes, messages, nothing written.
mod bad_input;
/// The `ctxcompact` binary: exit codes, output files, reports, error text.
mod cli;
/// The real recorded conversations in `../shared/corpus`, when present.
mod corpus;
/// The exact o200k / cl100k counter against tiktoken-rs, the reference.
mod counter;
/// Hand-written fixtures in both formats: round trips and independent token counts.
mod formats;
/// Property tests of the invariants over generated conversations.
mod properties;
