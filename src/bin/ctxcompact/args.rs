//! The command line: its subcommands, each with its arguments in its own module.

use clap::{Parser, Subcommand};

/// Deterministic compaction of LLM conversation histories.
///
/// Exit codes: 0 success (also "within budget"), 2 bad input or usage, 3 cannot fit the budget.
#[derive(Debug, Parser)]
#[command(name = "ctxcompact", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Compact a conversation to a token budget (tool trimming first, then unit removal).
    Compact(crate::compact::CompactArgs),
    /// Trim old tool rounds only, regardless of any budget (for use on every turn).
    TrimTools(crate::trim_tools::TrimToolsArgs),
    /// Show features, the model profile, every rule and the decision; changes nothing.
    ///
    /// Without --target, --ratio or --model, the budget is half the conversation's tokens.
    Analyze(crate::analyze::AnalyzeArgs),
    /// Count the tokens of each message and the total.
    Count(crate::count::CountArgs),
    /// Check tool-call pairing and placement; exit 2 when a problem is found.
    Validate(crate::validate::ValidateArgs),
    /// Run every strategy over conversations and print one row of figures per strategy.
    ///
    /// Strategies: oldest and middle (forced, tool trimming off), auto (the selector, tool
    /// trimming off), tools (tool trimming alone), default (tool trimming, then the selector) and
    /// naive (drops the oldest messages one by one, ignoring tool pairs). Invalid files are
    /// reported and skipped.
    ///
    /// Each PATH is a source with a table of its own, so that real recordings and generated
    /// data are never pooled (give one folder holding both to pool them); `--json` gives the
    /// rows over all paths and per path.
    Bench(crate::bench::BenchArgs),
    /// Replay recorded sessions call by call: what each compaction policy costs under prompt caching.
    Replay(crate::replay::ReplayArgs),
    /// Fit tokens-per-character factors to the usage recorded in session logs (or, with
    /// `--evaluate`, measure the current ones).
    Calibrate(crate::calibrate::CalibrateArgs),
    /// An HTTP reverse proxy between an agent and its provider that compacts request
    /// histories past a share of the model's window (see `ctxcompact proxy --help`).
    #[cfg(feature = "proxy")]
    Proxy(crate::proxy::ProxyArgs),
    /// Run an agent with the proxy in front of it, in this process, and return its exit
    /// status (see `ctxcompact wrap --help`).
    #[cfg(feature = "proxy")]
    Wrap(crate::wrap::WrapArgs),
    /// Serve the archive to an agent over the Model Context Protocol (stdio): recall what a
    /// handle names, search removed history (see `ctxcompact mcp --help`).
    Mcp(crate::mcp::McpArgs),
}
