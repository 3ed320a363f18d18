//! The `ctxcompact` command line: arguments → options → library → output; errors → exit code.

mod args;
mod calibrate;
mod output;
#[cfg(feature = "proxy")]
mod proxy;
mod replay;

use std::fmt::Write as _;
use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Parser;
use ctxcompact::lab::bench::{Bench, Row};
use ctxcompact::report::Action;
use ctxcompact::{Conversation, Report, Tokenizer, format};

use args::{Cli, Command, Input, Output};
use output::{Staged, check_writable};

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
            say(&format!("ctxcompact: error: {err:#}"));
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
            marker,
            tools,
            archive,
            output,
        } => {
            check_paths(&input, &output)?;
            let (conversation, anchor) = read_anchored(&input)?;
            let mut options = args::options(&budget, strategy, &marker, &tools, archive, None)?;
            options.anchor = anchor;
            let compacted =
                ctxcompact::compact(conversation, &options).with_context(|| input.file.clone())?;
            let code = emit(
                &compacted.conversation,
                &compacted.report,
                &compacted.report.summary(),
                &input,
                &output,
                Some(&compacted),
            );
            exit_without_freeing(compacted);
            code
        }
        Command::TrimTools {
            input,
            model,
            tools,
            output,
        } => {
            check_paths(&input, &output)?;
            let (conversation, anchor) = read_anchored(&input)?;
            let mut options = model.unbudgeted(Some(&tools))?;
            options.anchor = anchor;
            let trimmed = ctxcompact::trim_tools(conversation, &options)
                .with_context(|| input.file.clone())?;
            emit(
                &trimmed.conversation,
                &trimmed.report,
                &trim_summary(&trimmed.report),
                &input,
                &output,
                None,
            )
        }
        Command::Analyze {
            input,
            budget,
            strategy,
            marker,
            tools,
            json,
        } => {
            let (conversation, anchor) = read_anchored(&input)?;
            let mut options = args::options(&budget, strategy, &marker, &tools, None, Some(0.5))?;
            options.anchor = anchor;
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
            model,
            strategy,
            tools,
            json,
        } => {
            let base = args::bench_options(&model, strategy, &tools)?;
            bench(&paths, args::bench_budget(ratio, target), base, json)
        }
        Command::Replay(replay_args) => replay::run(&replay_args),
        Command::Calibrate(calibrate_args) => calibrate::run(&calibrate_args),
        #[cfg(feature = "proxy")]
        Command::Proxy(proxy_args) => proxy::run(&proxy_args).map(|()| ExitCode::SUCCESS),
    }
}

/// The summary line of `trim-tools`, which has no budget: what trimming did.
fn trim_summary(report: &Report) -> String {
    let t = &report.tool_trim;
    format!(
        "tool trimming: {} → {} tokens; {} rounds, {} kept, {} cleared, {} dropped, {} excluded, {} truncated",
        report.tokens_before,
        report.tokens_after,
        t.rounds,
        t.kept,
        t.cleared,
        t.dropped,
        t.excluded,
        t.truncated
    )
}

/// Prints each message's tokens and the total.
fn count(input: &Input, model: &args::ModelArgs, json: bool) -> Result<ExitCode> {
    let (conversation, anchor) = read_anchored(input)?;
    let mut options = model.unbudgeted(None)?;
    options.anchor = anchor;
    let tokenizer = options.tokenizer;
    let counts = options.count(&conversation);
    let mut out = String::new();
    if json {
        let value = serde_json::json!({
            "total": counts.total(),
            "system": counts.system,
            "messages": counts.messages,
        });
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
        let _ = writeln!(
            out,
            "total ({}, with {} reply tokens) {}",
            tokenizer.as_str(),
            tokenizer.counter().reply_priming(),
            counts.total()
        );
        let _ = writeln!(out, "estimator: {}", tokenizer.describe());
        // A given overhead replaces the anchor (`Options::overhead`).
        if let Some(anchor) = options.anchor.as_ref().filter(|_| options.overhead == 0) {
            let _ = writeln!(
                out,
                "anchored on the input size recorded at line {}: {} tokens for the {} messages before it",
                anchor.line, anchor.input_tokens, anchor.message
            );
        }
    }
    io::stdout().write_all(out.as_bytes())?;
    exit_without_freeing(conversation);
    Ok(ExitCode::SUCCESS)
}

/// Leaves a conversation the process is done with to be reclaimed at exit with the rest of
/// its memory: freeing its many small allocations one by one takes a few percent of a run.
fn exit_without_freeing(conversation: impl Sized) {
    std::mem::forget(conversation);
}

/// Prints every pairing problem with its message and field; exit 2 when there is one.
fn validate(input: &Input) -> Result<ExitCode> {
    let conversation = read(input)?;
    let problems = ctxcompact::validate(&conversation);
    let mut out = io::stdout().lock();
    // What a session log's reader repaired to read it as the agent sent it.
    for repair in conversation.repairs.iter().filter(|r| r.changed()) {
        let call = repair
            .call_id
            .as_deref()
            .map(|id| format!(" `{id}`"))
            .unwrap_or_default();
        // An API body's repairs name the message index, a log's its line.
        let at = if conversation.lines.is_empty() {
            "message"
        } else {
            "line"
        };
        writeln!(
            out,
            "{}: {at} {}: repaired: {}{call}",
            input.file, repair.line, repair.kind
        )?;
    }
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
    say(&format!("ctxcompact: {}: {count} {noun}", input.file));
    Ok(ExitCode::from(EXIT_BAD_INPUT))
}

/// Runs the bench over every conversation under `paths` and prints its table.
fn bench(
    paths: &[PathBuf],
    budget: ctxcompact::Budget,
    base: ctxcompact::Options,
    json: bool,
) -> Result<ExitCode> {
    let tokenizer = base.tokenizer;
    let mut bench = Bench::with_options(budget, base)?;
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
            .map(|rows| bench_table(rows, budget, tokenizer))
            .collect();
        tables.join("\n")
    } else {
        // One path: its rows are those over all, headed by its name.
        bench_table(sources.first().unwrap_or(&rows), budget, tokenizer)
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
        } else if child
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl")
        {
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
fn bench_table(rows: &[Row], budget: ctxcompact::Budget, tokenizer: Tokenizer) -> String {
    let budget = match budget {
        ctxcompact::Budget::Tokens(tokens) => format!("{tokens} tokens"),
        ctxcompact::Budget::Ratio(ratio) => format!("{ratio} of each conversation's tokens"),
        ctxcompact::Budget::Window { .. } => "the model's window".into(),
    };
    let conversations = rows.first().map_or(0, |r| r.conversations);
    let source = rows.first().map_or("", |r| r.source.as_str());
    let tokenizer = tokenizer.as_str();
    let mut out =
        format!("{source}: {conversations} conversations, budget {budget} ({tokenizer})\n\n");
    let _ = writeln!(
        out,
        "{:<9} {:>6} {:>7} {:>7} {:>10} {:>11} {:>12} {:>11} {:>10} {:>10} {:>8} {:>6} {:>10} {:>10} {:>9}",
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
        "ids %",
        "files %",
        "errors %",
        "ms/conv"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:<9} {:>6} {:>7.1} {:>7.1} {:>10.3} {:>11.3} {:>12.1} {:>11.1} {:>10.1} {:>10.1} {:>8.1} {:>6.1} {:>10.1} {:>10.1} {:>9.2}",
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
            row.identifiers_recall_pct,
            row.files_recall_pct,
            row.errors_recall_pct,
            row.ms_per_conversation
        );
    }
    out
}

/// Reads and parses the input file (or standard input for `-`).
fn read(input: &Input) -> Result<Conversation> {
    read_anchored(input).map(|(conversation, _)| conversation)
}

/// Reads the input, with the last input size a session log recorded (none when the whole
/// history is read: the reported sizes are of what followed the last compaction).
fn read_anchored(input: &Input) -> Result<(Conversation, Option<format::RecordedUsage>)> {
    let options = format::ReadOptions {
        format: input.format.format(),
        whole_history: input.whole_history,
        strict: input.strict,
        repair: input.repair,
    };
    // A file is read whole and parsed from memory: parsing a slice is several times faster
    // than parsing a stream byte by byte, for one copy of the input held while it parses.
    let read = if input.file == "-" {
        format::parse_reader_with_usage(io::stdin().lock(), &options)
    } else {
        let bytes =
            fs::read(&input.file).with_context(|| format!("{}: cannot read", input.file))?;
        format::parse_with_usage(&bytes, &options)
    };
    let (conversation, mut usages) = read.with_context(|| input.file.clone())?;
    let anchor = if input.whole_history {
        None
    } else {
        usages.pop()
    };
    Ok((conversation, anchor))
}

/// Writes the output conversation and the report, both staged in full before either is moved
/// into place, then the summary line. The archive files of `archived` are written once both
/// are staged, and removed again when they cannot be moved into place.
fn emit(
    conversation: &Conversation,
    report: &Report,
    summary: &str,
    input: &Input,
    output: &Output,
    archived: Option<&ctxcompact::Compacted>,
) -> Result<ExitCode> {
    // What is written must read back as it was read (an unchanged input always does).
    if report.action != Action::WithinBudget {
        conversation
            .check_reads_back(input.format.format())
            .with_context(|| input.file.clone())?;
    }
    let report_json = to_json(report);
    let staged_report = match output.report.as_deref() {
        None | Some("-") => None,
        Some(path) => Some(Staged::write(Path::new(path), |file| {
            file.write_all(report_json.as_bytes())
        })?),
    };
    let staged_output = match destination(input, output) {
        None => {
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            format::write(conversation, &mut stdout)?;
            stdout.flush()?;
            None
        }
        Some(path) => Some(Staged::write(path, |file| {
            format::write(conversation, file)
        })?),
    };
    // The report on standard error is written before any file is moved into place: a report
    // that cannot be written is an error, and leaves the files as they were.
    if output.report.as_deref() == Some("-") {
        let mut stderr = io::stderr().lock();
        stderr
            .write_all(report_json.as_bytes())
            .and_then(|()| stderr.flush())
            .context("standard error: cannot write the report")?;
    }
    let created = match archived {
        Some(compacted) => compacted
            .write_archive()
            .context("cannot write the archive")?,
        None => Vec::new(),
    };
    let committed = staged_output
        .map_or(Ok(()), output::Staged::commit)
        .and_then(|()| staged_report.map_or(Ok(()), output::Staged::commit));
    if let Err(err) = committed {
        for path in &created {
            let _ = fs::remove_file(path);
        }
        return Err(err);
    }
    if output.report.as_deref() != Some("-") && !output.quiet {
        say(&format!("ctxcompact: {summary}"));
    }
    debug_assert!(
        report.action != Action::CannotFit,
        "cannot_fit is an error, never emitted"
    );
    Ok(ExitCode::SUCCESS)
}

/// The file the output goes to: `-o FILE`, the input with `--in-place`, or `None` for
/// standard output (also `-o -`).
fn destination<'a>(input: &'a Input, output: &'a Output) -> Option<&'a Path> {
    if output.in_place {
        return Some(Path::new(&input.file));
    }
    output.path.as_deref().filter(|p| *p != Path::new("-"))
}

fn to_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("a report always serializes");
    text.push('\n');
    text
}

/// Fails early, before any work, when an output path cannot be written or two of the input,
/// the output and the report are the same file.
fn check_paths(input: &Input, output: &Output) -> Result<()> {
    if output.in_place && input.file == "-" {
        bail!("--in-place needs an input file, not standard input");
    }
    let input_path = (input.file != "-").then(|| Path::new(&input.file));
    let output_path = destination(input, output);
    let report_path = output
        .report
        .as_deref()
        .filter(|r| *r != "-")
        .map(Path::new);
    for path in [output_path, report_path].into_iter().flatten() {
        check_writable(path)?;
    }
    // Devices and pipes (`/dev/null`) may take any number of writers.
    let clash = |a: Option<&Path>, b: Option<&Path>| {
        a.zip(b).is_some_and(|(a, b)| {
            !fs::metadata(a).is_ok_and(|m| !m.is_file()) && output::same_file(a, b)
        })
    };
    if !output.in_place && clash(output_path, input_path) {
        bail!(
            "{}: -o names the input file; replacing the input is a lossy edit: pass --in-place to do it",
            input.file
        );
    }
    if clash(report_path, input_path) {
        bail!("{}: --report names the input file", input.file);
    }
    if clash(report_path, output_path) {
        bail!(
            "{}: --report names the output file",
            report_path.map_or(String::new(), |p| p.display().to_string())
        );
    }
    Ok(())
}

/// Prints a line on standard error; a standard error that cannot be written is ignored.
fn say(line: &str) {
    let _ = writeln!(io::stderr(), "{line}");
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
    let index = |i: Option<usize>| i.map_or_else(|| "none".to_string(), |i| format!("message {i}"));
    let _ = writeln!(
        out,
        "task: {}, current request: {}, harness: {} messages",
        index(report.task),
        index(report.current),
        report.harness.len()
    );
    for h in &report.harness {
        let _ = writeln!(
            out,
            "  harness message {}: {} `{}`",
            h.message, h.agent, h.pattern
        );
    }
    for rule in &report.rules {
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
    if report.decision.is_none() {
        out.push_str("no removal needed: no strategy was chosen\n");
    }
    if let Some(decision) = &report.decision {
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
    let _ = writeln!(out, "estimator: {}", report.estimator);
    if let Some(anchor) = &report.anchor {
        let _ = writeln!(
            out,
            "anchored on the input size recorded at line {}: {} tokens for the {} messages before it",
            anchor.line, anchor.input_tokens, anchor.message
        );
    }
    out.push_str(&report.summary());
    out.push('\n');
    out
}
