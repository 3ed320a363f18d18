//! Command-line arguments, and their translation into library options.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use ctxcompact::{
    Budget, Catalog, Format, Options, Profile, Strategy, Tokenizer, ToolMode, ToolOptions,
};

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
        /// Leave no marker where history was removed.
        #[arg(long)]
        no_marker: bool,
        #[command(flatten)]
        tools: ToolArgs,
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
    Analyze {
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        budget: BudgetArgs,
        /// Force a removal strategy instead of letting the selector choose.
        #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
        strategy: StrategyArg,
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
    Bench {
        /// Conversation files, or folders searched recursively for `.json` files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Budget as a share of each conversation's own total [default: 0.5].
        #[arg(long, conflicts_with = "target", allow_negative_numbers = true)]
        ratio: Option<f64>,
        /// Budget in tokens, the same for every conversation.
        #[arg(long, allow_negative_numbers = true, value_parser = token_count)]
        target: Option<usize>,
        /// Print `{"strategies": [...]}` instead of a table.
        #[arg(long)]
        json: bool,
    },
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
}

/// Where output and the report go.
#[derive(Debug, Args)]
pub(crate) struct Output {
    /// Write the output here (atomically) instead of to standard output.
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
    /// Write the JSON report here (`-` for standard error).
    #[arg(long)]
    pub(crate) report: Option<String>,
}

/// The model and tokenizer.
#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    /// The model: sets the tokenizer, the context window and the strategy preference.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The tokenizer (overrides the model's).
    #[arg(long, value_enum)]
    pub(crate) tokenizer: Option<TokenizerArg>,
    /// A model catalog to use instead of the built-in one.
    #[arg(long)]
    pub(crate) catalog: Option<PathBuf>,
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
    #[arg(long)]
    pub(crate) max_tool_output: Option<usize>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FormatArg {
    Auto,
    Openai,
    Anthropic,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum TokenizerArg {
    O200k,
    Cl100k,
    Chars,
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

impl FormatArg {
    pub(crate) fn format(self) -> Option<Format> {
        match self {
            Self::Auto => None,
            Self::Openai => Some(Format::OpenAi),
            Self::Anthropic => Some(Format::Anthropic),
        }
    }
}

impl StrategyArg {
    fn strategy(self) -> Option<Strategy> {
        match self {
            Self::Auto => None,
            Self::Middle => Some(Strategy::Middle),
            Self::Oldest => Some(Strategy::Oldest),
        }
    }
}

impl Command {
    /// Starts building the tokenizer this command counts with, so that it is built while the
    /// input is read and parsed. Arguments that do not resolve build nothing here: the command
    /// reports them where it uses them.
    pub(crate) fn prepare_tokenizer(&self) {
        let model = match self {
            Self::Compact { budget, .. } | Self::Analyze { budget, .. } => &budget.model,
            Self::TrimTools { model, .. } | Self::Count { model, .. } => model,
            Self::Bench { .. } => return Tokenizer::O200k.prepare(),
            Self::Validate { .. } => return,
        };
        if let Ok((_, _, tokenizer)) = model.resolve() {
            tokenizer.prepare();
        }
    }
}

impl ModelArgs {
    /// The profile, the model name and the tokenizer these arguments select.
    pub(crate) fn resolve(&self) -> Result<(Profile, Option<String>, Tokenizer)> {
        let profile = match &self.model {
            Some(name) => {
                let catalog = match &self.catalog {
                    Some(path) => {
                        let text = std::fs::read_to_string(path).with_context(|| {
                            format!("{}: cannot read the catalog", path.display())
                        })?;
                        Catalog::from_json(&text).with_context(|| path.display().to_string())?
                    }
                    None => Catalog::builtin(),
                };
                catalog.lookup(name)?.clone()
            }
            None => Profile::generic(Tokenizer::O200k),
        };
        let tokenizer = match self.tokenizer {
            Some(TokenizerArg::O200k) => Tokenizer::O200k,
            Some(TokenizerArg::Cl100k) => Tokenizer::Cl100k,
            Some(TokenizerArg::Chars) => Tokenizer::Chars,
            None => profile.tokenizer,
        };
        Ok((profile, self.model.clone(), tokenizer))
    }
}

impl ToolArgs {
    fn options(&self) -> ToolOptions {
        ToolOptions {
            mode: match self.tool_mode {
                ToolModeArg::Clear => ToolMode::Clear,
                ToolModeArg::Drop => ToolMode::Drop,
                ToolModeArg::Off => ToolMode::Off,
            },
            keep: self.keep_tool_rounds,
            exclude: self
                .exclude_tools
                .iter()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            clear_inputs: self.clear_tool_inputs,
            clear_at_least: self.clear_at_least,
            max_output: self.max_tool_output,
        }
    }
}

/// Parses a token budget, saying what is wrong with a negative or non-numeric one.
fn token_count(text: &str) -> std::result::Result<usize, String> {
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

/// Builds library options from the budget, strategy and tool arguments.
pub(crate) fn options(
    budget: &BudgetArgs,
    strategy: StrategyArg,
    marker: bool,
    tools: &ToolArgs,
) -> Result<Options> {
    let (profile, model, tokenizer) = budget.model.resolve()?;
    let budget = match (budget.target, budget.ratio) {
        (Some(tokens), _) => Budget::Tokens(tokens),
        (None, Some(ratio)) => Budget::Ratio(ratio),
        (None, None) if model.is_some() => Budget::Window {
            trigger: budget.trigger.unwrap_or(ctxcompact::TRIGGER),
            target: budget.target_ratio.unwrap_or(ctxcompact::TARGET_RATIO),
        },
        (None, None) => bail!("no budget: pass --target TOKENS, --ratio R or --model NAME"),
    };
    Ok(Options {
        budget,
        strategy: strategy.strategy(),
        marker,
        profile,
        model,
        tokenizer,
        tools: tools.options(),
        ..Options::default()
    })
}

/// Builds library options for tool trimming alone.
pub(crate) fn tool_options(model: &ModelArgs, tools: &ToolArgs) -> Result<Options> {
    let (profile, model, tokenizer) = model.resolve()?;
    Ok(Options {
        profile,
        model,
        tokenizer,
        tools: tools.options(),
        ..Options::default()
    })
}

/// The bench's budget: `--target` tokens, else `--ratio` (default 0.5) of each conversation.
pub(crate) fn bench_budget(ratio: Option<f64>, target: Option<usize>) -> Budget {
    match (target, ratio) {
        (Some(tokens), _) => Budget::Tokens(tokens),
        (None, ratio) => Budget::Ratio(ratio.unwrap_or(0.5)),
    }
}
