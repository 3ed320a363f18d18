//! `ctxcompact bench`: every strategy run over conversations, one row of figures each, one
//! table per path given.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use clap::Args;
use ctxcompact::lab::bench::{Bench, Row};
use ctxcompact::lab::next::NEXT_MESSAGES;
use ctxcompact::{Budget, Options, Tokenizer, format};

use crate::files::json_files;
use crate::flags::{ModelArgs, StrategyArg, ToolArgs, token_count};
use crate::output::say;

/// Arguments of `bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Conversation files, or folders searched recursively for `.json` files; each one a
    /// source.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Budget as a share of each conversation's own total [default: 0.5].
    #[arg(long, conflicts_with = "target", allow_negative_numbers = true)]
    pub(crate) ratio: Option<f64>,
    /// Budget in tokens, the same for every conversation.
    #[arg(long, allow_negative_numbers = true, value_parser = token_count)]
    pub(crate) target: Option<usize>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Force a removal strategy on the `default` contender.
    #[arg(long, value_enum, default_value_t = StrategyArg::Auto)]
    pub(crate) strategy: StrategyArg,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    /// Cut each conversation before model calls at 50% and 75% of its messages and look up
    /// the references of the next N assistant messages in each compacted prefix (`next %`);
    /// 0 turns the cuts off.
    #[arg(long, value_name = "N", default_value_t = NEXT_MESSAGES)]
    pub(crate) next: usize,
    /// Print `{"strategies": [...]}` instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs the bench over every conversation under the paths given and prints its table.
pub(crate) fn run(args: &BenchArgs) -> Result<ExitCode> {
    let base = base_options(&args.model, args.strategy, &args.tools)?;
    let budget = budget(args.ratio, args.target);
    let (paths, json) = (&args.paths, args.json);
    let tokenizer = base.tokenizer;
    let mut bench = Bench::with_options(budget, base)?.with_next(args.next);
    // Each file with the path given that holds it: its source, which has rows of its own.
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for path in paths {
        let mut found = Vec::new();
        json_files(path, &mut found)?;
        let source = path.display().to_string();
        files.extend(found.into_iter().map(|file| (file, source.clone())));
    }
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    let progress = io::stderr().is_terminal();
    let mut skipped = 0;
    for (done, (file, source)) in files.iter().enumerate() {
        if progress {
            show_progress(done, files.len(), file);
        }
        let name = file.display();
        let added = fs::read(file)
            .with_context(|| format!("{name}: cannot read"))
            .and_then(|bytes| Ok(format::parse(&bytes, None)?))
            .and_then(|conversation| Ok(bench.add_from(source, &conversation)?));
        match added {
            Ok(failures) => {
                for failure in failures {
                    say(&format!(
                        "{}ctxcompact: {name}: unexpected: {failure}",
                        clear(progress)
                    ));
                }
            }
            Err(err) => {
                skipped += 1;
                say(&format!(
                    "{}ctxcompact: {name}: skipped: {err:#}",
                    clear(progress)
                ));
            }
        }
    }
    if progress {
        let _ = write!(io::stderr(), "{}", clear(true));
    }
    if skipped > 0 {
        say(&format!(
            "ctxcompact: skipped {skipped} invalid file{} of {}",
            if skipped == 1 { "" } else { "s" },
            files.len()
        ));
    }
    if bench.conversations() == 0 {
        return Err(anyhow!("no valid conversation found in the paths given"));
    }
    let rows = bench.rows();
    // Sources with at least one valid conversation, in the order given.
    let mut sources = bench.source_rows();
    sources.sort_by_key(|rows| {
        let source = rows.first().map(|r| r.source.as_str());
        paths
            .iter()
            .position(|p| Some(p.display().to_string().as_str()) == source)
    });
    let text = if json {
        let sources: Vec<serde_json::Value> = sources
            .iter()
            .map(|rows| serde_json::json!({ "source": rows[0].source, "strategies": rows }))
            .collect();
        let all = serde_json::json!({ "strategies": rows, "sources": sources });
        let mut text = serde_json::to_string_pretty(&all).expect("rows always serialize");
        text.push('\n');
        text
    } else if sources.len() > 1 {
        // One table per path given, never pooled: real recordings and generated data differ.
        let tables: Vec<String> = sources
            .iter()
            .map(|rows| bench_table(rows, budget, tokenizer, args.next))
            .collect();
        tables.join("\n")
    } else {
        // One path: its rows are those over all, headed by its name.
        bench_table(
            sources.first().unwrap_or(&rows),
            budget,
            tokenizer,
            args.next,
        )
    };
    io::stdout().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A `\r`-updated progress line on standard error.
fn show_progress(done: usize, total: usize, file: &Path) {
    const WIDTH: usize = 24;
    let filled = done * WIDTH / total.max(1);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let name: String = name.chars().take(40).collect();
    let _ = write!(
        io::stderr(),
        "\r[{}{}] {done}/{total} {name:<40}",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled)
    );
}

/// What erases the progress line before other output (nothing when there is none).
fn clear(progress: bool) -> &'static str {
    if progress { "\r\x1b[2K" } else { "" }
}

/// The bench rows as an aligned text table.
fn bench_table(rows: &[Row], budget: Budget, tokenizer: Tokenizer, next: usize) -> String {
    let budget = match budget {
        Budget::Tokens(tokens) => format!("{tokens} tokens"),
        Budget::Ratio(ratio) => format!("{ratio} of each conversation's tokens"),
        Budget::Window { .. } => "the model's window".into(),
    };
    let conversations = rows.first().map_or(0, |r| r.conversations);
    let source = rows.first().map_or("", |r| r.source.as_str());
    let tokenizer = tokenizer.as_str();
    let (cuts, references) = rows
        .first()
        .map_or((0, 0), |r| (r.next_cuts, r.next_references));
    let mut out = format!(
        "{source}: {conversations} conversations, budget {budget} ({tokenizer}); next {next}: \
         {cuts} cuts, {references} refs\n\n"
    );
    let _ = writeln!(
        out,
        "{:<9} {:>6} {:>7} {:>7} {:>10} {:>11} {:>12} {:>11} {:>10} {:>10} {:>8} {:>12} {:>6} {:>11} {:>13} {:>6} {:>10} {:>10} {:>10} {:>6} {:>5} {:>9}",
        "strategy",
        "convs",
        "fit %",
        "valid %",
        "efficiency",
        "utilization",
        "users kept %",
        "task kept %",
        "current %",
        "requests %",
        "named %",
        "with room %",
        "tight",
        "standing %",
        "instr files %",
        "ids %",
        "all ids %",
        "files %",
        "errors %",
        "next %",
        "unfit",
        "ms/conv"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<9} {:>6} {:>7.1} {:>7.1} {:>10.3} {:>11.3} {:>12.1} {:>11.1} {:>10.1} {:>10.1} {:>8.1} {:>12.1} {:>6} {:>11.1} {:>13.1} {:>6.1} {:>10.1} {:>10.1} {:>10.1} {:>6} {:>5} {:>9.2}",
            row.strategy.as_str(),
            row.conversations,
            row.fit_pct,
            row.valid_pct,
            row.efficiency,
            row.utilization,
            row.user_kept_pct,
            row.task_kept_pct,
            row.current_kept_pct,
            row.requests_recall_pct,
            row.named_recall_pct,
            row.named_with_room_pct,
            row.tight_runs,
            row.standing_kept_pct,
            row.instruction_files_kept_pct,
            row.identifiers_recall_pct,
            row.all_identifiers_recall_pct,
            row.files_recall_pct,
            row.errors_recall_pct,
            row.next_pct
                .map_or_else(|| "-".into(), |pct| format!("{pct:.1}")),
            row.next_unfit,
            row.ms_per_conversation
        );
    }
    out
}

/// The bench's base options: model, tokenizer, strategy and tool options (the budget is set
/// per conversation).
fn base_options(model: &ModelArgs, strategy: StrategyArg, tools: &ToolArgs) -> Result<Options> {
    let settings = model.unbudgeted(Some(tools), None);
    let mut options = settings.options_from(&settings.tables()?)?;
    // Built while the conversations are read.
    options.tokenizer.prepare();
    options.strategy = strategy.strategy();
    Ok(options)
}

/// The bench's budget: `--target` tokens, else `--ratio` (default 0.5) of each conversation.
fn budget(ratio: Option<f64>, target: Option<usize>) -> Budget {
    match (target, ratio) {
        (Some(tokens), _) => Budget::Tokens(tokens),
        (None, ratio) => Budget::Ratio(ratio.unwrap_or(0.5)),
    }
}
