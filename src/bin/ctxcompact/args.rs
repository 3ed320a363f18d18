//! Command-line arguments, and their translation into library options.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use ctxcompact::catalog::Catalog;
use ctxcompact::format::Format;
use ctxcompact::{Budget, Options, Settings, Tokenizer};

use crate::flags::{MarkerArgs, StrategyArg, ToolArgs, token_count, tokenizer_name};

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
    Compact {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        budget: BudgetArgs,
        /// Force a removal strategy instead of letting the selector choose.
        #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
        strategy: StrategyArg,
        #[command(flatten)]
        marker: MarkerArgs,
        #[command(flatten)]
        tools: ToolArgs,
        /// Archive each removed span and each message whose tool output is cleared in this
        /// folder (one JSON message a line), named in the markers and placeholders.
        #[arg(long, value_name = "DIR")]
        archive: Option<PathBuf>,
        #[command(flatten)]
        output: Output,
    },
    /// Trim old tool rounds only, regardless of any budget (for use on every turn).
    TrimTools {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        tools: ToolArgs,
        #[command(flatten)]
        output: Output,
    },
    /// Show features, the model profile, every rule and the decision; changes nothing.
    ///
    /// Without --target, --ratio or --model, the budget is half the conversation's tokens.
    Analyze {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        budget: BudgetArgs,
        /// Force a removal strategy instead of letting the selector choose.
        #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
        strategy: StrategyArg,
        #[command(flatten)]
        marker: MarkerArgs,
        #[command(flatten)]
        tools: ToolArgs,
        /// Print the JSON report instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Count the tokens of each message and the total.
    Count {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        model: ModelArgs,
        /// Print `{"total": N, "messages": [...]}`.
        #[arg(long)]
        json: bool,
    },
    /// Check tool-call pairing and placement; exit 2 when a problem is found.
    Validate {
        #[command(flatten)]
        input: Input,
    },
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
    Bench {
        /// Conversation files, or folders searched recursively for `.json` files; each one a
        /// source.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Budget as a share of each conversation's own total [default: 0.5].
        #[arg(long, conflicts_with = "target", allow_negative_numbers = true)]
        ratio: Option<f64>,
        /// Budget in tokens, the same for every conversation.
        #[arg(long, allow_negative_numbers = true, value_parser = token_count)]
        target: Option<usize>,
        #[command(flatten)]
        model: ModelArgs,
        /// Force a removal strategy on the `default` contender.
        #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
        strategy: StrategyArg,
        #[command(flatten)]
        tools: ToolArgs,
        /// Print `{"strategies": [...]}` instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Replay recorded sessions call by call: what each compaction policy costs under prompt caching.
    Replay(crate::replay::ReplayArgs),
    /// Fit tokens-per-character factors to the usage recorded in session logs (or, with
    /// `--evaluate`, measure the current ones).
    Calibrate(crate::calibrate::CalibrateArgs),
    /// An HTTP reverse proxy between an agent and its provider that compacts request
    /// histories past a share of the model's window (see `ctxcompact proxy --help`).
    #[cfg(feature = "proxy")]
    Proxy(crate::proxy::ProxyArgs),
}

/// The input file and its format.
#[derive(Debug, Args)]
pub(crate) struct Input {
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
pub(crate) struct Output {
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

impl Command {
    /// Starts building the tokenizer this command counts with, so that it is built while the
    /// input is read and parsed. Arguments that do not resolve build nothing here: the command
    /// reports them where it uses them.
    pub(crate) fn prepare_tokenizer(&self) {
        let model = match self {
            Self::Compact { budget, .. } | Self::Analyze { budget, .. } => &budget.model,
            Self::TrimTools { model, .. }
            | Self::Count { model, .. }
            | Self::Bench { model, .. } => model,
            Self::Validate { .. } | Self::Replay(_) | Self::Calibrate(_) => return,
            #[cfg(feature = "proxy")]
            Self::Proxy(_) => return,
        };
        if let Ok(options) = model.unbudgeted(None) {
            options.tokenizer.prepare();
        }
    }
}

impl ModelArgs {
    /// The catalog to look models up in: `--catalog FILE`, else the built-in one.
    fn catalog(&self) -> Result<Catalog> {
        let Some(path) = &self.catalog else {
            return Ok(Catalog::builtin());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the catalog", path.display()))?;
        Catalog::from_json(&text).with_context(|| path.display().to_string())
    }

    /// The settings of the model, the tokenizer and the overhead.
    fn settings(&self) -> Settings {
        Settings {
            model: self.model.clone(),
            tokenizer: self.tokenizer,
            overhead: self.overhead,
            ..Settings::default()
        }
    }

    /// Library options for `settings`: models looked up in `--catalog`, counted with the
    /// factors of `--calibration` when given.
    fn options(&self, settings: &Settings) -> Result<Options> {
        let mut options = settings.options_in(&self.catalog()?)?;
        if let Some(path) = &self.calibration {
            options.tokenizer = crate::calibrate::load(path)?.apply(options.tokenizer);
        }
        Ok(options)
    }

    /// Options for a command that uses no budget (count, tool trimming, the bench, which sets
    /// one per conversation), with `tools` when given.
    pub(crate) fn unbudgeted(&self, tools: Option<&ToolArgs>) -> Result<Options> {
        let mut settings = Settings {
            ratio: Some(1.0),
            ..self.settings()
        };
        if let Some(tools) = tools {
            tools.fill(&mut settings);
        }
        self.options(&settings)
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

/// Builds library options from the budget, strategy, marker, tool and archive arguments; `fallback` is
/// the ratio of the conversation's tokens used as the budget when none is given and there is no
/// model (else that is a usage error).
pub(crate) fn options(
    budget: &BudgetArgs,
    strategy: StrategyArg,
    marker: &MarkerArgs,
    tools: &ToolArgs,
    archive: Option<PathBuf>,
    fallback: Option<f64>,
) -> Result<Options> {
    let use_fallback = !budget.given() && budget.model.model.is_none();
    let (marker, digest_tokens) = marker.resolve();
    let mut settings = Settings {
        target: budget.target,
        ratio: if use_fallback { fallback } else { budget.ratio },
        trigger: budget.trigger,
        target_ratio: budget.target_ratio,
        strategy: strategy.strategy(),
        marker,
        digest_tokens,
        optimize_cost: budget.optimize == OptimizeArg::Cost,
        archive,
        ..budget.model.settings()
    };
    tools.fill(&mut settings);
    budget.model.options(&settings)
}

/// Builds the bench's base options: model, tokenizer, strategy and tool options (the budget
/// is set per conversation).
pub(crate) fn bench_options(
    model: &ModelArgs,
    strategy: StrategyArg,
    tools: &ToolArgs,
) -> Result<Options> {
    let mut options = model.unbudgeted(Some(tools))?;
    options.strategy = strategy.strategy();
    Ok(options)
}

/// The bench's budget: `--target` tokens, else `--ratio` (default 0.5) of each conversation.
pub(crate) fn bench_budget(ratio: Option<f64>, target: Option<usize>) -> Budget {
    match (target, ratio) {
        (Some(tokens), _) => Budget::Tokens(tokens),
        (None, ratio) => Budget::Ratio(ratio.unwrap_or(0.5)),
    }
}
