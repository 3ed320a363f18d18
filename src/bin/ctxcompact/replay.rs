//! `ctxcompact replay`: the arguments, and the table of what each policy costs. The replay
//! itself is the library's (`ctxcompact::lab::replay`); this file reads files and formats.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use clap::{Args, ValueEnum};
use ctxcompact::catalog::Catalog;
use ctxcompact::lab::replay::Prices;
use ctxcompact::lab::replay::{Figures, Policy, Replay, Window};
use ctxcompact::{Budget, format};

/// Arguments of `replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// Recorded sessions, or folders searched recursively for `.json` files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The model: its tokenizer, window and price family.
    #[arg(long)]
    model: String,
    /// The context window every call must fit [default: the model's].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    window: Option<u64>,
    /// Each session's window as this share of its whole history's tokens (e.g. 0.333: a
    /// third), instead of one window for all.
    #[arg(long, conflicts_with = "window")]
    window_share: Option<f64>,
    /// Sessions compact when usage passes this share of the window [default: 0.7].
    #[arg(long)]
    trigger: Option<f64>,
    /// Sessions compact down to this share of the window [default: as deep as each session's
    /// traffic allows, between 0.2 and 0.5].
    #[arg(long)]
    target_ratio: Option<f64>,
    /// Policies to compare, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    policy: Vec<PolicyArg>,
    /// A price list to use instead of the built-in one (the shape of data/prices.json).
    #[arg(long)]
    prices: Option<PathBuf>,
    /// A model catalog to use instead of the built-in one.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Only replay sessions whose whole history exceeds the window (where policies differ).
    #[arg(long)]
    only_outgrowing: bool,
    /// Print `{"model", "window", "sessions", "policies": [...]}` instead of a table.
    #[arg(long)]
    json: bool,
}

/// A policy as the CLI spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    /// No compaction: calls past the window fail.
    None,
    /// Drop the oldest messages on every call until the history fits.
    Naive,
    /// ctxcompact with hysteresis (tool trimming, then the selector).
    Default,
    /// Middle removal with hysteresis.
    Middle,
    /// Oldest removal with hysteresis.
    Oldest,
    /// Tool-output clearing only, with hysteresis.
    Tools,
    /// `default` with `--optimize cost`.
    Cost,
}

impl From<PolicyArg> for Policy {
    fn from(arg: PolicyArg) -> Self {
        match arg {
            PolicyArg::None => Self::None,
            PolicyArg::Naive => Self::Naive,
            PolicyArg::Default => Self::Default,
            PolicyArg::Middle => Self::Middle,
            PolicyArg::Oldest => Self::Oldest,
            PolicyArg::Tools => Self::Tools,
            PolicyArg::Cost => Self::Cost,
        }
    }
}

/// Replays every session under `args.paths` and prints the table (or JSON).
pub(crate) fn run(args: &ReplayArgs) -> Result<ExitCode> {
    let catalog = match &args.catalog {
        Some(path) => Catalog::from_json(
            &fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read", path.display()))?,
        )
        .with_context(|| path.display().to_string())?,
        None => Catalog::builtin().clone(),
    };
    let prices = match &args.prices {
        Some(path) => Prices::from_json(
            &fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read", path.display()))?,
        )
        .with_context(|| path.display().to_string())?,
        None => Prices::builtin().clone(),
    };
    let profile = catalog.resolve(&args.model)?.profile;
    let family = prices.for_profile(&profile)?.clone();
    let window = match (args.window, args.window_share) {
        (_, Some(share)) => Window::Share(share),
        (Some(window), None) => {
            Window::Tokens(usize::try_from(window).context("--window: too large")?)
        }
        (None, None) => Window::Tokens(profile.context_window),
    };
    let policies: Vec<Policy> = if args.policy.is_empty() {
        Policy::ALL.to_vec()
    } else {
        args.policy.iter().map(|&p| p.into()).collect()
    };
    let mut replay = Replay::new(
        &args.model,
        &profile,
        family,
        window,
        match Budget::window_with(args.trigger, args.target_ratio) {
            Budget::Window { trigger, .. } => (trigger, args.target_ratio),
            other => unreachable!("window_with gives a window budget, not {other:?}"),
        },
        &policies,
    )?;
    let mut files = Vec::new();
    for path in &args.paths {
        crate::files::json_files(path, &mut files)?;
    }
    files.sort();
    files.dedup();
    let (mut skipped, mut within) = (0, 0);
    for file in &files {
        let name = file.display();
        let conversation = fs::read(file)
            .with_context(|| format!("{name}: cannot read"))
            .and_then(|bytes| Ok(format::parse(&bytes, None)?));
        let added = conversation
            .and_then(|conversation| Ok(replay.add(&conversation, args.only_outgrowing)?));
        match added {
            Ok(true) => {}
            Ok(false) => within += 1,
            Err(err) => {
                skipped += 1;
                eprintln!("ctxcompact: {name}: skipped: {err:#}");
            }
        }
    }
    if skipped > 0 {
        eprintln!(
            "ctxcompact: skipped {skipped} invalid file(s) of {}",
            files.len()
        );
    }
    if within > 0 {
        eprintln!("ctxcompact: left out {within} session(s) that never outgrow the window");
    }
    let figures = replay.figures();
    if figures.sessions == 0 {
        return Err(anyhow!("no session to replay in the paths given"));
    }
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&figures).expect("figures always serialize");
        text.push('\n');
        text
    } else {
        table(&figures)
    };
    io::stdout().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The figures as an aligned text table, one row per policy.
fn table(figures: &Figures) -> String {
    let window = match figures.window_share {
        Some(share) => format!("window {share} of each session's tokens"),
        None => format!("window {} tokens", figures.window),
    };
    let mut out = format!(
        "{} sessions, model {} (prices: {}), {window}\n",
        figures.sessions, figures.model, figures.family
    );
    let header = [
        "policy",
        "calls",
        "input",
        "cache read",
        "cache write",
        "uncached",
        "cost $",
        "compact.",
        "peak",
        "over win.",
        "invalid",
        "task %",
        "current %",
        "next %",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for p in &figures.policies {
        rows.push(vec![
            p.policy.as_str().to_string(),
            p.calls.to_string(),
            p.input_tokens.to_string(),
            p.cache_read_tokens.to_string(),
            p.cache_write_tokens.to_string(),
            p.uncached_tokens.to_string(),
            format!("{:.4}", p.cost_usd),
            p.compactions.to_string(),
            p.peak_context.to_string(),
            p.over_window_calls.to_string(),
            p.invalid_calls.to_string(),
            format!("{:.1}", p.task_kept_pct),
            format!("{:.1}", p.current_kept_pct),
            format!("{:.1}", p.next_kept_pct),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<width$}", width = widths[c]);
            } else {
                let _ = write!(line, "  {cell:>width$}", width = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
