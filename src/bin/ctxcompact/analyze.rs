//! `ctxcompact analyze`: the features, the profile, every rule and the decision, as text or
//! as the JSON report; nothing is changed or written.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use ctxcompact::Report;

use crate::flags::{self, BudgetArgs, InputArgs, RemovalArgs};
use crate::input::read_anchored;
use crate::output::to_json;

/// Arguments of `analyze`.
#[derive(Debug, Args)]
pub(crate) struct AnalyzeArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    #[command(flatten)]
    pub(crate) removal: RemovalArgs,
    /// Print the JSON report instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Prints the analysis of the input.
pub(crate) fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let AnalyzeArgs {
        input,
        budget,
        removal,
        json,
    } = args;
    let tables = budget.model.prepare();
    let (conversation, anchor) = read_anchored(input)?;
    let options = flags::settings(budget, removal, None, Some(0.5), anchor).options_for_body_from(
        &tables?,
        &conversation,
        None,
    )?;
    let report = ctxcompact::analyze(conversation, &options).with_context(|| input.file.clone())?;
    let text = if *json {
        to_json(&report)
    } else {
        describe(&report)
    };
    io::stdout().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The analyze report as text: features, profile, rules and decision.
fn describe(report: &Report) -> String {
    let f = &report.features;
    let mut out = format!(
        "format {}, tokenizer {}, budget {} tokens\n\
         messages {}, tokens {}, average {:.1} tokens/message\n\
         target ratio {:.3} ({:?}), recent ratio {:.3}, last-messages ratio {:.3}\n\
         long messages {}, tool messages {}, system messages {}, tool token share {:.3}\n\
         profile {} ({}, window {}{}): {:?}, {}\n",
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
        report
            .window_source
            .map_or(String::new(), |s| format!(", source {}", s.as_str())),
        report.profile.strategy,
        report.profile.reason,
    );
    if let Some(model) = &report.model {
        let how = report.model_match.as_deref().unwrap_or_default();
        let _ = writeln!(out, "model {model}: {how}");
    }
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
