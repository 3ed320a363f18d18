//! The flags the subcommands share — the input and its format, the output, the model, the
//! budget, the marker, the removal strategy, tool-round trimming, the tokenizer — and their
//! one translation into `Settings` and library options.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use ctxcompact::catalog::Tables;
use ctxcompact::format::{Format, RecordedUsage};
use ctxcompact::{MarkerMode, Settings, Strategy, Tokenizer, ToolMode};

/// What removal does: the strategy, the marker each removed span leaves, and tool-round
/// trimming (`compact`, `analyze` and `proxy` alike).
#[derive(Debug, Args)]
pub(crate) struct RemovalArgs {
    /// Force a removal strategy instead of letting the selector choose.
    #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
    pub(crate) strategy: StrategyArg,
    #[command(flatten)]
    pub(crate) marker: MarkerArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
}

impl RemovalArgs {
    /// Sets the strategy, marker and tool-trimming settings.
    pub(crate) fn fill(&self, settings: &mut Settings) {
        let (marker, digest_tokens) = self.marker.resolve();
        settings.strategy = self.strategy.strategy();
        settings.marker = marker;
        settings.digest_tokens = digest_tokens;
        self.tools.fill(settings);
    }
}

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
    Relevant,
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
            Self::Relevant => Some(Strategy::Relevant),
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

/// The input file and its format.
#[derive(Debug, Args)]
pub(crate) struct InputArgs {
    /// The conversation file, or `-` for standard input.
    #[arg(default_value = "-")]
    pub(crate) file: String,
    /// The input's format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub(crate) format: FormatArg,
    /// For session logs with compactions (Claude Code, pi, Codex): read the whole history
    /// instead of the conversation after the last compaction.
    #[arg(long)]
    pub(crate) whole_history: bool,
    /// For session logs: refuse a log that needs a repair (an interrupted call, a duplicated
    /// result, a result whose call is outside the file, `null` arguments) instead of reading
    /// it as the agent sent it.
    #[arg(long)]
    pub(crate) strict: bool,
    /// For API bodies: repair broken tool pairing as a session log's reader does (an
    /// interrupted call answered as an agent answers it, a result sent again dropped, leading
    /// results without their call dropped), each repair named in the report, instead of
    /// refusing the body.
    #[arg(long, conflicts_with = "strict")]
    pub(crate) repair: bool,
}

/// Where output and the report go.
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Write the output here (atomically; `-` for standard output) instead of to standard
    /// output. It may not be the input file: replacing the input takes --in-place.
    #[arg(short = 'o', long = "output")]
    pub(crate) path: Option<PathBuf>,
    /// Replace the input file with the output (atomically; a lossy edit, so never implied).
    #[arg(long, conflicts_with = "path")]
    pub(crate) in_place: bool,
    /// Write the JSON report here (`-` for standard error, then no summary line).
    #[arg(long)]
    pub(crate) report: Option<String>,
    /// Print no summary line on standard error.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// The model and tokenizer.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// The model: sets the tokenizer, the context window and the strategy preference.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The tokenizer (overrides the model's): o200k, cl100k, chars, an open-weight vocabulary
    /// (llama3, qwen2, deepseek-v3, tekken, kimi-k2, glm4, minimax-m2) or a model family's
    /// calibrated estimate (claude-opus, …).
    #[arg(long, value_parser = tokenizer_name)]
    pub(crate) tokenizer: Option<Tokenizer>,
    /// A model catalog to use instead of the built-in one.
    #[arg(long)]
    pub(crate) catalog: Option<PathBuf>,
    /// Factors for the calibrated estimators (the output of `calibrate --json`) instead of
    /// the shipped ones.
    #[arg(long)]
    pub(crate) calibration: Option<PathBuf>,
    /// Tokens the agent sends that the input does not hold (system prompt, tool definitions).
    #[arg(long, default_value_t = 0)]
    pub(crate) overhead: usize,
}

/// The budget: explicit tokens, a ratio of the current total, or the model's window.
#[derive(Debug, Args)]
pub(crate) struct BudgetArgs {
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Budget in tokens.
    #[arg(long, conflicts_with_all = ["ratio", "trigger", "target_ratio"],
          allow_negative_numbers = true, value_parser = token_count)]
    pub(crate) target: Option<usize>,
    /// Budget as a share of the current total (e.g. 0.5).
    #[arg(long, conflicts_with_all = ["trigger", "target_ratio"], allow_negative_numbers = true)]
    pub(crate) ratio: Option<f64>,
    /// With --model: compact when usage passes this share of the window [default: 0.7].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) trigger: Option<f64>,
    /// With --model: compact down to this share of the window [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) target_ratio: Option<f64>,
    /// What the selector optimizes: `cost` picks the lowest expected input cost over the next
    /// 20 calls under prompt caching (needs --model; prices from data/prices.json).
    #[arg(long, value_enum, default_value_t = OptimizeArg::Efficiency)]
    pub(crate) optimize: OptimizeArg,
}

/// `--format`: `auto` or a format's name (one line per format, as `Format::as_str` spells it).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    Auto,
    Openai,
    Anthropic,
    Responses,
    Gemini,
    Bedrock,
    AiSdk,
    ClaudeCode,
    Codex,
    GeminiCli,
    Pi,
}

/// What `--optimize` asks the selector for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OptimizeArg {
    /// The rules, then the efficiency score.
    Efficiency,
    /// The lowest expected input cost over the next calls.
    Cost,
}

impl FormatArg {
    pub(crate) fn format(self) -> Option<Format> {
        let name = self.to_possible_value()?.get_name().to_string();
        name.parse().ok()
    }
}

impl ModelArgs {
    /// Reads the catalog and calibration files these arguments name, once for the run, and
    /// starts building the tokenizer they give, so that it is built while the input is read
    /// and parsed; the command builds its options once, from these tables, after. The files'
    /// tables, or the error reading them, which the command reports where it uses them: after
    /// its input is read.
    pub(crate) fn prepare(&self) -> ctxcompact::Result<Tables> {
        let settings = self.settings(None);
        let tables = settings.tables()?;
        if let Some(tokenizer) = settings.tokenizer_from(&tables) {
            tokenizer.prepare();
        }
        Ok(tables)
    }

    /// The settings of the model, its catalog and calibration, the tokenizer, the overhead and
    /// `anchor`, the input size the log read last recorded.
    fn settings(&self, anchor: Option<RecordedUsage>) -> Settings {
        Settings {
            model: self.model.clone(),
            catalog: self.catalog.clone(),
            tokenizer: self.tokenizer,
            calibration: self.calibration.clone(),
            overhead: self.overhead,
            anchor,
            ..Settings::default()
        }
    }

    /// Settings for a command that uses no budget (count, tool trimming, the bench, which sets
    /// one per conversation), with `tools` when given, anchored on `anchor`.
    pub(crate) fn unbudgeted(
        &self,
        tools: Option<&ToolArgs>,
        anchor: Option<RecordedUsage>,
    ) -> Settings {
        let mut settings = self.settings(anchor).without_budget();
        if let Some(tools) = tools {
            tools.fill(&mut settings);
        }
        settings
    }
}

impl BudgetArgs {
    /// Whether any budget flag is given.
    fn given(&self) -> bool {
        self.target.is_some()
            || self.ratio.is_some()
            || self.trigger.is_some()
            || self.target_ratio.is_some()
    }
}

/// The settings of the budget, strategy, marker, tool and archive arguments, anchored on
/// `anchor`; `fallback` is the ratio of the conversation's tokens used as the budget when none
/// is given and there is no `--model` (else the model's window, or a usage error).
pub(crate) fn settings(
    budget: &BudgetArgs,
    removal: &RemovalArgs,
    archive: Option<PathBuf>,
    fallback: Option<f64>,
    anchor: Option<RecordedUsage>,
) -> Settings {
    let use_fallback = !budget.given() && budget.model.model.is_none();
    let mut settings = Settings {
        target: budget.target,
        ratio: if use_fallback { fallback } else { budget.ratio },
        trigger: budget.trigger,
        target_ratio: budget.target_ratio,
        optimize_cost: budget.optimize == OptimizeArg::Cost,
        archive,
        ..budget.model.settings(anchor)
    };
    removal.fill(&mut settings);
    settings
}
