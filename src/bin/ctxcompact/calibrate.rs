//! `ctxcompact calibrate`: the arguments, and the table of fitted (or measured) factors. The
//! fit itself is the library's (`ctxcompact::lab::calibrate`); this file reads files and formats.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use ctxcompact::lab::calibrate::{self, Calibration, FamilyFit, SessionLog};

/// Arguments of `calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// Session logs that record usage (Claude Code, Gemini CLI), or folders searched
    /// recursively for `.jsonl` and `.json` files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Fit nothing: measure the current estimators (the shipped factors, or
    /// `--calibration`'s): each call after a session's first is estimated as the previous
    /// call's reported size plus the estimate of what was added since.
    #[arg(long)]
    evaluate: bool,
    /// With `--evaluate`: the factors to measure (the output of `calibrate --json`).
    #[arg(long, requires = "evaluate")]
    calibration: Option<PathBuf>,
    /// Print `{"families": [...], "files": [...]}` instead of a table.
    #[arg(long)]
    json: bool,
}

/// Fits (or evaluates) the logs under `args.paths` and prints the result.
pub(crate) fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    // (file, whether it was named itself rather than found in a folder)
    let mut files = Vec::new();
    for path in &args.paths {
        if path.is_dir() {
            let mut found = Vec::new();
            crate::files::json_files(path, &mut found)?;
            files.extend(found.into_iter().map(|f| (f, false)));
        } else {
            files.push((path.clone(), true));
        }
    }
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    let mut logs = Vec::new();
    for (file, named) in &files {
        let bytes = fs::read(file).with_context(|| format!("{}: cannot read", file.display()))?;
        let name = file.display().to_string();
        match SessionLog::read(&name, &bytes) {
            Ok(log) => logs.push(log),
            // A file found in a folder may be no conversation at all (a manifest, notes).
            Err(err) if !named => {
                let _ = writeln!(io::stderr(), "ctxcompact: skipping {name}: {err}");
            }
            Err(err) => return Err(err).with_context(|| name.clone()),
        }
    }
    let calls: usize = logs.iter().map(|l| l.usages.len()).sum();
    let families = if args.evaluate {
        let calibration = match &args.calibration {
            Some(path) => Calibration::from_file(path)?,
            None => Calibration::builtin().clone(),
        };
        calibrate::evaluate(&logs, &calibration)
    } else {
        calibrate::fit_with_held_out(&logs)
    };
    let mut out = String::new();
    if args.json {
        let calibration = Calibration {
            families,
            files: logs
                .iter()
                .filter(|l| !l.usages.is_empty())
                .map(|l| l.name.clone())
                .collect(),
        };
        out = serde_json::to_string_pretty(&calibration)?;
        out.push('\n');
    } else {
        let what = if args.evaluate {
            "each call anchored on the previous one"
        } else {
            "least squares, one overhead per session"
        };
        let _ = writeln!(out, "{} logs, {calls} recorded calls ({what})", logs.len());
        out.push_str(&table(&families));
        if families.is_empty() {
            let _ = writeln!(
                out,
                "no family has a session with {} or more recorded calls (Claude Code `message.usage`, Gemini CLI `tokens`)",
                if args.evaluate {
                    2
                } else {
                    calibrate::MIN_SESSION_CALLS
                },
            );
        }
    }
    io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The table of fits (or measurements), with the held-out and first-call figures under it.
fn table(families: &[FamilyFit]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14} {:>6} {:>8} {:>10} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8}",
        "family",
        "calls",
        "sessions",
        "tok/o200k",
        "tok/call",
        "tok/char",
        "overhead",
        "R²",
        "median %",
        "p95 %"
    );
    for fit in families {
        let _ = writeln!(out, "{}", row(fit));
    }
    for fit in families {
        if let Some(held) = &fit.held_out {
            let _ = writeln!(
                out,
                "{}: on held-out sessions (each fitted without it, each call anchored on the previous one): {} calls in {} sessions, median {:.2}%, p95 {:.2}%; {}",
                fit.family.as_str(),
                held.calls,
                held.sessions,
                held.median_ape_pct,
                held.p95_ape_pct,
                first_call(held.first_call.as_ref())
            );
        }
        if fit.held_out.is_none() && fit.first_call.is_some() {
            let _ = writeln!(
                out,
                "{}: {}",
                fit.family.as_str(),
                first_call(fit.first_call.as_ref())
            );
        }
    }
    out
}

/// The error anchored on each session's first call, as a clause (empty when not measured).
fn first_call(spread: Option<&calibrate::Spread>) -> String {
    spread.map_or_else(String::new, |s| {
        format!(
            "anchored on each session's first call instead: median {:.2}%, p95 {:.2}%",
            s.median_ape_pct, s.p95_ape_pct
        )
    })
}

/// One table row.
fn row(fit: &FamilyFit) -> String {
    format!(
        "{:<14} {:>6} {:>8} {:>10.6} {:>9.0} {:>9.6} {:>9} {:>8.5} {:>9.2} {:>8.2}",
        fit.family.as_str(),
        fit.calls,
        fit.sessions,
        fit.tokens_per_o200k,
        fit.tokens_per_tool_call,
        fit.tokens_per_char,
        fit.fixed_overhead,
        fit.r2,
        fit.median_ape_pct,
        fit.p95_ape_pct
    )
}
