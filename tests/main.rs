//! The one integration test binary (one link, one BPE build per process).

/// The `ctxcompact` binary: exit codes, output files, reports, error text.
mod cli;
/// Hand-written fixtures in both formats: round trips and independent token counts.
mod formats;
/// The real recorded conversations in `../shared/corpus`, when present.
mod corpus;
/// Property tests of the invariants over generated conversations.
mod properties;
/// Malformed input through the CLI: exit codes, messages, nothing written.
mod bad_input;
