//! The `ctxcompact` command line: arguments → options → library → output; errors → exit code.

mod args;

use std::fmt::Write as _;
use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use clap::Parser;
use ctxcompact::bench::{Bench, Row};
use ctxcompact::{Action, Conversation, Report, Tokenizer, format};

use args::{Cli, Command, Input, Output};

/// Bad input or usage.
const EXIT_BAD_INPUT: u8 = 2;
/// The budget cannot be met.
const EXIT_CANNOT_FIT: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ctxcompact: error: {err:#}");
            let cannot_fit = err
                .downcast_ref::<ctxcompact::Error>()
                .is_some_and(ctxcompact::Error::is_cannot_fit);
            ExitCode::from(if cannot_fit {
                EXIT_CANNOT_FIT
            } else {
                EXIT_BAD_INPUT
            })
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    cli.command.prepare_tokenizer();
    match cli.command {
        Command::Compact {
            input,
            budget,
            strategy,
            no_marker,
            tools,
            output,
        } => {
            check_paths(&output)?;
            let conversation = read(&input)?;
            let options = args::options(&budget, strategy, !no_marker, &tools)?;
            let compacted =
                ctxcompact::compact(conversation, &options).with_context(|| input.file.clone())?;
            emit(&compacted.conversation, &compacted.report, &output)
        }
        Command::TrimTools {
            input,
            model,
            tools,
            output,
        } => {
            check_paths(&output)?;
            let conversation = read(&input)?;
            let options = args::tool_options(&model, &tools)?;
            let trimmed = ctxcompact::trim_tools(conversation, &options)
                .with_context(|| input.file.clone())?;
            emit(&trimmed.conversation, &trimmed.report, &output)
        }
        Command::Analyze {
            input,
            budget,
            strategy,
            tools,
            json,
        } => {
            let conversation = read(&input)?;
            let options = args::options(&budget, strategy, true, &tools)?;
            let report =
                ctxcompact::analyze(&conversation, &options).with_context(|| input.file.clone())?;
            let text = if json {
                to_json(&report)
            } else {
                describe(&report)
            };
            io::stdout().write_all(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Count { input, model, json } => count(&input, &model, json),
        Command::Validate { input } => validate(&input),
        Command::Bench {
            paths,
            ratio,
            target,
            json,
        } => bench(&paths, args::bench_budget(ratio, target), json),
    }
}

/// Prints each message's tokens and the total.
fn count(input: &Input, model: &args::ModelArgs, json: bool) -> Result<ExitCode> {
    let conversation = read(input)?;
    let (_, _, tokenizer) = model.resolve()?;
    let counts = tokenizer.count(&conversation);
    let mut out = String::new();
    if json {
        let value = serde_json::json!({"total": counts.total(), "messages": counts.messages});
        out = format!("{value}\n");
    } else {
        if counts.system > 0 {
            let _ = writeln!(out, "system prompt  {:>8}", counts.system);
        }
        let rows = conversation
            .messages
            .iter()
            .zip(&counts.messages)
            .enumerate();
        for (index, (message, tokens)) in rows {
            let _ = writeln!(out, "{index:>6} {:<9} {tokens:>8}", message.role.as_str());
        }
        let tokenizer = tokenizer.as_str();
        let _ = writeln!(
            out,
            "total ({tokenizer}, with 3 reply tokens) {}",
            counts.total()
        );
    }
    io::stdout().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Prints every pairing problem with its message and field; exit 2 when there is one.
fn validate(input: &Input) -> Result<ExitCode> {
    let conversation = read(input)?;
    let problems = ctxcompact::check(&conversation);
    let mut out = io::stdout().lock();
    for problem in &problems {
        writeln!(out, "{}: {problem}", input.file)?;
    }
    if problems.is_empty() {
        let (format, count) = (conversation.format.as_str(), conversation.messages.len());
        writeln!(out, "{}: valid ({format}, {count} messages)", input.file)?;
        return Ok(ExitCode::SUCCESS);
    }
    let count = problems.len();
    let noun = if count == 1 { "problem" } else { "problems" };
    eprintln!("ctxcompact: {}: {count} {noun}", input.file);
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}

/// Runs the bench over every conversation under `paths` and prints its table.
fn bench(paths: &[PathBuf], budget: ctxcompact::Budget, json: bool) -> Result<ExitCode> {
    let mut bench = Bench::new(budget, Tokenizer::O200k)?;
    let mut files = Vec::new();
    for path in paths {
        json_files(path, &mut files)?;
    }
    files.sort();
    files.dedup();
    let progress = io::stderr().is_terminal();
    let mut skipped = 0;
    for (done, file) in files.iter().enumerate() {
        if progress {
            show_progress(done, files.len(), file);
        }
        let name = file.display();
        let added = fs::read(file)
            .with_context(|| format!("{name}: cannot read"))
            .and_then(|bytes| Ok(format::parse(&bytes, None)?))
            .and_then(|conversation| Ok(bench.add(&conversation)?));
        match added {
            Ok(failures) => {
                for failure in failures {
                    eprintln!(
                        "{}ctxcompact: {name}: unexpected: {failure}",
                        clear(progress)
                    );
                }
            }
            Err(err) => {
                skipped += 1;
                eprintln!("{}ctxcompact: {name}: skipped: {err:#}", clear(progress));
            }
        }
    }
    if progress {
        eprint!("{}", clear(true));
    }
    if skipped > 0 {
        eprintln!(
            "ctxcompact: skipped {skipped} invalid file{} of {}",
            if skipped == 1 { "" } else { "s" },
            files.len()
        );
    }
    if bench.conversations() == 0 {
        return Err(anyhow!("no valid conversation found in the paths given"));
    }
    let rows = bench.rows();
    let text = if json {
        let mut text = serde_json::to_string_pretty(&serde_json::json!({ "strategies": rows }))
            .expect("rows always serialize");
        text.push('\n');
        text
    } else {
        bench_table(&rows, budget)
    };
    io::stdout().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Adds `path` if it is a file, or every `.json` file under it if it is a folder.
fn json_files(path: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    if !path.is_dir() {
        if !path.exists() {
            return Err(anyhow!("{}: no such file or folder", path.display()));
        }
        files.push(path.to_path_buf());
        return Ok(());
    }
    let entries = fs::read_dir(path).with_context(|| format!("{}: cannot list", path.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("{}: cannot list", path.display()))?;
        let child = entry.path();
        if child.is_dir() {
            json_files(&child, files)?;
        } else if child.extension().is_some_and(|e| e == "json") {
            files.push(child);
        }
    }
    Ok(())
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
    eprint!(
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
fn bench_table(rows: &[Row], budget: ctxcompact::Budget) -> String {
    let budget = match budget {
        ctxcompact::Budget::Tokens(tokens) => format!("{tokens} tokens"),
        ctxcompact::Budget::Ratio(ratio) => format!("{ratio} of each conversation's tokens"),
        ctxcompact::Budget::Window { .. } => "the model's window".into(),
    };
    let conversations = rows.first().map_or(0, |r| r.conversations);
    let mut out = format!("{conversations} conversations, budget {budget} (o200k)\n\n");
    let _ = writeln!(
        out,
        "{:<9} {:>6} {:>7} {:>7} {:>10} {:>11} {:>12} {:>11} {:>9}",
        "strategy",
        "convs",
        "fit %",
        "valid %",
        "efficiency",
        "utilization",
        "users kept %",
        "task kept %",
        "ms/conv"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<9} {:>6} {:>7.1} {:>7.1} {:>10.3} {:>11.3} {:>12.1} {:>11.1} {:>9.2}",
            row.strategy.as_str(),
            row.conversations,
            row.fit_pct,
            row.valid_pct,
            row.efficiency,
            row.utilization,
            row.user_kept_pct,
            row.task_kept_pct,
            row.ms_per_conversation
        );
    }
    out
}

/// Reads and parses the input file (or standard input for `-`).
fn read(input: &Input) -> Result<Conversation> {
    let format = input.format.format();
    let conversation = if input.file == "-" {
        format::parse_reader(io::stdin().lock(), format)
    } else {
        let file =
            fs::File::open(&input.file).with_context(|| format!("{}: cannot read", input.file))?;
        format::parse_reader(file, format)
    };
    conversation.with_context(|| input.file.clone())
}

/// Writes the output conversation, the report and the summary line.
fn emit(conversation: &Conversation, report: &Report, output: &Output) -> Result<ExitCode> {
    let report_json = to_json(report);
    if let Some(path) = &output.output {
        write_atomically(path, |file| format::write(conversation, file))?;
    } else {
        let mut stdout = io::BufWriter::new(io::stdout().lock());
        format::write(conversation, &mut stdout)?;
        stdout.flush()?;
    }
    match output.report.as_deref() {
        Some("-") => io::stderr().write_all(report_json.as_bytes())?,
        Some(path) => write_atomically(Path::new(path), |file| {
            file.write_all(report_json.as_bytes())
        })?,
        None => {}
    }
    eprintln!("ctxcompact: {}", report.summary());
    debug_assert!(
        report.action != Action::CannotFit,
        "cannot_fit is an error, never emitted"
    );
    Ok(ExitCode::SUCCESS)
}

fn to_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("a report always serializes");
    text.push('\n');
    text
}

/// Fails early, before any work, when an output path cannot be written.
fn check_paths(output: &Output) -> Result<()> {
    if let Some(path) = &output.output {
        check_writable(path)?;
    }
    match output.report.as_deref() {
        Some("-") | None => Ok(()),
        Some(path) => check_writable(Path::new(path)),
    }
}

/// Fails when `path` is a folder or its folder does not exist.
fn check_writable(path: &Path) -> Result<()> {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if path.is_dir() {
        Err(anyhow!("{}: is a folder, not a file", path.display()))
    } else if folder.is_dir() {
        Ok(())
    } else {
        Err(anyhow!(
            "{}: the folder {} does not exist",
            path.display(),
            folder.display()
        ))
    }
}

/// Writes to a temporary file beside `path`, then renames it over `path`: readers see the old
/// file or the whole new one, never a part. A symlink is written through to its target, and a
/// path that is not a regular file (`/dev/null`, a pipe) is written to directly, since renaming
/// over it would replace the device or pipe itself.
fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut io::BufWriter<fs::File>) -> io::Result<()>,
) -> Result<()> {
    check_writable(path)?;
    let cannot = || format!("{}: cannot write", path.display());
    if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        let mut writer = io::BufWriter::new(
            fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(cannot)?,
        );
        return fill(&mut writer)
            .and_then(|()| writer.flush())
            .with_context(cannot);
    }
    let target = if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::canonicalize(path).with_context(cannot)?
    } else {
        path.to_path_buf()
    };
    let name = target
        .file_name()
        .ok_or_else(|| anyhow!("{}: not a file path", path.display()))?;
    let temp = target.with_file_name(format!(
        ".{}.ctxcompact-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = fs::File::create(&temp)
        .and_then(|file| {
            let mut writer = io::BufWriter::new(file);
            fill(&mut writer)?;
            writer
                .into_inner()
                .map_err(io::IntoInnerError::into_error)?
                .sync_all()
        })
        .and_then(|()| fs::rename(&temp, &target));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.with_context(cannot)
}

/// The analyze report as text: features, profile, rules and decision.
fn describe(report: &Report) -> String {
    let f = &report.features;
    let mut out = format!(
        "format {}, tokenizer {}, budget {} tokens\n\
         messages {}, tokens {}, average {:.1} tokens/message\n\
         target ratio {:.3} ({:?}), recent ratio {:.3}, last-messages ratio {:.3}\n\
         long messages {}, tool messages {}, system messages {}, tool token share {:.3}\n\
         profile {} ({}, window {}): {:?}, {}\n",
        report.format.as_str(),
        report.tokenizer.as_str(),
        report.budget,
        f.messages,
        f.tokens,
        f.average_tokens,
        f.target_ratio,
        f.severity,
        f.recent_ratio,
        f.last_messages_ratio,
        f.has_long_messages,
        f.has_tool_messages,
        f.has_system_messages,
        f.tool_token_share,
        report.profile.name,
        report.profile.provider,
        report.profile.context_window,
        report.profile.strategy,
        report.profile.reason,
    );
    let t = &report.tool_trim;
    let _ = writeln!(
        out,
        "tool trimming: {} rounds, {} kept, {} cleared, {} dropped, {} excluded, {} truncated, {} tokens freed",
        t.rounds, t.kept, t.cleared, t.dropped, t.excluded, t.truncated, t.tokens_freed
    );
    if let Some(decision) = &report.decision {
        for rule in &decision.rules {
            let mark = if rule.matched { "matched" } else { "-" };
            let _ = writeln!(
                out,
                "rule {} [{mark}] → {} ({}): {}",
                rule.number,
                rule.strategy.as_str(),
                rule.confidence,
                rule.description
            );
        }
        for c in &decision.candidates {
            let _ = writeln!(
                out,
                "candidate {}: {} tokens, {} messages kept, efficiency {:.5}, fits {}",
                c.strategy.as_str(),
                c.tokens_after,
                c.messages_after,
                c.efficiency,
                c.fits
            );
        }
    }
    out.push_str(&report.summary());
    out.push('\n');
    out
}
