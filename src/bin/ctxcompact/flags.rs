//! The engine flags that `compact`, `trim-tools`, `analyze`, `bench` and `proxy` share: the
//! marker, the removal strategy, tool-round trimming, the tokenizer and token counts, and their
//! translation into `Settings`.

use clap::{Args, ValueEnum};
use ctxcompact::{MarkerMode, Settings, Strategy, Tokenizer, ToolMode};

/// What each removed span leaves at its place.
#[derive(Debug, Args)]
pub(crate) struct MarkerArgs {
    /// The marker left at each removed span: a note and an extractive digest, the note alone,
    /// or nothing.
    #[arg(long, value_enum, default_value_t = MarkerArg::Digest)]
    marker: MarkerArg,
    /// Same as `--marker none`.
    #[arg(long, conflicts_with = "marker")]
    no_marker: bool,
    /// Cap each digest at this many tokens, the removed requests first (default: up to half the
    /// budget, of which files, commands, errors and the last state share the smaller of 2,000
    /// tokens and 10% of the budget).
    #[arg(long, value_name = "N", value_parser = token_count)]
    digest_tokens: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MarkerArg {
    Digest,
    Brief,
    None,
}

impl MarkerArgs {
    /// The marker mode and the digest cap.
    pub(crate) fn resolve(&self) -> (MarkerMode, Option<usize>) {
        let mode = match (self.no_marker, self.marker) {
            (true, _) | (_, MarkerArg::None) => MarkerMode::None,
            (_, MarkerArg::Brief) => MarkerMode::Brief,
            (_, MarkerArg::Digest) => MarkerMode::Digest,
        };
        (mode, self.digest_tokens)
    }
}

/// Tool-round trimming options.
#[derive(Debug, Args)]
pub(crate) struct ToolArgs {
    /// What to do with tool rounds older than the kept ones.
    #[arg(long, value_enum, default_value_t = ToolModeArg::Clear)]
    pub(crate) tool_mode: ToolModeArg,
    /// How many of the latest tool rounds are never touched.
    #[arg(long, default_value_t = ctxcompact::ToolOptions::default().keep)]
    pub(crate) keep_tool_rounds: usize,
    /// Tools whose calls and results are never touched (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) exclude_tools: Vec<String>,
    /// Also replace cleared calls' arguments with an empty object.
    #[arg(long)]
    pub(crate) clear_tool_inputs: bool,
    /// Trim no tool round unless at least this many tokens are freed.
    #[arg(long, default_value_t = 0)]
    pub(crate) clear_at_least: usize,
    /// Cap every single tool result at this many tokens, keeping head and tail lines.
    #[arg(long, value_parser = output_cap)]
    pub(crate) max_tool_output: Option<usize>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum StrategyArg {
    Auto,
    Middle,
    Oldest,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ToolModeArg {
    Clear,
    Drop,
    Off,
}

impl StrategyArg {
    pub(crate) fn strategy(self) -> Option<Strategy> {
        match self {
            Self::Auto => None,
            Self::Middle => Some(Strategy::Middle),
            Self::Oldest => Some(Strategy::Oldest),
        }
    }
}

impl ToolArgs {
    /// Sets the tool-trimming settings.
    pub(crate) fn fill(&self, settings: &mut Settings) {
        settings.tool_mode = match self.tool_mode {
            ToolModeArg::Clear => ToolMode::Clear,
            ToolModeArg::Drop => ToolMode::Drop,
            ToolModeArg::Off => ToolMode::Off,
        };
        settings.keep_tool_rounds = Some(self.keep_tool_rounds);
        settings.exclude_tools.clone_from(&self.exclude_tools);
        settings.clear_tool_inputs = self.clear_tool_inputs;
        settings.clear_at_least = self.clear_at_least;
        settings.max_tool_output = self.max_tool_output;
    }

    /// The tool-trimming options alone (the proxy's, whose budget is set per request).
    #[cfg(feature = "proxy")]
    pub(crate) fn settings(&self) -> Settings {
        let mut settings = Settings::default();
        self.fill(&mut settings);
        settings
    }
}

/// Parses a tokenizer's name (`Tokenizer`'s own names).
pub(crate) fn tokenizer_name(text: &str) -> std::result::Result<Tokenizer, String> {
    Tokenizer::try_from(text.to_string())
}

/// Parses a cap on tool outputs: a number of tokens above 0 (a cap of 0 would leave every
/// output as its omission note alone; clearing outputs is `--tool-mode clear`).
fn output_cap(text: &str) -> std::result::Result<usize, String> {
    match token_count(text)? {
        0 => Err(
            "a cap of 0 tokens leaves no output at all; to clear outputs use --tool-mode clear"
                .into(),
        ),
        cap => Ok(cap),
    }
}

/// Parses a token budget, saying what is wrong with a negative or non-numeric one.
pub(crate) fn token_count(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<i128>() {
        Ok(n) if n < 0 => Err(format!(
            "a budget is a number of tokens, 0 or more; got {n}"
        )),
        Ok(_) => text
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("{text} tokens is too many")),
        Err(_) => Err(format!("expected a number of tokens, got `{text}`")),
    }
}
